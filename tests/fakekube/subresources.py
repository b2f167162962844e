"""The subresources that are not plain views of the main object: ``pods/eviction`` and ``*/scale``.

Eviction follows the real eviction REST handler, with one necessary approximation: there is no
disruption controller, so a PodDisruptionBudget's allowed disruptions are computed at eviction time from
the pods its selector matches in the pod's namespace. ``expected`` is the number of matching pods that
are not Succeeded/Failed (or the PDB's ``status.expectedPods`` when larger); ``healthy`` counts those not
being deleted (no kubelet runs here, so a Pending pod counts as available). ``minAvailable`` and
``maxUnavailable`` (integers or percentages, rounded up) then give the desired healthy count; when
``healthy - desired <= 0`` the answer is 429 TooManyRequests, as from the real server. Pods already
being deleted or in a terminal phase are evicted without consulting PDBs; more than one matching PDB is
a 500, as on the real server. A successful eviction deletes the pod — gracefully when it is bound to a
node (:mod:`.graceful`: Terminating until its grace period ends) — and answers 201 with a Success Status.
"""

from __future__ import annotations

import math
from typing import Any

from . import errors
from .resources import ResourceType
from .selectors import label_selector_matches, label_selector_string
from .store import Store

Obj = dict[str, Any]


def _scaled(value: int | str, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(total * int(value[:-1]) / 100)
    return int(value)


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _check_budgets(store: Store, pod: Obj, namespace: str) -> None:
    labels = pod["metadata"].get("labels") or {}
    pdb_type = store.resolve("policy/v1/poddisruptionbudgets")
    budgets = [
        e.obj
        for e in store.list_entries(pdb_type, namespace).entries
        if label_selector_matches((e.obj.get("spec") or {}).get("selector"), labels)
    ]
    if not budgets:
        return
    if len(budgets) > 1:
        raise errors.ApiError(
            500, "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
        )
    pdb = budgets[0]
    spec = pdb.get("spec") or {}
    pods = [
        e.obj
        for e in store.list_entries(store.resolve("pods"), namespace).entries
        if label_selector_matches(spec.get("selector"), e.obj["metadata"].get("labels") or {}) and not _terminal(e.obj)
    ]
    expected = max(len(pods), int((pdb.get("status") or {}).get("expectedPods") or 0))
    healthy = sum(1 for p in pods if not p["metadata"].get("deletionTimestamp"))
    if spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected)
    elif spec.get("maxUnavailable") is not None:
        desired = expected - _scaled(spec["maxUnavailable"], expected)
    else:
        desired = 0
    if healthy - desired <= 0:
        raise errors.ApiError(
            429,
            "Cannot evict pod as it would violate the pod's disruption budget.",
            "TooManyRequests",
            {
                "causes": [
                    {
                        "reason": "DisruptionBudget",
                        "message": f"The disruption budget {pdb['metadata']['name']} needs {desired} healthy pods "
                        f"and has {healthy} currently",
                    }
                ]
            },
        )


def evict(store: Store, namespace: str, name: str, body: Any, dry_run: bool = False) -> Obj:
    """``POST /api/v1/namespaces/{namespace}/pods/{name}/eviction``: returns the Success Status."""
    if not isinstance(body, dict) or body.get("kind", "Eviction") != "Eviction":
        raise errors.bad_request("the body of an eviction must be a policy/v1 Eviction")
    meta = body.get("metadata") or {}
    if meta.get("name") not in (None, "", name):
        raise errors.bad_request("name in URL does not match name in Eviction object")
    if meta.get("namespace") not in (None, "", namespace):
        raise errors.bad_request("namespace in URL does not match namespace in Eviction object")
    options = body.get("deleteOptions") or {}
    preconditions = options.get("preconditions")
    with store._lock:
        pod = store.get_entry("pods", name, namespace).obj
        if not pod["metadata"].get("deletionTimestamp") and not _terminal(pod):
            _check_budgets(store, pod, namespace)
        store.delete_entry(  # an eviction deletes gracefully (pkg/registry/core/pod/storage/eviction.go)
            "pods",
            name,
            namespace,
            preconditions=preconditions,
            dry_run=dry_run,
            grace_period_seconds=options.get("gracePeriodSeconds"),
        )
    return errors.success_status(201)


def _path_get(obj: Obj, path: str) -> Any:
    value: Any = obj
    for part in path.strip(".").split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _path_patch(path: str, value: Any) -> Obj:
    parts = path.strip(".").split(".")
    patch: Obj = {parts[-1]: value}
    for part in reversed(parts[:-1]):
        patch = {part: patch}
    return patch


def _scale_paths(rtype: ResourceType) -> tuple[str, str, str]:
    return rtype.scale_paths or (".spec.replicas", ".status.replicas", "")


def scale_of(rtype: ResourceType, obj: Obj) -> Obj:
    """The ``autoscaling/v1`` Scale view of an object."""
    spec_path, status_path, selector_path = _scale_paths(rtype)
    meta = obj["metadata"]
    if selector_path:
        selector = _path_get(obj, selector_path) or ""
    else:
        selector = label_selector_string((obj.get("spec") or {}).get("selector"))
    scale_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": int(_path_get(obj, spec_path) or 0)},
        "status": {"replicas": int(_path_get(obj, status_path) or 0), "selector": selector},
    }


def write_scale(store: Store, rtype: ResourceType, namespace: str, name: str, scale: Any, dry_run: bool) -> Obj:
    """Apply a new Scale (from a PUT, or a patch applied to the Scale view) to the main object."""
    if not isinstance(scale, dict) or not isinstance((scale.get("spec") or {}).get("replicas"), int):
        raise errors.bad_request("a Scale must carry an integer spec.replicas")
    patch = _path_patch(_scale_paths(rtype)[0], scale["spec"]["replicas"])
    rv = (scale.get("metadata") or {}).get("resourceVersion")
    if rv:
        patch["metadata"] = {"resourceVersion": rv}
    entry = store.patch_entry(rtype, name, patch, namespace=namespace or None, dry_run=dry_run)
    return scale_of(rtype, entry.obj)
