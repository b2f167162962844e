"""One pass over one target: evaluate its policies, then patch, evict or report.

The pass evaluates on the freshest copy the controller has and writes only when something changes:
a JSON patch whose first operation pins ``metadata.resourceVersion``, so the API server refuses it
(409) if anyone changed the object meanwhile. On a conflict the target is re-read and re-evaluated,
at most ``max_conflicts`` times; a concurrent change is never overwritten.

Pods accept few changes while running (:mod:`celmut.controller.pods`). The accepted part is patched;
the rest is applied only by replacing the pod, and only when a policy asks for it (a PodMutation
with ``restartPolicy: immediate``): through the Eviction API, at a bounded rate, one pod per
workload at a time (:class:`EvictionPacer`), never a pod without a controller to recreate it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from celmut.cel.activation import approximate_size
from celmut.compile.compiled import CompiledPolicy
from celmut.controller import pods
from celmut.controller.mutation_events import MutationEvents
from celmut.controller.resource_versions import is_newer
from celmut.controller.workqueue import TokenBucket
from celmut.kube.client import Cluster, ClusterError, Conflict, NotFound, TooManyRequests
from celmut.runtime import AdmissionEngine, AdmissionInput
from celmut.runtime.mutate_existing import Target, mutate_target
from celmut.runtime.patch import diff

log = logging.getLogger("celmut.controller")

COMPONENT = "celmut-controller"


@dataclass(frozen=True, order=True)
class TargetKey:
    api_version: str
    resource: str
    namespace: str
    name: str

    @classmethod
    def of(cls, api_version: str, resource: str, obj: dict[str, Any]) -> TargetKey:
        meta = obj.get("metadata") or {}
        return cls(api_version, resource, str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    @property
    def is_pod(self) -> bool:
        return self.api_version == "v1" and self.resource == "pods"

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.resource}.{self.api_version} {where}"


@dataclass(frozen=True)
class Task:
    """Why a target is in the queue: a mutateExisting ``target``, or drift from an admission policy;
    ``obj``: the target as a sweep listed it (the worker patches that copy, and reads it again only on
    a conflict)."""

    policy: CompiledPolicy
    target: Target | None = None  # None: re-run the admission policy on the live object (drift)
    obj: dict[str, Any] | None = field(default=None, repr=False, compare=False)


Work = dict[str, Task]  # by policy display name; later work for a policy replaces earlier work


class OwnWriteLog(Protocol):
    """Told about each write so its watch event is not mistaken for someone else's change."""

    def begin(self, key: TargetKey) -> None: ...

    def end(self, key: TargetKey, version: str) -> None: ...


def merge_work(old: Work, new: Work) -> Work:
    return {**old, **new}


def listed_object(work: Work) -> dict[str, Any] | None:
    """The newest copy of the target the work carries (a sweep's page, the watch's), if any
    (:mod:`celmut.controller.freshness`)."""
    newest: dict[str, Any] | None = None
    for task in work.values():
        if task.obj is not None and (newest is None or is_newer(task.obj, newest)):
            newest = task.obj
    return newest


def subresource_route(key: TargetKey, work: Work) -> str:
    """The subresource the target's changes are written through: the one a mutateExisting policy's
    ``targetMatchConstraints`` name for it (``pods/resize``), as Kyverno's background controller writes a
    target through it (kyverno ``pkg/background/mpol/processor.go`` ``UpdateResource(..., subresource)``);
    "" for the object itself."""
    routes = sorted({t.target.sub_resource for t in work.values() if t.target is not None and t.target.sub_resource})
    if key.is_pod and "resize" in routes:
        return "resize"
    return routes[0] if routes else ""


DRIFT = "admission (drift)"  # the mutation of a Change made by correcting drift, not by a mutateExisting target


@dataclass(frozen=True)
class Change:
    """Operations one mutation (or one admission policy, for drift) contributed."""

    policy: str
    mutation: str
    patch: list[dict[str, Any]]


@dataclass
class Outcome:
    key: TargetKey
    action: str  # unchanged | patched | would-patch | evicted | would-evict | waiting | refused | failed | gone | idle
    patch: list[dict[str, Any]] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    needs_restart: list[dict[str, Any]] = field(default_factory=list)  # changes a running pod cannot take
    message: str = ""
    retry_after: float | None = None  # queue again after this many seconds
    failed: list[str] = field(default_factory=list)  # the policies whose evaluation failed
    written: dict[str, Any] | None = field(default=None, repr=False)  # the target as patched (action "patched")
    subresource: str = ""  # the subresource a policy routes the target's changes through (pods/resize)
    subresource_patch: list[dict[str, Any]] = field(default_factory=list)  # what is written there

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "target": {
                "apiVersion": self.key.api_version,
                "resource": self.key.resource,
                "namespace": self.key.namespace,
                "name": self.key.name,
            },
            "action": self.action,
        }
        if self.patch:
            out["patch"] = self.patch
        if self.subresource_patch:
            out["subresource"] = {"name": self.subresource, "patch": self.subresource_patch}
        if self.changes:
            out["changes"] = [{"policy": c.policy, "mutation": c.mutation, "patch": c.patch} for c in self.changes]
        if self.needs_restart:
            out["needsRestart"] = self.needs_restart
        if self.message:
            out["message"] = self.message
        return out


@dataclass(frozen=True)
class LoadedPolicies:
    """The policies in service, as admission engines: all of them, and the admission policies that
    correct drift (PodMutations with restartPolicy immediate)."""

    all: AdmissionEngine
    drift: AdmissionEngine | None


class EvictionPacer:
    """At most ``per_minute`` evictions, and one pod per workload until its replacement is Ready."""

    def __init__(self, per_minute: float = 60.0, settle_seconds: float = 300.0) -> None:
        self.bucket = TokenBucket(per_minute / 60.0, burst=1)
        self.settle_seconds = settle_seconds
        self._in_flight: dict[tuple[str, str, str], tuple[str, float]] = {}  # workload -> (evicted uid, when)
        self._lock = threading.Lock()

    @staticmethod
    def workload(pod: dict[str, Any]) -> tuple[str, str, str] | None:
        owner = pods.controller_owner(pod)
        if owner is None:
            return None
        return (str((pod.get("metadata") or {}).get("namespace") or ""), str(owner.get("kind")), str(owner.get("name")))

    def busy(self, workload: tuple[str, str, str]) -> bool:
        with self._lock:
            entry = self._in_flight.get(workload)
            if entry is not None and time.monotonic() - entry[1] > self.settle_seconds:
                del self._in_flight[workload]
                entry = None
            return entry is not None

    def started(self, workload: tuple[str, str, str], uid: str) -> None:
        with self._lock:
            self._in_flight[workload] = (uid, time.monotonic())

    def observe(self, event: str, pod: dict[str, Any], _old: dict[str, Any] | None = None) -> None:
        """Pod watch handler: a Ready pod of the workload, other than the evicted one, settles it."""
        workload = self.workload(pod)
        if workload is None or event == "DELETED" or not pods.is_ready(pod):
            return
        with self._lock:
            entry = self._in_flight.get(workload)
            if entry is not None and (pod.get("metadata") or {}).get("uid") != entry[0]:
                del self._in_flight[workload]


class Reconciler:
    def __init__(
        self,
        cluster: Cluster,
        loaded: Callable[[], LoadedPolicies | None],
        current: Callable[[TargetKey], dict[str, Any] | None],
        *,
        dry_run: bool = False,
        writes: TokenBucket | None = None,
        evictions: EvictionPacer | None = None,
        is_leader: Callable[[], bool] = lambda: True,
        own_writes: OwnWriteLog | None = None,
        max_conflicts: int = 5,
        recheck_seconds: float = 10.0,
        stop: threading.Event | None = None,
        events: MutationEvents | None = None,
        newest: Callable[[TargetKey, dict[str, Any]], dict[str, Any] | None] | None = None,
    ) -> None:
        self.cluster = cluster
        self.loaded = loaded
        self.current = current
        # the copy to evaluate instead of a listed one (a newer one the watch delivered); None: read it
        self.newest = newest
        self.dry_run = dry_run
        self.writes = writes
        self.evictions = evictions or EvictionPacer()
        self.is_leader = is_leader
        self.own_writes = own_writes
        self.max_conflicts = max_conflicts
        self.recheck_seconds = recheck_seconds
        self.stop = stop or threading.Event()
        self.events = events  # None: no Events (a dry run)
        self.conflicts = 0
        self.evaluations = 0
        self.timings = {"CEL": 0.0, "API calls": 0.0, "other": 0.0}  # seconds spent by reconcile passes
        self._timing_lock = threading.Lock()
        self._spent = threading.local()

    # --- evaluation (pure, given the loaded policies) ------------------------------------------------

    def evaluate(
        self, loaded: LoadedPolicies, obj: dict[str, Any], work: Work, failed: list[str] | None = None
    ) -> tuple[dict[str, Any], list[Change], list[str]]:
        """(the mutated object, what each mutation changed, errors) for one target; the policies that
        failed are added to ``failed``."""
        current, changes, errors = obj, [], []
        failed = failed if failed is not None else []
        tasks = sorted(work.values(), key=lambda t: t.policy.order_key)
        size = approximate_size([obj, obj], loaded.all.options.max_input_bytes)  # once, not once per policy
        for task in (t for t in tasks if t.target is not None):
            assert task.target is not None
            self.evaluations += 1
            result = mutate_target(loaded.all, task.target, current, input_size=size)
            if result.outcome.status == "error":
                errors.append(result.outcome.message)
                failed.append(result.policy)
            elif result.mutated is not None and result.patch:
                changes += [Change(result.policy, step.path, step.patch) for step in result.steps]
                current = result.mutated
        drift = {t.policy.display_name for t in tasks if t.target is None}
        if drift and loaded.drift is not None:
            self.evaluations += 1
            admitted = loaded.drift.admit(AdmissionInput.from_object(current, "CREATE"))
            for outcome in admitted.outcomes:
                if outcome.policy not in drift:
                    continue
                if outcome.status == "error":
                    errors.append(outcome.message)
                    failed.append(outcome.policy)
                elif outcome.status == "applied" and outcome.patch:
                    changes.append(Change(outcome.policy, DRIFT, outcome.patch))
            if admitted.allowed and admitted.object is not None:
                current = admitted.object
        return current, changes, errors

    # --- one pass -------------------------------------------------------------------------------

    def reconcile(self, key: TargetKey, work: Work) -> Outcome:
        started = time.perf_counter()
        spent = {"CEL": 0.0, "API calls": 0.0}
        self._spent.spent = spent
        try:
            return self._reconcile(key, work)
        finally:
            total = time.perf_counter() - started
            with self._timing_lock:
                for name, seconds in spent.items():
                    self.timings[name] += seconds
                self.timings["other"] += max(0.0, total - sum(spent.values()))

    def _timed(self, bucket: str, started: float) -> None:
        spent = getattr(self._spent, "spent", None)
        if spent is not None:
            spent[bucket] += time.perf_counter() - started

    def _reconcile(self, key: TargetKey, work: Work) -> Outcome:
        loaded = self.loaded()
        if loaded is None:
            return Outcome(key, "idle", message="no policies loaded", retry_after=5.0)
        obj = listed_object(work)
        if obj is not None and self.newest is not None:
            obj = self.newest(key, obj)
        if obj is None:
            obj = self.current(key)
        if obj is None:
            return Outcome(key, "gone", message="the target no longer exists")
        restart = any(t.target is None and t.policy.restart_policy == "immediate" for t in work.values())
        for _attempt in range(self.max_conflicts):
            evaluating = time.perf_counter()
            failed: list[str] = []
            final, changes, errors = self.evaluate(loaded, obj, work, failed)
            self._timed("CEL", evaluating)
            patch = diff(obj, final) if final is not obj else []
            if errors and _attempt == 0:  # once, not again after a conflict
                self._failed_events(obj, work, failed, errors)
            if errors and not patch:
                return Outcome(key, "failed", message="; ".join(errors), failed=failed)
            if not patch:
                return Outcome(key, "unchanged")
            route = subresource_route(key, work)
            through, base = pods.split_resize(obj, final) if route == "resize" else ([], obj)
            if route and route != "resize":  # what else a policy names: all of it, as Kyverno writes it
                through, base = patch, final
            rest = diff(base, final) if base is not final else []
            accepted, needs_restart = pods.split_live_change(base, final) if key.is_pod else (rest, [])
            outcome = Outcome(key, "unchanged", accepted, changes, needs_restart, "; ".join(errors), failed=failed)
            if through:
                outcome.subresource, outcome.subresource_patch = route, through
            if self.dry_run:
                outcome.action = "would-evict" if needs_restart and restart else "would-patch"
                return outcome
            for sub, ops in ((route, through), ("", accepted)):
                if not ops:
                    continue
                try:
                    written = self._patch(key, obj, ops, sub)
                except Conflict:
                    self.conflicts += 1
                    try:
                        obj = self.cluster.get(key.api_version, key.resource, key.namespace, key.name)
                    except NotFound:
                        return Outcome(key, "gone", message="deleted while being mutated")
                    break  # evaluated again on what is stored now
                except NotFound:
                    return Outcome(key, "gone", message="deleted while being mutated")
                except ClusterError as ex:
                    if not sub:
                        raise
                    # the API server refused what the policy routes through the subresource (pods/resize:
                    # ValidatePodResize): nothing else is written, the target is reported failed
                    routed = sorted(
                        {t.policy.display_name for t in work.values() if t.target and t.target.sub_resource}
                    )
                    return Outcome(key, "failed", message=f"{key.resource}/{sub}: {ex}", failed=routed)
                if written is None:
                    return Outcome(key, "idle", message="not the leader: nothing written")
                outcome.action = "patched"
                outcome.written = obj = written
            else:
                if outcome.written is not None:
                    self._applied_events(outcome.written, changes, work)
                if needs_restart and restart:
                    return self._evict(key, obj, outcome, work)
                if needs_restart:
                    outcome.message = "some changes need the pod replaced; its policy has restartPolicy deferred"
                return outcome
        return Outcome(key, "failed", message=f"gave up after {self.max_conflicts} conflicting writes", retry_after=1.0)

    def _patch(
        self, key: TargetKey, obj: dict[str, Any], ops: list[dict[str, Any]], sub: str = ""
    ) -> dict[str, Any] | None:
        if self.writes is not None and not self.writes.take(self.stop):
            return None
        if not self.is_leader():
            return None
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        guard = [{"op": "replace", "path": "/metadata/resourceVersion", "value": version}] if version else []
        written_version = ""
        if self.own_writes is not None:
            self.own_writes.begin(key)
        calling = time.perf_counter()
        try:
            written: dict[str, Any] = self.cluster.patch(
                key.api_version, key.resource, key.namespace, key.name, guard + ops, sub=sub
            )
            written_version = str((written.get("metadata") or {}).get("resourceVersion") or "")
        finally:
            self._timed("API calls", calling)
            if self.own_writes is not None:
                self.own_writes.end(key, written_version)
        return written

    def _evict(self, key: TargetKey, pod: dict[str, Any], outcome: Outcome, work: Work) -> Outcome:
        workload = EvictionPacer.workload(pod)
        if workload is None:
            outcome.message = "needs replacing, but has no controller owner to recreate it: left running"
            return outcome
        if self.evictions.busy(workload):
            outcome.action = "waiting"
            outcome.message = f"another pod of {workload[1]} {workload[2]} is being replaced"
            outcome.retry_after = self.recheck_seconds
            return outcome
        if not self.evictions.bucket.take(self.stop) or not self.is_leader():
            outcome.action = "idle"
            return outcome
        try:
            self.cluster.evict(key.namespace, key.name)
        except TooManyRequests as ex:
            outcome.action = "refused"
            outcome.message = f"eviction refused (PodDisruptionBudget): {ex.message}"
            outcome.retry_after = max(self.recheck_seconds, 30.0)
            return outcome
        except NotFound:
            return Outcome(key, "gone", message="deleted before it could be evicted")
        self.evictions.started(workload, str((pod.get("metadata") or {}).get("uid") or ""))
        outcome.action = "evicted"
        if self.events is not None:
            self.events.evicted(pod, outcome.changes)
        return outcome

    def _applied_events(self, obj: dict[str, Any], changes: list[Change], work: Work) -> None:
        if self.events is not None:
            policies = {task.policy.display_name: task.policy for task in work.values()}
            self.events.changed(obj, changes, policies)

    def _failed_events(self, obj: dict[str, Any], work: Work, failed: list[str], errors: list[str]) -> None:
        """A PolicyViolation pair for each mutateExisting policy that failed on ``obj`` (Kyverno's audit)."""
        if self.events is None or self.dry_run:
            return
        for name, message in zip(failed, errors, strict=False):
            task = work.get(name)
            if task is not None and task.target is not None:
                self.events.failed(obj, task.policy, message)
