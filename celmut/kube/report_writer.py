"""Writes the per-resource policy reports: results in from scans and admissions, coalesced writes out.

Results arrive per (resource, policy) with :meth:`ReportWriter.put`, as often as they like; nothing is
written then. :meth:`ReportWriter.flush` writes each resource whose results changed since the last
write, once, whatever number of puts came in between — and none whose results are the same but for
their timestamps (a rescan that finds what the last one found keeps the old timestamps and writes
nothing). A resource with no result left loses its report. So the number of writes follows the
number of resources whose outcome changed, never the number of scans or admissions.

Only reports labelled ``app.kubernetes.io/managed-by: celmut`` (and named with this writer's prefix)
are ever replaced or deleted: a report another owner wrote under the same name is left alone and the
write counted as an error. The garbage collector deletes a report with its resource (ownerReference);
:meth:`forget_resource` only drops what the writer remembers of it.

Several celmut installs can share a cluster, each serving the policies its ``--policy-selector`` selects,
and so share the one report of a resource. Then (:meth:`keep_policies` with ``others``) a writer owns
only the results of its own policies: it drops a result only for a policy it serves, or for one that no
longer exists in the cluster (as Kyverno's background report controller keeps, on each reconcile,
the results of the policies its listers still hold and drops the others': kyverno/kyverno
``pkg/controllers/report/background/controller.go`` ``reconcileReport``). Every write is checked against the
resourceVersion it was built on (a PUT with it, a DELETE with it as precondition); one refused because
another install wrote meanwhile reads the report again, keeps that install's results as they now are
and puts this writer's own around them, so two writers never lose each other's update.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from celmut.kube.client import Cluster, ClusterError, Conflict, NotFound
from celmut.runtime.report_objects import (
    API_VERSION,
    CLUSTER,
    MANAGED_BY,
    MANAGED_BY_CELMUT,
    MAX_RESULTS,
    NAMESPACED,
    ResourceRef,
    bounded,
    build_report,
    ref_of,
    report_name,
    results_of,
)
from celmut.runtime.report_results import ReportResult

log = logging.getLogger("celmut.reports")
_T = TypeVar("_T")

RETRIED = frozenset({0, 429, 500, 502, 503, 504})  # refused writes tried again (unreachable, throttled, outages)
MERGE_ATTEMPTS = 5  # writes of a shared report refused in a row (another install wrote each time) before giving up


@dataclass(slots=True)
class _Entry:
    """One resource's report, compactly (the leader holds one per resource: 100,000 at 100,000 pods): its
    results as one tuple (shared between resources whose results are the same), and a digest of what the
    stored report says."""

    ref: ResourceRef
    results: tuple[ReportResult, ...] = ()  # every policy's (each result's ``policy`` is its key)
    stored: int | None = None  # digest of the stored report's results (None: no report)
    resource_version: str = ""

    def desired(self, limit: int) -> list[ReportResult]:
        return bounded(self.results, limit)[0]

    def of(self, policy: str) -> tuple[ReportResult, ...]:
        return tuple(r for r in self.results if r.policy == policy)

    def policies(self) -> set[str]:
        return {r.policy for r in self.results}

    def without(self, policies: set[str]) -> tuple[ReportResult, ...]:
        return tuple(r for r in self.results if r.policy not in policies)


def digest(results: Iterable[ReportResult]) -> int:
    """What a report says, but for its results' timestamps (a rewrite of timestamps alone is not worth it)."""
    return hash(tuple(r.without_timestamp() for r in results))


class _Interned:
    """The last results (and tuples of results) seen, to share one object between the resources that hold
    equal ones: one scan's results on 5,000 pods of a namespace are mostly the same few. Bounded (LRU)."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._seen: OrderedDict[Any, Any] = OrderedDict()

    def __call__(self, value: _T) -> _T:
        found = self._seen.get(value)
        if found is not None:
            self._seen.move_to_end(value)
            return found  # type: ignore[no-any-return]
        self._seen[value] = value
        if len(self._seen) > self.size:
            self._seen.popitem(last=False)
        return value


@dataclass
class FlushStats:
    created: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    errors: int = 0

    @property
    def writes(self) -> int:
        return self.created + self.updated + self.deleted


class ReportWriter:
    """The reports of one writer (the controller's leader, or a webhook replica's admission results)."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        prefix: str = "",
        limit: int = MAX_RESULTS,
        on_write: Callable[[str, str], None] | None = None,  # (kind of write, result) for metrics
    ) -> None:
        self.cluster = cluster
        self.prefix = prefix
        self.limit = limit
        self.on_write = on_write or (lambda action, result: None)
        self._entries: dict[str, _Entry] = {}
        self._dirty: dict[str, None] = {}
        self._writing = 0  # reports taken from _dirty whose write has not returned (and been counted) yet
        # their uids: a report is written by one thread at a time (another write of it, from a second drain
        # thread or flush, would carry the same resourceVersion and one of the two would get a 409); one
        # dirty again meanwhile waits for its writer, which takes it again when its write returns
        self._in_flight: set[str] = set()
        # reports stored under an earlier prefix: (resource, that prefix, the resourceVersion written there)
        self._renamed: list[tuple[ResourceRef, str, str]] = []
        self._failed: set[str] = set()  # writes the API server refused: dirty again at the next flush
        self._interned = _Interned()
        # several installs share the reports (keep_policies with others): whose results are whose
        self._shared = False
        self._ours: frozenset[str] = frozenset()  # the policies this writer reports (their results are its own)
        self._others: frozenset[str] = frozenset()  # existing policies another install serves
        self._gone: set[str] = set()  # policies no longer in the cluster (or served here, unreported)
        self._adopted = False  # reports were just adopted: a policy no one knows of is gone (not yet seen)
        self._lock = threading.Lock()

    # --- results in ------------------------------------------------------------------------------

    def put(self, ref: ResourceRef, policy: str, results: Iterable[ReportResult]) -> None:
        """The results of ``policy`` on ``ref`` are now ``results`` (none: it has no result there).
        A result equal to the one already held but for its timestamp keeps the older timestamp."""
        self.put_all(ref, {policy: results})

    def put_all(self, ref: ResourceRef, by_policy: Mapping[str, Iterable[ReportResult]]) -> None:
        """:meth:`put` for several policies at once: a flush running meanwhile writes the report with all
        of them or none (a scan evaluates every policy on a resource before handing the results over, so
        a report is not written with some of its policies, then again with the rest)."""
        new = {policy: list(results) for policy, results in by_policy.items()}
        with self._lock:
            entry = self._entries.get(ref.uid)
            if entry is None:
                if not any(new.values()):
                    return
                entry = self._entries[ref.uid] = _Entry(ref)
            elif entry.ref != ref:
                entry.ref = ref
            changed = False
            for policy, results in new.items():
                old = entry.of(policy)
                kept = tuple(next((o for o in old if o.same_as(n)), None) or self._interned(n) for n in results)
                if kept != old:
                    entry.results = self._interned(entry.without({policy}) + kept)
                    changed = True
            if changed:
                self._dirty[ref.uid] = None

    def keep_policies(self, policies: Iterable[str], others: Iterable[str] | None = None) -> None:
        """The reported policies are now ``policies``. Without ``others`` (one celmut per cluster) every
        other result is dropped (its policy was deleted, disabled or left celmut).

        With ``others`` (several installs share the cluster: the existing policies another install
        serves), the results of those are another writer's and stay as they are stored; dropped are only
        the results of a policy this install serves and does not report, or of one that no longer exists
        (it was known and is gone, or, just after :meth:`adopt`, no one knows it). A policy not yet seen
        (another install's, created a moment ago) keeps its results."""
        keep = set(policies)
        with self._lock:
            if others is None:
                self._shared = False
                for uid, entry in self._entries.items():
                    dropped = entry.policies() - keep
                    if dropped:
                        entry.results = self._interned(entry.without(dropped))
                        self._dirty[uid] = None
                return
            known = keep | set(others)
            gone = (self._gone | (self._ours | self._others) - known) - known
            if self._adopted:
                gone |= {p for entry in self._entries.values() for p in entry.policies()} - known
            self._shared, self._adopted = True, False
            self._ours, self._others, self._gone = frozenset(keep), frozenset(others), gone
            for uid, entry in self._entries.items():
                dropped = entry.policies() & gone
                if dropped:
                    entry.results = self._interned(entry.without(dropped))
                    self._dirty[uid] = None

    def retain_resources(self, policy: str, uids: set[str]) -> None:
        """After a full scan of ``policy``: its results on resources the scan did not see are gone."""
        with self._lock:
            for uid, entry in self._entries.items():
                if uid not in uids and any(r.policy == policy for r in entry.results):
                    entry.results = self._interned(entry.without({policy}))
                    self._dirty[uid] = None

    def forget_resource(self, uid: str) -> None:
        """The resource is deleted: its report goes with it (ownerReference), forget both."""
        with self._lock:
            self._entries.pop(uid, None)
            self._dirty.pop(uid, None)

    def adopt(self, reports: Iterable[Mapping[str, Any]]) -> int:
        """Take over the stored reports of an earlier run (listed at start): their results are held
        as if just put, so a scan that finds the same writes nothing. Returns how many were taken."""
        count = 0
        with self._lock:
            for report in reports:
                metadata = report.get("metadata") or {}
                ref = ref_of(report)
                if ref is None or (metadata.get("labels") or {}).get(MANAGED_BY) != MANAGED_BY_CELMUT:
                    continue
                if metadata.get("name") != report_name(ref, self.prefix):
                    continue
                stored = tuple(self._interned(r) for r in results_of(report))
                version = str(metadata.get("resourceVersion", ""))
                said = digest(bounded(stored, self.limit)[0])  # in the order desired() compares it in
                self._entries[ref.uid] = _Entry(ref, self._interned(stored), said, version)
                count += 1
            self._adopted = True
        return count

    def set_prefix(self, prefix: str) -> None:
        """Name reports ``<prefix><uid>`` from now on (Kyverno came or went): the next flush takes this
        writer's results out of the reports stored under the old names (:meth:`_retire`) and writes them
        under the new ones."""
        with self._lock:
            if prefix == self.prefix:
                return
            for uid, entry in self._entries.items():
                if entry.stored is not None:
                    self._renamed.append((entry.ref, self.prefix, entry.resource_version))
                    entry.stored, entry.resource_version = None, ""
                    self._dirty[uid] = None
            self.prefix = prefix

    def pending(self) -> int:
        """Reports whose results changed and are not written yet, the one being written included (so
        ``pending() == 0`` means every write has returned and been counted)."""
        with self._lock:
            return len(self._dirty) + self._writing

    def results(self, uid: str) -> list[ReportResult]:
        """The results currently held for a resource (sorted, bounded)."""
        with self._lock:
            entry = self._entries.get(uid)
            return entry.desired(self.limit) if entry is not None else []

    # --- writes out ------------------------------------------------------------------------------

    def flush(
        self, max_writes: int | None = None, *, pace: Callable[[], bool] | None = None, concurrency: int = 1
    ) -> FlushStats:
        """Write the reports whose results changed (at most ``max_writes`` writes; the rest wait), by
        ``concurrency`` threads, each write after ``pace()`` allowed it (a token bucket: the controller's
        ``--rate``; False stops the flush). A write refused by a throttle or an outage (:data:`RETRIED`) is tried
        again on the next flush."""
        stats = FlushStats()
        with self._lock:
            renamed, self._renamed = self._renamed, []
            for uid in self._failed:
                self._dirty.setdefault(uid, None)
            self._failed.clear()
        for ref, old_prefix, version in renamed:
            try:
                action = self._retire(ref, old_prefix, version)
            except ClusterError as ex:
                stats.errors += 1
                self.on_write("error", str(ex.status))
                log.warning("renamed policy report not retired", extra={"report": report_name(ref, old_prefix)})
                continue
            setattr(stats, action, getattr(stats, action) + 1)
            if action != "unchanged":
                self.on_write(action, "ok")
        if concurrency <= 1:
            self._drain(stats, max_writes, pace)
            return stats
        threads = [
            threading.Thread(target=self._drain, args=(stats, max_writes, pace), name=f"report-writer-{n}", daemon=True)
            for n in range(concurrency)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return stats

    def _drain(self, stats: FlushStats, max_writes: int | None, pace: Callable[[], bool] | None) -> None:
        """Write dirty reports until none is left, ``max_writes`` is reached or ``pace`` says stop."""
        while True:
            with self._lock:
                if not self._dirty or (max_writes is not None and stats.writes + stats.errors >= max_writes):
                    return
                uid = next((u for u in self._dirty if u not in self._in_flight), "")
                if not uid:  # every dirty report is being written: their writers come back for them
                    return
                del self._dirty[uid]
                entry = self._entries.get(uid)
                if entry is None:
                    continue
                desired = entry.desired(self.limit)
                stored, version, ref = entry.stored, entry.resource_version, entry.ref
                if not desired and stored is None:
                    del self._entries[uid]
                    continue
                if stored is not None and stored == digest(desired):
                    stats.unchanged += 1
                    continue
                self._writing += 1
                self._in_flight.add(uid)
            written: tuple[str, str, list[ReportResult]] | None = None
            try:
                if pace is not None and not pace():
                    with self._lock:
                        self._dirty.setdefault(uid, None)  # stopping: still to write
                    return
                written = self._write_one(ref, desired, stored is not None, version, stats)
            finally:
                with self._lock:
                    self._writing -= 1
                    self._in_flight.discard(uid)
                    if written is not None:
                        action, new_version, desired = written
                        self._now_stored(uid, desired, action, new_version)

    def _now_stored(self, uid: str, desired: list[ReportResult], action: str, version: str) -> None:
        """After a write (under the lock): what the API server now holds for ``uid``."""
        current = self._entries.get(uid)
        if current is None:
            return
        if action != "deleted":
            current.stored, current.resource_version = digest(desired), version
        elif not current.results:
            del self._entries[uid]
        else:
            current.stored, current.resource_version = None, ""

    def _write_one(
        self, ref: ResourceRef, desired: list[ReportResult], exists: bool, version: str, stats: FlushStats
    ) -> tuple[str, str, list[ReportResult]] | None:
        """Write one report; counted in ``stats`` and ``on_write``. The action, new resourceVersion and the
        results written (another install's, read again, may have joined them), or None when the API server
        refused it."""
        try:
            if self._shared:
                action, version, desired = self._write_shared(ref, desired, exists, version)
            else:
                action, version = self._write(ref, desired, exists, version)
        except ClusterError as ex:
            with self._lock:
                stats.errors += 1
                # a throttle or an outage, or other installs writing the same report all along: next flush
                if ex.status in RETRIED or (isinstance(ex, Conflict) and ex.reason == "Conflict"):
                    self._failed.add(ref.uid)
            self.on_write("error", str(ex.status))
            log.warning("policy report not written", extra={"resource": f"{ref.kind}/{ref.name}", "error": str(ex)})
            return None
        with self._lock:
            setattr(stats, action, getattr(stats, action) + 1)
        self.on_write(action, "ok")
        return action, version, desired

    def _write(self, ref: ResourceRef, desired: list[ReportResult], exists: bool, version: str) -> tuple[str, str]:
        _kind, plural = ref.report_kind
        name = report_name(ref, self.prefix)
        if not desired:
            with contextlib.suppress(NotFound):
                self.cluster.delete(API_VERSION, plural, ref.namespace, name)
            return "deleted", ""
        body = build_report(ref, desired, prefix=self.prefix, limit=self.limit)
        if exists:
            body["metadata"]["resourceVersion"] = version
            try:
                stored = self.cluster.replace(API_VERSION, plural, ref.namespace, name, body)
                return "updated", _version(stored)
            except NotFound:
                body["metadata"].pop("resourceVersion", None)
            except Conflict:  # changed under us: replace the latest, if it is still ours
                return "updated", self._replace_latest(ref, body)
        try:
            created = self.cluster.create(API_VERSION, plural, ref.namespace, body)
            return "created", _version(created)
        except Conflict:  # AlreadyExists: an earlier run's (or another replica's) report
            return "updated", self._replace_latest(ref, body)

    def _replace_latest(self, ref: ResourceRef, body: dict[str, Any]) -> str:
        _kind, plural = ref.report_kind
        name = body["metadata"]["name"]
        current = self.cluster.get(API_VERSION, plural, ref.namespace, name)
        labels = (current.get("metadata") or {}).get("labels") or {}
        if labels.get(MANAGED_BY) != MANAGED_BY_CELMUT:
            raise Conflict(409, "AlreadyExists", f"report {name} belongs to {labels.get(MANAGED_BY) or 'someone else'}")
        body["metadata"]["resourceVersion"] = _version(current)
        return _version(self.cluster.replace(API_VERSION, plural, ref.namespace, name, body))

    def _retire(self, ref: ResourceRef, old_prefix: str, version: str) -> str:
        """Take this writer's results out of the report stored under ``old_prefix`` at ``version``: deleted
        when it holds nothing else (with that version as precondition), written back with the other
        installs' results when it holds theirs (they move them on their own rename), left alone when it is
        no longer celmut's (Kyverno's report under the name celmut used before it arrived). Nothing another
        owner wrote there is lost."""
        _kind, plural = ref.report_kind
        name = report_name(ref, old_prefix)
        for _attempt in range(MERGE_ATTEMPTS):
            try:
                if version:
                    self.cluster.delete(API_VERSION, plural, ref.namespace, name, resource_version=version)
                    return "deleted"
                current = self.cluster.get(API_VERSION, plural, ref.namespace, name)
            except NotFound:
                return "unchanged"
            except Conflict:  # written since this writer's version: read what it holds now
                version = ""
                continue
            labels = (current.get("metadata") or {}).get("labels") or {}
            if labels.get(MANAGED_BY) != MANAGED_BY_CELMUT:
                return "unchanged"
            with self._lock:
                theirs = [
                    r
                    for r in results_of(current)
                    if self._shared and r.policy not in self._ours and r.policy not in self._gone
                ]
            version = _version(current)
            if not theirs:
                continue  # only this writer's: deleted at the version just read
            body = build_report(ref, theirs, prefix=old_prefix, limit=self.limit)
            body["metadata"]["resourceVersion"] = version
            try:
                self.cluster.replace(API_VERSION, plural, ref.namespace, name, body)
                return "updated"
            except NotFound:
                return "unchanged"
            except Conflict:
                version = ""
        raise Conflict(409, "Conflict", f"report {name}: changed by another writer {MERGE_ATTEMPTS} times in a row")

    # --- several installs sharing the reports -----------------------------------------------------

    def _write_shared(
        self, ref: ResourceRef, desired: list[ReportResult], exists: bool, version: str
    ) -> tuple[str, str, list[ReportResult]]:
        """:meth:`_write` when other installs write the same report: each write is made against the
        resourceVersion its results were read at; refused (409: another install wrote meanwhile), the
        report is read again and written with this writer's results and the others' as they now are."""
        _kind, plural = ref.report_kind
        name = report_name(ref, self.prefix)
        for _attempt in range(MERGE_ATTEMPTS):
            try:
                if not desired:
                    if exists:
                        self.cluster.delete(API_VERSION, plural, ref.namespace, name, resource_version=version)
                    return "deleted", "", desired
                body = build_report(ref, desired, prefix=self.prefix, limit=self.limit)
                if exists:
                    body["metadata"]["resourceVersion"] = version
                    stored = self.cluster.replace(API_VERSION, plural, ref.namespace, name, body)
                    return "updated", _version(stored), desired
                return "created", _version(self.cluster.create(API_VERSION, plural, ref.namespace, body)), desired
            except NotFound:  # gone meanwhile (with its resource, or emptied by the other install)
                exists, version = False, ""
                desired = self._merged(ref.uid, [])
            except Conflict:  # changed (or created) by another install meanwhile: read it again
                try:
                    current = self.cluster.get(API_VERSION, plural, ref.namespace, name)
                except NotFound:
                    exists, version = False, ""
                    desired = self._merged(ref.uid, [])
                    continue
                labels = (current.get("metadata") or {}).get("labels") or {}
                if labels.get(MANAGED_BY) != MANAGED_BY_CELMUT:
                    who = labels.get(MANAGED_BY) or "someone else"
                    raise Conflict(409, "AlreadyExists", f"report {name} belongs to {who}") from None
                exists, version = True, _version(current)
                desired = self._merged(ref.uid, results_of(current))
        raise Conflict(409, "Conflict", f"report {name}: changed by another writer {MERGE_ATTEMPTS} times in a row")

    def _merged(self, uid: str, stored: Iterable[ReportResult]) -> list[ReportResult]:
        """This writer's results on ``uid`` with the other installs' results of ``stored`` (those of a policy
        it neither reports nor knows to be gone); remembered as what the resource's report holds."""
        with self._lock:
            theirs = tuple(r for r in stored if r.policy not in self._ours and r.policy not in self._gone)
            entry = self._entries.get(uid)
            if entry is None:
                return bounded(theirs, self.limit)[0]
            mine = tuple(r for r in entry.results if r.policy in self._ours)
            entry.results = self._interned(mine + tuple(self._interned(r) for r in theirs))
            return entry.desired(self.limit)


def _version(obj: Any) -> str:
    if isinstance(obj, Mapping):
        return str((obj.get("metadata") or {}).get("resourceVersion", ""))
    return ""


def report_pages(cluster: Cluster, page_size: int = 500) -> Iterator[list[dict[str, Any]]]:
    """Every report celmut wrote, a page at a time (to :meth:`ReportWriter.adopt` at start: 100,000
    reports are never in memory at once); NotFound when the report CRDs are not served."""
    selector = f"{MANAGED_BY}={MANAGED_BY_CELMUT}"
    for kind, plural in (NAMESPACED, CLUSTER):
        for page in cluster.pages(API_VERSION, plural, "", limit=page_size, label_selector=selector):  # NotFound
            items = page.get("items") or []
            for item in items:
                item.setdefault("apiVersion", API_VERSION)
                item.setdefault("kind", kind)
                (item.get("metadata") or {}).pop("managedFields", None)
            yield items


def list_reports(cluster: Cluster) -> list[dict[str, Any]]:
    """Every report celmut wrote, in one list (see :func:`report_pages`)."""
    return [report for page in report_pages(cluster) for report in page]
