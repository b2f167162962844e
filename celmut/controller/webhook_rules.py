"""The leader keeps celmut's MutatingWebhookConfiguration in line with the loaded policies.

What it registers is :mod:`celmut.install.managed_webhooks` (Kyverno's ``pkg/controllers/webhook``,
``controller.go``: the webhook controller builds the configuration from the policies and writes it).

Ownership: the controller owns the whole object. It is labelled ``webhook.celmut.io/managed-by:
celmut-controller`` and carries an ownerReference to the chart's controller ClusterRole (cluster-scoped,
as a cluster-scoped dependent's owner must be), so ``helm uninstall`` deleting the ClusterRole lets the
garbage collector delete the configuration: no Fail webhook is left behind. Helm never renders it
(``webhook.managedRules: true``), so ``helm upgrade`` has nothing to diff and no field is written by both.
An object of that name without the label (the chart's static one, during an upgrade to managed rules) is
not the controller's: it is left alone and looked at again until Helm has removed it.

Every write is one PUT of the whole object guarded by the resourceVersion just read (or one create), so
two replicas or a leader change never leave it half-written: the loser's write is refused and it reads
again. Nothing is written when the wanted object is what is stored; ``caBundle`` (self-managed TLS or
cert-manager's injection) is carried over from the stored object.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from celmut.controller.policy_conditions import PolicyConditions
from celmut.install import managed_webhooks
from celmut.install.webhook_config import WebhookSettings
from celmut.kube.client import Cluster, ClusterError, Conflict, NotFound

if TYPE_CHECKING:
    from celmut.compile.compiled import CompiledPolicy
    from celmut.kube.policy_source import ClusterPolicySource

log = logging.getLogger("celmut.controller")

Obj = dict[str, Any]
CONFIGURATIONS = ("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations")
CONDITION_TYPE = "celmut.io/WebhookRegistered"


@dataclass
class WebhookRulesConfig:
    """What the controller needs to write the configuration."""

    settings: WebhookSettings
    name: str = "celmut"
    owner_cluster_role: str = ""  # the chart's ClusterRole: uninstalling it garbage-collects the configuration
    annotations: Mapping[str, str] = field(default_factory=dict)  # e.g. cert-manager's inject-ca-from
    resync_seconds: float = 5.0  # look again unprompted (a CRD installed, someone else's object removed)


def _pruned(value: Any) -> Any:
    """``value`` without empty lists, maps and nulls: the API server leaves ``omitempty`` fields out (an
    empty ``rules`` comes back absent), which must not read as a difference and a write at every resync."""
    if isinstance(value, Mapping):
        pruned = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _comparable(obj: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = obj.get("metadata") or {}
    owners = [{k: r.get(k) for k in ("apiVersion", "kind", "name", "uid")} for r in meta.get("ownerReferences") or []]
    label = (meta.get("labels") or {}).get(managed_webhooks.MANAGED_LABEL[0])
    return label, meta.get("annotations") or {}, owners, _pruned(obj.get("webhooks") or [])


class WebhookRulesWriter:
    """Writes the MutatingWebhookConfiguration the loaded policies need (leader only)."""

    def __init__(self, cluster: Cluster, config: WebhookRulesConfig) -> None:
        self.cluster = cluster
        self.config = config
        self.writes = 0  # creates and replaces issued (a metric, and what the burst test bounds)
        self._next = 0.0
        self._conditions = PolicyConditions(cluster, CONDITION_TYPE, "ResourceNotServed", "WebhookNotRegistered")
        self._foreign = False  # an object of that name is someone else's (logged once)

    def due(self) -> bool:
        return time.monotonic() >= self._next

    # --- what the API server serves ----------------------------------------------------------------

    def _discovery(self) -> managed_webhooks.Served:
        known: dict[tuple[str, str], set[str] | None] = {}

        def served(group: str, version: str, resource: str) -> bool | None:
            if (group, version) not in known:
                path = f"/apis/{group}/{version}" if group else f"/api/{version}"
                try:
                    listed = self.cluster.request("GET", path) or {}
                    known[(group, version)] = {str(r.get("name")) for r in listed.get("resources") or []}
                except NotFound:
                    known[(group, version)] = set()
                except ClusterError as ex:  # cannot tell: keep the rule rather than drop it
                    log.warning("discovery failed", extra={"group_version": path, "error": str(ex)})
                    known[(group, version)] = None
            names = known[(group, version)]
            return None if names is None else resource in names

        return served

    def _owner(self) -> list[Obj] | None:
        """The ownerReference to the chart's ClusterRole ([] when none is configured); None when it is missing
        (a dependent of a missing owner would be garbage-collected at once)."""
        name = self.config.owner_cluster_role
        if not name:
            return []
        try:
            role = self.cluster.get("rbac.authorization.k8s.io/v1", "clusterroles", "", name)
        except NotFound:
            log.warning("the owner ClusterRole is missing: configuration not written", extra={"configuration": name})
            return None
        uid = (role.get("metadata") or {}).get("uid")
        return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": name, "uid": uid}]

    # --- syncing ------------------------------------------------------------------------------------

    def wanted(self, policies: Sequence[CompiledPolicy]) -> managed_webhooks.Plan:
        """What the controller would write (no owner: :meth:`sync` adds it)."""
        metadata: Obj = {"annotations": dict(self.config.annotations)} if self.config.annotations else {}
        return managed_webhooks.plan(
            policies, self.config.settings, name=self.config.name, served=self._discovery(), metadata=metadata
        )

    def sync(self, policies: Sequence[CompiledPolicy], source: ClusterPolicySource | None = None) -> bool:
        """Bring the stored configuration to what ``policies`` need; True when something was written."""
        self._next = time.monotonic() + self.config.resync_seconds
        try:
            written = self._sync(policies, source)
        except Conflict:  # another writer (a former leader) wrote in between: read again soon
            self._next = time.monotonic()
            return False
        except ClusterError as ex:
            log.warning("could not write the webhook configuration", extra={"error": str(ex)})
            return False
        return written

    def _sync(self, policies: Sequence[CompiledPolicy], source: ClusterPolicySource | None) -> bool:
        owners = self._owner()
        if owners is None:
            return False
        plan = self.wanted(policies)
        self._report(plan.unregistered, source)
        desired = plan.configuration
        if owners:
            desired["metadata"]["ownerReferences"] = owners
        try:
            current = self.cluster.get(*CONFIGURATIONS, "", self.config.name)
        except NotFound:
            self.writes += 1  # counted as issued, before the API server can show it (the burst test reads both)
            self.cluster.create(*CONFIGURATIONS, "", desired)
            log.info("webhook configuration created", extra={"configuration": self.config.name})
            return True
        meta = current.get("metadata") or {}
        if (meta.get("labels") or {}).get(managed_webhooks.MANAGED_LABEL[0]) != managed_webhooks.MANAGED_LABEL[1]:
            if not self._foreign:  # once, not at every resync
                log.warning(
                    "a MutatingWebhookConfiguration of that name is not the controller's: left alone until removed",
                    extra={"configuration": self.config.name},
                )
            self._foreign = True
            return False
        self._foreign = False
        _carry_over(current, desired)
        if _comparable(current) == _comparable(desired):
            return False
        desired["metadata"]["resourceVersion"] = meta.get("resourceVersion")
        self.writes += 1
        self.cluster.replace(*CONFIGURATIONS, "", self.config.name, desired)
        log.info("webhook configuration updated", extra={"configuration": self.config.name})
        return True

    def _report(self, unregistered: list[managed_webhooks.Unregistered], source: ClusterPolicySource | None) -> None:
        """A condition on each cluster policy whose rules are not all registered, and a Warning Event once
        per change; the condition goes once they are."""
        self._conditions.report({(u.kind, u.namespace, u.name): u.message for u in unregistered}, source)


def _carry_over(current: Mapping[str, Any], desired: Obj) -> None:
    """Keep what others write into the object: the CA bundle (TLS upkeep, cert-manager) and annotations."""
    bundles = [(w.get("clientConfig") or {}).get("caBundle") for w in current.get("webhooks") or []]
    bundle = next((b for b in bundles if b), None)
    if bundle is not None:
        for webhook in desired["webhooks"]:
            webhook["clientConfig"].setdefault("caBundle", bundle)
    stored = (current.get("metadata") or {}).get("annotations") or {}
    annotations = {**stored, **desired["metadata"].get("annotations", {})}
    if annotations:
        desired["metadata"]["annotations"] = annotations
