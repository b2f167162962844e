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

import datetime
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from celmut import cel
from celmut.cel.activation import approximate_size
from celmut.cel.costs import json_nbytes
from celmut.cel.evalcontext import DEFAULT_TIMEOUT_SECONDS
from celmut.compile.compiled import CompiledException, CompiledExpression, CompiledPolicy, CompiledPolicySet
from celmut.runtime import decode, matching, mutations, ownership
from celmut.runtime.candidates import ExceptionIndex, PolicyIndex, admits, in_group, request_key
from celmut.runtime.failures import DecodeFailure, MutationError, ParamError, PolicyFailure
from celmut.runtime.mutated_by import Recorder
from celmut.runtime.params import resolve_params
from celmut.runtime.patch import diff
from celmut.runtime.request import AdmissionInput
from celmut.runtime.results import AdmissionResult, Cause, MutationStep, PolicyOutcome, Status
from celmut.runtime.schemas import SchemaRegistry
from celmut.runtime.typenames import check_type_names, json_patch_values


@dataclass
class AdmissionOptions:
    """What an :class:`AdmissionEngine` evaluates with; assembled by :mod:`celmut.service.assembly`."""

    services: cel.Services = field(default_factory=cel.Services)
    schemas: SchemaRegistry = field(default_factory=SchemaRegistry)  # also the kind ↔ resource table
    background_usernames: frozenset[str] = frozenset()  # skipBackgroundRequests: celmut's own identity
    timeout_seconds: float | None = DEFAULT_TIMEOUT_SECONDS
    max_input_bytes: int = 3 * 1024 * 1024
    opt_out: ownership.OptOut | None = None  # objects whose owners opted out of celmut (the webhook's label)
    max_object_bytes: int = 3 * 1024 * 1024  # a mutation result, and the final patch, at most
    record_provenance: bool = False  # every policy records itself in celmut.io/mutated-by (else only those opted in)
    # Outcomes (skipped) for the policies whose resource rules do not name the request's kind: the
    # CLI reports them; the webhook and the controller only visit candidates (runtime/candidates.py).
    report_unselected: bool = True


@dataclass
class ExceptionMatch:
    """What PolicyExceptions say about one policy on one request."""

    skipped_by: str | None = None
    allowed_images: tuple[str, ...] = ()
    allowed_values: tuple[str, ...] = ()

    def variable(self) -> dict[str, list[str]]:
        """The CEL ``exceptions`` variable."""
        return {"allowedImages": list(self.allowed_images), "allowedValues": list(self.allowed_values)}


def condition_reason(condition: CompiledExpression) -> str:
    return f"matchCondition {condition.name!r} is false"


def _json_size(patch: list[dict[str, Any]]) -> int:
    """The length of the patch's JSON: orjson's encoding is faster than :func:`json_nbytes`' walk, and safe
    here (every value came through a mutation whose size was bounded, so nothing unfolds); a value
    orjson cannot encode (bytes, a CEL type) is measured."""
    try:
        return len(orjson.dumps(patch))
    except TypeError:
        return json_nbytes(patch)


def _expression_error(expression: CompiledExpression | Any, error: cel.CelError) -> PolicyFailure:
    return PolicyFailure(expression.path, error.message)


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
        # visited only through the index (report_unselected off), these match whatever the object says
        self._matched_by_kind = frozenset(id(p) for p in self.index.policies if matching.decided_by_kind(p.match))
        self.exception_index = ExceptionIndex(self.exceptions)
        opted_in = frozenset(p.display_name for p in self.policies if p.record_provenance)
        self.recorder = Recorder(self.options.record_provenance, opted_in)

    # --- public ------------------------------------------------------------------------------------

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
            return AdmissionResult(True, original, original, [], [])  # opted out through its owners
        current = original
        outcomes: list[PolicyOutcome] = []
        warnings: list[str] = []
        audit: dict[str, str] = {}
        context = RequestContext(self, request, budget, services or self.options.services, explain=explain)
        reinvoke: list[CompiledPolicy] = []
        for policy in self._policies_for(request, failure_policy):
            started = time.perf_counter()
            for outcome, mutated in self._run(policy, context, current):
                current = mutated
                outcome.seconds = time.perf_counter() - started
                started = time.perf_counter()
                outcomes.append(outcome)
                if outcome.status == "error":
                    message = f"policy {outcome.policy}: {outcome.path}: {outcome.reason}".replace(": : ", ": ")
                    if outcome.failure_policy == "Fail":
                        return AdmissionResult(False, original, original, [], outcomes, message, warnings, audit)
                    warnings.append(f"{message} (ignored: failurePolicy Ignore)")
                audit.update(outcome.audit_annotations)
                if policy.reinvocation_policy == "IfNeeded" and outcome.matched and policy not in reinvoke:
                    reinvoke.append(policy)
        if reinvoke and current is not original and current != original:
            for policy in reinvoke:
                for outcome, mutated in self._run(policy, context, current):
                    current = mutated
                    outcome.reinvoked = True
                    outcomes.append(outcome)
                    if outcome.status == "error" and outcome.failure_policy == "Fail":
                        message = f"policy {outcome.policy}: {outcome.path}: {outcome.reason}"
                        return AdmissionResult(False, original, original, [], outcomes, message, warnings, audit)
        patch = diff(original, current) if original is not None and current is not original else []
        size = _json_size(patch) if patch else 0
        if size > self.options.max_object_bytes:
            message = f"the patch is about {size} bytes, over the limit of {self.options.max_object_bytes} bytes"
            if any(o.status == "applied" and o.failure_policy == "Fail" for o in outcomes):
                return AdmissionResult(False, original, original, [], outcomes, message, warnings, audit)
            warnings.append(f"{message} (ignored: failurePolicy Ignore)")
            return AdmissionResult(True, original, original, [], outcomes, "", warnings, audit)
        if patch and self.recorder.active and current is not None:
            stamped = self.recorder.record(current, outcomes, patch)
            if stamped is not current:  # one more operation after the policies' (a valid RFC 6902 sequence)
                patch += diff(current, stamped)
                current = stamped
        return AdmissionResult(True, original, current, patch, outcomes, "", warnings, audit)

    def _policies_for(self, request: AdmissionInput, failure_policy: str | None) -> Sequence[CompiledPolicy]:
        """The admission policies to visit, in order (``failure_policy``: only those of that webhook group)."""
        if not self.options.report_unselected:
            return self.index.candidates(request_key(request), failure_policy)
        return [p for p in self.policies if admits(p) and in_group(p, failure_policy)]

    # --- per policy ----------------------------------------------------------------------------------

    def _run(
        self, policy: CompiledPolicy, context: RequestContext, current: dict[str, Any] | None
    ) -> Iterable[tuple[PolicyOutcome, dict[str, Any] | None]]:
        if policy.semantics == "kubernetes":
            yield from self._run_admission_policy(policy, context, current)
        else:
            yield self._run_mutating_policy(policy, context, current)

    def _outcome(self, policy: CompiledPolicy, status: Status, reason: str = "", **extra: Any) -> PolicyOutcome:
        if status == "error":
            extra.setdefault("cause", "error")
        return PolicyOutcome(
            policy.display_name,
            policy.kind,
            status,
            reason,
            failure_policy=policy.failure_policy,
            **extra,
        )

    def _run_mutating_policy(
        self, policy: CompiledPolicy, context: RequestContext, current: dict[str, Any] | None
    ) -> tuple[PolicyOutcome, dict[str, Any] | None]:
        request = context.request
        cause, skip = self._precheck(policy, context)
        if skip:
            return self._skipped_by_match(policy, cause, skip), current
        exceptions = self.match_exceptions(policy, context, current)
        if exceptions.skipped_by is not None:
            name = exceptions.skipped_by
            excepted = self._outcome(policy, "excepted", f"PolicyException {name}", cause="exception", cause_name=name)
            return excepted, current
        activation = context.activation(policy, current, exceptions=exceptions.variable())
        try:
            false = self.false_condition(policy.match_conditions, activation)
            if false is not None:
                return self._skipped_by_condition(policy, false), current
            if request.object is None or current is None:
                return self._outcome(
                    policy, "skipped", f"{request.operation} requests carry no object to mutate", cause="noObject"
                ), current
            result = current
            notes: list[str] = []
            steps: list[MutationStep] | None = [] if context.explain else None
            for index in range(len(policy.mutations)):
                result = self._step(policy, index, activation, result, notes, steps)
            audit = self._audit(policy, activation)
        except PolicyFailure as failure:
            return self._outcome(policy, "error", failure.message, path=failure.path), current
        reason = "; ".join(notes)
        if result is current or result == current:
            return self._outcome(policy, "unchanged", reason, audit_annotations=audit, steps=steps), current
        changes = {"before": current, "after": result, "steps": steps}
        return self._outcome(policy, "applied", reason, audit_annotations=audit, **changes), result

    def _run_admission_policy(
        self, policy: CompiledPolicy, context: RequestContext, current: dict[str, Any] | None
    ) -> Iterable[tuple[PolicyOutcome, dict[str, Any] | None]]:
        cause, skip = self._precheck(policy, context)
        if skip:
            yield self._skipped_by_match(policy, cause, skip), current
            return
        if not policy.bindings:
            reason = "no MutatingAdmissionPolicyBinding refers to this policy"
            yield self._outcome(policy, "skipped", reason, cause="noBinding"), current
            return
        for binding in policy.bindings:
            if binding.match is not None:
                reason = matching.match_reason(binding.match, context.request, context.namespace_labels())
                if reason:
                    yield self._skipped_by_match(policy, "matchConstraints", reason, binding.name), current
                    continue
            try:
                param_sets = resolve_params(
                    policy, binding, context.request, context.services, self.options.schemas.kinds
                )
            except ParamError as ex:
                if ex.allow:
                    skipped = self._outcome(policy, "skipped", str(ex), binding=binding.name, cause="paramNotFound")
                    yield skipped, current
                else:
                    yield self._outcome(policy, "error", str(ex), path="paramRef", binding=binding.name), current
                continue
            for params in param_sets:
                outcome, current = self._run_binding(policy, binding.name, params, context, current)
                yield outcome, current

    def _run_binding(
        self, policy: CompiledPolicy, binding: str, params: Any, context: RequestContext, current: dict[str, Any] | None
    ) -> tuple[PolicyOutcome, dict[str, Any] | None]:
        activation = context.activation(policy, current, params=params)
        try:
            false = self.false_condition(policy.match_conditions, activation)
        except PolicyFailure as failure:
            if policy.failure_policy == "Ignore":
                reason = f"match condition error ignored: {failure}"
                return self._outcome(policy, "skipped", reason, binding=binding, cause="error"), current
            return self._outcome(policy, "error", failure.message, path=failure.path, binding=binding), current
        if false is not None:
            skipped = self._skipped_by_condition(policy, false)
            skipped.binding = binding
            return skipped, current
        if context.request.object is None or current is None:
            reason = "the request carries no object to mutate"
            return self._outcome(policy, "skipped", reason, binding=binding, cause="noObject"), current
        result = current
        ignored: list[str] = []
        steps: list[MutationStep] | None = [] if context.explain else None
        for index in range(len(policy.mutations)):
            try:
                result = self._step(policy, index, activation, result, ignored, steps, context.encoded)
            except PolicyFailure as failure:
                if policy.failure_policy == "Fail" or isinstance(failure, DecodeFailure):
                    outcome = self._outcome(policy, "error", failure.message, path=failure.path, binding=binding)
                    outcome.failure_policy = "Fail"
                    return outcome, current
                ignored.append(str(failure))  # only this mutation is skipped (failurePolicy Ignore)
        reason = "; ".join(f"ignored: {i}" for i in ignored)
        if result is current or result == current:
            return self._outcome(policy, "unchanged", reason, binding=binding, steps=steps), current
        changes = {"before": current, "after": result, "steps": steps}
        return self._outcome(policy, "applied", reason, binding=binding, **changes), result

    # --- steps --------------------------------------------------------------------------------------

    def _step(
        self,
        policy: CompiledPolicy,
        index: int,
        activation: cel.Activation,
        obj: dict[str, Any],
        notes: list[str],
        steps: list[MutationStep] | None,
        encoded: decode.EncodedObjects | None = None,
    ) -> dict[str, Any]:
        """Apply mutation ``index``; when explaining (``steps`` is a list), record what it did."""
        mutation = policy.mutations[index]
        claims: list[str] | None = [] if steps is not None else None
        result = self.apply_mutation(policy, mutation, activation, obj, notes, encoded, claims)
        if steps is not None:
            steps.append(MutationStep(index, mutation.path, obj, result, tuple(claims or ())))
        return result

    def _precheck(self, policy: CompiledPolicy, context: RequestContext) -> tuple[Cause, str]:
        """Why the policy does not see this request at all (cause, prose), or ("", "")."""
        request = context.request
        if policy.kind == "NamespacedMutatingPolicy" and request.namespace != policy.namespace:
            return "namespace", f"NamespacedMutatingPolicy applies only in namespace {policy.namespace!r}"
        if policy.semantics != "kubernetes":  # Kyverno's [ReplicaSet,*,*] resource filter, for owned ones
            controlled = ownership.controlled_replicaset(request.subject)
            if controlled:
                return "controlledReplicaSet", controlled
        if policy.skip_background_requests and request.user_info.get("username") in self.options.background_usernames:
            return "backgroundRequest", "request from celmut's background controller (skipBackgroundRequests)"
        if not self.options.report_unselected and id(policy) in self._matched_by_kind:
            return "", ""  # PolicyIndex.candidates chose it by the request's kind, and nothing else constrains it
        reason = matching.match_reason(policy.match, request, context.namespace_labels())
        return ("matchConstraints", reason) if reason else ("", "")

    def _skipped_by_match(self, policy: CompiledPolicy, cause: Cause, reason: str, binding: str = "") -> PolicyOutcome:
        """Skipped before any CEL ran; for matchConstraints, ``cause_name`` names the field that did not match."""
        name = matching.REASON_FIELDS.get(reason, "") if cause == "matchConstraints" else ""
        prose = f"binding {binding}: {reason}" if binding else reason
        return self._outcome(policy, "skipped", prose, cause=cause, cause_name=name, binding=binding)

    def _skipped_by_condition(self, policy: CompiledPolicy, condition: CompiledExpression) -> PolicyOutcome:
        reason = condition_reason(condition)
        return self._outcome(policy, "skipped", reason, cause="matchCondition", cause_name=condition.name)

    def match_exceptions(
        self, policy: CompiledPolicy, context: RequestContext, current: dict[str, Any] | None
    ) -> ExceptionMatch:
        """PolicyExceptions naming this policy whose match conditions all hold for the request.

        A full exception skips the policy (the highest ``polex.kyverno.io/priority`` is reported);
        partial ones (``images``/``allowedValues``) only fill the CEL variable ``exceptions``. An
        exception whose conditions fail to evaluate does not apply.
        """
        candidates = self.exception_index.naming(policy.name, policy.kind)
        if candidates:  # the clock only when an exception names the policy (the hot path has none)
            now = datetime.datetime.now(datetime.UTC)  # an expired exception skips nothing (kyverno/api IsExpired)
            candidates = [e for e in candidates if not e.expired(now)]
        found = ExceptionMatch()
        if not candidates:
            return found
        activation = context.exception_activation(current)
        for exception in sorted(candidates, key=lambda e: -e.priority):
            try:
                applies = all(c.program.evaluate(activation) is True for c in exception.match_conditions)
            except cel.CelError:
                applies = False
            if not applies:
                continue
            if exception.is_partial:
                found.allowed_images += exception.images
                found.allowed_values += exception.allowed_values
            elif found.skipped_by is None:
                found.skipped_by = f"{exception.namespace}/{exception.name}" if exception.namespace else exception.name
        return found

    @classmethod
    def check_conditions(cls, conditions: Sequence[CompiledExpression], activation: cel.Activation) -> str:
        """'' when all are true; the reason when one is false; raises when one errs and none is false."""
        false = cls.false_condition(conditions, activation)
        return condition_reason(false) if false is not None else ""

    @staticmethod
    def false_condition(
        conditions: Sequence[CompiledExpression], activation: cel.Activation
    ) -> CompiledExpression | None:
        """The first condition that is false (None when all are true); raises when one errs and none is
        false, as Kubernetes' matchConditions do."""
        error: PolicyFailure | None = None
        for condition in conditions:
            try:
                value = condition.program.evaluate(activation)
            except cel.CelError as ex:
                error = error or _expression_error(condition, ex)
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

    def apply_mutation(
        self,
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
            raise _expression_error(mutation, ex) from None
        size = json_nbytes(result)  # before anything walks it: a result may share its parts
        if size > self.options.max_object_bytes:
            limit = self.options.max_object_bytes
            raise PolicyFailure(mutation.path, f"the result is about {size} bytes of JSON, over the limit of {limit}")
        if claims is not None:
            claims += mutations.written_pointers(mutation.patch_type, result)
        api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
        schemas = self.options.schemas
        schema = schemas.for_kind(api_version, kind)
        # A MutatingAdmissionPolicy's mutation works on the Go object of a built-in kind: encoded
        # before, decoded (strictly) and re-encoded after (runtime/decode.py). Kyverno patches the
        # JSON it received, and custom resources stay unstructured: both are left as they are.
        typed = schemas.typed_schema(api_version, kind) if policy.semantics == "kubernetes" else None
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

    @staticmethod
    def _audit(policy: CompiledPolicy, activation: cel.Activation) -> dict[str, str]:
        out: dict[str, str] = {}
        for annotation in policy.audit_annotations:
            try:
                value = annotation.program.evaluate(activation)
            except cel.CelError as ex:
                raise _expression_error(annotation, ex) from None
            if value not in (None, ""):
                out[f"{policy.name}.{annotation.name}"] = str(value)
        return out


class RequestContext:
    """Per-request state shared by all policies: CEL request, namespace labels, budget."""

    def __init__(
        self,
        engine: AdmissionEngine,
        request: AdmissionInput,
        budget: cel.Budget,
        services: cel.Services | None = None,
        *,
        explain: bool = False,
    ) -> None:
        self.engine = engine
        self.explain = explain  # keep each mutation's result (PolicyOutcome.steps)
        self.request = request
        self.budget = budget
        self.services = services or engine.options.services
        self.cel_request = request.cel_request()
        if request.input_size is None:  # computed once per request, however many policies see it
            limit = engine.options.max_input_bytes
            request.input_size = approximate_size([request.object, request.old_object], limit)
        self.input_size = request.input_size
        self._namespace_labels: dict[str, str] | None = None
        self._namespace_object: Any = request.namespace_object
        self.encoded = decode.EncodedObjects()

    def namespace_object(self) -> Any:
        request = self.request
        if self._namespace_object is None and request.namespace:
            resources = self.services.resources
            if resources is not None:
                try:
                    self._namespace_object = resources.get("v1", "namespaces", "", request.namespace)
                except cel.CelError:
                    self._namespace_object = None
        return self._namespace_object

    def namespace_labels(self) -> dict[str, str]:
        if self._namespace_labels is None:
            self._namespace_labels = matching.namespace_labels(self.request, self.namespace_object())
        return self._namespace_labels

    def activation(
        self, policy: CompiledPolicy, current: Any, params: Any = None, exceptions: dict[str, Any] | None = None
    ) -> cel.Activation:
        return cel.Activation(
            object=current,
            old_object=self.request.old_object,
            request=self.cel_request,
            namespace_object=self.namespace_object(),
            params=params,
            exceptions=exceptions,
            variables=policy.variables,
            services=self.services,
            budget=self.budget,
            max_input_bytes=self.engine.options.max_input_bytes,
            input_size=self.input_size,
        )

    def exception_activation(self, current: Any) -> cel.Activation:
        return cel.Activation(
            object=current,
            old_object=self.request.old_object,
            request=self.cel_request,
            namespace_object=self.namespace_object(),
            services=self.services,
            budget=self.budget,
            input_size=0,
        )
