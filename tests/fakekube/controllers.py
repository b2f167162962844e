"""The Deployment, ReplicaSet and DaemonSet controllers of kube-controller-manager and a reduced
kube-scheduler, enough of them to show loops and where pods land.

Both write through :class:`~tests.fakekube.admission.ApiWrites` — the admission chain, then the store —
as the real controllers write through the API server, so a mutating webhook (or a native
MutatingAdmissionPolicy) changes what they create exactly as in a cluster. They are driven
synchronously by the test (:meth:`ControllerManager.settle`): deterministic, and bounded, so a
controller that would loop forever in a cluster stops after ``max_rounds`` and says so.

**Deployment** (``pkg/controller/deployment/sync.go`` ``getNewReplicaSet``,
``util/deployment_util.go`` ``FindNewReplicaSet``/``EqualIgnoreHash``): the new ReplicaSet is the oldest
owned one whose stored ``spec.template`` equals the Deployment's ignoring the ``pod-template-hash``
label; when none does, one is created named ``<deployment>-<hash>`` (hash of the template and
``status.collisionCount``) with the hash label added to its labels, selector and template. If that
name exists but its template differs (an admission plugin changed it), it is a *hash collision*:
``collisionCount`` is bumped and the next sync creates another ReplicaSet — forever, when every new
ReplicaSet is mutated again (kubernetes/kubernetes#57167). The new ReplicaSet is scaled to
``spec.replicas`` and the others to 0 (a Recreate-like rollout; surge is not modelled).

**ReplicaSet** (``pkg/controller/replicaset``, ``controller_utils.go`` ``GetPodFromTemplate``): creates the
missing pods from its template (labels, annotations, ``generateName: <rs>-``, a controller
ownerReference, the spec) and deletes surplus ones (newest first). Pods are created one at a time, or
with ``slow_start`` in batches of 1, 2, 4, 8 … created concurrently, as ``replica_set.go``
``slowStartBatch`` does with goroutines. A test hook, ``after_batch``, runs after each batch (e.g. to
wait until every webhook replica has seen them). Only active pods are replicas (``controller.FilterActivePods``:
a Terminating, Failed or Succeeded pod is replaced at once), and a surplus pod is deleted gracefully
(:mod:`.graceful`: Terminating while bound to a node).

**DaemonSet** (:mod:`.daemonsets`): a daemon pod per node the DaemonSet's *template* may run on.
**Scheduler** (:mod:`.scheduling`): once Node objects exist, pending pods are bound to a node that fits.
:meth:`ControllerManager.end_grace_periods` ends the Terminating pods, as their kubelets would.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import errors
from .daemonsets import DaemonSetController
from .graceful import terminating
from .scheduling import Scheduler
from .templates import compute_hash, controller_ref, owned_by, pod_from_template

if TYPE_CHECKING:
    from .admission import ApiWrites
    from .store import Store

Obj = dict[str, Any]
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DEPLOYMENT_CONTROLLER = "system:serviceaccount:kube-system:deployment-controller"
REPLICASET_CONTROLLER = "system:serviceaccount:kube-system:replicaset-controller"


def _semantic(value: Any) -> Any:
    """``apiequality.Semantic``: nil and empty maps/slices are equal (empty ones dropped here)."""
    if isinstance(value, dict):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def equal_ignore_hash(template1: Obj, template2: Obj) -> bool:
    """``deploymentutil.EqualIgnoreHash``: the templates are equal, ignoring the pod-template-hash label."""
    first, second = copy.deepcopy(template1), copy.deepcopy(template2)
    for template in (first, second):
        ((template.get("metadata") or {}).get("labels") or {}).pop(HASH_LABEL, None)
    return bool(_semantic(first) == _semantic(second))


@dataclass
class SettleReport:
    """What :meth:`ControllerManager.settle` did."""

    rounds: int = 0
    stable: bool = False
    replicasets_created: int = 0
    pods_created: int = 0
    collisions: int = 0
    errors: list[str] = field(default_factory=list)


class DeploymentController:
    def __init__(self, store: Store, writes: ApiWrites, report: SettleReport) -> None:
        self.store = store
        self.writes = writes
        self.report = report

    def _replicasets(self, deployment: Obj) -> list[Obj]:
        owned = [
            rs
            for rs in self.store.list("replicasets", deployment["metadata"]["namespace"])
            if owned_by(rs, deployment)
        ]
        return sorted(
            owned, key=lambda rs: (rs["metadata"]["creationTimestamp"], int(rs["metadata"]["resourceVersion"]))
        )

    def _new_replicaset(self, deployment: Obj, owned: list[Obj]) -> Obj | None:
        """Find the new ReplicaSet, or create it; None after a hash collision (requeue)."""
        template = deployment["spec"]["template"]
        for rs in owned:  # FindNewReplicaSet: the oldest with an equal template
            if equal_ignore_hash(rs["spec"]["template"], template):
                return rs
        status = deployment.get("status") or {}
        collision_count = status.get("collisionCount")
        pod_hash = compute_hash(template, collision_count)
        new_template = copy.deepcopy(template)
        new_template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = pod_hash
        selector = copy.deepcopy(deployment["spec"]["selector"])
        selector.setdefault("matchLabels", {})[HASH_LABEL] = pod_hash
        meta = deployment["metadata"]
        revisions = [int((rs["metadata"].get("annotations") or {}).get(REVISION, "0")) for rs in owned]
        replicaset = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{meta['name']}-{pod_hash}",
                "namespace": meta["namespace"],
                "labels": dict(new_template["metadata"]["labels"]),
                "annotations": {REVISION: str(max(revisions, default=0) + 1)},
                "ownerReferences": [controller_ref(deployment)],
            },
            "spec": {"replicas": 0, "selector": selector, "template": new_template},
        }
        rtype = self.store.resolve("replicasets")
        try:
            created = self.writes.create(replicaset, rtype, meta["namespace"], user=DEPLOYMENT_CONTROLLER).copy()
            self.report.replicasets_created += 1
            return created
        except errors.ApiError as ex:
            if ex.reason != "AlreadyExists":
                raise
        existing = self.store.get("replicasets", replicaset["metadata"]["name"], meta["namespace"])
        if owned_by(existing, deployment) and equal_ignore_hash(existing["spec"]["template"], template):
            return existing
        # "Found a hash collision for deployment - bumping collisionCount to resolve it"
        deployment.setdefault("status", {})["collisionCount"] = int(collision_count or 0) + 1
        self.writes.update(
            deployment,
            self.store.resolve("deployments"),
            meta["namespace"],
            meta["name"],
            subresource="status",
            user=DEPLOYMENT_CONTROLLER,
        )
        self.report.collisions += 1
        return None

    def _scale(self, rs: Obj, replicas: int) -> bool:
        if int(rs["spec"].get("replicas", 1)) == replicas:
            return False
        rs = copy.deepcopy(rs)
        rs["spec"]["replicas"] = replicas
        meta = rs["metadata"]
        self.writes.update(
            rs, self.store.resolve("replicasets"), meta["namespace"], meta["name"], user=DEPLOYMENT_CONTROLLER
        )
        return True

    def sync(self, deployment: Obj) -> bool:
        """One sync; True when it wrote anything."""
        owned = self._replicasets(deployment)
        new = self._new_replicaset(deployment, owned)
        if new is None:
            return True
        changed = new["metadata"]["name"] not in {rs["metadata"]["name"] for rs in owned}
        changed |= self._scale(new, int(deployment["spec"].get("replicas", 1)))
        for rs in owned:
            if rs["metadata"]["name"] != new["metadata"]["name"]:
                changed |= self._scale(rs, 0)
        return changed


class ReplicaSetController:
    def __init__(
        self,
        store: Store,
        writes: ApiWrites,
        report: SettleReport,
        after_batch: Callable[[list[Obj]], None] | None,
        slow_start: bool,
    ) -> None:
        self.store = store
        self.writes = writes
        self.report = report
        self.after_batch = after_batch
        self.slow_start = slow_start

    def pod_from_template(self, rs: Obj) -> Obj:
        return pod_from_template(rs, rs["spec"]["template"])

    def sync(self, rs: Obj) -> bool:
        namespace = rs["metadata"]["namespace"]
        # controller.FilterActivePods (pkg/controller/controller_utils.go IsPodActive): a Terminating,
        # Failed or Succeeded pod is not one of the replicas, so it is replaced at once
        pods = [p for p in self.store.list("pods", namespace) if owned_by(p, rs) and is_pod_active(p)]
        missing = int(rs["spec"].get("replicas", 1)) - len(pods)
        rtype = self.store.resolve("pods")
        remaining, batch = max(missing, 0), 1
        while remaining:
            size = min(batch, remaining)

            def create(_: int) -> Obj:
                entry = self.writes.create(self.pod_from_template(rs), rtype, namespace, user=REPLICASET_CONTROLLER)
                return entry.copy()

            if size == 1:
                created = [create(0)]
            else:
                with ThreadPoolExecutor(max_workers=size) as pool:
                    created = list(pool.map(create, range(size)))
            self.report.pods_created += size
            remaining -= size
            batch = batch * 2 if self.slow_start else 1
            if self.after_batch is not None:
                self.after_batch(created)
        for pod in sorted(pods, key=lambda p: int(p["metadata"]["resourceVersion"]), reverse=True)[: max(-missing, 0)]:
            self.store.delete("pods", pod["metadata"]["name"], namespace)  # gracefully when bound to a node
        return missing != 0


def is_pod_active(pod: Obj) -> bool:
    """``controller.IsPodActive``: not Succeeded, not Failed, no ``deletionTimestamp``."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not terminating(pod)


class ControllerManager:
    """The controllers (and the scheduler, once Node objects exist), driven by the test until nothing
    changes (or ``max_rounds``)."""

    def __init__(self, store: Store, writes: ApiWrites) -> None:
        self.store = store
        self.writes = writes
        self.scheduler = Scheduler(store)
        #: Called with each batch of pods the ReplicaSet controller created (e.g. to wait until a webhook saw them).
        self.after_batch: Callable[[list[Obj]], None] | None = None
        self.slow_start = False  # batches of 1, 2, 4, 8 … instead of one pod at a time

    def settle(self, max_rounds: int = 20) -> SettleReport:
        """Sync every Deployment, then every ReplicaSet, until a round writes nothing; bounded."""
        report = SettleReport()
        deployments = DeploymentController(self.store, self.writes, report)
        replicasets = ReplicaSetController(self.store, self.writes, report, self.after_batch, self.slow_start)
        daemonsets = DaemonSetController(self.store, self.writes)
        for _ in range(max_rounds):
            report.rounds += 1
            changed = False
            for deployment in self.store.list("deployments"):
                changed |= deployments.sync(deployment)
            for rs in self.store.list("replicasets"):
                changed |= replicasets.sync(rs)
            for daemonset in self.store.list("daemonsets"):
                changed |= daemonsets.sync(daemonset)
            changed |= self.scheduler.schedule() > 0
            if not changed:
                report.stable = True
                break
        return report

    def end_grace_periods(self) -> list[str]:
        """What the kubelets would do when the grace periods end: every Terminating pod is deleted
        with grace period 0 (``<namespace>/<name>`` of each, in order)."""
        ended = []
        for pod in self.store.list("pods"):
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                self.store.delete("pods", meta["name"], meta["namespace"], grace_period=0)
                ended.append(f"{meta['namespace']}/{meta['name']}")
        return ended
