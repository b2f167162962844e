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
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from celmut import kinds
from celmut.controller.report_state import PatchedResults, PatchesInFlight, Rescanned, Successors, Versions, Where
from celmut.controller.reported_policies import ReportedPolicy, reported_policies, scan_object
from celmut.controller.resource_versions import newer_version
from celmut.controller.triggers import policy_fingerprint
from celmut.controller.violation_events import Violation, ViolationEvents
from celmut.kube.admission_errors import AdmissionError
from celmut.kube.cache import WatchedCache
from celmut.kube.client import ClusterError
from celmut.kube.lookup import CacheSet
from celmut.kube.report_writer import ReportWriter
from celmut.runtime import AdmissionEngine
from celmut.runtime.report_objects import ResourceRef
from celmut.runtime.report_results import (
    PATCHED_TARGET,
    ReportResult,
    mutate_existing_result,
    process_of,
    result_of,
)
from celmut.runtime.results import PolicyOutcome

log = logging.getLogger("celmut.reports")

MAX_SUCCESSORS = 8  # changes remembered per resource, to tell which state an admission error is about
MAX_ARRIVED = 2_000  # changed objects of metadata caches held for the next pass (beyond: the resource is rescanned)
MAX_PATCHED_WAIT = 20  # passes a patched target's results wait for the watch to bring its rescan
PAGE_SIZE = 500  # objects per list page of a scan of a resource cached as metadata
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
        # the same resources' latest objects, when their cache keeps only metadata (as the watch delivered
        # them: evaluated on the next pass, then dropped); at most MAX_ARRIVED, beyond that the resource is
        # listed again a page at a time (_relisted)
        self._arrived: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self._relisted: set[tuple[str, str]] = set()
        self._fresher: set[tuple[str, str, str, str]] | None = None  # during a scan: rescanned meanwhile
        # during a full scan: policy key -> uids of the resources it found results on, those rescanned as
        # they changed meanwhile included (a resource created after its page was listed is one of them: its
        # results must outlive the scan's pruning of the resources it did not see)
        self._scan_seen: dict[str, set[str]] | None = None
        # during a full scan: the resources deleted meanwhile (the pages it reads may still hold them; a
        # report written for one would outlive it in the writer's memory)
        self._gone: set[tuple[str, str, str, str]] | None = None
        # resource uid -> policy key -> resourceVersion: the object state the last evaluation saw, and
        # the state a webhook error was reported on (held until the resource changes)
        self._evaluated = Versions()
        # while a full scan waits for a mutation pass (ReportLoop): the resources rescanned meanwhile
        self.rescanned = Rescanned()
        self._held: dict[str, dict[str, str]] = {}
        # resource uid -> resourceVersion replaced ("" for a creation) -> the one that replaced it
        self._successors = Successors(MAX_SUCCESSORS)
        # error key -> (admission time, old resourceVersion) of the last one applied
        self._errors_seen: dict[tuple[str, str, str, str, str], tuple[int, str]] = {}
        # policy key -> uids of the targets its mutateExisting patched (their results outlive full scans)
        self._patched: dict[str, set[str]] = {}
        self._to_watch: set[tuple[str, str]] = set()  # their kinds, watched from the next pass on
        # the results of targets just patched, held for the rescan of the change (pass number, ref, results)
        self._patched_results: dict[Where, PatchedResults] = {}
        self.in_flight = PatchesInFlight()  # targets a worker patches now, with the rescans held for them
        self._passes = 0  # rescan_changed calls
        self._lock = threading.Lock()

    # --- policies --------------------------------------------------------------------------------

    def load(self, engine: AdmissionEngine, others: frozenset[str] | None = None) -> list[str]:
        """Take the policies of a (re)loaded engine; the keys of those new or changed (to scan).
        ``others``: the existing policies other celmut installs serve, whose results stay as they are
        (None: one celmut per cluster, :meth:`~celmut.kube.report_writer.ReportWriter.keep_policies`)."""
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
        if changed:
            self.rescanned.restart()
        with self._lock:
            self._patched = {key: uids for key, uids in self._patched.items() if key in policies}
        self.writer.keep_policies(policies, others)
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
            key = (api_version, resource, metadata.get("namespace") or "", metadata.get("name") or "")
            if event == "DELETED":
                with self._lock:
                    self._changed.pop(key, None)
                    self._arrived.pop(key, None)
                    self._patched_results.pop(key, None)
                    self.in_flight.drop(key)
                    if self._gone is not None:
                        self._gone.add(key)
                uid = metadata.get("uid")
                if uid:
                    self.writer.forget_resource(str(uid))
                    for patched in self._patched.values():
                        patched.discard(str(uid))
                    self._evaluated.pop(str(uid))
                    self._held.pop(str(uid), None)
                    self._successors.pop(str(uid))
                return
            if not self.caches.synced_now(api_version, resource):
                return  # the first list, seen since the handler no longer waits for it: scan() covers it
            uid = str(metadata.get("uid") or "")
            # which change made this state: what the webhook's errors are matched against. The first
            # list's ADDED events are not creations (the object may have changed since it was created):
            # a CREATE's error is matched only to a creation the watch saw
            creation = event == "ADDED"
            if uid and (creation or (event != "ADDED" and old is not None)):
                before = "" if event == "ADDED" else _version(old or {})
                self._successors.add(uid, before, _version(obj))
            current = self.caches.existing(api_version, resource)
            projected = current is not None and current.metadata_only
            with self._lock:
                operation = "CREATE" if event == "ADDED" else "UPDATE"
                self._changed.setdefault(key, (operation, old if operation == "UPDATE" else None))
                if self._gone is not None:
                    self._gone.discard(key)  # created again under the same name
                if not projected or (api_version, resource) in self._relisted:
                    return
                if len(self._arrived) < MAX_ARRIVED or key in self._arrived:
                    self._arrived[key] = obj  # the cache keeps its metadata only: evaluate it as it arrived
                else:  # too many changes at once: the next pass lists the resource again instead
                    self._relisted.add((api_version, resource))
                    for other in [k for k in self._arrived if k[:2] == (api_version, resource)]:
                        del self._arrived[other]

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
            # a denied UPDATE left the state it would have replaced
            denied_state = error.old_version or None
            state = denied_state if error.denied else self._successors.get(ref.uid, error.old_version)
            if state is None:
                if now - error.time < grace and not error.denied:
                    retry.append(error)  # the change it made is not in the watch yet
                continue
            self._errors_seen[error.key] = (error.time, error.old_version)
            if state != version:
                continue  # the resource changed since: a later admission decided about the current state
            current = [r for r in self.writer.results(ref.uid) if r.policy == error.policy]
            newest = max((r.timestamp for r in current), default=-1)
            if error.time < newest and self._evaluated.get(ref.uid, error.policy) != version:
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
        self._hand_over(target, resource, policies, None)

    def patch_started(self, where: Where) -> None:
        """A worker starts on a mutateExisting target: a rescan the watch brings of it meanwhile waits for
        :meth:`patch_finished` (its report is then written once, with the ``patched-target`` result)."""
        self.in_flight.start(where)

    def patch_finished(
        self, where: Where, target: dict[str, Any] | None, resource: str, policies: Iterable[str]
    ) -> None:
        """The worker is done with ``where``: ``target`` as it patched it for ``policies`` (None: not
        patched, :meth:`target_patched` otherwise). A rescan held meanwhile is written now, with them."""
        held = self._hand_over(target, resource, policies, where)
        if held is not None:
            self._put(*held)

    def _hand_over(
        self, target: dict[str, Any] | None, resource: str, policies: Iterable[str], finished: Where | None
    ) -> tuple[dict[str, Any], dict[str, list[ReportResult]]] | None:
        """Hold the patched-target results of ``target`` for the rescan of its change; a worker
        ``finished`` with a target gets the rescan held for it back, with them, to write. Under the lock
        a rescan checks a worker's patch under (:meth:`rescan_changed`): one write, whichever comes first."""
        ref = ResourceRef.of(target) if target is not None else None
        batch: dict[str, list[ReportResult]] = {}
        if target is not None and ref is not None:  # patched: its policies' results
            names, now = set(policies), int(self.clock())
            for key, policy in list(self._policies.items()):
                if any(p.display_name in names for p in policy.engine.policies):
                    result = mutate_existing_result(policy.reporting, target, now)
                    self.on_result(result.result, dict(result.properties).get("process", ""))
                    batch[key] = [result]
        with self._lock:
            if target is not None and ref is not None and batch:
                metadata = target.get("metadata") or {}
                api_version = str(target.get("apiVersion") or "")
                where = (api_version, resource, str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
                # written with the scan of the patched target that the watch brings next (one report write
                # for both), or alone once no rescan is coming (_put_patched)
                held = self._patched_results.get(where)
                earlier = held.results if held is not None else {}
                version = str(metadata.get("resourceVersion") or "")
                self._patched_results[where] = PatchedResults(self._passes, ref, {**earlier, **batch}, version)
                for key in batch:
                    self._patched.setdefault(key, set()).add(ref.uid)
                self._to_watch.add((api_version, resource))  # to forget it with the target
            if finished is None:
                return None
            rescanned = self.in_flight.finish(finished)
            if rescanned is None:
                return None
            patched = self._patched_results.pop(finished, None)
        obj, results = rescanned
        return obj, {**results, **(patched.results if patched is not None else {})}

    def awaiting_rescans(self) -> bool:
        """Whether a target a worker patches, or has patched, still waits for the rescan of its change: a
        full scan run now would evaluate it at the version before its patch (a lagging watch), and again
        once the watch brings the patch."""
        with self._lock:
            return bool(self._patched_results) or len(self.in_flight) > 0

    def adopted(self, reports: Iterable[Mapping[str, Any]]) -> None:
        """Stored reports taken over at start: the targets an earlier run's mutateExisting patched keep
        their results through full scans, as those this run patches do (:meth:`target_patched`)."""
        with self._lock:
            for report in reports:
                scope = report.get("scope") or {}
                uid = str(scope.get("uid") or "")
                for result in report.get("results") or []:
                    if uid and PATCHED_TARGET in (result.get("properties") or {}):
                        self._patched.setdefault(str(result.get("policy") or ""), set()).add(uid)
                        api_version = str(scope.get("apiVersion") or "")
                        resource = kinds.resource_for(api_version, str(scope.get("kind") or ""))
                        self._to_watch.add((api_version, resource))  # to forget it with the target

    def keys(self) -> list[str]:
        """The keys of the reported policies."""
        return list(self._policies)

    # --- scans -----------------------------------------------------------------------------------

    def scan(self, keys: list[str] | None = None) -> tuple[int, list[str]]:
        """Scan every resource of the named policies (all when None): the number of evaluations, and the
        keys of the policies not scanned whole — a resource of theirs still being listed, or a list that
        failed. Those keep their stored results (nothing is pruned on a partial view) and are due again. A
        resource that is not served, or that celmut may not list (RBAC), has nothing to scan: once it can be
        listed, the watch's events bring its objects to :meth:`rescan_changed`. Each resource is read once
        for all the policies: from its cache, or, when the cache keeps only metadata, from the API server a
        page at a time."""
        now = int(self.clock())
        due = [
            (key, policy)
            for key, policy in list(self._policies.items())
            # Kyverno's background scan runs only the policies with background processing
            if (keys is None or key in keys) and not policy.admission_only
        ]
        by_resource: dict[tuple[str, str], list[tuple[str, ReportedPolicy]]] = {}
        for key, policy in due:
            for named in policy.resources:
                by_resource.setdefault(named, []).append((key, policy))
        seen: dict[str, set[str]] = {key: set() for key, _ in due}
        failed: set[str] = set()
        evaluations = 0
        # the resources rescanned as they changed while this scan ran: a later page (listed from the
        # snapshot of the list's first page) holds an older copy of them
        self._fresher = set()
        self._scan_seen = seen
        with self._lock:
            self._gone = set()
        try:
            for (api_version, resource), scanned in sorted(by_resource.items()):
                cache = self.caches.cache(api_version, resource, wait=False)
                if cache is None or not cache.synced.is_set():
                    if not (cache is None or cache.absent or cache.denied):
                        failed.update(key for key, _ in scanned)  # still being listed: next pass
                    continue
                if cache.metadata_only and self._all_rescanned(cache, scanned, seen):
                    continue  # a mutation pass changed them all, and each was evaluated as it changed
                try:
                    for page in self._pages(cache, api_version, resource):
                        for obj in page:
                            evaluations += self._scan_one(api_version, resource, obj, scanned, now, seen)
                        # what changed meanwhile, evaluated now: the objects the watch delivered are held
                        # for one page, not for the whole scan
                        evaluations += self.rescan_changed(relist=False)
                except ClusterError as ex:
                    log.warning(
                        "cannot scan resources", extra={"resource": f"{resource}.{api_version}", "error": str(ex)}
                    )
                    failed.update(key for key, _ in scanned)
        finally:
            self._fresher = None
            self._scan_seen = None
            self.rescanned.stop()
            with self._lock:
                self._gone = None
        for key, _ in due:
            if key in failed:
                continue  # what it did not see is not gone: its earlier results stay
            with self._lock:
                kept = seen[key] | self._patched.get(key, set())
            self.writer.retain_resources(key, kept)
        return evaluations, sorted(failed)

    def _scan_one(
        self,
        api_version: str,
        resource: str,
        obj: dict[str, Any],
        scanned: list[tuple[str, ReportedPolicy]],
        now: int,
        seen: dict[str, set[str]],
    ) -> int:
        metadata = obj.get("metadata") or {}
        key = (api_version, resource, metadata.get("namespace") or "", metadata.get("name") or "")
        with self._lock:
            newer = key in self._changed or (self._fresher is not None and key in self._fresher)
            if not newer and self._gone is not None and key in self._gone:
                return 0  # deleted since its page was read: nothing to report on
        newer = newer or self._rescanned_at_or_after(metadata, scanned)
        if newer:  # a newer copy is (or was just) evaluated as it changed: this one is older
            uid = str(metadata.get("uid") or "")
            for policy_key, _ in scanned:
                seen[policy_key].add(uid)
            return 0
        batch: dict[str, list[ReportResult]] = {}
        evaluations = sum(self._record(policy, obj, now, seen[policy_key], batch) for policy_key, policy in scanned)
        self._put(obj, batch)
        return evaluations

    def _rescanned_at_or_after(self, metadata: dict[str, Any], scanned: list[tuple[str, ReportedPolicy]]) -> bool:
        """Whether every policy of ``scanned`` evaluated this resource, at this version or a later one, as it
        changed while the scan waited for a mutation pass (each patched pod is then evaluated once)."""
        uid = str(metadata.get("uid") or "")
        if uid not in self.rescanned:
            return False
        version = str(metadata.get("resourceVersion") or "")
        for key, _ in scanned:
            evaluated = self._evaluated.get(uid, key)
            if evaluated is None or (evaluated != version and not newer_version(evaluated, version)):
                return False
        return True

    def _all_rescanned(
        self, cache: WatchedCache, scanned: list[tuple[str, ReportedPolicy]], seen: dict[str, set[str]]
    ) -> bool:
        """Whether every object a metadata cache holds was rescanned at its cached version (then the scan lists
        none of them again): each counts as seen."""
        items = cache.items()
        if not self.rescanned.tracking or not all(
            self._rescanned_at_or_after(o.get("metadata") or {}, scanned) for o in items
        ):
            return False
        for obj in items:
            uid = str((obj.get("metadata") or {}).get("uid") or "")
            for key, _ in scanned:
                seen[key].add(uid)
        return True

    def _pages(self, cache: WatchedCache, api_version: str, resource: str) -> Iterator[list[dict[str, Any]]]:
        """The stored objects of a resource, typed, a page at a time: its cache's, or from the API server
        when the cache keeps only their metadata."""
        if not cache.metadata_only:
            items = cache.items()
            for start in range(0, len(items), PAGE_SIZE):
                yield [_typed(obj, cache.kind, api_version) for obj in items[start : start + PAGE_SIZE]]
            return
        for page in self.caches.cluster.pages(api_version, resource, limit=PAGE_SIZE):
            items = page.get("items") or []
            for obj in items:
                (obj.get("metadata") or {}).pop("managedFields", None)
            yield [_typed(obj, cache.kind, api_version) for obj in items]

    def rescan_changed(self, *, relist: bool = True) -> int:
        """Rescan the resources that changed since the last call (each once, however often it changed);
        ``relist``: also read again the resources too many of whose objects changed at once."""
        with self._lock:
            changed, self._changed = self._changed, {}
            arrived, self._arrived = self._arrived, {}
            self._passes += 1
            relisted = self._relisted
            self._relisted = set() if relist else relisted
            # the results of the targets just patched go out with their rescan (a relist's, for a relisted kind)
            patched = {
                key: self._patched_results.pop(key)
                for key in changed
                if key in self._patched_results and key[:2] not in relisted
            }
            if self._fresher is not None:
                self._fresher.update(changed)
            to_watch, self._to_watch = self._to_watch - self._watched, set()
        for watched in sorted(to_watch):  # on the reporting thread: a worker never waits for a watch
            self._watch(*watched)
        now = int(self.clock())
        evaluations = 0
        for api_version, resource in sorted(relisted) if relist else []:  # too many changed at once: all again
            evaluations += self._relist(api_version, resource, now)
        scan_seen = self._scan_seen or {}
        for (api_version, resource, namespace, name), (operation, old) in changed.items():
            if (api_version, resource) in relisted:
                continue
            cache = self.caches.cache(api_version, resource, wait=False)
            stored = cache.get(namespace, name) if cache is not None else None
            if stored is None or cache is None:
                continue  # gone
            # a cache of metadata: the object as the watch delivered it
            current = arrived.get((api_version, resource, namespace, name)) if cache.metadata_only else stored
            if current is None:
                continue
            current = _typed(current, cache.kind, api_version)
            if old is not None:
                old = _typed(old, cache.kind, api_version)
            batch: dict[str, list[ReportResult]] = {}
            for policy in self._policies.values():
                if (api_version, resource) in policy.resources:
                    admitted = (operation, old) if policy.admission_only else None
                    seen = scan_seen.get(policy.reporting.key)  # a full scan runs: it saw this one too
                    evaluations += self._record(policy, current, now, seen, batch, admitted)
            self.rescanned.add(str((current.get("metadata") or {}).get("uid") or ""))
            where = (api_version, resource, namespace, name)
            done = patched.pop(where, None)
            batch.update(done.results if done is not None else {})
            with self._lock:  # as a worker hands its results over (_hand_over): one write, whoever comes first
                later = self._patched_results.pop(where, None)  # handed over since this pass began
                batch.update(later.results if later is not None else {})
                held = self.in_flight.hold(where, current, batch)  # else: written when the worker is done
            if not held:
                self._put(current, batch)
        self._put_patched(patched)
        return evaluations

    def _put_patched(self, left: dict[Where, PatchedResults]) -> None:
        """Write the results of patched targets that no rescan took: those whose change is not rescanned
        (relisted, gone, or not a reported kind), and those an earlier pass left whose rescan is not coming —
        not while the watch has yet to bring the patched version of a watched kind (a lagging watch under
        load), so the target's report is still written once; :data:`MAX_PATCHED_WAIT` passes at most."""
        with self._lock:
            for key, held in list(self._patched_results.items()):
                if held.since < self._passes - 1 and not self._rescan_coming(key, held):
                    left[key] = self._patched_results.pop(key)
        for held in left.values():
            self.writer.put_all(held.ref, held.results)

    def _rescan_coming(self, where: Where, held: PatchedResults) -> bool:
        """Whether the watch has still to bring the patched version of ``where`` to a rescan."""
        if held.since < self._passes - MAX_PATCHED_WAIT or where[:2] not in self._watched:
            return False
        if where in self._changed:
            return True  # brought: the next pass rescans it
        cache = self.caches.cache(where[0], where[1], wait=False)
        stored = cache.get(where[2], where[3]) if cache is not None else None
        return stored is not None and newer_version(held.version, _version(stored))

    def _relist(self, api_version: str, resource: str, now: int) -> int:
        """Evaluate the objects of a resource again, a page at a time (too many of them changed at once to
        hold them): those at a version a policy has not evaluated yet; one deleted after its page was read is
        left out, as a full scan leaves it out. Never inside a full scan (which rescans with
        ``relist=False``): nothing here counts as the scan's seen."""
        scanned = [
            p for p in self._policies.values() if (api_version, resource) in p.resources and not p.admission_only
        ]
        cache = self.caches.cache(api_version, resource, wait=False)
        if cache is None or not cache.synced.is_set():
            return 0
        with self._lock:
            tracking = self._gone is None  # not inside a full scan, which tracks deletions itself
            if tracking:
                self._gone = set()
        evaluations = 0
        try:
            for page in self._pages(cache, api_version, resource):
                for obj in page:
                    if self._deleted_meanwhile(api_version, resource, obj):
                        continue
                    metadata = obj.get("metadata") or {}
                    uid, version = str(metadata.get("uid") or ""), str(metadata.get("resourceVersion") or "")
                    batch: dict[str, list[ReportResult]] = {}
                    for policy in scanned:
                        if self._evaluated.get(uid, policy.reporting.key) != version:  # else: its results stand
                            evaluations += self._record(policy, obj, now, None, batch)
                    self.rescanned.add(uid)
                    with self._lock:
                        where = (
                            api_version,
                            resource,
                            str(metadata.get("namespace") or ""),
                            str(metadata.get("name") or ""),
                        )
                        done = self._patched_results.pop(where, None)
                    batch.update(done.results if done is not None else {})
                    self._put(obj, batch)
        except ClusterError as ex:
            log.warning("cannot scan resources", extra={"resource": f"{resource}.{api_version}", "error": str(ex)})
            with self._lock:
                self._relisted.add((api_version, resource))
        finally:
            if tracking:
                with self._lock:
                    self._gone = None
        return evaluations

    def _deleted_meanwhile(self, api_version: str, resource: str, obj: dict[str, Any]) -> bool:
        """Whether the watch saw ``obj`` deleted while a scan or relist that read it runs."""
        metadata = obj.get("metadata") or {}
        key = (api_version, resource, metadata.get("namespace") or "", metadata.get("name") or "")
        with self._lock:
            return self._gone is not None and key in self._gone

    def _put(self, obj: dict[str, Any], batch: dict[str, list[ReportResult]]) -> None:
        """Hand the writer every policy's results on one resource at once (its report is then written
        with all of them or none, never with some and again with the rest)."""
        ref = ResourceRef.of(obj) if batch else None
        if ref is not None:
            self.writer.put_all(ref, batch)

    def _record(
        self,
        policy: ReportedPolicy,
        obj: dict[str, Any],
        now: int,
        seen: set[str] | None,
        batch: dict[str, list[ReportResult]],
        admitted: tuple[str, dict[str, Any] | None] | None = None,
    ) -> int:
        """Evaluate ``policy`` on ``obj``; its results go into ``batch`` (for :meth:`_put`)."""
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
        self._evaluated.set(ref.uid, key, version)
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
            batch[key] = results
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
