"""Whether one policy object may be stored: the answer of celmut's policy validating webhook.

Kyverno refuses an invalid policy before it is stored (its policy webhook, kyverno/kyverno
``pkg/webhooks/policy/handlers.go``: ``mpol.Validate`` for (Namespaced)MutatingPolicies, the
PolicyException's own ``Validate`` for exceptions), where celmut used to store it and say so afterwards
in the policy's status. celmut's webhook answers the same question with the one validation path every
other surface takes — the compile pipeline (:func:`celmut.compile.pipeline.compile_documents`: presets
expanded, the document parsed, every expression compiled) run on the one object — so a policy the
webhook admits is one the store loads, and the message is the one ``celmut apply`` and the status give.

The message is Kyverno's (``admissionutils.Response(uid, err, warnings...)``): the field errors as
``field.ErrorList.ToAggregate()`` prints them (:func:`celmut.policy.errors.kyverno_errors`), the same
errors repeated as warnings, as Kyverno returns them. Of a MutatingPolicy's expressions, as Kyverno's
compiler (``pkg/cel/policies/mpol/compiler/compiler.go`` ``Compile``) stops at the first part that fails
— variables, matchConditions, targetMatchConstraints.expression, targetMatchConditions, auditAnnotations,
then the mutations one by one — the errors of that part alone are given.

Where celmut checks more than Kyverno's webhook — a PolicyException's matchConditions, which Kyverno
compiles only with the policies it exempts (and then fails those policies) — the object is refused as
well, rather than stored to break later; a policy celmut would serve but cannot load is never admitted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from celmut.compile.pipeline import compile_documents
from celmut.policy.errors import FieldError, PolicyError, aggregate, kyverno_errors
from celmut.policy.mutating_policy import KINDS as MUTATING_POLICY_KINDS
from celmut.sources.documents import Document

# pkg/cel/policies/mpol/compiler/compiler.go ``Compile``: the order of the parts, each returning at its errors.
_COMPILE_ORDER = (
    "spec.variables",
    "spec.matchConditions",
    "spec.targetMatchConstraints.expression",
    "spec.targetMatchConditions",
    "spec.auditAnnotations",
    "spec.mutations",
)
_MUTATION = re.compile(r"^spec\.mutations\[(\d+)\]")


@dataclass(frozen=True)
class Verdict:
    """The webhook's answer: ``allowed``, and when not, Kyverno's message; ``warnings`` either way."""

    allowed: bool
    message: str = ""
    warnings: tuple[str, ...] = ()


def source_name(obj: Mapping[str, Any]) -> str:
    """How messages name an object under admission: ``admission:<Kind>/<namespace>/<name>``."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    namespace, name = str((meta or {}).get("namespace") or ""), str((meta or {}).get("name") or "")
    return f"admission:{obj.get('kind')}/" + (f"{namespace}/{name}" if namespace else name)


def _part(path: str) -> int | None:
    return next((i for i, prefix in enumerate(_COMPILE_ORDER) if path.startswith(prefix)), None)


def kyverno_selection(kind: str, errors: Sequence[FieldError]) -> list[FieldError]:
    """The errors Kyverno's compiler reports for a MutatingPolicy: of its expressions, only the first part
    that fails (and of the mutations, the first that fails); every other error as it is."""
    if kind not in MUTATING_POLICY_KINDS:
        return list(errors)
    compiled = [e for e in errors if _part(e.path) is not None]
    if not compiled:
        return list(errors)
    first = min(_part(e.path) or 0 for e in compiled)
    kept = [e for e in compiled if _part(e.path) == first]
    if _COMPILE_ORDER[first] == "spec.mutations":
        index = min(int(m.group(1)) for e in kept if (m := _MUTATION.match(e.path)))
        kept = [e for e in kept if (m := _MUTATION.match(e.path)) is not None and int(m.group(1)) == index]
    return kept + [e for e in errors if _part(e.path) is None]


def validate(
    obj: Mapping[str, Any], *, backend: str | None = None, preset_failure_policy: str | None = None
) -> Verdict:
    """Whether ``obj`` (a policy kind, or a preset) loads, compiled as the store compiles it."""
    source = source_name(obj)
    compilation = compile_documents(
        [Document(source, 0, dict(obj))], backend, preset_failure_policy=preset_failure_policy
    )
    kind = str(obj.get("kind") or "")
    prefixes = tuple(f"{source}: {kind} {name}: " for name in {str((obj.get("metadata") or {}).get("name") or "")})
    warnings = tuple(
        next((w.removeprefix(p) for p in prefixes if w.startswith(p)), w) for w in compilation.compiled.warnings
    )
    if not compilation.errors:
        return Verdict(True, warnings=warnings)
    messages: list[str] = []
    for error in compilation.errors:
        if isinstance(error, PolicyError) and error.errors:
            messages += kyverno_errors(kyverno_selection(error.kind, error.errors))
        else:
            messages.append(str(error))
    return Verdict(False, aggregate(messages), tuple(dict.fromkeys(messages)))
