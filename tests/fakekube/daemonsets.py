"""The DaemonSet controller of kube-controller-manager, enough of it to show which nodes get a daemon pod.

The real controller (``pkg/controller/daemon/daemon_controller.go``) decides per node from the
DaemonSet's **template**, not from the pods it creates: ``NodeShouldRunDaemonPod`` builds the pod the
template would make (``NewPod``: the template's spec plus the default daemon tolerations,
``util.AddOrUpdateDaemonPodTolerations``) and runs ``predicates`` on it — the template's node name, its
required node affinity and node selector, and the node's ``NoSchedule``/``NoExecute`` taints. A node
whose taint the *template* does not tolerate gets no pod at all, whatever an admission webhook would
later add to the pod (issue 38: spot nodes are tainted ``scheduling.cast.ai/spot``).

``podsShouldBeOnNode``: a node that should run a pod and has none gets one; failed or succeeded pods
are deleted; of several running ones all but the oldest are deleted; a node that may no longer run the
pod (``shouldContinueRunning`` false: an untolerated NoExecute taint, or the affinity no longer
matches) loses its pods; a Terminating pod still counts as present, so its replacement waits until it
is gone. Pods are created from the template labelled ``controller-revision-hash`` with the default
tolerations and the required node affinity replaced by ``metadata.name In [<node>]``
(``util.ReplaceDaemonSetPodNodeNameNodeAffinity``), for the scheduler to bind. A rolling update
(``rollingUpdate``, the default strategy, ``maxSurge`` 0) replaces every out-of-date pod that is not
available — here every pod, as no kubelet makes one Ready; ``OnDelete`` replaces none.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from .graceful import terminating
from .scheduling import required_affinity_matches, untolerated_taint
from .templates import compute_hash, owned_by, pod_from_template

if TYPE_CHECKING:
    from .admission import ApiWrites
    from .store import Store

Obj = dict[str, Any]
REVISION_LABEL = "controller-revision-hash"
DAEMONSET_CONTROLLER = "system:serviceaccount:kube-system:daemon-set-controller"
# util.AddOrUpdateDaemonPodTolerations (pkg/controller/daemon/util/daemonset_util.go)
DEFAULT_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
NETWORK_UNAVAILABLE = {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}


def daemon_pod_spec(template_spec: Obj) -> Obj:
    """The template's spec with the default daemon tolerations (``NewPod`` / ``CreatePodTemplate``)."""
    spec = copy.deepcopy(template_spec)
    tolerations = list(spec.get("tolerations") or [])
    defaults = [*DEFAULT_TOLERATIONS, *([NETWORK_UNAVAILABLE] if spec.get("hostNetwork") else [])]
    for default in defaults:
        if not any(t.get("key") == default["key"] and t.get("effect") == default["effect"] for t in tolerations):
            tolerations.append(dict(default))
    spec["tolerations"] = tolerations
    return spec


def node_should_run_daemon_pod(node: Obj, daemonset: Obj) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod``: (shouldRun, shouldContinueRunning), from the DaemonSet's template."""
    template_spec = (daemonset["spec"].get("template") or {}).get("spec") or {}
    name = node["metadata"]["name"]
    if template_spec.get("nodeName") not in (None, "", name):
        return False, False
    spec = daemon_pod_spec(template_spec)
    if not required_affinity_matches(spec, node):
        return False, False
    taints = (node.get("spec") or {}).get("taints") or []
    tolerations = spec["tolerations"]
    if untolerated_taint(taints, tolerations, ("NoSchedule", "NoExecute")) is not None:
        return False, untolerated_taint(taints, tolerations, ("NoExecute",)) is None
    return True, True


def target_node(pod: Obj) -> str:
    """``util.GetTargetNodeName``: the bound node, else the ``metadata.name`` the affinity requires."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if (
                field.get("key") == "metadata.name"
                and field.get("operator") == "In"
                and len(field.get("values") or []) == 1
            ):
                return str(field["values"][0])
    return ""


def _pinned_to(spec: Obj, node: str) -> Obj:
    """``ReplaceDaemonSetPodNodeNameNodeAffinity``: the required terms become ``metadata.name In [node]``."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    affinity = spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}
    return spec


class DaemonSetController:
    def __init__(self, store: Store, writes: ApiWrites) -> None:
        self.store = store
        self.writes = writes

    def _create(self, daemonset: Obj, node: str, revision: str) -> None:
        template = daemonset["spec"]["template"]
        pod = pod_from_template(daemonset, template)
        pod["metadata"].setdefault("labels", {})[REVISION_LABEL] = revision
        pod["spec"] = _pinned_to(daemon_pod_spec(template.get("spec") or {}), node)
        namespace = daemonset["metadata"]["namespace"]
        self.writes.create(pod, self.store.resolve("pods"), namespace, user=DAEMONSET_CONTROLLER)

    def sync(self, daemonset: Obj) -> bool:
        """One ``syncDaemonSet`` (manage, then the rolling update); True when it wrote anything."""
        if daemonset["metadata"].get("deletionTimestamp"):
            return False
        namespace = daemonset["metadata"]["namespace"]
        revision = compute_hash(daemonset["spec"]["template"], (daemonset.get("status") or {}).get("collisionCount"))
        by_node: dict[str, list[Obj]] = {}
        for pod in self.store.list("pods", namespace):
            if owned_by(pod, daemonset):
                by_node.setdefault(target_node(pod), []).append(pod)
        to_delete: list[Obj] = []
        to_create: list[str] = []
        for node in self.store.list("nodes"):
            name = node["metadata"]["name"]
            should_run, should_continue = node_should_run_daemon_pod(node, daemonset)
            pods = by_node.get(name, [])
            if should_run and not pods:
                to_create.append(name)
            elif should_continue:
                running = []
                for pod in pods:
                    if terminating(pod):
                        continue
                    if (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
                        to_delete.append(pod)
                    else:
                        running.append(pod)
                running.sort(key=lambda p: (p["metadata"]["creationTimestamp"], int(p["metadata"]["resourceVersion"])))
                to_delete += running[1:]
                strategy = (daemonset["spec"].get("updateStrategy") or {}).get("type", "RollingUpdate")
                outdated = running[:1] and (running[0]["metadata"].get("labels") or {}).get(REVISION_LABEL) != revision
                if strategy == "RollingUpdate" and outdated:
                    to_delete.append(running[0])  # out of date and not available (no kubelet): replaced
            elif pods:
                to_delete += [p for p in pods if not terminating(p)]
        for name in to_create:
            self._create(daemonset, name, revision)
        for pod in to_delete:
            self.store.delete("pods", pod["metadata"]["name"], namespace)  # gracefully when bound
        return bool(to_create or to_delete)
