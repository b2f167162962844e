"""``pods/resize`` (in-place pod resize, Kubernetes 1.33+), as kube-apiserver v1.36 serves it.

An update through it keeps only what a resize may change, then validates that (kubernetes
``pkg/registry/core/pod/strategy.go`` ``podResizeStrategy``): ``dropNonResizeUpdates`` takes each
container's (and init container's) ``resources`` and ``resizePolicy`` from the new pod and everything else
— spec, status, labels, annotations (``ResetObjectMetaForStatus``) — from the stored one, unless
containers were added, removed, renamed or reordered; ``ValidatePodResize``
(``pkg/apis/core/validation/validation.go``) then refuses, with the API server's messages: containers
added, removed, renamed or reordered; requests or limits removed; anything but cpu and memory changed;
a change of QoS class; a running container without ``status.containerStatuses[].resources`` (a node
without resize support); resources of a non-sidecar init container. A plain pod update that changes
resources is refused by the pod's own validation (``tests/fakekube/validation.py``), as on a real server.
"""

from __future__ import annotations

import copy
from typing import Any

from .defaults import qos_class

Obj = dict[str, Any]
Cause = tuple[str, str, str]
RESIZE_FIELDS = ("resources", "resizePolicy")
_META_FROM_STORED = ("labels", "annotations", "finalizers", "ownerReferences", "deletionTimestamp", "generation")


def kept_by_resize(old: Obj, new: Obj) -> Obj:
    """``dropNonResizeUpdates``: the stored pod with the new pod's container resources and resize policies."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    pairs = {f: (old_spec.get(f) or [], new_spec.get(f) or []) for f in ("containers", "initContainers")}
    if any(len(before) != len(after) for before, after in pairs.values()):
        return new  # validation says why
    kept = copy.deepcopy(old)
    for field, (before, after) in pairs.items():
        for index, (stored, wanted) in enumerate(zip(before, after, strict=True)):
            if stored.get("name") != wanted.get("name"):
                return new
            container = kept["spec"][field][index]
            for key in RESIZE_FIELDS:
                if key in wanted:
                    container[key] = copy.deepcopy(wanted[key])
                else:
                    container.pop(key, None)
    meta = kept["metadata"]
    for key in ("resourceVersion", "uid", "name", "namespace"):  # the request's precondition and identity
        if key in (new.get("metadata") or {}):
            meta[key] = new["metadata"][key]
    for key in _META_FROM_STORED:
        if key in old["metadata"]:
            meta[key] = copy.deepcopy(old["metadata"][key])
    return kept


def _removed(new: Obj | None, old: Obj | None) -> bool:
    return any(name not in (new or {}) for name in old or {})


def _other_than_cpu_memory(new: Obj, old: Obj) -> bool:
    def rest(resources: Obj) -> Obj:
        return {
            part: {k: v for k, v in (resources.get(part) or {}).items() if k not in ("cpu", "memory")}
            for part in ("requests", "limits")
        }

    return rest(new.get("resources") or {}) != rest(old.get("resources") or {})


def resize_causes(old: Obj, new: Obj) -> list[Cause]:
    """``ValidatePodResize`` of ``new`` (as :func:`kept_by_resize` left it) against the stored ``old``."""
    causes: list[Cause] = []
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    stored_qos = (old.get("status") or {}).get("qosClass") or qos_class(old)
    if stored_qos != qos_class(new):
        causes.append(
            (
                "FieldValueInvalid",
                "spec",
                f'Invalid value: "{stored_qos}": Pod QOS Class may not change as a result of resizing',
            )
        )
    for status in (old.get("status") or {}).get("containerStatuses") or []:
        if (status.get("state") or {}).get("running") is not None:
            if status.get("resources") is None:
                causes.append(
                    ("FieldValueForbidden", "spec", "Forbidden: Pod running on node without support for resize")
                )
            break
    for field, label in (("containers", "containers"), ("initContainers", "initContainers")):
        before, after = old_spec.get(field) or [], new_spec.get(field) or []
        if len(before) != len(after):
            causes.append(
                ("FieldValueForbidden", f"spec.{field}", f"Forbidden: {label} may not be added or removed on resize")
            )
            return causes
        for index, (stored, wanted) in enumerate(zip(before, after, strict=True)):
            if stored.get("name") != wanted.get("name"):
                causes.append((
                    "FieldValueForbidden",
                    f"spec.{field}[{index}].name",
                    f"Forbidden: {label} may not be renamed or reordered on resize",
                ))  # fmt: skip
    if causes:
        return causes
    for index, (stored, wanted) in enumerate(
        zip(old_spec.get("containers") or [], new_spec.get("containers") or [], strict=True)
    ):
        where = f"spec.containers[{index}].resources"
        before, after = stored.get("resources") or {}, wanted.get("resources") or {}
        if _removed(after.get("requests"), before.get("requests")):
            causes.append(
                ("FieldValueForbidden", f"{where}.requests", "Forbidden: resource requests cannot be removed")
            )
        if _removed(after.get("limits"), before.get("limits")):
            causes.append(("FieldValueForbidden", f"{where}.limits", "Forbidden: resource limits cannot be removed"))
        if _other_than_cpu_memory(wanted, stored):
            causes.append(("FieldValueForbidden", "spec", "Forbidden: only cpu and memory resources are mutable"))
    for stored, wanted in zip(old_spec.get("initContainers") or [], new_spec.get("initContainers") or [], strict=True):
        sidecar = stored.get("restartPolicy") == "Always"
        if not sidecar and stored.get("resources") != wanted.get("resources"):
            causes.append(
                ("FieldValueForbidden", "spec", "Forbidden: resources for non-sidecar init containers are immutable")
            )
    return causes
