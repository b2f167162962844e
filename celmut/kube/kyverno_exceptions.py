"""PolicyExceptions that make Kyverno skip the MutatingPolicies celmut serves.

Kyverno has no per-policy opt-out: it serves every MutatingPolicy, so one celmut also serves is applied
twice. A Kyverno PolicyException naming the policy, with a condition that always holds, makes Kyverno
skip it everywhere it evaluates it (read in kyverno/kyverno):

* admission and mutateExisting: ``pkg/cel/policies/mpol/compiler/policy.go`` ``evaluate`` checks the
  exceptions first and returns without mutating when one matches with no ``images``/``allowedValues``
  (the background controller's ``EvaluateTarget`` goes through the same function);
* the policy's exceptions are the ones naming its **kind and name** (``pkg/cel/engine/exceptions.go``
  ``MatchExceptions``; expired ones are dropped), compiled in when the policy is reconciled
  (``pkg/cel/policies/mpol/engine/reconciler.go``) — only with Kyverno's ``--enablePolicyException``
  (chart ``features.policyExceptions.enabled``, off by default) and only from its
  ``--exceptionNamespace`` when set;
* a generated MutatingAdmissionPolicy gets each exception condition as ``!(<expr>)``
  (``pkg/admissionpolicy/builder.go`` ``negateExceptionMatchConditions``): ``!(true)``, never applied.
  An exception *without* conditions would be ignored there, hence the explicit ``true``.

Kyverno still registers webhook rules for the policy and is still called (no double mutation, but its
latency stays). A NamespacedMutatingPolicy is named by kind and name only, so an exception for
``team-a/p`` would also make Kyverno skip ``team-b/p``: celmut creates none while a same-named one is
Kyverno's, and says so.

:class:`KyvernoExceptions` keeps exactly one exception per policy celmut serves while Kyverno is
detected, and none otherwise, in one namespace; each carries ``celmut.io/kyverno-only=true``, which
celmut's own engine never applies (:mod:`celmut.policy.selection`), and for a cluster-scoped policy an
ownerReference, so deleting the policy deletes its exception. Installs with a fixed policy selector may
share the namespace: each marks its exceptions with its selector (:data:`SELECTOR_ANNOTATION`) and never
deletes the exception of an existing policy another install serves, unless it made that one itself.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from celmut.kube.client import Cluster, ClusterError, NotFound
from celmut.policy.selection import KYVERNO_ONLY_LABEL, Ownership

log = logging.getLogger("celmut.kube")

MANAGED_BY = ("app.kubernetes.io/managed-by", "celmut")
POLICY_ANNOTATION = "celmut.io/policy"
#: With a fixed policy selector (several installs may share the namespace): the selector of the install
#: that keeps the exception. That install withdraws it when the policy leaves its selector; the others
#: leave it alone while the policy exists.
SELECTOR_ANNOTATION = "celmut.io/policy-selector"
CONDITION = {"name": "celmut-serves-this-policy", "expression": "true"}
_SHORT = {"MutatingPolicy": "mpol", "NamespacedMutatingPolicy": "nmpol"}
Obj = dict[str, Any]


def exception_name(kind: str, namespace: str, name: str) -> str:
    """``celmut-mpol-<name>`` / ``celmut-nmpol-<namespace>-<name>``, hashed down to 253 characters."""
    base = f"celmut-{_SHORT[kind]}-" + (f"{namespace}-{name}" if namespace else name)
    if len(base) <= 253:
        return base
    digest = hashlib.sha256(base.encode()).hexdigest()[:16]
    return f"{base[:236]}-{digest}"


def policy_exception(policy: Mapping[str, Any], kind: str, namespace: str, api_version: str) -> Obj:
    """The PolicyException in ``namespace`` that makes Kyverno skip ``policy``."""
    meta = policy.get("metadata") or {}
    policy_namespace, name = meta.get("namespace") or "", str(meta.get("name"))
    reference = _reference(kind, policy)
    exception: Obj = {
        "apiVersion": api_version,
        "kind": "PolicyException",
        "metadata": {
            "name": exception_name(kind, policy_namespace, name),
            "namespace": namespace,
            "labels": {KYVERNO_ONLY_LABEL: "true", MANAGED_BY[0]: MANAGED_BY[1]},
            "annotations": {POLICY_ANNOTATION: reference},
        },
        "spec": {"policyRefs": [{"name": name, "kind": kind}], "matchConditions": [dict(CONDITION)]},
    }
    if not policy_namespace or policy_namespace == namespace:  # an owner must be cluster-scoped or a neighbour
        exception["metadata"]["ownerReferences"] = [
            {"apiVersion": policy.get("apiVersion"), "kind": kind, "name": name, "uid": meta.get("uid")}
        ]
    return exception


def _reference(kind: str, policy: Mapping[str, Any]) -> str:
    """``Kind/namespace/name`` (``Kind/name`` when cluster-scoped): the policy an exception is for."""
    meta = policy.get("metadata") or {}
    namespace, name = meta.get("namespace") or "", str(meta.get("name"))
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


def ours(exception: Mapping[str, Any], namespace: str) -> bool:
    """Whether celmut's controller made this exception (and keeps it in ``namespace``)."""
    meta = exception.get("metadata") or {}
    labels = meta.get("labels") or {}
    return (
        meta.get("namespace") == namespace
        and labels.get(KYVERNO_ONLY_LABEL) == "true"
        and labels.get(MANAGED_BY[0]) == MANAGED_BY[1]
    )


def _kept_fields(obj: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = obj.get("metadata") or {}
    owners = [{k: r.get(k) for k in ("apiVersion", "kind", "name", "uid")} for r in meta.get("ownerReferences") or []]
    return (meta.get("labels"), meta.get("annotations"), owners, obj.get("spec"))


@dataclass
class SyncOutcome:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)  # why an exception could not be made
    failed: list[str] = field(default_factory=list)


def desired_exceptions(
    ownership: Ownership,
    policies: Iterable[tuple[str, Mapping[str, Any]]],
    namespace: str,
    api_version: str,
) -> tuple[dict[str, Obj], list[str]]:
    """The exceptions Kyverno needs (none while Kyverno is absent), by name, and why any is withheld.

    ``policies``: every (Namespaced)MutatingPolicy in the cluster, celmut's and the others."""
    if not ownership.kyverno.detected:
        return {}, []
    listed = list(policies)
    kyvernos_names = {
        str((obj.get("metadata") or {}).get("name"))
        for kind, obj in listed
        if kind == "NamespacedMutatingPolicy" and ownership.declines(kind, obj, natively=False)
    }
    desired: dict[str, Obj] = {}
    withheld: list[str] = []
    for kind, obj in listed:
        if ownership.declines(kind, obj, natively=False):
            continue
        meta = obj.get("metadata") or {}
        if kind == "NamespacedMutatingPolicy" and meta.get("name") in kyvernos_names:
            withheld.append(
                f"NamespacedMutatingPolicy {meta.get('namespace')}/{meta.get('name')}: a PolicyException names a "
                "policy by kind and name only, and a NamespacedMutatingPolicy of the same name elsewhere is "
                "Kyverno's; rename one, or Kyverno applies this one too"
            )
            continue
        exception = policy_exception(obj, kind, namespace, api_version)
        if ownership.shared:
            exception["metadata"]["annotations"][SELECTOR_ANNOTATION] = str(ownership.selector)
        desired[exception["metadata"]["name"]] = exception
    return desired, withheld


class KyvernoExceptions:
    """Keeps the PolicyExceptions of one namespace equal to :func:`desired_exceptions`."""

    def __init__(self, cluster: Cluster, namespace: str, *, dry_run: bool = False, retry_seconds: float = 30.0) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.dry_run = dry_run
        self.retry_seconds = retry_seconds
        self._withheld: set[str] = set()
        self._failed_at: float | None = None  # a write failed: sync again unprompted after retry_seconds

    def due(self) -> bool:
        """Whether a failed sync should be retried now (nothing in the cluster may change to prompt it)."""
        return self._failed_at is not None and time.monotonic() >= self._failed_at + self.retry_seconds

    def sync(
        self,
        ownership: Ownership,
        policies: Iterable[tuple[str, Mapping[str, Any]]],
        existing: Iterable[Mapping[str, Any]],
        api_version: str,
    ) -> SyncOutcome:
        """Create, update and delete exceptions so that Kyverno skips exactly the policies celmut serves;
        ``existing``: the PolicyExceptions as last seen (a watched cache). Errors are logged and counted,
        never raised: the next sync tries again."""
        listed = list(policies)
        desired, withheld = desired_exceptions(ownership, listed, self.namespace, api_version)
        # another celmut install's policies (a fixed --policy-selector leaves them out): the exceptions that
        # install keeps for them in a namespace it shares with this one are its own (one this install made,
        # for a policy that left its selector, is withdrawn)
        others = {_reference(kind, obj) for kind, obj in listed if ownership.belongs_to_another(kind, obj)}
        outcome = SyncOutcome(withheld=withheld)
        for reason in set(withheld) - self._withheld:
            log.warning("no PolicyException for Kyverno: %s", reason)
        self._withheld = set(withheld)
        current = {str(e["metadata"]["name"]): e for e in existing if ours(e, self.namespace)}
        for name, exception in desired.items():
            found = current.get(name)
            if found is not None and _kept_fields(found) == _kept_fields(exception):
                continue
            self._write(name, exception, found, outcome)
        for name, found in current.items():
            annotations = (found.get("metadata") or {}).get("annotations") or {}
            made_here = ownership.shared and annotations.get(SELECTOR_ANNOTATION) == str(ownership.selector)
            if name not in desired and (annotations.get(POLICY_ANNOTATION) not in others or made_here):
                self._delete(name, found, outcome)
        self._failed_at = time.monotonic() if outcome.failed else None
        return outcome

    def _write(self, name: str, exception: Obj, found: Mapping[str, Any] | None, outcome: SyncOutcome) -> None:
        action = "created" if found is None else "updated"
        if self.dry_run:
            getattr(outcome, action).append(name)
            return
        try:
            if found is None:
                self.cluster.create(exception["apiVersion"], "policyexceptions", self.namespace, exception)
            else:
                replacement = {**exception, "metadata": {**exception["metadata"], **_version_of(found)}}
                self.cluster.replace(exception["apiVersion"], "policyexceptions", self.namespace, name, replacement)
        except ClusterError as ex:  # e.g. Kyverno's webhook refusing exceptions, or a conflict: next sync
            log.warning("could not write a PolicyException for Kyverno", extra={"exception": name, "error": str(ex)})
            outcome.failed.append(name)
            return
        log.info("PolicyException for Kyverno %s", action, extra={"exception": f"{self.namespace}/{name}"})
        getattr(outcome, action).append(name)

    def _delete(self, name: str, found: Mapping[str, Any], outcome: SyncOutcome) -> None:
        if not self.dry_run:
            try:
                self.cluster.delete(str(found.get("apiVersion")), "policyexceptions", self.namespace, name)
            except NotFound:
                pass
            except ClusterError as ex:
                log.warning("could not delete a PolicyException", extra={"exception": name, "error": str(ex)})
                outcome.failed.append(name)
                return
            log.info("PolicyException for Kyverno deleted", extra={"exception": f"{self.namespace}/{name}"})
        outcome.deleted.append(name)


def _version_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {"resourceVersion": (obj.get("metadata") or {}).get("resourceVersion")}
