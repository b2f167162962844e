"""What the fake controllers share: a template's hash, controller references, pods from templates."""

from __future__ import annotations

import copy
from typing import Any

from celmut.playground.workloads import template_hash

Obj = dict[str, Any]


def compute_hash(template: Obj, collision_count: int | None) -> str:
    """A deterministic hash of a pod template and the collision count (``controller.ComputeHash``:
    FNV-32a, then ``rand.SafeEncodeString``; not byte-identical to Go's, which hashes the Go struct): the
    one the playground names a Deployment's ReplicaSet with, so both make the same names."""
    return template_hash(template, collision_count)


def controller_of(obj: Obj) -> Obj | None:
    """``metav1.GetControllerOf``: the ownerReference with ``controller: true``."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def controller_ref(owner: Obj) -> Obj:
    """``metav1.NewControllerRef``."""
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_from_template(owner: Obj, template: Obj) -> Obj:
    """``controller.GetPodFromTemplate``: the pod a controller creates from its template."""
    template_meta = template.get("metadata") or {}
    metadata: Obj = {
        "generateName": f"{owner['metadata']['name']}-",
        "namespace": owner["metadata"]["namespace"],
        "ownerReferences": [controller_ref(owner)],
    }
    for key in ("labels", "annotations", "finalizers"):
        if template_meta.get(key):
            metadata[key] = copy.deepcopy(template_meta[key])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": copy.deepcopy(template.get("spec") or {})}


def owned_by(obj: Obj, owner: Obj) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == owner["metadata"]["uid"]
