"""One policy on one object: precheck → exceptions → conditions → mutations → an outcome.

The one per-policy pipeline of celmut, as Kyverno runs admission and background through one
``handlePolicy``: :class:`~celmut.runtime.engine.AdmissionEngine` calls :meth:`PolicyEvaluator.admit`
for each policy of a request, and :mod:`celmut.runtime.mutate_existing` calls
:meth:`PolicyEvaluator.mutate_target` for each target of a mutateExisting policy. What differs
between the two is a :class:`Pass`; what differs between Kyverno's and Kubernetes' policies is a
:class:`~celmut.runtime.semantics.Semantics`. Each evaluation ends in a
:class:`~celmut.runtime.results.PolicyOutcome` (applied, unchanged, skipped or excepted with a cause,
or error with :attr:`~celmut.runtime.results.PolicyOutcome.message`) — what reports, metrics and
traces are made of.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from celmut import cel
from celmut.compile.compiled import CompiledBinding, CompiledExpression, CompiledPolicy
from celmut.jsonutil import PointerTokens
from celmut.runtime import matching, ownership, semantics
from celmut.runtime.candidates import ExceptionIndex, RequestKey, may_select, request_key
from celmut.runtime.context import RequestContext
from celmut.runtime.exception_match import ExceptionMatch, match_exceptions
from celmut.runtime.failures import DecodeFailure, ParamError, PolicyFailure
from celmut.runtime.mutation_step import apply_mutation, expression_error
from celmut.runtime.options import AdmissionOptions
from celmut.runtime.params import resolve_params
from celmut.runtime.results import Cause, MutationStep, PolicyOutcome, Status, outcome_maker
from celmut.runtime.semantics import Semantics
from celmut.runtime.shared import SharedExpressions, SharedValues

__all__ = ["ADMISSION", "MUTATE_EXISTING", "MUTATE_LISTED", "Evaluation", "Pass", "PolicyEvaluator", "condition_reason"]


# A policy's outcome and the object after it (the one it received, unless it applied): a plain pair,
# made for every policy of every request (a NamedTuple costs ~0.2 µs more to make: ~2% of a request
# whose six candidate policies are skipped by their matchConditions).
Evaluation = tuple[PolicyOutcome, dict[str, Any] | None]


@dataclass(frozen=True)
class Pass:
    """What differs between admitting a request and mutating an existing target (mutateExisting)."""

    conditions: str  # the CompiledPolicy field of the conditions that gate the mutations
    condition_cause: Cause  # the cause of a skip by one of them
    needs_request_object: bool  # DELETE/CONNECT requests carry no object to admit; a target is the object
    audits: bool  # auditAnnotations belong to admission
    keeps_notes: bool  # an outcome's reason lists the mutations that did not take effect (a failed ``test``)
    changed_steps: bool  # always record the mutations that changed the object (the controller's patch list)
    own_conditions: bool = False  # the policy's matchConditions gate the mutations first (a target it listed)


ADMISSION = Pass("match_conditions", "matchCondition", True, True, True, False)
MUTATE_EXISTING = Pass("target_match_conditions", "targetMatchCondition", False, False, False, True)
# A target listed by the policy's own matchConstraints on a pass with no trigger (the policy was created or
# changed, a periodic scan): the target is what the policy matches, so its matchConditions decide too —
# where Kyverno skips them (kyverno/kyverno#17411, open; docs/policies/mutate-existing.md)
MUTATE_LISTED = Pass("target_match_conditions", "targetMatchCondition", False, False, False, True, own_conditions=True)
_NOT_SKIPPED: tuple[Cause, str] = ("", "")
_MAX_KIND_ANSWERS = 1 << 14  # PolicyEvaluator._selects: (policy, request kind) answers remembered


def condition_reason(condition: CompiledExpression, field: str = "matchCondition") -> str:
    return f"{field} {condition.name!r} is false"


def false_condition(
    conditions: Sequence[CompiledExpression], activation: cel.Activation, shared: SharedValues | None = None
) -> CompiledExpression | None:
    """The first condition that is false (None when all are true); raises when one errs and none is
    false, as Kubernetes' matchConditions do. ``shared``: the request's values of the conditions several
    policies share (:mod:`celmut.runtime.shared`)."""
    error: PolicyFailure | None = None
    for condition in conditions:
        try:
            if shared is None:
                value = condition.program.evaluate(activation)
            else:
                value = shared.evaluate(condition.program, activation)
        except cel.CelError as ex:
            error = error or expression_error(condition, ex)
            continue
        if value is False:
            return condition
        if value is not True:
            error = error or PolicyFailure(condition.path, f"must evaluate to bool, got {type(value).__name__}")
    if error is not None:
        try:
            raise error
        finally:
            error = None  # no cycle frame -> error -> traceback -> frame (its garbage holds the request)
    return None


def _outcome(policy: CompiledPolicy, status: Status, reason: str = "", **extra: Any) -> PolicyOutcome:
    if status == "error":
        extra.setdefault("cause", "error")
    name, failure_policy = policy.display_name, policy.failure_policy
    return PolicyOutcome(name, policy.kind, status, reason, failure_policy=failure_policy, **extra)


class PolicyEvaluator:
    """Evaluates one compiled policy at a time, with an engine's options and PolicyExceptions."""

    def __init__(
        self,
        options: AdmissionOptions,
        exceptions: ExceptionIndex,
        matched_by_kind: Sequence[CompiledPolicy] = (),
        shared: SharedExpressions | None = None,
    ) -> None:
        self.options = options
        self._exceptions = exceptions
        self._any_exception = bool(exceptions)  # most clusters: none, and the hot path skips them
        self.shared = shared or SharedExpressions(())  # the expressions several policies carry
        self.pointers = PointerTokens()  # the JSONPatch paths the policies write, each split once
        # what makes the outcome of a skip by each false condition (its prose made once, its fields passed
        # by position): (id(policy), id(condition), cause, binding) -> (policy, condition, maker), the two
        # held so that their ids stay theirs; bounded by the policies loaded
        self._skips: dict[
            tuple[int, int, str, str], tuple[CompiledPolicy, CompiledExpression, Callable[[], PolicyOutcome]]
        ] = {}
        # matched by the request's kind alone (matching.decided_by_kind): when chosen by a PolicyIndex
        # (report_unselected off) they match whatever the object says; else the kind is checked alone
        self._matched_by_kind = frozenset(id(p) for p in matched_by_kind)
        # … and of those, the ones nothing but the ReplicaSet filter can still keep from a request the index
        # chose them for (not namespaced, not skipping the background controller's requests)
        self._chosen_by_kind_alone = frozenset(
            () if options.report_unselected
            else (
                id(p) for p in matched_by_kind
                if p.kind != "NamespacedMutatingPolicy" and not p.skip_background_requests
            )
        )  # fmt: skip
        # (policy id, request key) -> may_select, for those policies: keys are the resources an API
        # server serves (a bounded set), and at most _MAX_KIND_ANSWERS are remembered
        self._selects_kind: dict[tuple[int, RequestKey], bool] = {}

    def context(self, request: Any) -> RequestContext:
        """A fresh per-request context with the options' budget (one per trigger or target)."""
        return RequestContext.for_request(self.options, request, self.shared.memo())

    # --- admission -----------------------------------------------------------------------------------

    def admit(
        self, policy: CompiledPolicy, context: RequestContext, current: dict[str, Any] | None, chosen: bool = False
    ) -> Iterable[Evaluation]:
        """``policy`` on one admission request: one evaluation, or one per binding and param object
        (evaluated one at a time, as the caller consumes them: it stops at a denial). ``chosen``: the
        caller's index chose it by the request's kind, and nothing else could skip it before its
        conditions (decided by kind, not namespaced, neither a controlled ReplicaSet nor a request of
        the background controller)."""
        how = semantics.of(policy)
        cause, skip = _NOT_SKIPPED if chosen else self._precheck(policy, how, context)
        if skip:
            return ((_skipped_by_match(policy, cause, skip), current),)
        if how.binds:
            return self._bindings(policy, how, context, current)
        return (self._evaluate(policy, how, ADMISSION, context, current),)

    def _precheck(self, policy: CompiledPolicy, how: Semantics, context: RequestContext) -> tuple[Cause, str]:
        """Why the policy does not see this request at all (cause, prose), or ("", "")."""
        if id(policy) in self._chosen_by_kind_alone:  # only the ReplicaSet filter is left to check
            if how.filters_controlled_replicasets and context.controlled_replicaset:
                return "controlledReplicaSet", context.controlled_replicaset
            return "", ""
        request = context.request
        if policy.kind == "NamespacedMutatingPolicy" and request.namespace != policy.namespace:
            return "namespace", f"NamespacedMutatingPolicy applies only in namespace {policy.namespace!r}"
        if how.filters_controlled_replicasets and context.controlled_replicaset:
            return "controlledReplicaSet", context.controlled_replicaset
        if policy.skip_background_requests and request.user_info.get("username") in self.options.background_usernames:
            return "backgroundRequest", "request from celmut's background controller (skipBackgroundRequests)"
        if id(policy) in self._matched_by_kind:
            if not self.options.report_unselected:
                return "", ""  # PolicyIndex.candidates chose it by the request's kind, and nothing else constrains it
            # the kind decides alone (matching.decided_by_kind): match_reason without its selector walks
            if self._selects(policy, request_key(request)):
                return "", ""
            return "matchConstraints", matching.NO_RULE_MATCHES
        reason = matching.match_reason(policy.match, request, context.namespace_labels())
        return ("matchConstraints", reason) if reason else ("", "")

    def _selects(self, policy: CompiledPolicy, key: RequestKey) -> bool:
        memo_key = (id(policy), key)
        selects = self._selects_kind.get(memo_key)
        if selects is None:
            selects = may_select(policy.match, key)
            if len(self._selects_kind) < _MAX_KIND_ANSWERS:  # concurrent misses compute the same answer
                self._selects_kind[memo_key] = selects
        return selects

    def _bindings(
        self, policy: CompiledPolicy, how: Semantics, context: RequestContext, current: dict[str, Any] | None
    ) -> Iterator[Evaluation]:
        """A MutatingAdmissionPolicy through each of its bindings, in name order, and their params."""
        if not policy.bindings:
            reason = "no MutatingAdmissionPolicyBinding refers to this policy"
            yield (_outcome(policy, "skipped", reason, cause="noBinding"), current)
            return
        for binding in policy.bindings:
            if binding.match is not None:
                reason = matching.match_reason(binding.match, context.request, context.namespace_labels())
                if reason:
                    yield (_skipped_by_match(policy, "matchConstraints", reason, binding.name), current)
                    continue
            try:
                param_sets = self._params(policy, binding, context)
            except ParamError as ex:
                if ex.allow:
                    skipped = _outcome(policy, "skipped", str(ex), binding=binding.name, cause="paramNotFound")
                    yield (skipped, current)
                else:
                    yield (_outcome(policy, "error", str(ex), path="paramRef", binding=binding.name), current)
                continue
            for params in param_sets:
                evaluation = self._evaluate(policy, how, ADMISSION, context, current, params, binding.name)
                current = evaluation[1]
                yield evaluation

    def _params(self, policy: CompiledPolicy, binding: CompiledBinding, context: RequestContext) -> list[Any]:
        return list(resolve_params(policy, binding, context.request, context.services, self.options.schemas.kinds))

    # --- mutateExisting ------------------------------------------------------------------------------

    def mutate_target(
        self, policy: CompiledPolicy, context: RequestContext, target: dict[str, Any], stage: Pass = MUTATE_EXISTING
    ) -> tuple[PolicyOutcome, dict[str, Any] | None, list[MutationStep]]:
        """A mutateExisting policy on one target: the outcome, the mutated target (None unless it
        applied or changed nothing) and the mutations that changed it. ``stage``: :data:`MUTATE_LISTED`
        for a target the policy's own matchConstraints listed with no trigger."""
        how = semantics.of(policy)
        controlled = ownership.controlled_replicaset(target) if how.filters_controlled_replicasets else ""
        if controlled:
            return _outcome(policy, "skipped", controlled, cause="controlledReplicaSet"), None, []
        outcome, mutated = self._evaluate(policy, how, stage, context, target)
        if outcome.status == "applied":
            return outcome, mutated, list(outcome.steps or ())
        if outcome.status == "unchanged":
            outcome.steps = None
            return outcome, mutated, []
        return outcome, None, []

    def conditions_hold(self, policy: CompiledPolicy, context: RequestContext) -> bool:
        """Whether the request's object passes the policy's matchConditions (an error: it does not)."""
        activation = context.activation(policy, context.request.object)
        try:
            return false_condition(policy.match_conditions, activation, self._condition_memo(policy, context)) is None
        except PolicyFailure:
            return False

    def _condition_memo(self, policy: CompiledPolicy, context: RequestContext) -> SharedValues | None:
        """The request's memo of shared values, for a policy one of whose conditions is shared (else None:
        its conditions are evaluated directly, one lookup less each)."""
        memo = context.shared
        return memo if memo is not None and self.shared.shares_conditions(policy) else None

    # --- the pipeline --------------------------------------------------------------------------------

    def _evaluate(
        self,
        policy: CompiledPolicy,
        how: Semantics,
        stage: Pass,
        context: RequestContext,
        current: dict[str, Any] | None,
        params: Any = None,
        binding: str = "",
    ) -> Evaluation:
        """Exceptions → conditions → mutations → audit annotations, for a policy past its precheck."""
        exceptions: ExceptionMatch | None = None
        if how.honours_exceptions and self._any_exception:  # none loaded: the variable's default, as below
            exceptions = match_exceptions(self._exceptions, policy, context, current)
            if exceptions.skipped_by is not None:
                name = exceptions.skipped_by
                reason = f"PolicyException {name}"
                return (_outcome(policy, "excepted", reason, cause="exception", cause_name=name), current)
        variable = exceptions.variable() if exceptions is not None else None
        activation = context.activation(policy, current, params=params, exceptions=variable)
        cause = stage.condition_cause
        try:
            false = None
            if stage.own_conditions:
                false = false_condition(policy.match_conditions, activation, self._condition_memo(policy, context))
                cause = "matchCondition" if false is not None else cause
            if false is None:
                false = false_condition(
                    getattr(policy, stage.conditions), activation, self._condition_memo(policy, context)
                )
        except PolicyFailure as failure:
            if how.isolates_errors and policy.failure_policy == "Ignore":
                reason = f"match condition error ignored: {failure}"
                return (_outcome(policy, "skipped", reason, binding=binding, cause="error"), current)
            return (_outcome(policy, "error", failure.message, path=failure.path, binding=binding), current)
        if false is not None:  # the most common outcome of all: made by position, its maker made once
            known = self._skips.get((id(policy), id(false), cause, binding))
            if known is None:
                make = outcome_maker(
                    policy=policy.display_name, kind=policy.kind, status="skipped",
                    reason=condition_reason(false, cause), failure_policy=policy.failure_policy, binding=binding,
                    cause=cause, cause_name=false.name,
                )  # fmt: skip
                known = self._skips[(id(policy), id(false), cause, binding)] = (policy, false, make)
            return (known[2](), current)
        if stage.needs_request_object and (context.request.object is None or current is None):
            reason = how.no_object_reason(context.request)
            return (_outcome(policy, "skipped", reason, binding=binding, cause="noObject"), current)
        assert current is not None
        return self._mutate(policy, how, stage, context, activation, current, binding)

    def _mutate(
        self,
        policy: CompiledPolicy,
        how: Semantics,
        stage: Pass,
        context: RequestContext,
        activation: cel.Activation,
        current: dict[str, Any],
        binding: str,
    ) -> Evaluation:
        """The mutations in order, each on the object as the previous one left it; then the outcome."""
        result = current
        notes: list[str] = []
        steps: list[MutationStep] | None = [] if context.explain or stage.changed_steps else None
        try:
            for index in range(len(policy.mutations)):
                try:
                    result = self._step(policy, how, index, activation, result, notes, steps, context)
                except PolicyFailure as failure:
                    ignored = policy.failure_policy == "Ignore" and not isinstance(failure, DecodeFailure)
                    if how.isolates_errors and ignored:
                        notes.append(str(failure))  # only this mutation is skipped (failurePolicy Ignore)
                        continue
                    raise
            audit = self._audit(policy, activation) if stage.audits else {}
        except PolicyFailure as failure:
            error = _outcome(policy, "error", failure.message, path=failure.path, binding=binding)
            if how.isolates_errors:
                error.failure_policy = "Fail"  # reached only under Fail, or for a decode error (which always fails)
            return (error, current)
        reason = "; ".join(how.note_prefix + note for note in notes) if stage.keeps_notes else ""
        if stage.changed_steps and steps is not None:
            steps = [step for step in steps if step.after is not step.before and step.patch]
        extra: dict[str, Any] = {"binding": binding, "steps": steps}
        if context.explain and policy.variables:
            extra["variables"] = activation.variables.evaluated()
        if stage.audits:
            extra["audit_annotations"] = audit
        if result is current or result == current:
            return (_outcome(policy, "unchanged", reason, **extra), current)
        return (_outcome(policy, "applied", reason, before=current, after=result, **extra), result)

    def _step(
        self,
        policy: CompiledPolicy,
        how: Semantics,
        index: int,
        activation: cel.Activation,
        obj: dict[str, Any],
        notes: list[str],
        steps: list[MutationStep] | None,
        context: RequestContext,
    ) -> dict[str, Any]:
        """Apply mutation ``index``; when recording (``steps`` is a list), record what it did."""
        mutation = policy.mutations[index]
        claims: list[str] | None = [] if context.explain else None
        result = apply_mutation(
            self.options, how, policy, mutation, activation, obj, notes, context.encoded, claims, self.pointers
        )
        if steps is not None:
            steps.append(MutationStep(index, mutation.path, obj, result, tuple(claims or ())))
        return result

    @staticmethod
    def _audit(policy: CompiledPolicy, activation: cel.Activation) -> dict[str, str]:
        out: dict[str, str] = {}
        for annotation in policy.audit_annotations:
            try:
                value = annotation.program.evaluate(activation)
            except cel.CelError as ex:
                raise expression_error(annotation, ex) from None
            if value not in (None, ""):
                out[f"{policy.name}.{annotation.name}"] = str(value)
        return out


def _skipped_by_match(policy: CompiledPolicy, cause: Cause, reason: str, binding: str = "") -> PolicyOutcome:
    """Skipped before any CEL ran; for matchConstraints, ``cause_name`` names the field that did not match."""
    name = matching.REASON_FIELDS.get(reason, "") if cause == "matchConstraints" else ""
    prose = f"binding {binding}: {reason}" if binding else reason
    return _outcome(policy, "skipped", prose, cause=cause, cause_name=name, binding=binding)
