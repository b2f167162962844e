"""Background reports: every resource the served policies match gets its policy report.

As Kyverno's background scan does (kyverno ``pkg/controllers/report/background/controller.go`` and
``pkg/controllers/report/utils/scanner.go``): each policy whose ``spec.evaluation.background.enabled``
is on (the default) and that ``reports.kyverno.io/disabled`` does not turn off — and each opted-in
MutatingAdmissionPolicy with a binding — is evaluated alone on every stored resource its
matchConstraints name, as a CREATE of that resource (:mod:`celmut.controller.reported_policies`).
What it would still change is a ``fail``, what it leaves as it is a ``pass``
(:mod:`celmut.runtime.report_results`). A resource is rescanned when it changes (watch), every policy
when it changes, everything on the periodic scan; results go to the
:class:`~celmut.kube.report_writer.ReportWriter`, which writes one report per resource, coalesced. The
targets the controller's mutateExisting patches get Kyverno's result on theirs (:meth:`target_patched`),
and what a scan finds newly failing a PolicyViolation Event pair (:mod:`celmut.controller.violation_events`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from celmut.controller.reported_policies import ReportedPolicy, reported_policies, scan_object
from celmut.controller.triggers import policy_fingerprint
from celmut.controller.violation_events import Violation, ViolationEvents
from celmut.kube.admission_errors import AdmissionError
from celmut.kube.lookup import CacheSet
from celmut.kube.report_writer import ReportWriter
from celmut.runtime import AdmissionEngine
from celmut.runtime.report_objects import ResourceRef
from celmut.runtime.report_results import mutate_existing_result, process_of, result_of
from celmut.runtime.results import PolicyOutcome

log = logging.getLogger("celmut.reports")

MAX_SUCCESSORS = 8  # changes remembered per resource, to tell which state an admission error is about
ERROR_MEMORY = 7200.0  # seconds an applied admission error is remembered (twice the API server's event TTL)


class BackgroundReports:
    """Scans resources for the reported policies and hands the results to the writer."""

    def __init__(
        self,
        caches: CacheSet,
        writer: ReportWriter,
        *,
        on_result: Callable[[str, str], None] | None = None,  # (result, process), for metrics
        clock: Callable[[], float] = time.time,
        background: bool = True,  # scan the policies with background processing on
        admission: bool = True,  # report the others from the admissions the watches see
        violations: ViolationEvents | None = None,  # PolicyViolation Events for what a scan finds failing
    ) -> None:
        self.violations = violations
        self.background = background
        self.admission = admission
        self.caches = caches
        self.writer = writer
        self.on_result = on_result or (lambda result, process: None)
        self.clock = clock
        self._engine: AdmissionEngine | None = None
        self._policies: dict[str, ReportedPolicy] = {}
        self._fingerprints: dict[str, tuple[str, ...]] = {}
        self._watched: set[tuple[str, str]] = set()
        # resources changed since the last pass -> (operation, old object) of the first change seen
        self._changed: dict[tuple[str, str, str, str], tuple[str, dict[str, Any] | None]] = {}
        # resource uid -> policy key -> resourceVersion: the object state the last evaluation saw, and
        # the state a webhook error was reported on (held until the resource changes)
        self._evaluated: dict[str, dict[str, str]] = {}
        self._held: dict[str, dict[str, str]] = {}
        # resource uid -> resourceVersion replaced ("" for a creation) -> the one that replaced it
        self._successors: dict[str, dict[str, str]] = {}
        # error key -> (admission time, old resourceVersion) of the last one applied
        self._errors_seen: dict[tuple[str, str, str, str, str], tuple[int, str]] = {}
        # policy key -> uids of the targets its mutateExisting patched (their results outlive full scans)
        self._patched: dict[str, set[str]] = {}
        self._to_watch: set[tuple[str, str]] = set()  # their kinds, watched from the next pass on
        self._lock = threading.Lock()

    # --- policies --------------------------------------------------------------------------------

    def load(self, engine: AdmissionEngine) -> list[str]:
        """Take the policies of a (re)loaded engine; the keys of those new or changed (to scan)."""
        if engine is self._engine:
            return []
        self._engine = engine
        policies = reported_policies(engine, background=self.background, admission=self.admission)
        exceptions = repr(
            [
                (e.namespace, e.name, e.policy_refs, [c.source for c in e.match_conditions], e.report_result)
                for e in engine.exceptions
            ]
        )
        fingerprints = {
            key: (
                str(rp.reporting),
                exceptions,
                *(policy_fingerprint(p) + repr(p.bindings) for p in rp.engine.policies),
            )
            for key, rp in policies.items()
        }
        changed = [key for key, fp in fingerprints.items() if self._fingerprints.get(key) != fp]
        self._policies, self._fingerprints = policies, fingerprints
        with self._lock:
            self._patched = {key: uids for key, uids in self._patched.items() if key in policies}
        self.writer.keep_policies(policies)
        for resource in sorted(set().union(*(p.resources for p in policies.values())) - self._watched):
            self._watch(*resource)
        return changed

    def _watch(self, api_version: str, resource: str) -> None:
        # never waits for the list: a reload must not be held up by one resource (a slow list, RBAC
        # that forbids it: issue 38); what the list brings is scanned once it is in (scan)
        cache = self.caches.cache(api_version, resource, wait=False)
        if cache is None:
            log.warning("cannot watch reported resource", extra={"resource": f"{resource}.{api_version}"})
            return
        self._watched.add((api_version, resource))

        def changed(event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
            metadata = obj.get("metadata") or {}
            if event == "DELETED":
                uid = metadata.get("uid")
                if uid:
                    self.writer.forget_resource(str(uid))
                    for patched in self._patched.values():
                        patched.discard(str(uid))
                    self._evaluated.pop(str(uid), None)
                    self._held.pop(str(uid), None)
                    self._successors.pop(str(uid), None)
                return
            if not cache.synced.is_set():
                return  # the first list, seen since the handler no longer waits for it: scan() covers it
            uid = str(metadata.get("uid") or "")
            # which change made this state: what the webhook's errors are matched against. The first
            # list's ADDED events are not creations (the object may have changed since it was created):
            # a CREATE's error is matched only to a creation the watch saw
            creation = event == "ADDED"
            if uid and (creation or (event != "ADDED" and old is not None)):
                before = "" if event == "ADDED" else _version(old or {})
                successors = self._successors.setdefault(uid, {})
                successors[before] = _version(obj)
                while len(successors) > MAX_SUCCESSORS:
                    del successors[next(iter(successors))]
            with self._lock:
                key = (api_version, resource, metadata.get("namespace") or "", metadata.get("name") or "")
                operation = "CREATE" if event == "ADDED" else "UPDATE"
                self._changed.setdefault(key, (operation, old if operation == "UPDATE" else None))

        cache.add_handler(changed)

    # --- admission errors ------------------------------------------------------------------------

    def admission_errors(self, errors: list[AdmissionError], *, grace: float = 120.0) -> list[AdmissionError]:
        """Report the webhook's admission errors (:mod:`celmut.kube.admission_errors`) as ``error``
        results, process ``admission review``, on the resources they are about; the ones whose resource is
        not (yet) in the watch cache are returned to try again, for ``grace`` seconds after the admission
        (then dropped, as Kyverno deletes an ephemeral report it could not adopt: ``isTooOld`` in
        ``pkg/controllers/report/aggregate/controller.go`` — a CREATE a ``Fail`` policy denied has no
        resource to report on).

        Which result wins: the webhook's decision on an object state beats the controller's own
        re-evaluation of that same state (the stored object does not show that a policy failed on it);
        otherwise the latest wins, as Kyverno's ``mergeReports`` keeps the result with the newest
        timestamp. The error then stands until the resource changes."""
        retry: list[AdmissionError] = []
        now = self.clock()
        for seen_key, (seen_at, _version_replaced) in list(self._errors_seen.items()):
            if now - seen_at > ERROR_MEMORY:
                del self._errors_seen[seen_key]
        for error in errors:
            policy = self._policies.get(error.policy)
            if policy is None or (error.api_version, error.resource) not in policy.resources:
                continue  # not reported (disabled, admission reports off, or a resource it does not name)
            if self._errors_seen.get(error.key) == (error.time, error.old_version):
                continue  # applied already (the Event is listed again on every pass)
            cache = self.caches.cache(error.api_version, error.resource, wait=False)
            obj = cache.get(error.namespace, error.name) if cache is not None else None
            ref = ResourceRef.of(_typed(obj, cache.kind, error.api_version)) if obj and cache else None
            if ref is None or obj is None:
                if now - error.time < grace:
                    retry.append(error)
                continue
            version = _version(obj)
            if error.denied:
                state = error.old_version or None  # a denied UPDATE left the state it would have replaced
            else:
                state = self._successors.get(ref.uid, {}).get(error.old_version)
            if state is None:
                if now - error.time < grace and not error.denied:
                    retry.append(error)  # the change it made is not in the watch yet
                continue
            self._errors_seen[error.key] = (error.time, error.old_version)
            if state != version:
                continue  # the resource changed since: a later admission decided about the current state
            current = [r for r in self.writer.results(ref.uid) if r.policy == error.policy]
            newest = max((r.timestamp for r in current), default=-1)
            if error.time < newest and self._evaluated.get(ref.uid, {}).get(error.policy) != version:
                continue  # a later result about this state (a scan after the admission)
            failed = PolicyOutcome(error.policy, "", "error", error.message, binding=error.binding)
            # results.go selectProcess: the policy's evaluation settings name the process, not the path
            result = result_of(failed, policy.reporting, process_of(policy.reporting), error.time, scanned=False)
            if result is None:
                continue
            self.on_result("error", dict(result.properties).get("process", ""))
            self.writer.put(ref, error.policy, [result])
            self._held.setdefault(ref.uid, {})[error.policy] = version
        return retry

    # --- mutateExisting ----------------------------------------------------------------------------

    def target_patched(self, target: dict[str, Any], resource: str, policies: Iterable[str]) -> None:
        """The controller's mutateExisting patched ``target`` (a ``resource``) for the named policies
        (display names): each reported one gets a ``pass`` on the target with the ``patched-target``
        property, as Kyverno reports on the targets its mutateExisting updates (pkg/background/mpol/
        processor.go ``audit``). It stands until a scan of the target says otherwise or the target goes:
        a full scan of a policy whose matchConstraints do not name the target's kind keeps it."""
        ref = ResourceRef.of(target)
        if ref is None:
            return
        names = set(policies)
        now = int(self.clock())
        for key, policy in list(self._policies.items()):
            if not any(p.display_name in names for p in policy.engine.policies):
                continue
            result = mutate_existing_result(policy.reporting, target, now)
            self.on_result(result.result, dict(result.properties).get("process", ""))
            self.writer.put(ref, key, [result])
            with self._lock:
                self._patched.setdefault(key, set()).add(ref.uid)
                self._to_watch.add((str(target.get("apiVersion") or ""), resource))  # to forget it with the target

    def keys(self) -> list[str]:
        """The keys of the reported policies."""
        return list(self._policies)

    # --- scans -----------------------------------------------------------------------------------

    def scan(self, keys: list[str] | None = None) -> tuple[int, list[str]]:
        """Scan every resource of the named policies (all when None): the number of evaluations, and the
        keys of the policies not scanned whole because a resource of theirs is still being listed. Those
        keep their stored results (nothing is pruned on a partial view) and are due again. A resource
        that is not served, or that celmut may not list (RBAC), has nothing to scan: once it can be
        listed, the watch's events bring its objects to :meth:`rescan_changed`."""
        now = int(self.clock())
        evaluations = 0
        unfinished: list[str] = []
        for key, policy in list(self._policies.items()):
            if (keys is not None and key not in keys) or policy.admission_only:
                continue  # Kyverno's background scan runs only the policies with background processing
            seen: set[str] = set()
            whole = True
            for api_version, resource in sorted(policy.resources):
                cache = self.caches.cache(api_version, resource, wait=False)
                if cache is None or not cache.synced.is_set():
                    whole = whole and (cache is None or cache.absent or bool(cache.denied))
                    continue
                for obj in cache.items():
                    evaluations += self._record(policy, _typed(obj, cache.kind, api_version), now, seen)
            if not whole:
                unfinished.append(key)
                continue
            with self._lock:
                seen |= self._patched.get(key, set())
            self.writer.retain_resources(key, seen)
        return evaluations, unfinished

    def rescan_changed(self) -> int:
        """Rescan the resources that changed since the last call (each once, however often it changed)."""
        with self._lock:
            changed, self._changed = self._changed, {}
            to_watch, self._to_watch = self._to_watch - self._watched, set()
        for watched in sorted(to_watch):  # on the reporting thread: a worker never waits for a watch
            self._watch(*watched)
        now = int(self.clock())
        evaluations = 0
        for (api_version, resource, namespace, name), (operation, old) in changed.items():
            cache = self.caches.cache(api_version, resource, wait=False)
            obj = cache.get(namespace, name) if cache is not None else None
            if obj is None or cache is None:
                continue
            obj = _typed(obj, cache.kind, api_version)
            if old is not None:
                old = _typed(old, cache.kind, api_version)
            for policy in self._policies.values():
                if (api_version, resource) in policy.resources:
                    admitted = (operation, old) if policy.admission_only else None
                    evaluations += self._record(policy, obj, now, None, admitted)
        return evaluations

    def _record(
        self,
        policy: ReportedPolicy,
        obj: dict[str, Any],
        now: int,
        seen: set[str] | None,
        admitted: tuple[str, dict[str, Any] | None] | None = None,
    ) -> int:
        ref = ResourceRef.of(obj)
        if ref is None:
            return 0
        key, version = policy.reporting.key, _version(obj)
        held = self._held.get(ref.uid, {})
        if key in held:
            if held[key] == version:  # the webhook's error on this state stands until the resource changes
                if seen is not None:
                    seen.add(ref.uid)
                return 0
            del held[key]
        self._evaluated.setdefault(ref.uid, {})[key] = version
        failing = self.violations is not None and any(
            r.policy == key and r.result == "fail" for r in self.writer.results(ref.uid)
        )
        results = scan_object(policy, obj, now, admitted)
        if self.violations is not None and admitted is None and not failing:
            for result in results:
                if result.result == "fail":  # it just became a fail: Kyverno's PolicyViolation Events
                    self.violations.add(Violation(policy.source, obj, key, result.message))
        for result in results:
            self.on_result(result.result, dict(result.properties).get("process", ""))
        if results and seen is not None:
            seen.add(ref.uid)
        if results or admitted is None:  # an admission that did not match leaves earlier results alone
            self.writer.put(ref, policy.reporting.key, results)
        return 1


def _version(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))


def _typed(obj: dict[str, Any], kind: str | None, api_version: str) -> dict[str, Any]:
    """A cached object with its apiVersion and kind (typed list items come without them)."""
    if obj.get("kind") and obj.get("apiVersion"):
        return obj
    out = dict(obj)
    out.setdefault("apiVersion", api_version)
    if kind:
        out.setdefault("kind", kind)
    return out
