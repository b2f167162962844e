"""What may change on a running pod, and which pods may be replaced.

Kubernetes rejects most changes to a running pod's spec (``ValidatePodUpdate``). The fields it
accepts are: metadata labels, annotations and finalizers; container and init container images;
tolerations, when only added; ``activeDeadlineSeconds``, when set or lowered; and
``schedulingGates``, when only removed. :func:`split_live_change` takes a mutated pod and returns
the part Kubernetes will accept in a patch and the part that needs the pod replaced.

Container resources are not among them: since Kubernetes 1.33 they change in place through the
``pods/resize`` subresource (kubernetes ``pkg/registry/core/pod/strategy.go`` ``dropNonResizeUpdates``
keeps only ``resources`` and ``resizePolicy`` of each container, ``ValidatePodResize`` checks them). A
mutateExisting policy whose ``targetMatchConstraints`` name ``pods/resize`` has those changes written
there (:func:`split_resize`), as Kyverno routes such targets.
"""

from __future__ import annotations

from typing import Any

from celmut.runtime.patch import diff

_METADATA_FIELDS = ("labels", "annotations", "finalizers")
_RESIZE_FIELDS = ("resources", "resizePolicy")  # what pods/resize takes of a container


def _images(containers: Any) -> dict[object, Any]:
    """Image by container name, keyed by whatever ``name`` holds (None when missing)."""
    return {c.get("name"): c.get("image") for c in containers or [] if isinstance(c, dict)}


def live_form(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``old`` with every change from ``new`` that a running pod accepts.

    Unchanged subtrees are shared with ``old`` (not copied), so diffs against it stay cheap.
    """
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    live_meta = {k: v for k, v in old_meta.items() if k not in _METADATA_FIELDS}
    live_meta.update({k: new_meta[k] for k in _METADATA_FIELDS if k in new_meta})
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    live_spec = dict(old_spec)
    for field in ("containers", "initContainers"):
        images = _images(new_spec.get(field))
        current = old_spec.get(field)
        if isinstance(current, list) and any(
            c.get("image") != images.get(c.get("name"), c.get("image")) for c in current
        ):
            live_spec[field] = [
                {**c, "image": images[c.get("name")]} if images.get(c.get("name")) not in (None, c.get("image")) else c
                for c in current
            ]
    old_tolerations = old_spec.get("tolerations") or []
    new_tolerations = new_spec.get("tolerations") or []
    if new_tolerations[: len(old_tolerations)] == old_tolerations and len(new_tolerations) > len(old_tolerations):
        live_spec["tolerations"] = new_tolerations
    old_deadline, new_deadline = old_spec.get("activeDeadlineSeconds"), new_spec.get("activeDeadlineSeconds")
    if isinstance(new_deadline, int) and new_deadline > 0 and (old_deadline is None or new_deadline <= old_deadline):
        live_spec["activeDeadlineSeconds"] = new_deadline
    old_gates, new_gates = old_spec.get("schedulingGates") or [], new_spec.get("schedulingGates")
    if isinstance(new_gates, list) and all(g in old_gates for g in new_gates):
        if new_gates:
            live_spec["schedulingGates"] = new_gates
        else:
            live_spec.pop("schedulingGates", None)
    live = dict(old)
    live["metadata"] = live_meta
    if "spec" in old or live_spec:
        live["spec"] = live_spec
    return live


def split_live_change(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(a patch a running pod accepts, the remaining changes that need the pod replaced)."""
    live = live_form(old, new)
    return diff(old, live), diff(live, new)


def resize_form(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``old`` with the containers' (and init containers') ``resources`` and ``resizePolicy`` of ``new`` —
    what ``pods/resize`` keeps of an update (``dropNonResizeUpdatesForContainers``). Containers added,
    removed, renamed or reordered: nothing (a resize cannot do that; the rest of the change says so)."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    spec = dict(old_spec)
    for field in ("containers", "initContainers"):
        before, after = old_spec.get(field), new_spec.get(field)
        if not isinstance(before, list) or not isinstance(after, list) or len(before) != len(after):
            continue
        if any(not isinstance(b, dict) or not isinstance(a, dict) or b.get("name") != a.get("name")
               for b, a in zip(before, after, strict=True)):  # fmt: skip
            continue
        merged = []
        for b, a in zip(before, after, strict=True):
            container = {k: v for k, v in b.items() if k not in _RESIZE_FIELDS}
            container.update({k: a[k] for k in _RESIZE_FIELDS if k in a})
            merged.append(container if container != b else b)
        spec[field] = merged
    return {**old, "spec": spec} if spec != old_spec else old


def split_resize(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(the patch for ``pods/resize``, the pod as it will be once resized): the rest of ``new`` is then a
    change of that pod through the pod itself."""
    resized = resize_form(old, new)
    return diff(old, resized), resized


def controller_owner(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The pod's controlling owner reference (ReplicaSet, StatefulSet, Job, …), if any."""
    for owner in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(owner, dict) and owner.get("controller"):
            return owner
    return None


def is_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions if isinstance(c, dict))
