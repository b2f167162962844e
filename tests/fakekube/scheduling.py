"""Where a pod may run: taints and tolerations, node selectors and required node affinity, and a
kube-scheduler reduced to those filters (issue 38: the spot presets are judged by where pods land).

The predicates are Kubernetes' own, read from the source:

* ``staging/src/k8s.io/api/core/v1/toleration.go`` ``Toleration.ToleratesTaint`` and
  ``pkg/apis/core/v1/helper/helpers.go`` ``FindMatchingUntoleratedTaint``;
* ``staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go``
  ``GetRequiredNodeAffinity(pod).Match(node)``: ``spec.nodeSelector`` and every required
  ``nodeSelectorTerms`` (terms ORed; a term's ``matchExpressions`` on labels and ``matchFields`` on
  ``metadata.name`` ANDed; an empty term matches nothing);
* the scheduler's filters ``NodeName``, ``NodeUnschedulable`` (a cordoned node takes only pods tolerating
  ``node.kubernetes.io/unschedulable:NoSchedule``), ``TaintToleration`` (NoSchedule and NoExecute taints)
  and ``NodeAffinity``. Resources, ports and volumes are not modelled: every node has room.

:class:`Scheduler` binds each pending pod (no ``spec.nodeName``, not Terminating) to the fitting node with
the fewest pods (ties by name: deterministic), as ``pods/binding`` does (``pkg/registry/core/pod/storage/
storage.go`` ``assignPod``: ``spec.nodeName`` and the ``PodScheduled`` condition; no admission of the pod).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import errors
from .graceful import terminating
from .watch import MODIFIED

if TYPE_CHECKING:
    from .store import Store

Obj = dict[str, Any]
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def tolerates(toleration: Obj, taint: Obj) -> bool:
    """``Toleration.ToleratesTaint``."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taint(taints: list[Obj], tolerations: list[Obj], effects: tuple[str, ...]) -> Obj | None:
    """``FindMatchingUntoleratedTaint`` for the taints with one of ``effects``."""
    for taint in taints:
        if taint.get("effect") in effects and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def _requirement(requirement: Obj, value: str | None) -> bool:
    operator, values = requirement.get("operator"), requirement.get("values") or []
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            number, bound = int(value), int(values[0])
        except ValueError:
            return False
        return number > bound if operator == "Gt" else number < bound
    return False


def _term(term: Obj, node: Obj) -> bool:
    expressions, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches nothing
    labels = (node.get("metadata") or {}).get("labels") or {}
    name = (node.get("metadata") or {}).get("name")
    return all(_requirement(e, labels.get(e.get("key"))) for e in expressions) and all(
        f.get("key") == "metadata.name" and _requirement(f, name) for f in fields
    )


def required_affinity_matches(spec: Obj, node: Obj) -> bool:
    """``GetRequiredNodeAffinity(pod).Match(node)``: nodeSelector and the required node affinity terms."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is None:
        return True
    return any(_term(t, node) for t in required.get("nodeSelectorTerms") or [])


def fits(spec: Obj, node: Obj) -> bool:
    """The scheduler's NodeName, NodeUnschedulable, TaintToleration and NodeAffinity filters."""
    name = (node.get("metadata") or {}).get("name")
    if spec.get("nodeName") not in (None, "", name):
        return False
    tolerations = spec.get("tolerations") or []
    node_spec = node.get("spec") or {}
    if node_spec.get("unschedulable") and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in tolerations):
        return False
    if untolerated_taint(node_spec.get("taints") or [], tolerations, ("NoSchedule", "NoExecute")) is not None:
        return False
    return required_affinity_matches(spec, node)


def bind(store: Store, namespace: str, name: str, node: str) -> Obj:
    """``pods/binding``: set ``spec.nodeName`` and ``PodScheduled``; 409 when already bound."""
    with store._lock:
        entry = store.get_entry("pods", name, namespace)
        pod = entry.copy()
        if (pod.get("spec") or {}).get("nodeName"):
            raise errors.conflict("pods", "", name, f"pod {name} is already assigned to node {pod['spec']['nodeName']}")
        pod.setdefault("spec", {})["nodeName"] = node
        conditions = [
            c for c in (pod.setdefault("status", {}).get("conditions") or []) if c.get("type") != "PodScheduled"
        ]
        pod["status"]["conditions"] = [*conditions, {"type": "PodScheduled", "status": "True"}]
        return store._commit(store.resolve("pods"), namespace, name, pod, MODIFIED, entry).copy()


class Scheduler:
    """kube-scheduler, reduced to its filters and a deterministic spread (fewest pods first)."""

    def __init__(self, store: Store, on_bound: Callable[[Obj], None] | None = None) -> None:
        self.store = store
        self.on_bound = on_bound

    def schedule(self) -> int:
        """Bind every pending pod that fits a node; the number bound."""
        nodes = self.store.list("nodes")
        if not nodes:
            return 0
        load: dict[str, int] = {n["metadata"]["name"]: 0 for n in nodes}
        pending = []
        for pod in self.store.list("pods"):
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                load[node] = load.get(node, 0) + (not terminating(pod))
            elif not terminating(pod):
                pending.append(pod)
        bound = 0
        for pod in sorted(pending, key=lambda p: (p["metadata"]["creationTimestamp"], p["metadata"]["name"])):
            candidates = [n for n in nodes if fits(pod.get("spec") or {}, n)]
            if not candidates:
                continue  # unschedulable: stays Pending, as with the real scheduler
            target = min(candidates, key=lambda n: (load[n["metadata"]["name"]], n["metadata"]["name"]))["metadata"][
                "name"
            ]
            meta = pod["metadata"]
            bind(self.store, meta["namespace"], meta["name"], target)
            load[target] += 1
            bound += 1
        return bound
