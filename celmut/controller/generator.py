"""The leader keeps a native MutatingAdmissionPolicy for each MutatingPolicy that asks for one.

``spec.autogen.mutatingAdmissionPolicy.enabled: true`` asks for it, as in Kyverno
(kyverno/kyverno ``pkg/controllers/admissionpolicygenerator``): the MAP and binding
(:mod:`celmut.compile.to_map`: ``mpol-<name>``, ``mpol-<name>-binding``, one pair more per autogen
variant) are labelled ``app.kubernetes.io/managed-by: celmut`` and owned by the policy, so garbage
collection deletes them with it. After every reload — any change to a policy, a PolicyException, a
generated MAP or binding (a hand edit, a deletion) — :meth:`AdmissionPolicyGenerator.sync` makes the
cluster match: create, update what differs, delete what is no longer wanted, and write the policy's
status as Kyverno does (``status.generated``, ``status.conditionStatus.message``: "" once generated, else
why not) plus the condition ``celmut.io/MutatingAdmissionPolicy`` naming the generated objects.

The MAP keeps the namespaceSelector and objectSelector of celmut's webhook for the policy's failurePolicy
(``fail.mutate.celmut.io``/``ignore.mutate.celmut.io``, read from the cluster at each pass): Kyverno's
generator drops selectors, which would start mutating celmut's own namespace and kube-system.

Nothing is ever applied twice or half: the API server applies a MAP once its binding exists, and
celmut's webhook stops serving the policy only once every MAP of it exists with its binding
(:mod:`celmut.kube.native_policies`). So the MAPs are written first and the bindings last; when any
write fails the policy's bindings are removed (its MAPs stay, inert) and the webhook serves it again.

Not generated, and said why in the status: the cases of :data:`celmut.compile.to_map.RULES`; no
MutatingAdmissionPolicy API in the cluster (Kyverno's message); a MAP of that name that is not celmut's;
and while Kyverno runs next to celmut — Kyverno's generator writes the same names and would fold in
the PolicyException celmut keeps so that Kyverno skips the policy (``!(true)``): the policy stays in
celmut's webhook. A policy that stops asking for one loses its MAPs (Kyverno, with its toggle off,
leaves them applied).
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from celmut.compile import to_map
from celmut.kube.client import Cluster, ClusterError, NotFound
from celmut.kube.policy_source import ClusterPolicySource
from celmut.kube.policy_status import update_status
from celmut.policy.errors import FieldError
from celmut.policy.exception import PolicyException, parse_policy_exception
from celmut.policy.mutating_policy import parse_mutating_policy
from celmut.policy.selection import Ownership

log = logging.getLogger("celmut.controller")

CONDITION_TYPE = "celmut.io/MutatingAdmissionPolicy"
NO_API = (
    "skip generating MutatingAdmissionPolicy: requested but no MutatingAdmissionPolicy API/informers are available."
)
Obj = dict[str, Any]
_REPORTING_LABELS = (to_map.REPORTS_ENABLED, to_map.REPORTS_DISABLED)  # carried from the policy to its MAP
_RESOURCES = {
    "MutatingAdmissionPolicy": "mutatingadmissionpolicies",
    "MutatingAdmissionPolicyBinding": "mutatingadmissionpolicybindings",
}
# celmut's webhooks, one per failurePolicy (celmut/install/webhook_config.py): a policy is sent only what
# its webhook's namespaceSelector and objectSelector let through, so its MAP gets the same selectors.
WEBHOOKS = {"Fail": "fail.mutate.celmut.io", "Ignore": "ignore.mutate.celmut.io"}
Scopes = dict[str, dict[str, Any]]
# The API server's defaults (admissionregistration/v1 defaults.go), so that a stored object is not
# taken for a hand edit because it carries them.
_MATCH_DEFAULTS = {"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}}


@dataclass
class Decision:
    """What one policy gets: the objects (none when not generated) and its status."""

    natives: list[to_map.NativePolicy]
    generated: bool
    message: str | None  # None: leave Kyverno's message alone
    condition: tuple[str, str, str] | None  # (status, reason, message); None: no condition


@dataclass
class SyncOutcome:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def _defaulted(spec: Any) -> Any:
    """A MAP spec with the API server's defaults filled in (binding specs pass through)."""
    if not isinstance(spec, dict) or "matchConstraints" not in spec:
        return spec
    match = {**_MATCH_DEFAULTS, **(spec.get("matchConstraints") or {})}
    match["resourceRules"] = [{"scope": "*", **r} for r in match.get("resourceRules") or []]
    return {"failurePolicy": "Fail", **spec, "matchConstraints": match}


def _kept(obj: Mapping[str, Any]) -> tuple[Any, ...]:
    """What the generator owns of an object; a difference there is repaired."""
    meta = obj.get("metadata") or {}
    owners = [{k: r.get(k) for k in ("apiVersion", "kind", "name", "uid")} for r in meta.get("ownerReferences") or []]
    labels = meta.get("labels") or {}
    label = labels.get(to_map.MANAGED_BY[0])
    reporting = sorted((k, v) for k, v in labels.items() if k in _REPORTING_LABELS)
    source = (meta.get("annotations") or {}).get(to_map.GENERATED_FROM)
    return obj.get("apiVersion"), label, reporting, source, owners, _defaulted(obj.get("spec"))


def _exceptions(objects: Iterable[Obj], ownership: Ownership) -> list[PolicyException]:
    """The PolicyExceptions celmut's engine applies (a broken one applies nowhere)."""
    parsed = []
    for obj in objects:
        if ownership.declines("PolicyException", obj):
            continue
        errors: list[FieldError] = []
        exception = parse_policy_exception(obj, "PolicyException", errors)
        if not errors:
            parsed.append(exception)
    return parsed


class AdmissionPolicyGenerator:
    """Keeps the generated MutatingAdmissionPolicies and bindings equal to what the policies ask for."""

    def __init__(
        self, cluster: Cluster, *, opt_out_label: str = "", retry_seconds: float = 30.0, configuration: str = ""
    ) -> None:
        """``configuration``: the MutatingWebhookConfiguration this install's controller manages (its
        webhooks' selectors are the ones its MAPs keep, whatever other installs register); '' looks at all."""
        self.configuration = configuration
        self.cluster = cluster
        self.opt_out_label = opt_out_label
        self.retry_seconds = retry_seconds
        self._next: float | None = None  # sync again unprompted: after a failure, or when an exception expires
        # (kind, name) -> (resourceVersion, what was written) of each object as this generator last wrote it:
        # what the API server stored in answer (its defaults, another webhook's change) is not a hand edit.
        self._written: dict[tuple[str, str], tuple[str, tuple[Any, ...]]] = {}

    def due(self) -> bool:
        """Whether to sync although nothing changed (a failed write to retry, an exception that expired)."""
        return self._next is not None and time.monotonic() >= self._next

    # --- deciding ----------------------------------------------------------------------------------

    def webhook_scopes(self) -> Scopes | str:
        """failurePolicy -> the selectors of celmut's webhook serving such policies (none without one);
        a message when they cannot be told (several webhooks of one name). Raises ClusterError."""
        listed = self.cluster.list("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations")
        configurations = [
            c
            for c in listed.get("items") or []
            if not self.configuration or (c.get("metadata") or {}).get("name") == self.configuration
        ]
        scopes: Scopes = {}
        for failure_policy, name in WEBHOOKS.items():
            found = [w for c in configurations for w in c.get("webhooks") or [] if w.get("name") == name]
            if len(found) > 1:
                return f"{len(found)} webhooks are named {name}: which selectors the MAP must keep cannot be told"
            if found:
                scopes[failure_policy] = {k: found[0].get(k) or {} for k in ("namespaceSelector", "objectSelector")}
        return scopes

    def decide(
        self,
        policy: Obj,
        ownership: Ownership,
        exceptions: list[PolicyException],
        api_version: str | None,
        scopes: Scopes | str = "",
    ) -> Decision:
        errors: list[FieldError] = []
        model = parse_mutating_policy(policy, f"MutatingPolicy/{(policy.get('metadata') or {}).get('name')}", errors)
        rule, reason = to_map.skip_reason(model)
        if rule == "not-enabled":
            return Decision([], False, None, None)
        if ownership.kyverno.detected:
            why = (
                f"not generated: Kyverno runs next to celmut ({ownership.kyverno.evidence}) and its generator writes "
                "MutatingAdmissionPolicies of the same names; the policy stays in celmut's webhook"
            )
            return Decision([], False, None, ("False", "KyvernoDetected", why))
        if errors:
            message = "failed to generate MutatingAdmissionPolicy: " + "; ".join(str(e) for e in errors)
            return Decision([], False, message, ("False", "Invalid", message))
        if rule:
            return Decision([], False, reason, ("False", "NotGenerated", reason))
        if api_version is None:
            return Decision([], False, NO_API, ("False", "NotGenerated", NO_API))
        if isinstance(scopes, str) and scopes:
            message = f"failed to generate MutatingAdmissionPolicy: {scopes}"
            return Decision([], False, message, ("False", "Failed", message))
        scope = scopes.get(model.failure_policy) if isinstance(scopes, dict) else None
        try:
            natives = to_map.convert(
                model, exceptions, api_version=api_version, opt_out_label=self.opt_out_label, scope=scope
            )
        except to_map.NotConvertible as ex:
            message = f"skip generating MutatingAdmissionPolicy: {ex.reason}"
            if ex.rule in ("kubernetes-cel", "condition-names", "too-many-conditions", "name-too-long"):
                message = f"failed to generate MutatingAdmissionPolicy: {to_map.map_name(model.name)}: {ex.reason}"
            return Decision([], False, message, ("False", "NotGenerated", message))
        owned = [to_map.owned(native, policy) for native in natives]
        names = ", ".join(f"{n.name} and {n.binding_name}" for n in owned)
        text = f"MutatingAdmissionPolicy and binding {names} ({api_version}): the API server applies the policy"
        return Decision(owned, True, "", ("True", "Generated", text))

    # --- syncing -----------------------------------------------------------------------------------

    def sync(self, source: ClusterPolicySource) -> SyncOutcome:
        """One pass over every MutatingPolicy celmut owns; errors are logged, counted, retried later.

        Nothing is done before every watch has listed once, nor while the MutatingPolicy API is not
        served (discovery failing for a moment): an empty policy list then would delete every generated
        MAP. A CRD really removed takes its policies with it, and garbage collection their MAPs."""
        if not source.synced() or source.api_version("MutatingPolicy") is None:
            self._next = time.monotonic() + self.retry_seconds
            return SyncOutcome()
        ownership = source.ownership or source.current_ownership()
        map_version = source.api_version("MutatingAdmissionPolicy")
        api_version = (
            map_version if map_version and map_version == source.api_version("MutatingAdmissionPolicyBinding") else None
        )
        exceptions = _exceptions(source.objects_of("PolicyException"), ownership)
        existing = {(kind, str(o["metadata"]["name"])): o for kind in _RESOURCES for o in source.objects_of(kind)}
        outcome = SyncOutcome()
        try:
            scopes = self.webhook_scopes() if api_version is not None else {}
        except ClusterError as ex:  # not knowing them must not delete what is generated: retried later
            log.warning("could not read celmut's webhook configuration", extra={"error": str(ex)})
            self._next = time.monotonic() + self.retry_seconds
            return outcome
        wanted: set[tuple[str, str]] = set()
        policies = source.objects_of("MutatingPolicy")
        # another celmut install's policies (a fixed --policy-selector leaves them out): what that install
        # generated for them, and their status, are its own
        others = {str(p["metadata"]["name"]) for p in policies if ownership.belongs_to_another("MutatingPolicy", p)}
        for policy in policies:
            if str(policy["metadata"]["name"]) in others:
                continue
            if not ownership.selects("MutatingPolicy", policy):
                if _has_condition(policy):  # celmut generated for it before: its MAPs go (below), say so
                    self._write_status(source, policy, Decision([], False, None, None), outcome)
                continue
            decision = self.decide(policy, ownership, exceptions, api_version, scopes)
            wanted |= {(n.policy["kind"], n.name) for n in decision.natives}  # kept, even inert after a failure
            decision = self._apply(decision, existing, outcome)
            wanted |= {(n.binding["kind"], n.binding_name) for n in decision.natives}
            self._write_status(source, policy, decision, outcome)
        # deleted: what this install generated for a policy it no longer serves, or for a policy that no longer
        # exists — never what is generated for an existing policy another install serves (as Kyverno's
        # generator removes a MAP only when its own policy stops asking for one or is deleted:
        # kyverno/kyverno pkg/controllers/admissionpolicygenerator/controller.go, generate-map.go)
        unwanted = [
            k for k, o in existing.items() if _celmuts(o) and k not in wanted and _source_policy(o) not in others
        ]
        for key in sorted(unwanted, key=lambda k: k[0] != "MutatingAdmissionPolicyBinding"):  # bindings first
            self._delete(existing[key], outcome)
        self._next = time.monotonic() + self.retry_seconds if outcome.failed else _next_expiry(exceptions)
        return outcome

    def _apply(self, decision: Decision, existing: Mapping[tuple[str, str], Obj], outcome: SyncOutcome) -> Decision:
        """Write the decision's MAPs, then its bindings; on any failure remove the policy's bindings again
        (its MAPs stay, inert) and return the decision as failed: the webhook keeps serving the policy."""
        if not decision.natives:
            return decision
        errors: list[str] = []
        for document in [n.policy for n in decision.natives]:
            errors += self._ensure(document, existing, outcome)
        if not errors:
            for document in [n.binding for n in decision.natives]:
                errors += self._ensure(document, existing, outcome)
        if not errors:
            return decision
        for native in decision.natives:  # inert without their bindings
            found = existing.get((native.binding["kind"], native.binding_name))
            if (found is not None and _celmuts(found)) or native.binding_name in outcome.created:
                self._delete(found or native.binding, outcome)
        message = "failed to generate MutatingAdmissionPolicy: " + "; ".join(errors)
        return Decision([], False, message, ("False", "Failed", message))

    def _ensure(self, document: Obj, existing: Mapping[tuple[str, str], Obj], outcome: SyncOutcome) -> list[str]:
        kind, name = document["kind"], document["metadata"]["name"]
        found = existing.get((kind, name))
        if found is not None and not _celmuts(found):
            who = (found.get("metadata") or {}).get("labels", {}).get(to_map.MANAGED_BY[0], "not labelled")
            return [f"{name}: a {kind} of that name exists and is not celmut's ({to_map.MANAGED_BY[0]}: {who})"]
        wanted = _kept(document)
        ours = self._written.get((kind, name))
        if found is not None and (_kept(found) == wanted or ours == (_version(found), wanted)):
            return []
        resource = _RESOURCES[kind]
        try:
            if found is None:
                stored = self.cluster.create(document["apiVersion"], resource, "", document)
                outcome.created.append(name)
            else:
                meta = found.get("metadata") or {}
                kept = {k: v for k, v in (meta.get("labels") or {}).items() if k not in _REPORTING_LABELS}
                labels = {**kept, **document["metadata"]["labels"]}  # the reporting choice is the policy's
                replacement = {
                    **document,
                    "metadata": {
                        **document["metadata"],
                        "labels": labels,
                        "resourceVersion": meta.get("resourceVersion"),
                    },
                }
                stored = self.cluster.replace(document["apiVersion"], resource, "", name, replacement)
                outcome.updated.append(name)
        except ClusterError as ex:
            verb = "create" if found is None else "update"
            log.warning("could not write a generated %s", kind, extra={"object": name, "error": str(ex)})
            outcome.failed.append(name)
            return [f"{name}: failed to {verb} {kind.lower()} {name}: {ex}"]
        log.info("generated %s %s", kind, "created" if found is None else "updated", extra={"object": name})
        if isinstance(stored, dict):
            self._written[(kind, name)] = (_version(stored), wanted)
        return []

    def _delete(self, obj: Obj, outcome: SyncOutcome) -> None:
        kind, name = str(obj.get("kind")), str(obj["metadata"]["name"])
        self._written.pop((kind, name), None)
        try:
            self.cluster.delete(str(obj.get("apiVersion")), _RESOURCES[kind], "", name)
        except NotFound:
            return
        except ClusterError as ex:
            log.warning("could not delete a generated %s", kind, extra={"object": name, "error": str(ex)})
            outcome.failed.append(name)
            return
        log.info("generated %s deleted", kind, extra={"object": name})
        outcome.deleted.append(name)

    # --- status ------------------------------------------------------------------------------------

    def _write_status(self, source: ClusterPolicySource, policy: Obj, decision: Decision, outcome: SyncOutcome) -> None:
        kyverno_fields = not (source.ownership and source.ownership.kyverno.detected)

        def patch(current: Obj) -> Obj | None:
            return status_patch(current, decision, kyverno_fields=kyverno_fields)

        try:
            update_status(self.cluster, policy, "mutatingpolicies", patch)
        except NotFound:
            pass
        except ClusterError as ex:  # the objects are right; the status is written at the next sync
            log.warning(
                "could not write the policy's status", extra={"policy": policy["metadata"]["name"], "error": str(ex)}
            )
            outcome.failed.append(str(policy["metadata"]["name"]))


def _source_policy(obj: Mapping[str, Any]) -> str:
    """The name of the MutatingPolicy a generated MAP or binding was generated from ('' when not told)."""
    meta = obj.get("metadata") or {}
    kind, _, name = str((meta.get("annotations") or {}).get(to_map.GENERATED_FROM) or "").partition("/")
    if kind == "MutatingPolicy" and name:
        return name
    owner = next((r for r in meta.get("ownerReferences") or [] if r.get("kind") == "MutatingPolicy"), None)
    return str(owner.get("name") or "") if owner else ""


def _has_condition(policy: Mapping[str, Any]) -> bool:
    holder = (policy.get("status") or {}).get("conditionStatus") or {}
    return any(isinstance(c, dict) and c.get("type") == CONDITION_TYPE for c in holder.get("conditions") or [])


def _version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _celmuts(obj: Mapping[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(to_map.MANAGED_BY[0]) == to_map.MANAGED_BY[1])


def _next_expiry(exceptions: Iterable[PolicyException]) -> float | None:
    """When the next exception expires (a monotonic time), so that it leaves the MAPs then."""
    now = datetime.datetime.now(datetime.UTC)
    future = [e.expires_at for e in exceptions if e.expires_at is not None and e.expires_at > now]
    if not future:
        return None
    return time.monotonic() + (min(future) - now).total_seconds()


def status_patch(current: Obj, decision: Decision, *, kyverno_fields: bool = True) -> Obj | None:
    """The status merge patch bringing ``current`` to the decision (None when it already says it):
    Kyverno's ``generated`` and ``conditionStatus.message`` (controller.go updatePolicyStatus), and
    celmut's condition naming the objects. A policy that never asked for one is left untouched, and one
    that stops asking loses the condition and ``generated``."""
    status = current.get("status") or {}
    holder = status.get("conditionStatus") or {}
    conditions = [c for c in holder.get("conditions") or [] if isinstance(c, dict)]
    mine = next((c for c in conditions if c.get("type") == CONDITION_TYPE), None)
    generation = (current.get("metadata") or {}).get("generation", 0)
    patch: Obj = {}
    holder_patch: Obj = {}
    if kyverno_fields and (decision.condition is not None or status.get("generated") is True or mine is not None):
        if status.get("generated") is not decision.generated:
            patch["generated"] = decision.generated
        if decision.message is not None and holder.get("message") != decision.message:
            holder_patch["message"] = decision.message
    if decision.condition is None and mine is not None:
        holder_patch["conditions"] = [c for c in conditions if c is not mine]
    elif decision.condition is not None:
        state, reason, text = decision.condition
        text = text[:32768]
        same = mine is not None and (
            mine.get("status"),
            mine.get("reason"),
            mine.get("message"),
            mine.get("observedGeneration"),
        ) == (state, reason, text, generation)
        if not same:
            transition = mine.get("lastTransitionTime") if mine is not None and mine.get("status") == state else None
            condition = {
                "type": CONDITION_TYPE,
                "status": state,
                "reason": reason,
                "message": text,
                "observedGeneration": generation,
                "lastTransitionTime": transition or datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
            holder_patch["conditions"] = [*(c for c in conditions if c is not mine), condition]
    if holder_patch:
        patch["conditionStatus"] = holder_patch
    return {"status": patch} if patch else None
