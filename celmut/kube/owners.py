"""The opt-out label, honoured through controller ownerReferences (a :data:`celmut.runtime.ownership.OptOut`).

The webhook's ``objectSelector`` (``<label> DoesNotExist``) sees only the object in the request. A
Deployment labelled ``celmut.io/ignore`` passes the label to neither its ReplicaSets nor its Pods (their
labels come from the pod template), so its Pods would still be mutated. :class:`OwnerOptOut` follows
the controller owners of an object (Pod → ReplicaSet → Deployment, Pod → Job → CronJob, up to
``max_depth`` levels, in the object's namespace) and names the first one carrying the label; the
object's own label counts too (the controller's drift pass has no objectSelector in front of it).

Owners are read from the watched caches CEL lookups share (:class:`~celmut.kube.lookup.CacheSet`,
started on first use). A ReplicaSet created moments before its first Pod may not have reached the
cache yet: a miss (or an object with another uid) is read from the API server instead, so the answer
never depends on watch latency. When the owner cannot be read at all the object is not opted out (the
error is logged): the opt-out never blocks admission.
"""

from __future__ import annotations

import logging
from typing import Any

from celmut import kinds
from celmut.cel.lookups import before_blocking
from celmut.kube.client import ClusterError, NotFound
from celmut.kube.lookup import CacheSet
from celmut.runtime.ownership import DEFAULT_OPT_OUT_LABEL, controller_owner

log = logging.getLogger("celmut.kube")


def _labels(obj: dict[str, Any]) -> dict[str, Any]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


class OwnerOptOut:
    """Why an object is opted out of celmut ('' when it is not): its label, or an owner's."""

    def __init__(self, caches: CacheSet, label: str = DEFAULT_OPT_OUT_LABEL, *, max_depth: int = 3) -> None:
        self.caches = caches
        self.label = label
        self.max_depth = max_depth

    def _owner(self, ref: dict[str, Any], namespace: str) -> dict[str, Any] | None:
        api_version, kind, name = str(ref.get("apiVersion", "")), str(ref.get("kind", "")), str(ref.get("name", ""))
        resource = kinds.resource_for(api_version, kind)
        where = f"{kind} {namespace}/{name}"
        cache = self.caches.ready(api_version, resource)
        if cache is not None:
            cached = cache.get(namespace, name)
            if cached is not None and (cached.get("metadata") or {}).get("uid") == ref.get("uid"):
                return cached
        before_blocking(f"reading {where} from the API server")
        try:
            owner: dict[str, Any] = self.caches.cluster.get(api_version, resource, namespace, name)
            return owner
        except NotFound:
            return None
        except ClusterError as ex:
            log.warning("cannot read an owner for the opt-out label", extra={"owner": where, "error": str(ex)})
            return None

    def __call__(self, obj: dict[str, Any]) -> str:
        if self.label in _labels(obj):
            return f"labelled {self.label}"
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        current = obj
        for _ in range(self.max_depth):
            ref = controller_owner(current)
            if ref is None or not namespace:
                return ""
            owner = self._owner(ref, namespace)
            if owner is None:
                return ""
            if self.label in _labels(owner):
                return f"its owner {ref.get('kind')} {namespace}/{ref.get('name')} is labelled {self.label}"
            current = owner
        return ""
