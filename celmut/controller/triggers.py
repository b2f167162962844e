"""What puts work in the queue: scans (start, policy changes, periodically) and watch events.

* **Scan** — for mutateExisting policies, every target the runtime resolves (semantics §8: a policy
  event or periodic scan is a pass without a trigger); for admission policies whose PodMutation says
  ``restartPolicy: immediate``, every pod (drift). Targets listed by resource rules, and the pods, are
  listed a page at a time by a sweep (:mod:`celmut.controller.sweeps`).
* **Watch events** — for admission-enabled mutateExisting policies, a change to an object their
  ``matchConstraints`` select is treated as the admission of that object: ADDED is a CREATE,
  MODIFIED an UPDATE (with the previous version as ``oldObject``), DELETED a DELETE. Events from the
  initial list are not triggers, and neither are the controller's own writes. Watches observe only
  what was stored, so dry-run requests never trigger, as in Kyverno; ``request.userInfo`` is empty.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from celmut import kinds
from celmut.compile.compiled import CompiledPolicy
from celmut.controller.reconcile import LoadedPolicies, TargetKey, Task, Work
from celmut.runtime import AdmissionEngine, AdmissionInput
from celmut.runtime.candidates import PolicyIndex
from celmut.runtime.mutate_existing import Target, lists_targets, resolve_targets, trigger_selects

_OPERATIONS = {"ADDED": "CREATE", "MODIFIED": "UPDATE", "DELETED": "DELETE"}

Enqueue = Callable[[TargetKey, Work], None]
Unresolved = Callable[[Target], None]  # told each policy whose targets could not be resolved (reported, not queued)
Sweep = Callable[[CompiledPolicy, AdmissionInput], None]  # list a policy's targets for a trigger (sweeps.py)


def drift_policies(policies: Iterable[CompiledPolicy]) -> list[CompiledPolicy]:
    """Admission policies that replace running pods which do not match them."""
    return [p for p in policies if p.admission and p.restart_policy == "immediate"]


def trigger_policies(policies: Iterable[CompiledPolicy]) -> list[CompiledPolicy]:
    return [p for p in policies if p.mutate_existing and p.admission and not p.autogen]


def trigger_resources(policies: Iterable[CompiledPolicy]) -> set[tuple[str, str]]:
    """(apiVersion, resource) pairs whose changes are triggers; wildcards are not watched."""
    found: set[tuple[str, str]] = set()
    for policy in trigger_policies(policies):
        for rule in policy.match.resource_rules:
            for group in rule.api_groups:
                for version in rule.api_versions:
                    for resource in rule.resources:
                        name = resource.partition("/")[0]
                        if "*" not in (group, version, name):
                            found.add((f"{group}/{version}" if group else version, name))
    return found


def policy_fingerprint(policy: CompiledPolicy) -> str:
    """Changes when anything that decides targets or mutations changes."""
    parts: list[Any] = [
        policy.kind,
        policy.namespace,
        policy.name,
        policy.match,
        policy.admission,
        policy.mutate_existing,
    ]
    parts += [c.source for c in policy.match_conditions] + [m.program.source for m in policy.mutations]
    parts += [p.source for p in policy.variables.values()] + [c.source for c in policy.target_match_conditions]
    parts += [policy.target, policy.restart_policy]
    return repr(parts)


def target_key(obj: dict[str, Any]) -> TargetKey:
    api_version = str(obj.get("apiVersion") or "")
    return TargetKey.of(api_version, kinds.resource_for(api_version, str(obj.get("kind") or "")), obj)


def enqueue_scan(
    loaded: LoadedPolicies, enqueue: Enqueue, policies: Iterable[CompiledPolicy], unresolved: Unresolved
) -> int:
    """Queue a pass over every target of those of ``policies`` whose targets an expression returns (the
    others' are listed by a sweep: :mod:`celmut.controller.sweeps`); the number of targets queued."""
    chosen = [p for p in policies if p.mutate_existing and not lists_targets(p)]
    count = 0
    for target in resolve_targets(loaded.all, policies=chosen) if chosen else []:
        if target.error:
            unresolved(target)
            continue
        enqueue(target_key(target.obj), {target.policy.display_name: Task(target.policy, target)})
        count += 1
    return count


class OwnWrites:
    """resourceVersions the controller itself wrote, so their watch events are not triggers.

    Only writes to resources watched for triggers (:meth:`track`) are remembered, each until its watch
    event is seen (at most ``capacity``, oldest first out: an event that never came), so a pass patching
    100,000 pods that trigger nothing remembers none. A watch can deliver the event of a write before the
    write's response arrives; a key with a write in flight makes :meth:`is_own` wait (briefly) for the
    response and its resourceVersion.
    """

    def __init__(self, capacity: int = 10_000, wait_seconds: float = 10.0) -> None:
        self.capacity = capacity
        self.wait_seconds = wait_seconds
        self._tracked: set[tuple[str, str]] = set()
        self._seen: OrderedDict[tuple[TargetKey, str], None] = OrderedDict()
        self._in_flight: dict[TargetKey, int] = {}
        self._cond = threading.Condition()

    def track(self, api_version: str, resource: str) -> None:
        """Remember writes to this resource from now on (its changes are triggers)."""
        with self._cond:
            self._tracked.add((api_version, resource))

    def _tracks(self, key: TargetKey) -> bool:
        return (key.api_version, key.resource) in self._tracked

    def begin(self, key: TargetKey) -> None:
        with self._cond:
            if self._tracks(key):
                self._in_flight[key] = self._in_flight.get(key, 0) + 1

    def end(self, key: TargetKey, version: str) -> None:
        """The write finished (``version`` is '' when it failed)."""
        with self._cond:
            if not self._tracks(key):
                return
            left = self._in_flight.get(key, 1) - 1
            if left:
                self._in_flight[key] = left
            else:
                self._in_flight.pop(key, None)
            if version:
                self._seen[(key, version)] = None
                while len(self._seen) > self.capacity:
                    self._seen.popitem(last=False)
            self._cond.notify_all()

    def is_own(self, key: TargetKey, version: str) -> bool:
        """Whether this change is one of the controller's writes (each is recognised once: its event)."""
        with self._cond:
            self._cond.wait_for(lambda: key not in self._in_flight, self.wait_seconds)
            try:
                del self._seen[(key, version)]
            except KeyError:
                return False
            return True


class TriggerHandler:
    """Watch handler for one resource: turns stored changes into admission-like triggers."""

    def __init__(
        self,
        api_version: str,
        resource: str,
        loaded: Callable[[], LoadedPolicies | None],
        enqueue: Enqueue,
        own_writes: OwnWrites,
        synced: Callable[[], bool],
        unresolved: Unresolved,
        sweep: Sweep | None = None,
    ) -> None:
        self.api_version = api_version
        self.unresolved = unresolved
        self.sweep = sweep
        self.resource = resource
        self.loaded = loaded
        self.enqueue = enqueue
        self.own_writes = own_writes
        self.synced = synced
        self.triggers = 0
        self._index: tuple[AdmissionEngine | None, PolicyIndex] = (None, PolicyIndex([]))
        group, version = kinds.split_api_version(api_version)
        self._gvr = (group, version, resource)

    def candidates(self, engine: AdmissionEngine, operation: str) -> tuple[CompiledPolicy, ...]:
        """The trigger policies whose rules may select this resource's ``operation`` (indexed once
        per loaded policy set: an event visits only these)."""
        indexed, index = self._index
        if indexed is not engine:
            index = PolicyIndex(trigger_policies(engine.policies))
            self._index = (engine, index)
        return index.candidates((*self._gvr, "", operation))

    def __call__(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if not self.synced():
            return  # the initial list: these objects were not just admitted
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if self.own_writes.is_own(TargetKey.of(self.api_version, self.resource, obj), version):
            return
        loaded = self.loaded()
        if loaded is None or event not in _OPERATIONS:
            return
        operation = _OPERATIONS[event]
        policies = self.candidates(loaded.all, operation)
        if not policies:
            return
        if operation == "DELETE":  # no object, the deleted one as oldObject (target expressions get it as object)
            request = AdmissionInput.from_object(None, operation, old_object=obj)
        else:
            request = AdmissionInput.from_object(obj, operation, old_object=old if operation == "UPDATE" else None)
        self.triggers += 1
        if self.sweep is not None:  # targets listed by resource rules: a sweep lists them a page at a time
            for policy in (p for p in policies if lists_targets(p)):
                if trigger_selects(loaded.all, policy, request):
                    self.sweep(policy, request)
            policies = tuple(p for p in policies if not lists_targets(p))
        for target in resolve_targets(loaded.all, trigger=request, policies=policies) if policies else []:
            if target.error:
                self.unresolved(target)
                continue
            self.enqueue(target_key(target.obj), {target.policy.display_name: Task(target.policy, target)})
