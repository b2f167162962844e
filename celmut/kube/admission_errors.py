"""The webhook's admission errors, handed to the controller's reports as Kubernetes Events.

An admission a policy could not evaluate — denied under ``failurePolicy: Fail``, or let through unchanged
under ``Ignore`` — is the one result the controller cannot rebuild from what it watches: the stored
object does not say that a policy failed on it (a timeout, a lookup, the requesting user's data), and
re-evaluating it later may well succeed. Kyverno's webhook writes one EphemeralReport per admission
(kyverno ``pkg/webhooks/resource/mpol/handler.go`` ``createReports``) that its reports controller
adopts and aggregates (``pkg/controllers/report/aggregate/controller.go``). celmut's webhook writes a
``Warning`` Event, reason ``PolicyError`` (Kyverno's reason for a policy error, ``pkg/event/reason.go``),
about the resource, which is also what ``kubectl describe`` shows:

* coalesced: every replica keeps its errors per (resource, policy) and writes each at most once per
  ``interval`` (the first time a create, then the same Event's ``count`` and ``lastTimestamp``
  updated), at most ``max_writes`` a flush — so N failing admissions of one resource in an interval are
  one write, never N;
* one Event per (resource, policy) whatever the replica: its name is a hash of both, so replicas update
  the same Event instead of each writing their own;
* labelled ``reports.celmut.io/admission-error`` and annotated with the policy's report key, the
  resource's plural and the admission's time, which the controller's leader reads with a label-selected
  watch (:func:`parse_event`). Events expire with the API server's event TTL (1 hour by default).
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from celmut.kube.client import Cluster, ClusterError, Conflict, NotFound

log = logging.getLogger("celmut.reports")

LABEL = "reports.celmut.io/admission-error"
MANAGED_BY = "app.kubernetes.io/managed-by"
SELECTOR = f"{LABEL}=true,{MANAGED_BY}=celmut"
REASON = "PolicyError"  # kyverno pkg/event/reason.go PolicyError
COMPONENT = "celmut-webhook"
ANNOTATION_POLICY = "reports.celmut.io/policy"  # the report key: name or namespace/name
ANNOTATION_BINDING = "reports.celmut.io/binding"
ANNOTATION_RESOURCE = "reports.celmut.io/resource"  # the plural, to find the resource in a watch cache
ANNOTATION_TIME = "reports.celmut.io/time"  # seconds: when the last failing admission was decided
ANNOTATION_OLD_VERSION = "reports.celmut.io/old-resource-version"  # what that admission's UPDATE replaced
ANNOTATION_DENIED = "reports.celmut.io/denied"
MAX_MESSAGE = 1024  # the API server's limit on an Event message


@dataclass(frozen=True)
class AdmissionError:
    """One policy that failed on one admission."""

    api_version: str
    kind: str
    resource: str  # plural
    namespace: str
    name: str
    policy: str  # the report key
    message: str
    binding: str = ""
    time: int = 0  # seconds
    # which change it was: the resourceVersion the UPDATE replaced ("" for a CREATE), and whether the
    # request was denied (the stored object is then still the one it would have replaced)
    old_version: str = ""
    denied: bool = False

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.api_version, self.resource, self.namespace, self.name, self.policy)


def event_name(error: AdmissionError) -> str:
    """One name per (resource, policy), the same in every replica."""
    digest = hashlib.sha256("\x00".join(error.key).encode()).hexdigest()[:20]
    return f"{error.name[:200]}.celmut-error-{digest}"


def _stamp(seconds: int) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event_of(error: AdmissionError, count: int, first: int) -> dict[str, Any]:
    """The Event about ``error``'s resource (cluster-scoped resources get theirs in ``default``)."""
    annotations = {
        ANNOTATION_POLICY: error.policy,
        ANNOTATION_RESOURCE: error.resource,
        ANNOTATION_TIME: str(error.time),
    }
    if error.binding:
        annotations[ANNOTATION_BINDING] = error.binding
    if error.old_version:
        annotations[ANNOTATION_OLD_VERSION] = error.old_version
    if error.denied:
        annotations[ANNOTATION_DENIED] = "true"
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": event_name(error),
            "namespace": error.namespace or "default",
            "labels": {LABEL: "true", MANAGED_BY: "celmut"},
            "annotations": annotations,
        },
        "involvedObject": {
            "apiVersion": error.api_version,
            "kind": error.kind,
            "name": error.name,
            "namespace": error.namespace,
        },
        "type": "Warning",
        "reason": REASON,
        "message": f"policy {error.policy}: {error.message}"[:MAX_MESSAGE],
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "firstTimestamp": _stamp(first),
        "lastTimestamp": _stamp(error.time),
        "count": count,
    }


def parse_event(event: Mapping[str, Any]) -> AdmissionError | None:
    """The admission error an Event written by :class:`AdmissionErrorRecorder` carries (None: not one)."""
    metadata = event.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    involved = event.get("involvedObject") or {}
    policy = annotations.get(ANNOTATION_POLICY)
    resource = annotations.get(ANNOTATION_RESOURCE)
    if not policy or not resource or not involved.get("name"):
        return None
    message = str(event.get("message", ""))
    prefix = f"policy {policy}: "
    try:
        seconds = int(annotations.get(ANNOTATION_TIME, "0"))
    except ValueError:
        return None
    return AdmissionError(
        api_version=str(involved.get("apiVersion", "")),
        kind=str(involved.get("kind", "")),
        resource=str(resource),
        namespace=str(involved.get("namespace") or ""),
        name=str(involved["name"]),
        policy=str(policy),
        message=message.removeprefix(prefix),
        binding=str(annotations.get(ANNOTATION_BINDING, "")),
        time=seconds,
        old_version=str(annotations.get(ANNOTATION_OLD_VERSION, "")),
        denied=annotations.get(ANNOTATION_DENIED) == "true",
    )


class AdmissionErrorRecorder:
    """A webhook replica's admission errors, coalesced per (resource, policy) and flushed as Events."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        interval: float = 1.0,
        max_writes: int = 100,
        max_pending: int = 10_000,
        on_write: Callable[[str], None] | None = None,  # "created", "updated" or "error", for metrics
    ) -> None:
        self.cluster = cluster
        self.interval = interval
        self.max_writes = max_writes
        self.max_pending = max_pending
        self.on_write = on_write or (lambda action: None)
        # (resource, policy) -> (the latest error, admissions since the last flush, the first one's time)
        self._pending: dict[tuple[str, str, str, str, str], tuple[AdmissionError, int, int]] = {}
        self._dropped = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._written: dict[str, tuple[str, int, str]] = {}  # Event name -> (resourceVersion, count, first)

    def record(self, error: AdmissionError, count: int = 1, first: int | None = None) -> None:
        """Remember ``error`` until the next flush (the latest message wins; the admissions are counted)."""
        first = error.time if first is None else first
        with self._lock:
            held = self._pending.get(error.key)
            if held is None and len(self._pending) >= self.max_pending:
                self._dropped += 1  # bounded memory under a storm: the Event of this one waits for the next
                return
            if held is not None:
                count, first = held[1] + count, min(held[2], first)
            self._pending[error.key] = (error, count, first)

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self) -> int:
        """Write what was recorded since the last flush (at most ``max_writes``); the number of writes."""
        with self._lock:
            keys = list(self._pending)[: self.max_writes]
            batch = [self._pending.pop(key) for key in keys]
        writes = 0
        for error, count, first in batch:
            try:
                writes += self._write(error, count, first)
            except ClusterError as ex:
                self.on_write("error")
                log.warning(
                    "admission error event not written",
                    extra={"resource": f"{error.kind}/{error.name}", "policy": error.policy, "error": str(ex)},
                )
        return writes

    def _write(self, error: AdmissionError, count: int, first: int) -> int:
        """One request when this replica wrote the Event before (a replace on the version it knows), else
        a create; a Conflict (another replica wrote it) reads the latest and adds to its count."""
        body = event_of(error, count, first)
        namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
        known = self._written.get(name)
        if known is None:
            try:
                return self._stored(name, self.cluster.create("v1", "events", namespace, body), "created")
            except Conflict:  # AlreadyExists: another replica (or an earlier run) wrote it
                known = None
        for _attempt in range(3):
            if known is None:
                try:
                    current = self.cluster.get("v1", "events", namespace, name)
                except NotFound:
                    return self._stored(name, self.cluster.create("v1", "events", namespace, body), "created")
                metadata = current.get("metadata") or {}
                stamp = str(current.get("firstTimestamp") or body["firstTimestamp"])
                known = (str(metadata.get("resourceVersion", "")), int(current.get("count") or 0), stamp)
            version, stored_count, first_stamp = known
            updated = event_of(error, stored_count + count, error.time)
            updated["firstTimestamp"] = first_stamp or body["firstTimestamp"]
            updated["metadata"]["resourceVersion"] = version
            try:
                return self._stored(name, self.cluster.replace("v1", "events", namespace, name, updated), "updated")
            except (Conflict, NotFound):
                known = None  # changed (another replica) or expired meanwhile: read it again
        self.record(error, count, first)  # still contended: the next flush tries again
        return 0

    def _stored(self, name: str, event: Any, action: str) -> int:
        stored: Mapping[str, Any] = event if isinstance(event, Mapping) else {}
        version = str((stored.get("metadata") or {}).get("resourceVersion", ""))
        count = int(stored.get("count") or 1)
        first = str(stored.get("firstTimestamp") or "")
        with self._lock:
            self._written[name] = (version, count, first)
            while len(self._written) > self.max_pending:
                del self._written[next(iter(self._written))]
        self.on_write(action)
        return 1

    def run(self) -> None:
        """The flushing thread: every ``interval`` until :meth:`stop`."""
        while not self._stop.wait(self.interval):
            try:
                self.flush()
            except Exception:  # keep recording whatever one flush does; logged with its stack
                log.exception("admission error flush failed")

    def start(self) -> AdmissionErrorRecorder:
        threading.Thread(target=self.run, name="celmut-admission-errors", daemon=True).start()
        return self

    def stop(self) -> None:
        """No more timed flushes (:meth:`flush` still writes what is recorded)."""
        self._stop.set()


def errors_of(request: Any, result: Any, now: float | None = None) -> list[AdmissionError]:
    """The admission errors of one decided request (a runtime ``AdmissionInput`` and its
    ``AdmissionResult``): none for a dry run, a DELETE (Kyverno's ``needsReports``) or an object
    without a name yet (``generateName``: nothing to find it by)."""
    if request.dry_run or request.operation == "DELETE" or request.sub_resource:
        return []
    errors = [o for o in result.outcomes if o.status == "error"]
    if not errors:
        return []
    obj = request.object or request.old_object or {}
    name = request.name or (obj.get("metadata") or {}).get("name") or ""
    if not name:
        return []
    kind = request.kind
    api_version = f"{kind.group}/{kind.version}" if kind.group else kind.version
    seconds = int(now if now is not None else time.time())
    old_version = ""
    if request.operation == "UPDATE":
        old_version = str(((request.old_object or {}).get("metadata") or {}).get("resourceVersion") or "")
    out = []
    for outcome in errors:
        where = f"{outcome.path}: " if outcome.path else ""
        out.append(
            AdmissionError(
                api_version=api_version,
                kind=kind.kind,
                resource=request.resource.resource,
                namespace=request.namespace,
                name=name,
                policy=outcome.policy.split(" (autogen ", 1)[0],
                message=f"{where}{outcome.reason}",
                binding=outcome.binding,
                time=seconds,
                old_version=old_version,
                denied=not result.allowed,
            )
        )
    return out
