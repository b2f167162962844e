"""JSON-mode MutatingPolicies on JSON documents: Kyverno's JSON document mutation, as a pure function.

A document is any JSON value (object, array, string, number, boolean or null); it has no request,
namespace or schema. Policies run once each, in the order given, each on the document the previous one
produced (``kyverno apply --json``, a Test's ``jsonPayloads``). Per policy, as the Kyverno design
specifies (``docs/proposals/json-document-mutation.md`` in kyverno/kyverno, "Field and expression
contract" and "Patch semantics, atomicity, and limits"; CLI side:
``cmd/cli/kubectl-kyverno/processor/json.go``):

* a PolicyException naming the policy whose conditions hold skips it (partial ones fill
  ``exceptions``);
* a false match condition skips it;
* its JSONPatch mutations apply in order; a failed ``test`` rolls back the whole policy, which is then
  skipped; any other error stops the run: the result has no final document, and the error outcome is
  the last one;
* ``DocumentOutcome.document`` is the document after that policy, which Kyverno's tests compare with
  ``patchedResources``.

Integers keep their precision (Python integers); JSON equality of numbers is Python's (``1 == 1.0``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from celmut import cel
from celmut.compile.compiled import CompiledException, CompiledPolicy
from celmut.runtime import mutations
from celmut.runtime.failures import MutationError, PolicyFailure

DocumentStatus = Literal["applied", "unchanged", "skipped", "error"]


@dataclass(frozen=True)
class DocumentOutcome:
    """What one policy did to the document; ``document`` is the document after it (the input, when
    it was skipped; absent, ``None`` with ``status == "error"``)."""

    policy: CompiledPolicy
    status: DocumentStatus
    reason: str = ""
    document: Any = None
    exceptions: tuple[str, ...] = ()


@dataclass(frozen=True)
class DocumentResult:
    outcomes: tuple[DocumentOutcome, ...]
    document: Any = None  # the final document; None with ``error`` set (a JSON null is a valid document)
    error: str = ""


def mutate_document(
    policies: Sequence[CompiledPolicy],
    document: Any,
    exceptions: Iterable[CompiledException] = (),
    services: cel.Services | None = None,
    *,
    kubernetes_mode: bool = False,
) -> DocumentResult:
    """Run the JSON-mode ``policies`` on ``document``, which is not modified. With
    ``kubernetes_mode`` the other MutatingPolicies run on it too, without their matchConstraints:
    the Kyverno CLI's older single ``jsonPayload`` (processor/policy_processor.go at the commit that
    added test/cli/test-mutating-policy/json-payload: ``celengine.RequestFromJSON``)."""
    outcomes: list[DocumentOutcome] = []
    excepting = list(exceptions)
    current = document
    for policy in policies:
        if not policy.json_mode and not kubernetes_mode:
            reason = "Kubernetes-mode MutatingPolicy skipped for JSON document; set spec.evaluation.mode to JSON"
            outcomes.append(DocumentOutcome(policy, "skipped", reason, current))
            continue
        outcome = _run(policy, current, excepting, services)
        outcomes.append(outcome)
        if outcome.status == "error":
            return DocumentResult(tuple(outcomes), None, f"{policy.display_name}: {outcome.reason}")
        current = outcome.document
    return DocumentResult(tuple(outcomes), current)


def _activation(
    policy: CompiledPolicy | None, document: Any, services: cel.Services | None, **extra: Any
) -> cel.Activation:
    return cel.Activation(object=document, variables=policy.variables if policy else None, services=services, **extra)


def _run(
    policy: CompiledPolicy, document: Any, exceptions: list[CompiledException], services: cel.Services | None
) -> DocumentOutcome:
    applied: list[str] = []
    allowed_images: tuple[str, ...] = ()
    allowed_values: tuple[str, ...] = ()
    for exception in sorted(
        (e for e in exceptions if e.refers_to(policy.name, policy.kind)), key=lambda e: -e.priority
    ):
        try:
            holds = all(
                c.program.evaluate(_activation(None, document, services)) is True for c in exception.match_conditions
            )
        except cel.CelError:
            holds = False  # an exception whose conditions fail to evaluate does not apply (as admission)
        if not holds:
            continue
        name = f"{exception.namespace}/{exception.name}" if exception.namespace else exception.name
        applied.append(name)
        if not exception.is_partial:
            return DocumentOutcome(policy, "skipped", f"PolicyException {name}", document, tuple(applied))
        allowed_images += exception.images
        allowed_values += exception.allowed_values
    variable = {"allowedImages": list(allowed_images), "allowedValues": list(allowed_values)}
    try:
        activation = _activation(policy, document, services, exceptions=variable)
        for condition in policy.match_conditions:
            value = _evaluate(condition.program, condition.path, activation)
            if value is False:
                return DocumentOutcome(policy, "skipped", f"matchCondition {condition.name} is false", document)
            if value is not True:
                raise PolicyFailure(condition.path, f"must evaluate to bool, got {type(value).__name__}")
        current = document
        for mutation in policy.mutations:
            activation.with_object(current)
            result = _evaluate(mutation.program, mutation.path, activation)
            try:
                if mutation.patch_type == "ApplyConfiguration":  # a Kubernetes-mode policy on an object
                    if not isinstance(current, dict):
                        raise MutationError("an ApplyConfiguration needs an object document")
                    current = mutations.apply_object(current, result, None, replace_atomic=False)
                    continue
                current = mutations.patch_document(current, mutations.patch_operations(result), any_root=True)
            except mutations.TestFailed as failed:  # the whole policy is rolled back
                return DocumentOutcome(policy, "skipped", f"{mutation.path}: {failed}", document, tuple(applied))
            except MutationError as ex:
                raise PolicyFailure(mutation.path, str(ex)) from None
    except PolicyFailure as failure:
        return DocumentOutcome(policy, "error", f"{failure.path}: {failure.message}", None, tuple(applied))
    except cel.CelError as ex:  # the activation refused the document (over the size limit)
        return DocumentOutcome(policy, "error", str(ex), None, tuple(applied))
    status: DocumentStatus = "unchanged" if current == document else "applied"
    return DocumentOutcome(
        policy, status, "JSON document mutated" if status == "applied" else "", current, tuple(applied)
    )


def _evaluate(program: Any, path: str, activation: cel.Activation) -> Any:
    try:
        return program.evaluate(activation)
    except cel.CelError as ex:
        raise PolicyFailure(path, str(ex)) from None
