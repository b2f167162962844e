"""One mutation of one policy applied to one object: evaluate, bound its size, patch or apply."""

from __future__ import annotations

from typing import Any

from celmut import cel
from celmut.cel.costs import json_nbytes
from celmut.compile.compiled import CompiledExpression, CompiledPolicy
from celmut.runtime import decode, mutations
from celmut.runtime.failures import DecodeFailure, MutationError, PolicyFailure
from celmut.runtime.options import AdmissionOptions
from celmut.runtime.semantics import Semantics
from celmut.runtime.typenames import check_type_names, json_patch_values


def expression_error(expression: CompiledExpression | Any, error: cel.CelError) -> PolicyFailure:
    """A CEL error of ``expression`` as a failure of the policy, named by the expression's field path."""
    return PolicyFailure(expression.path, error.message)


def apply_mutation(
    options: AdmissionOptions,
    semantics: Semantics,
    policy: CompiledPolicy,
    mutation: Any,
    activation: cel.Activation,
    obj: dict[str, Any],
    notes: list[str] | None = None,
    encoded: decode.EncodedObjects | None = None,
    claims: list[str] | None = None,
) -> dict[str, Any]:
    """Evaluate one mutation against ``obj`` and apply it; a failed JSONPatch ``test`` leaves
    ``obj`` unchanged and adds a note. ``encoded`` remembers, for the request, which objects are
    already in the API server's encoding; ``claims`` (when explaining) receives the pointers the
    mutation writes, whether or not their values change."""
    activation.with_object(obj)
    try:
        result = mutation.program.evaluate(activation)
    except cel.CelError as ex:
        raise expression_error(mutation, ex) from None
    size = json_nbytes(result)  # before anything walks it: a result may share its parts
    if size > options.max_object_bytes:
        limit = options.max_object_bytes
        raise PolicyFailure(mutation.path, f"the result is about {size} bytes of JSON, over the limit of {limit}")
    if claims is not None:
        claims += mutations.written_pointers(mutation.patch_type, result)
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    schemas = options.schemas
    schema = schemas.for_kind(api_version, kind)
    # A MutatingAdmissionPolicy's mutation works on the Go object of a built-in kind: encoded
    # before, decoded (strictly) and re-encoded after (runtime/decode.py). Kyverno patches the
    # JSON it received, and custom resources stay unstructured: both are left as they are.
    typed = schemas.typed_schema(api_version, kind) if semantics.decodes_builtin_kinds else None
    try:
        encoded = encoded or decode.EncodedObjects()
        source = encoded.encode(obj, typed)
        if mutation.patch_type == "JSONPatch":
            check_type_names(json_patch_values(result))
            patched = mutations.apply_json_patch(source, mutations.patch_operations(result))
            problem = decode.decode_error(patched, typed, previous=source)
            if problem is not None:
                raise DecodeFailure(mutation.path, f"Internal error occurred: {problem}")
        else:
            check_type_names([result])
            patched = mutations.apply_object(source, result, schema, replace_atomic=policy.use_server_side_apply)
        if typed is None:
            return patched
        reencoded: dict[str, Any] = encoded.remember(decode.as_encoded(patched, typed, previous=source))
        return reencoded
    except mutations.TestFailed as skipped:
        if notes is not None:
            notes.append(f"{mutation.path}: {skipped}")
        if claims is not None:
            claims.clear()  # the whole mutation was skipped: it wrote nothing
        return obj
    except MutationError as ex:
        raise PolicyFailure(mutation.path, str(ex)) from None
