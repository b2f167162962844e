"""One mutation of one policy applied to one object: evaluate, bound its size, patch or apply."""

from __future__ import annotations

from typing import Any

from celmut import cel
from celmut.cel.backends.base import Folded
from celmut.cel.costs import json_nbytes
from celmut.compile.compiled import CompiledExpression, CompiledPolicy
from celmut.compile.result_shapes import Shape
from celmut.jsonutil import PointerTokens
from celmut.runtime import decode, go_convert, mutations
from celmut.runtime.failures import DecodeFailure, MergeError, MutationError, PolicyFailure
from celmut.runtime.options import AdmissionOptions
from celmut.runtime.schemas import Schema
from celmut.runtime.semantics import Semantics
from celmut.runtime.typed import node_of as typed_node_of
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
    pointers: PointerTokens | None = None,
) -> dict[str, Any]:
    """Evaluate one mutation against ``obj`` and apply it; a failed JSONPatch ``test`` leaves
    ``obj`` unchanged and adds a note. ``encoded`` remembers, for the request, which objects are
    already in the API server's encoding; ``claims`` (when explaining) receives the pointers the
    mutation writes, whether or not their values change; ``pointers``: the engine's JSONPatch paths,
    each split and decoded once."""
    activation.with_object(obj)
    program = mutation.program
    try:
        result = program.evaluate(activation)
    except cel.CelError as ex:
        raise expression_error(mutation, ex) from None
    folded = program.folded
    literal = _literal(folded, mutation.patch_type) if folded is not None and result is folded.value else None
    size = literal.nbytes if literal is not None else json_nbytes(result)  # before anything walks it
    if size > options.max_object_bytes:
        limit = options.max_object_bytes
        raise PolicyFailure(mutation.path, f"the result is about {size} bytes of JSON, over the limit of {limit}")
    if claims is not None:
        claims += mutations.written_pointers(mutation.patch_type, result)
    schemas = options.schemas
    # A MutatingAdmissionPolicy's mutation works on the Go object of a built-in kind: encoded
    # before, decoded (strictly) and re-encoded after (runtime/decode.py). Kyverno patches the
    # JSON it received, and custom resources stay unstructured: both are left as they are.
    typed = (
        schemas.typed_schema(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if semantics.decodes_builtin_kinds
        else None
    )
    try:
        source = obj
        if typed is not None:
            encoded = encoded or decode.EncodedObjects()
            source = encoded.encode(obj, typed)
        if mutation.patch_type == "JSONPatch":
            operations = literal.operations() if literal is not None else _operations(result)
            patched = mutations.apply_json_patch(source, operations, pointers)
            if typed is not None:
                problem = decode.decode_error(patched, typed, previous=source)
                if problem is not None:
                    raise DecodeFailure(mutation.path, f"Internal error occurred: {problem}")
        else:
            plain = literal.configuration(mutation.shape) if literal is not None else None
            if plain is None:
                check_type_names([result])
            schema = schemas.for_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
            replace_atomic = policy.use_server_side_apply
            checked = False
            if literal is not None and plain is not None and schema is not None:
                literal.check(plain, schema, replace_atomic)  # typed once per schema; a failure raises each time
                checked = True
            patched = mutations.apply_object(
                source,
                result,
                schema,
                replace_atomic=replace_atomic,
                shape=mutation.shape,
                plain=plain,
                checked=checked,
            )
            if typed is not None:
                patched = _to_go_type(patched, typed, source)
        if typed is None:
            return patched
        assert encoded is not None
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


def _to_go_type(merged: dict[str, Any], schema: Schema, source: dict[str, Any]) -> dict[str, Any]:
    """The merged object converted to the built-in kind's Go type (the MAP dispatcher's
    ``ConvertToVersion``, :mod:`celmut.runtime.go_convert`); a failure is a plain error, which the
    failurePolicy decides."""
    try:
        converted: dict[str, Any] = go_convert.convert(merged, typed_node_of(schema), source)
    except go_convert.ConversionError as ex:
        group, _, version = str(merged.get("apiVersion", "")).rpartition("/")
        gvk = f"{group}/{version}, Kind={merged.get('kind', '')}"
        raise MutationError(f"unable to convert unstructured object to {gvk}: {ex}") from None
    return converted


def _operations(result: Any) -> list[dict[str, Any]]:
    """A JSONPatch result's operations, its typed values' names checked first (as the API server does)."""
    check_type_names(json_patch_values(result))
    return mutations.patch_operations(result)


class _Literal:
    """What a literal mutation result (``[JSONPatch{op: "add", path: "/x", value: 1}]``, folded once by
    the CEL engine) gives every request alike, worked out at its first use: its size, and its checked
    operations or plain ApplyConfiguration. What fails is not kept: it fails again, as any result does."""

    __slots__ = ("_checked", "_configuration", "_operations", "nbytes", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.nbytes = json_nbytes(value)
        self._operations: list[dict[str, Any]] | None = None
        self._configuration: dict[str, Any] | None = None
        self._checked: list[tuple[Schema, bool]] = []  # (schema, replace_atomic) the configuration fits

    def check(self, plain: dict[str, Any], schema: Schema, replace_atomic: bool) -> None:
        """:func:`~celmut.runtime.mutations.check_configuration` of the configuration, kept once it passes
        for a schema (a literal's typing never changes; the schema lives as long as the policy set)."""
        for known, replace in self._checked:
            if known is schema and replace == replace_atomic:
                return
        try:
            mutations.check_configuration(plain, schema, replace_atomic=replace_atomic)
        except MergeError as ex:
            raise MutationError(f"error applying patch: {ex}") from None
        self._checked.append((schema, replace_atomic))

    def operations(self) -> list[dict[str, Any]]:
        if self._operations is None:
            self._operations = _operations(self.value)
        return self._operations

    def configuration(self, shape: Shape) -> dict[str, Any] | None:
        """The plain ApplyConfiguration (None: not one the merge takes; apply_object then says why);
        ``shape``: the mutation's, the same for every request."""
        if self._configuration is None:
            plain = mutations.plain_configuration(self.value, shape)
            if plain is None:
                return None
            check_type_names([self.value])
            self._configuration = plain
        return self._configuration


def _literal(folded: Folded, patch_type: str) -> _Literal:
    literal: _Literal | None = folded.derived.get(patch_type)
    if literal is None:
        literal = folded.derived[patch_type] = _Literal(folded.value)
    return literal
