"""One admission configuration object the controller's leader owns whole, and writes only when it differs.

Shared by the MutatingWebhookConfiguration of the policies' rules (:mod:`celmut.controller.webhook_rules`)
and the ValidatingWebhookConfiguration of the policy kinds (:mod:`celmut.controller.policy_validation`):

* the object is labelled ``webhook.celmut.io/managed-by: celmut-controller``; one of that name without the
  label is someone else's (the chart's static one during an upgrade to managed rules), and so is one owned
  by another install's ClusterRole: left alone, logged once, looked at again until it is gone;
* an ownerReference to a chart ClusterRole (cluster-scoped, as a cluster-scoped dependent's owner must
  be): deleting the ClusterRole — ``helm uninstall``, or a values change or rollback that drops it —
  lets the garbage collector delete the object, so no webhook outlives what registered it; nothing is
  written while that ClusterRole is missing (a dependent of a missing owner is collected at once);
* every write is one create, or one PUT of the whole object guarded by the resourceVersion just read,
  so two replicas or a leader change never leave it half-written: the loser's write is refused
  (:class:`~celmut.kube.client.Conflict`) and it reads again. Nothing is written when the wanted object
  is what is stored; the ``caBundle`` (self-managed TLS or cert-manager's injection) and the annotations
  others wrote are carried over.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from celmut.install.managed_webhooks import MANAGED_LABEL
from celmut.kube.client import Cluster, ClusterError, Conflict, NotFound

log = logging.getLogger("celmut.controller")

Obj = dict[str, Any]


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
    label = (meta.get("labels") or {}).get(MANAGED_LABEL[0])
    return label, meta.get("annotations") or {}, owners, _pruned(obj.get("webhooks") or [])


def _another_install(stored_meta: Mapping[str, Any], owners: list[Obj]) -> bool:
    """Whether the stored object is another celmut install's: owned by a ClusterRole other than this one's
    (two installs configured with one configuration name must not rewrite each other's)."""
    theirs = {r.get("name") for r in stored_meta.get("ownerReferences") or [] if r.get("kind") == "ClusterRole"}
    return bool(owners and theirs and not theirs & {r.get("name") for r in owners})


def ca_bundle_of(configuration: Mapping[str, Any]) -> str | None:
    """The first ``caBundle`` of a configuration's webhooks, None when none has one."""
    bundles = [(w.get("clientConfig") or {}).get("caBundle") for w in configuration.get("webhooks") or []]
    return next((b for b in bundles if b), None)


def carry_over(current: Mapping[str, Any], desired: Obj) -> None:
    """Keep what others write into the object: the CA bundle (TLS upkeep, cert-manager) and annotations."""
    bundle = ca_bundle_of(current)
    if bundle is not None:
        for webhook in desired["webhooks"]:
            webhook["clientConfig"].setdefault("caBundle", bundle)
    stored = (current.get("metadata") or {}).get("annotations") or {}
    annotations = {**stored, **desired["metadata"].get("annotations", {})}
    if annotations:
        desired["metadata"]["annotations"] = annotations


class ManagedConfiguration:
    """Writes one configuration object (``resource``: apiVersion and plural) named ``name``."""

    def __init__(self, cluster: Cluster, resource: tuple[str, str], name: str, owner_cluster_role: str = "") -> None:
        self.cluster = cluster
        self.resource = resource
        self.name = name
        self.owner_cluster_role = owner_cluster_role
        self.writes = 0  # creates and replaces issued (a metric, and what the burst test bounds)
        self._foreign = False  # an object of that name is someone else's (logged once)

    def owners(self) -> list[Obj] | None:
        """The ownerReference to the ClusterRole ([] when none is configured); None when it is missing."""
        name = self.owner_cluster_role
        if not name:
            return []
        try:
            role = self.cluster.get("rbac.authorization.k8s.io/v1", "clusterroles", "", name)
        except NotFound:
            log.warning("the owner ClusterRole is missing: configuration not written", extra={"configuration": name})
            return None
        uid = (role.get("metadata") or {}).get("uid")
        return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": name, "uid": uid}]

    def stored(self) -> Obj | None:
        try:
            return self.cluster.get(*self.resource, "", self.name)
        except NotFound:
            return None

    def write(self, desired: Obj, owners: list[Obj]) -> bool:
        """Make the stored object ``desired`` (labelled, owned by ``owners``); True when something was
        written. Raises :class:`~celmut.kube.client.Conflict` when another writer got there first."""
        meta = desired.setdefault("metadata", {})
        meta["labels"] = {**dict(meta.get("labels") or {}), MANAGED_LABEL[0]: MANAGED_LABEL[1]}
        if owners:
            meta["ownerReferences"] = owners
        current = self.stored()
        kind = str(desired.get("kind"))
        if current is None:
            self.writes += 1  # counted as issued, before the API server can show it (the burst test reads both)
            self.cluster.create(*self.resource, "", desired)
            log.info("webhook configuration created", extra={"configuration": self.name, "kind": kind})
            return True
        stored_meta = current.get("metadata") or {}
        if (stored_meta.get("labels") or {}).get(MANAGED_LABEL[0]) != MANAGED_LABEL[1] or _another_install(
            stored_meta, owners
        ):
            if not self._foreign:  # once, not at every resync
                log.warning(
                    "a webhook configuration of that name is not the controller's: left alone until removed",
                    extra={"configuration": self.name, "kind": kind},
                )
            self._foreign = True
            return False
        self._foreign = False
        carry_over(current, desired)
        if _comparable(current) == _comparable(desired):
            return False
        meta["resourceVersion"] = stored_meta.get("resourceVersion")
        self.writes += 1
        self.cluster.replace(*self.resource, "", self.name, desired)
        log.info("webhook configuration updated", extra={"configuration": self.name, "kind": kind})
        return True


class ManagedWriter:
    """A writer of one managed configuration (leader only): the object, and when to look at it again —
    every ``resync_seconds`` unprompted, at once after a conflict with another writer."""

    def __init__(
        self, cluster: Cluster, resource: tuple[str, str], name: str, owner_cluster_role: str, resync_seconds: float
    ) -> None:
        self.cluster = cluster
        self.managed = ManagedConfiguration(cluster, resource, name, owner_cluster_role)
        self.resync_seconds = resync_seconds
        self._next = 0.0

    @property
    def writes(self) -> int:
        """Creates and replaces issued (a metric, and what the burst test bounds)."""
        return self.managed.writes

    def due(self) -> bool:
        return time.monotonic() >= self._next

    def write(self, wanted: Callable[[], Obj]) -> bool:
        """One sync: the ``wanted`` object (built once the owner is known) written if it differs; True when
        something was written. The next sync is due in ``resync_seconds`` — at once after a conflict with
        another writer (a former leader); an API error is logged and tried again then."""
        self._next = time.monotonic() + self.resync_seconds
        try:
            owners = self.managed.owners()
            return owners is not None and self.managed.write(wanted(), owners)
        except Conflict:
            self._next = time.monotonic()
            return False
        except ClusterError as ex:
            name = self.managed.name
            log.warning("could not write the webhook configuration", extra={"configuration": name, "error": str(ex)})
            return False
