"""The admission engine: a pure function of request + compiled policies + lookups.

For each policy, in the documented order (MutatingAdmissionPolicies, MutatingPolicies,
NamespacedMutatingPolicies, each by name; autogen variants after their policy), the object as
mutated so far goes through:

1. ``matchConstraints`` (namespaceSelector, objectSelector, exclusions, resource rules);
2. PolicyExceptions (Kyverno), then ``matchConditions`` — the first ``false`` skips the policy; an
   error with no ``false`` is a policy error;
3. the mutations in order, each seeing the object as patched so far (``request.object`` keeps the
   incoming object), with variables evaluated lazily and memoised;
4. audit annotations.

Steps 2–4 (and the precheck of 1) are :class:`celmut.runtime.evaluate.PolicyEvaluator`'s, which the
mutateExisting pass shares; this module orders the policies, stops at a denial, reinvokes, and
bounds and stamps the final patch.

Errors follow each kind's own semantics. **MutatingPolicy**: any error discards that policy's whole
result; ``failurePolicy: Fail`` denies the request, ``Ignore`` keeps the other policies' changes.
**MutatingAdmissionPolicy**: ``Ignore`` skips only the failing mutation and the next ones still
apply; ``Fail`` denies. A MutatingAdmissionPolicy with ``reinvocationPolicy: IfNeeded`` runs a
second time, after the first pass, when the object changed — as kube-apiserver reinvokes it.

Sizes: a mutation whose result would unfold to more than ``max_object_bytes`` of JSON (values may
share their parts, so it is measured without unfolding) fails like any other error, and so does a
final patch over that size: the API server stores no object larger than its request limit (3 MiB,
``MaxRequestBodyBytes`` in k8s.io/apiserver; etcd's own default is 1.5 MiB, ``--max-request-bytes``).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import orjson

from celmut import cel
from celmut.cel.costs import json_nbytes
from celmut.compile.compiled import CompiledException, CompiledPolicy, CompiledPolicySet
from celmut.jsonutil import PointerTokens
from celmut.runtime import matching
from celmut.runtime.candidates import ExceptionIndex, PolicyIndex, admits, request_key
from celmut.runtime.context import RequestContext
from celmut.runtime.evaluate import PolicyEvaluator
from celmut.runtime.mutated_by import Recorder
from celmut.runtime.options import AdmissionOptions
from celmut.runtime.patch import diff
from celmut.runtime.request import AdmissionInput
from celmut.runtime.results import AdmissionResult, PolicyOutcome, outcome_maker
from celmut.runtime.shared import SharedExpressions

__all__ = ["AdmissionEngine", "AdmissionOptions"]


def _json_size(patch: list[dict[str, Any]]) -> int:
    """The length of the patch's JSON: orjson's encoding is faster than :func:`json_nbytes`' walk, and safe
    here (every value came through a mutation whose size was bounded, so nothing unfolds); a value
    orjson cannot encode (bytes, a CEL type) is measured."""
    try:
        return len(orjson.dumps(patch))
    except TypeError:
        return json_nbytes(patch)


#: (policy, the maker of its outcome when its kind alone leaves it out, whether its kind alone chose it)
Step = tuple[CompiledPolicy, "Callable[[], PolicyOutcome] | None", bool]
MAX_STEP_PLANS = 4096  # kinds of request × webhook groups remembered (as PolicyIndex's plans)


class AdmissionEngine:
    """Evaluates admission requests against a fixed set of compiled policies."""

    def __init__(
        self,
        policies: CompiledPolicySet | Sequence[CompiledPolicy],
        exceptions: Iterable[CompiledException] = (),
        options: AdmissionOptions | None = None,
    ) -> None:
        if isinstance(policies, CompiledPolicySet):
            exceptions = list(exceptions) + policies.exceptions
            policies = policies.policies
        # JSON-mode MutatingPolicies mutate documents (runtime/documents.py), never admission requests.
        self.policies = sorted((p for p in policies if not p.json_mode), key=lambda p: p.order_key)
        self.exceptions = list(exceptions)
        self.options = options or AdmissionOptions()
        self.index = PolicyIndex([p for p in self.policies if admits(p)])
        # decided by the request's kind alone: visited through the index (report_unselected off) they match
        matched_by_kind = [p for p in self.index.policies if matching.decided_by_kind(p.match)]
        self._exception_index = ExceptionIndex(self.exceptions)
        shared = SharedExpressions(p for p in self.policies if admits(p) or p.mutate_existing)
        self.evaluator = PolicyEvaluator(self.options, self._exception_index, matched_by_kind, shared)
        # Of those, the ones a request whose kind they do not name skips for that reason alone, unless it
        # is a ReplicaSet its Deployment controls or comes from celmut's background controller (the
        # prechecks before the kind's, PolicyEvaluator._precheck; a NamespacedMutatingPolicy checks its
        # namespace first): reporting every policy (report_unselected), their outcome is made without a visit.
        # Each maps to its outcome's maker, its fields bound once: with autogen, most of a Pod request's
        # outcomes are these (40 of 60 for 20 policies), and a call with keywords costs 3× a bound one.
        self._unselected_by_kind: dict[int, Callable[[], PolicyOutcome]] = {
            id(p): unselected_maker(p) for p in matched_by_kind if p.kind != "NamespacedMutatingPolicy"
        }
        self._step_memo: dict[tuple[Any, str | None, bool], Sequence[Step]] = {}
        opted_in = frozenset(p.display_name for p in self.policies if p.record_provenance)
        self._recorder = Recorder(self.options.record_provenance, opted_in)

    # --- public ------------------------------------------------------------------------------------

    @property
    def pointer_tokens(self) -> PointerTokens:
        """The JSON pointers this engine's patches hold, each split once (for whoever walks them
        again: the webhook's audit annotations)."""
        return self.evaluator.pointers

    def admit(
        self,
        request: AdmissionInput,
        budget: cel.Budget | None = None,
        *,
        services: cel.Services | None = None,
        failure_policy: str | None = None,
        explain: bool = False,
    ) -> AdmissionResult:
        """Run every admission-enabled policy on ``request``.

        ``services`` replaces the engine's lookups for this request (a dry-run request gets ones
        without side effects); ``failure_policy`` restricts the run to the policies with that
        failurePolicy (one webhook per failurePolicy, as Kyverno registers them); ``explain`` keeps,
        for each applied policy, the object after each of its mutations (``PolicyOutcome.steps``),
        which :mod:`celmut.runtime.provenance` turns into who changed which field.
        """
        budget = budget or cel.Budget.with_timeout(self.options.timeout_seconds)
        original = request.object
        if self.options.opt_out is not None and self.options.opt_out(request.subject):
            return AdmissionResult.unchanged(original)  # opted out through its owners
        current = original
        outcomes: list[PolicyOutcome] = []
        warnings: list[str] = []
        audit: dict[str, str] = {}
        context = RequestContext(
            self.options, request, budget, services or self.options.services, explain=explain,
            shared=self.evaluator.shared.memo(),
        )  # fmt: skip
        reinvoke: list[CompiledPolicy] = []
        clock, evaluate, append = time.perf_counter, self.evaluator.admit, outcomes.append  # per policy
        started = clock()
        spent = budget.spent  # each outcome's CEL cost: what the budget lost since the previous one
        background = request.user_info.get("username") in self.options.background_usernames
        by_kind_decides = not (context.controlled_replicaset or background)
        for policy, unselected, by_kind in self._steps(request, failure_policy, by_kind_decides):
            if unselected is not None:
                append(unselected())  # skipped: nothing evaluated (its time and cost stay 0), nothing to look at
                continue
            for outcome, mutated in evaluate(policy, context, current, by_kind):
                current = mutated
                finished = clock()  # each outcome's time runs from the previous one's end
                outcome.seconds = finished - started
                started = finished
                outcome.cost, spent = budget.spent - spent, budget.spent
                append(outcome)
                if outcome.status == "error":
                    if outcome.failure_policy == "Fail":
                        return AdmissionResult.denied(
                            original, outcomes, outcome.message, warnings=warnings, audit_annotations=audit
                        )
                    warnings.append(f"{outcome.message} (ignored: failurePolicy Ignore)")
                if outcome.audit_annotations:
                    audit.update(outcome.audit_annotations)
                if policy.reinvocation_policy == "IfNeeded" and outcome.matched and policy not in reinvoke:
                    reinvoke.append(policy)
        if reinvoke and current is not original and current != original:
            for policy in reinvoke:
                for outcome, mutated in self.evaluator.admit(policy, context, current):
                    current = mutated
                    outcome.reinvoked = True
                    outcome.cost, spent = budget.spent - spent, budget.spent
                    outcomes.append(outcome)
                    if outcome.status == "error" and outcome.failure_policy == "Fail":
                        return AdmissionResult.denied(
                            original, outcomes, outcome.message, warnings=warnings, audit_annotations=audit
                        )
        return self._result(original, current, outcomes, warnings, audit)

    def _result(
        self,
        original: dict[str, Any] | None,
        current: dict[str, Any] | None,
        outcomes: list[PolicyOutcome],
        warnings: list[str],
        audit: dict[str, str],
    ) -> AdmissionResult:
        """The request's patch, bounded in size, and stamped with provenance when that is on."""
        patch = diff(original, current) if original is not None and current is not original else []
        size = _json_size(patch) if patch else 0
        if size > self.options.max_object_bytes:
            message = f"the patch is about {size} bytes, over the limit of {self.options.max_object_bytes} bytes"
            if any(o.status == "applied" and o.failure_policy == "Fail" for o in outcomes):
                return AdmissionResult.denied(original, outcomes, message, warnings=warnings, audit_annotations=audit)
            warnings.append(f"{message} (ignored: failurePolicy Ignore)")
            return AdmissionResult.unchanged(original, outcomes, warnings=warnings, audit_annotations=audit)
        if patch and self._recorder.active and current is not None:
            stamped = self._recorder.record(current, outcomes, patch)
            if stamped is not current:  # one more operation after the policies' (a valid RFC 6902 sequence)
                patch += diff(current, stamped)
                current = stamped
        return AdmissionResult(
            allowed=True,
            original=original,
            object=current,
            patch=patch,
            outcomes=outcomes,
            warnings=warnings,
            audit_annotations=audit,
        )

    def _steps(self, request: AdmissionInput, failure_policy: str | None, by_kind_decides: bool) -> Sequence[Step]:
        """The policies to consider, in order (:meth:`_plan`), each with the maker of its outcome when its
        kind alone leaves it out, and whether its kind alone chose it (see :attr:`_unselected_by_kind`;
        ``by_kind_decides`` is false for a controlled ReplicaSet or the background controller's request).
        Worked out once per kind of request: a Pod request walks 60 with autogen on."""
        memo_key = (request_key(request), failure_policy, by_kind_decides)
        steps = self._step_memo.get(memo_key)
        if steps is None:
            makers = self._unselected_by_kind if by_kind_decides else {}
            steps = tuple(
                (policy, None if selected else makers.get(id(policy)), id(policy) in makers)
                for policy, selected in self._plan(request, failure_policy)
            )
            if len(self._step_memo) < MAX_STEP_PLANS:  # concurrent misses compute the same answer
                self._step_memo[memo_key] = steps
        return steps

    def _plan(self, request: AdmissionInput, failure_policy: str | None) -> Iterable[tuple[CompiledPolicy, bool]]:
        """The admission policies to consider, in order (``failure_policy``: only those of that webhook
        group), each with whether its resource rules name this kind of request: the candidates alone,
        unless the engine reports every policy's outcome."""
        key = request_key(request)
        if not self.options.report_unselected:
            return zip(self.index.candidates(key, failure_policy), itertools.repeat(True))
        return self.index.plan(key, failure_policy)


def unselected_maker(policy: CompiledPolicy) -> Callable[[], PolicyOutcome]:
    """What makes the outcome of a policy whose resource rules do not name the request's kind, when
    nothing but its kind decides (:attr:`AdmissionEngine._unselected_by_kind`): what the evaluator's
    ``matchConstraints`` precheck answers. A new outcome each time (a result's outcomes are its own)."""
    return outcome_maker(
        policy=policy.display_name, kind=policy.kind, status="skipped", reason=matching.NO_RULE_MATCHES,
        failure_policy=policy.failure_policy, cause="matchConstraints", cause_name=_RULES_FIELD,
    )  # fmt: skip


_RULES_FIELD = matching.REASON_FIELDS[matching.NO_RULE_MATCHES]
