"""Read-your-writes for the admissions that count a workload's pods (issue 38).

A spot split or distribution group is decided on the workload's pods as the webhook knows them. Its
watched pod cache is behind the API server by the time the watch takes to deliver an event, and that
is when it matters: the ReplicaSet controller replaces a pod the moment the API server has marked it
deleted (``pkg/controller/controller_utils.go`` ``FilterActivePods``), and the replacement reaches the
webhook before, or after, its own watch has delivered the deletion. So an admission that lists pods
reads them from the API server too (:func:`stored_pods`: one consistent list, label-selected, in the
cache's projection), and :func:`celmut.kube.admitted_pods.reconcile` combines it with the cache and
with the pods this process admitted that are not stored yet.

The projection of a metadata-only pod cache has no ``status``, so its lists (watched and stored) leave
out Failed and Succeeded pods by field selector (:data:`METADATA_FIELD_SELECTORS`), which a whole
object shows in its ``status.phase``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from celmut.kube.client import Cluster, ClusterError

log = logging.getLogger("celmut.kube")

#: Only pods that are not Failed/Succeeded can count, and PartialObjectMetadata cannot say which: such a
#: cache lists and watches the others (the watch turns a pod that becomes Failed into DELETED).
METADATA_FIELD_SELECTORS = {("v1", "pods"): "status.phase!=Failed,status.phase!=Succeeded"}

Obj = dict[str, Any]


def stored_pods(
    cluster: Cluster, namespace: str, labels: Mapping[str, str] | None, metadata_only: bool
) -> list[Obj] | None:
    """The pods the API server has stored now (a consistent read), as the pod cache projects them; None
    (logged) when it cannot be read: the decision then falls back to the watched cache."""
    selector = ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items()))
    fields = METADATA_FIELD_SELECTORS[("v1", "pods")] if metadata_only else ""
    try:
        listed = cluster.list_all(
            "v1", "pods", namespace, label_selector=selector, field_selector=fields, metadata_only=metadata_only
        )
    except ClusterError as ex:
        log.warning(
            "cannot read the workload's pods from the API server; deciding on the watched cache",
            extra={"namespace": namespace, "labelSelector": selector, "error": str(ex)},
        )
        return None
    items = []
    for item in listed.get("items") or []:
        metadata = item.get("metadata") or {}
        metadata.pop("managedFields", None)
        if metadata_only:
            items.append({"apiVersion": "v1", "kind": "Pod", "metadata": metadata})
        else:
            items.append({"apiVersion": "v1", "kind": "Pod", **item})
    return items
