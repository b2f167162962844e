"""The entries of the GlobalContextEntry store (:mod:`celmut.kube.global_context`), one per form.

* :class:`ResourceEntry` — ``kubernetesResource`` (kyverno ``pkg/globalcontext/k8sresource/entry.go``):
  a watched list; ``Get("")`` the objects, ``Get(name)`` a JMESPath projection over them, an unknown
  one ``projection "name" not found``. A watch still listing answers an error at once (never waits).
* :class:`ApiCallEntry` — ``apiCall`` (``externalapi/entry.go``): a ``urlPath`` into the API server or
  a ``service.url`` (through CEL's HTTP allow-list) called every ``refreshInterval`` with
  ``retryLimit`` tries; before the first answer ``no data available``, after a failure its error.
* :class:`InvalidEntry` — ``failed to create cached context entry: …`` (``invalid/entry.go``).

Each is bounded by ``max_bytes`` of JSON (and a watched list by ``max_objects``).
"""

from __future__ import annotations

import datetime
import logging
import re
import threading
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import jmespath
import jmespath.exceptions
import orjson

from celmut.cel.libs.kyverno.http import HttpDenied, default_request, vet
from celmut.cel.lookups import HttpPolicy, LookupFailed
from celmut.kube.cache import WatchedCache
from celmut.kube.client import Cluster, ClusterError

log = logging.getLogger("celmut.kube")

API_VERSION = "kyverno.io/v2alpha1"
RESOURCE = "globalcontextentries"
DEFAULT_REFRESH_SECONDS = 600.0  # the CRD's default refreshInterval (+kubebuilder:default=`10m`)
DEFAULT_RETRY_LIMIT = 3  # the CRD's default retryLimit
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class EntryInvalid(ValueError):
    """A GlobalContextEntry spec celmut cannot build an entry from."""


def parse_duration(text: str) -> float:
    """Seconds of a Go duration (``300ms``, ``1.5h``, ``2h45m``), as metav1.Duration reads it."""
    if not text or _DURATION.sub("", text) != "":
        raise EntryInvalid(f'time: invalid duration "{text}"')
    return sum(float(n) * _UNITS[unit] for n, unit in _DURATION.findall(text))


def gvr_string(group: str, version: str, resource: str) -> str:
    """schema.GroupVersionResource.String(), as Kyverno's errors print it."""
    return f"{group}/{version}, Resource={resource}"


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Entry(Protocol):
    def get(self, projection: str) -> Any: ...

    def stop(self) -> None: ...

    def size(self) -> tuple[int, int]:
        """(objects, JSON bytes) held."""
        ...

    def wait(self, timeout: float) -> None:
        """Until the first data (or error) is in, at most ``timeout`` seconds (a start, not an admission)."""
        ...


def _projections(spec: Mapping[str, Any]) -> dict[str, Any]:
    compiled: dict[str, Any] = {}
    for item in spec.get("projections") or []:
        if not isinstance(item, Mapping) or not item.get("name"):
            raise EntryInvalid("a projection needs a name")
        name = str(item["name"])
        try:
            compiled[name] = jmespath.compile(str(item.get("jmesPath") or ""))
        except jmespath.exceptions.JMESPathError as ex:
            raise EntryInvalid(f"failed to parse jmespath query for projection {name!r}: {ex}") from None
    return compiled


class InvalidEntry:
    """An entry that could not be built: every read answers why (kyverno ``invalid/entry.go``)."""

    def __init__(self, error: str) -> None:
        self.error = error

    def get(self, projection: str) -> Any:
        raise LookupFailed(f"failed to create cached context entry: {self.error}")

    def stop(self) -> None:
        pass

    def size(self) -> tuple[int, int]:
        return 0, 0

    def wait(self, timeout: float) -> None:
        pass


class ResourceEntry:
    """A watched list of one resource; projections recomputed once per change of the list."""

    def __init__(
        self, cluster: Cluster, spec: Mapping[str, Any], *, max_objects: int, max_bytes: int, on_synced: Callable[
            [bool, str], None]
    ) -> None:  # fmt: skip
        resource = spec["kubernetesResource"]
        group, version = str(resource.get("group") or ""), str(resource.get("version") or "")
        plural, namespace = str(resource.get("resource") or ""), str(resource.get("namespace") or "")
        if not version or not plural:
            raise EntryInvalid("kubernetesResource needs a version and a resource")
        self.gvr = gvr_string(group, version, plural)
        self.projections = _projections(spec)
        self.max_bytes = max_bytes
        api_version = f"{group}/{version}" if group else version
        self.cache = WatchedCache(cluster, api_version, plural, namespace=namespace, max_objects=max_objects)
        self._lock = threading.Lock()
        self._generation = -1
        self._data: tuple[list[Any], dict[str, Any], int] = ([], {}, 0)
        self._on_synced = on_synced
        self._stopped = False
        self.cache.start()
        threading.Thread(target=self._report_sync, name="gctx-sync", daemon=True).start()

    def _report_sync(self) -> None:
        """Kyverno's status of a resource entry (k8sresource/entry.go before 1.13: CacheSyncSuccess/Failure)."""
        synced = self.cache.wait_synced(60.0)
        if self._stopped:  # replaced or deleted meanwhile: its status is no longer this entry's
            return
        ok = synced and not self.cache.absent
        self._on_synced(ok, "CacheSyncSuccess" if ok else "CacheSyncFailure")

    def _current(self) -> tuple[list[Any], dict[str, Any], int]:
        if self.cache.absent:
            raise LookupFailed(f"failed to create cached context entry: failed to sync cache for {self.gvr}")
        if not self.cache.synced.is_set():  # never waits: the first list is still running
            raise LookupFailed(f"failed to create cached context entry: cache for {self.gvr} is not synced yet")
        if self.cache.overflowed:
            raise LookupFailed(f"cache for {self.gvr} holds more than {self.cache.max_objects} objects")
        with self._lock:
            if self._generation != self.cache.generation:
                generation = self.cache.generation
                items = self.cache.items()
                size = len(orjson.dumps(items))
                projected: dict[str, Any] = {}
                if size <= self.max_bytes:
                    for name, path in self.projections.items():
                        try:
                            projected[name] = path.search(items)
                        except jmespath.exceptions.JMESPathError as ex:
                            log.warning("projection failed", extra={"projection": name, "error": str(ex)})
                self._data, self._generation = (items, projected, size), generation
            return self._data

    def get(self, projection: str) -> Any:
        items, projected, size = self._current()
        if size > self.max_bytes:
            raise LookupFailed(f"cached data of {self.gvr} is {size} bytes, over the limit of {self.max_bytes}")
        if not projection:
            return items
        if projection in projected:
            return projected[projection]
        raise LookupFailed(f"projection {projection!r} not found".replace("'", '"'))

    def stop(self) -> None:
        self._stopped = True
        self.cache.stop()

    def wait(self, timeout: float) -> None:
        self.cache.wait_synced(timeout)

    def size(self) -> tuple[int, int]:
        return len(self.cache), self._data[2]


@dataclass(frozen=True)
class ApiCall:
    """The parts of a Kyverno APICall an entry calls."""

    method: str
    url_path: str
    service_url: str
    ca_bundle: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None

    @classmethod
    def from_spec(cls, call: Mapping[str, Any]) -> ApiCall:
        method = str(call.get("method") or "GET").upper()
        if method not in ("GET", "POST"):
            raise EntryInvalid(f"method {method} is not supported (GET or POST)")
        service = call.get("service") if isinstance(call.get("service"), Mapping) else None
        url_path = str(call.get("urlPath") or "")
        if (service is None) == (not url_path):
            raise EntryInvalid("An External API call should either have Service or URLPath")
        if service is not None and (
            service.get("caBundleFrom")
            or any(isinstance(h, Mapping) and h.get("valueFrom") for h in service.get("headers") or [])
        ):
            raise EntryInvalid("service.caBundleFrom and headers[].valueFrom are not supported by celmut yet")
        data = call.get("data")
        if data is not None and method != "POST":
            raise EntryInvalid("An External API call with data should have method as POST")
        body = None
        if data is not None:  # kyverno pkg/engine/apicall: data items become the JSON object sent
            body = orjson.dumps({str(item.get("key")): item.get("value") for item in data if isinstance(item, Mapping)})
        headers = tuple(
            (str(h.get("key")), str(h.get("value")))
            for h in (service or {}).get("headers") or []
            if isinstance(h, Mapping)
        )
        return cls(
            method,
            url_path,
            str((service or {}).get("url") or ""),
            str((service or {}).get("caBundle") or ""),
            headers,
            body,
        )


class ApiCallEntry:
    """An API call polled every refresh interval on its own thread (kyverno ``externalapi/entry.go``)."""

    def __init__(
        self,
        cluster: Cluster,
        spec: Mapping[str, Any],
        http_policy: HttpPolicy,
        *,
        max_bytes: int,
        on_refresh: Callable[[bool, str], None],
    ) -> None:
        call = spec["apiCall"]
        self.call = ApiCall.from_spec(call)
        interval = call.get("refreshInterval")
        self.period = parse_duration(str(interval)) if interval else DEFAULT_REFRESH_SECONDS
        if self.period <= 0:
            raise EntryInvalid("A Resource entry requires a refresh interval greater than 0 seconds")
        self.retries = max(int(call.get("retryLimit") or DEFAULT_RETRY_LIMIT), 1)
        self.projections = _projections(spec)
        self.cluster, self.http_policy, self.max_bytes = cluster, http_policy, max_bytes
        self._on_refresh = on_refresh
        self._lock = threading.Lock()
        self._data: dict[str, Any] = {}
        self._error: str = ""
        self._bytes = 0
        self.failures = 0
        self._stop = threading.Event()
        self._answered = threading.Event()
        threading.Thread(target=self._run, name="gctx-apicall", daemon=True).start()

    def _fetch(self) -> bytes:
        if self.call.url_path:
            parts = urllib.parse.urlsplit(self.call.url_path)
            query = dict(urllib.parse.parse_qsl(parts.query))
            body = orjson.loads(self.call.body) if self.call.body is not None else None
            try:
                raw = self.cluster.request(self.call.method, parts.path, query or None, body)
            except ClusterError as ex:
                raise EntryInvalid(f"failed to {self.call.method} resource with raw url: {parts.path}: {ex}") from None
            data = orjson.dumps(raw)
        else:
            policy = HttpPolicy(
                allow=self.http_policy.allow,
                allow_private_networks=self.http_policy.allow_private_networks,
                allow_networks=self.http_policy.allow_networks,
                timeout_seconds=self.http_policy.timeout_seconds,
                max_response_bytes=min(self.http_policy.max_response_bytes, self.max_bytes),
            )
            parts, addresses = vet("globalcontext apiCall", self.call.service_url, policy)
            headers = {"Accept": "application/json", **dict(self.call.headers)}
            if self.call.body is not None:
                headers.setdefault("Content-Type", "application/json")
            status, data = default_request(
                self.call.method, parts, addresses, headers, self.call.body, policy, self.call.ca_bundle
            )
            if status < 200 or status >= 300:
                raise EntryInvalid(f"HTTP {status}: {data[:512].decode('utf-8', 'replace')}")
        if len(data) > self.max_bytes:
            raise EntryInvalid(f"response of {len(data)} bytes is over the limit of {self.max_bytes}")
        return data

    def refresh(self) -> None:
        """One call (with ``retryLimit`` tries); its result or its error replaces the last one."""
        data: bytes | None = None
        error = ""
        for attempt in range(self.retries):
            try:
                data = self._fetch()
                break
            except (EntryInvalid, HttpDenied, OSError, ValueError, LookupFailed) as ex:
                error = getattr(ex, "message", None) or str(ex) or type(ex).__name__
                last = attempt == self.retries - 1
                if isinstance(ex, HttpDenied) or last or self._stop.wait(min(0.05 * 4**attempt, 2.0)):
                    break
        if data is not None:
            try:
                decoded = orjson.loads(data)
                projected = {"": decoded} | {name: path.search(decoded) for name, path in self.projections.items()}
            except (orjson.JSONDecodeError, jmespath.exceptions.JMESPathError) as ex:
                error, data = str(ex), None
        if data is None:
            with self._lock:
                self._error = error
                self.failures += 1
            log.warning("global context API call failed", extra={"error": error})
            self._on_refresh(False, error)
            return
        with self._lock:
            self._data, self._error, self._bytes = projected, "", len(data)
        self._on_refresh(True, "Ready")

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.refresh()
            except Exception as ex:  # a defect must not end the polling silently: the entry answers it
                log.exception("global context API call crashed")
                with self._lock:
                    self._error = f"internal error: {type(ex).__name__}: {ex}"
            self._answered.set()
            self._stop.wait(self.period)

    def wait(self, timeout: float) -> None:
        self._answered.wait(timeout)

    def get(self, projection: str) -> Any:
        with self._lock:
            if self._error:
                raise LookupFailed(self._error)
            data = self._data.get(projection)
        if data is None:
            raise LookupFailed("no data available")
        return data

    def stop(self) -> None:
        self._stop.set()

    def size(self) -> tuple[int, int]:
        return (1 if self._data else 0), self._bytes
