"""A thin JSON client for the Kubernetes API on top of the official ``kubernetes`` client.

The official client builds requests, handles authentication (kubeconfig, in-cluster service
account tokens, client certificates) and TLS; celmut asks it for raw responses and decodes JSON
itself, which is ~20× faster than its typed models on large lists. Errors become typed exceptions
carrying the API server's status code, reason and message::

    ClusterError
    ├── NotFound          404
    ├── Conflict          409 (resourceVersion conflict or AlreadyExists)
    ├── Gone              410 (resourceVersion too old: re-list)
    ├── TooManyRequests   429 (e.g. an eviction refused by a PodDisruptionBudget)
    └── Unreachable       connection failures and timeouts
"""

from __future__ import annotations

import os
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import kubernetes.client
import kubernetes.config
import orjson
import urllib3
from kubernetes.watch.watch import iter_resp_lines

from celmut import __version__, kinds
from celmut.errors import CelmutError

JSON = "application/json"
# Metadata-only reads, as client-go's metadata client asks for them (k8s.io/client-go/metadata/metadata.go):
# apiVersion, kind and metadata of each object, ~10x less to decode and keep for a Pod. The plain
# JSON range after it: a server that cannot transform answers whole objects (the cache projects them).
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
METADATA_OBJECT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
USER_AGENT = f"celmut/{__version__}"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class ClusterError(CelmutError):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}" if status else message)
        self.status = status
        self.reason = reason
        self.message = message


class NotFound(ClusterError):
    pass


class Forbidden(ClusterError):
    """403: celmut's identity may not do this (RBAC); the message names the verb and resource."""


class Conflict(ClusterError):
    pass


class Gone(ClusterError):
    """410: what was asked for is too old. A list page's carries the token that continues the list at
    the latest resourceVersion (``continue_token``; an inconsistent list, see :meth:`Cluster.pages`)."""

    continue_token = ""


class TooManyRequests(ClusterError):
    pass


class Unreachable(ClusterError):
    pass


_BY_STATUS = {403: Forbidden, 404: NotFound, 409: Conflict, 410: Gone, 429: TooManyRequests}


def error_from(status: int, body: bytes) -> ClusterError:
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        document = {}
    reason = str(document.get("reason") or "") if isinstance(document, dict) else ""
    message = str(document.get("message") or "") if isinstance(document, dict) else ""
    error = _BY_STATUS.get(status, ClusterError)(status, reason, message or f"HTTP {status}")
    if isinstance(error, Gone) and isinstance(document, dict):
        error.continue_token = str((document.get("metadata") or {}).get("continue") or "")
    return error


class _ThrottledRefresh:
    """A credential refresh hook run at most once per ``seconds`` (tokens live for minutes).

    The kubeconfig loader's hook re-reads the kubeconfig on every request (~0.3 ms) and installs a
    fresh copy of itself each time; this wrapper keeps itself installed and calls the latest copy.
    """

    def __init__(self, hook: Callable[[Any], None], seconds: float) -> None:
        self.hook = hook
        self.seconds = seconds
        self.last = -seconds

    def __call__(self, configuration: Any) -> None:
        now = time.monotonic()
        if now - self.last < self.seconds:
            return
        self.last = now
        self.hook(configuration)
        if configuration.refresh_api_key_hook is not self:
            self.hook = configuration.refresh_api_key_hook
            configuration.refresh_api_key_hook = self


MAX_THROTTLED = 5  # retries of a request the API server throttled (client-go retries up to 10)
MAX_RETRY_AFTER = 10.0  # seconds waited at most before such a retry


def _throttled(raw: urllib3.BaseHTTPResponse, path: str) -> float | None:
    """Seconds to wait before sending a request again that the API server throttled: a 429 with
    ``Retry-After``, as API Priority and Fairness rejects a request when its queue is full (client-go's
    ``rest.Request`` waits and retries: ``checkWait`` in rest/with_retry.go). An eviction's 429 is a
    PodDisruptionBudget's answer, not a throttle: its caller decides."""
    if raw.status != 429 or path.endswith("/eviction"):
        return None
    value = raw.headers.get("Retry-After")
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return None if seconds is None else min(max(seconds, 0.0), MAX_RETRY_AFTER)


def resource_path(api_version: str, resource: str, namespace: str = "", name: str = "", sub: str = "") -> str:
    """The REST path of a collection or object (``/api/v1/namespaces/ns/pods/name/status``)."""
    group, version = kinds.split_api_version(api_version)
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    if namespace:
        base += f"/namespaces/{urllib.parse.quote(namespace, safe='')}"
    base += f"/{resource}"
    if name:
        base += f"/{urllib.parse.quote(name, safe='')}"
    if sub:
        base += f"/{sub}"
    return base


class Cluster:
    """JSON requests to one API server."""

    def __init__(self, api_client: kubernetes.client.ApiClient, *, timeout: float = 30.0) -> None:
        self.api_client = api_client
        self.timeout = timeout
        self.throttled = 0  # requests the API server asked to retry later (429 with Retry-After), retried

    @classmethod
    def connect(cls, kubeconfig: str | None = None, *, timeout: float = 30.0, context: str | None = None) -> Cluster:
        """From ``kubeconfig``, else the in-cluster service account, else ``~/.kube/config``;
        ``context`` names a kubeconfig context other than the current one (kubectl's ``--context``)."""
        configuration = kubernetes.client.Configuration()
        configuration.connection_pool_maxsize = 64  # every watch holds a connection
        # The ignores: kubernetes' config loaders are unannotated.
        try:
            if kubeconfig is None and context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
                kubernetes.config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            else:
                kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]
                    config_file=kubeconfig, context=context, client_configuration=configuration
                )
        # A kubeconfig that is not a map of the expected shape fails inside the loader with a
        # TypeError/AttributeError/KeyError/ValueError: as bad input as a missing one.
        except (kubernetes.config.ConfigException, OSError, TypeError, AttributeError, KeyError, ValueError) as ex:
            where = kubeconfig or (
                "the in-cluster service account" if os.environ.get("KUBERNETES_SERVICE_HOST") else "~/.kube/config"
            )
            raise ClusterError(0, "Config", f"no usable cluster configuration in {where}: {ex}") from None
        hook = configuration.refresh_api_key_hook
        if hook is not None:  # kubeconfig re-reads itself on every request (~0.3 ms): at most every 10 s
            configuration.refresh_api_key_hook = _ThrottledRefresh(hook, 10.0)
        return cls(kubernetes.client.ApiClient(configuration), timeout=timeout)

    def close(self) -> None:
        self.api_client.close()  # type: ignore[no-untyped-call]  # unannotated in kubernetes

    def _headers(self, content_type: str | None, accept: str = JSON) -> dict[str, str]:
        headers = {"Accept": accept, "User-Agent": USER_AGENT}
        if content_type is not None:
            headers["Content-Type"] = content_type
        for setting in self.api_client.configuration.auth_settings().values():  # refreshes expiring tokens
            if setting.get("in") == "header" and setting.get("value"):
                headers[str(setting["key"])] = str(setting["value"])
        return headers

    def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float | tuple[float, float] | None = None,
        *,
        stream: bool = False,
        accept: str = JSON,
    ) -> urllib3.BaseHTTPResponse:
        """One request on the official client's connection pool (its TLS, proxy and credentials).

        The generated ``ApiClient.call_api`` path costs ~0.5 ms of CPU per request in serialising and
        checking; the controller makes tens of thousands of requests, so requests are built here.
        """
        params = [
            (k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in (query or {}).items() if v is not None
        ]
        url = self.api_client.configuration.host + path + (f"?{urllib.parse.urlencode(params)}" if params else "")
        wait = timeout or self.timeout
        limits = urllib3.Timeout(connect=wait[0], read=wait[1]) if isinstance(wait, tuple) else urllib3.Timeout(wait)
        for attempt in range(MAX_THROTTLED + 1):
            try:
                raw = self.api_client.rest_client.pool_manager.request(
                    method,
                    url,
                    body=orjson.dumps(body) if body is not None else None,
                    headers=self._headers(content_type if body is not None else None, accept),
                    timeout=limits,
                    retries=False,
                    preload_content=not stream,
                )
            except (urllib3.exceptions.HTTPError, OSError) as ex:
                raise Unreachable(0, "Unreachable", f"cannot reach the API server: {type(ex).__name__}") from ex
            pause = _throttled(raw, path) if attempt < MAX_THROTTLED else None
            if pause is None:
                break
            raw.drain_conn()
            self.throttled += 1
            time.sleep(pause)
        if raw.status >= 400:
            data = raw.read() if stream else raw.data
            raise error_from(raw.status, data)
        return raw

    def request(self, method: str, path: str, query: Mapping[str, Any] | None = None, body: Any = None,
                content_type: str = JSON, accept: str = JSON) -> Any:  # fmt: skip
        raw = self._send(method, path, query, body, content_type, accept=accept)
        data = raw.data
        return orjson.loads(data) if data else None

    # --- verbs ---------------------------------------------------------------------------------------

    def get(self, api_version: str, resource: str, namespace: str, name: str, sub: str = "") -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", resource_path(api_version, resource, namespace, name, sub))
        return result

    def list(
        self,
        api_version: str,
        resource: str,
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        """One page; ``metadata_only``: items are ``PartialObjectMetadata`` (see :data:`METADATA_LIST`)."""
        query = {
            "labelSelector": label_selector or None,
            "fieldSelector": field_selector or None,
            "limit": limit,
            "continue": continue_token,
            "resourceVersion": resource_version,
        }
        accept = METADATA_LIST if metadata_only else JSON
        result: dict[str, Any] = self.request(
            "GET", resource_path(api_version, resource, namespace), query, accept=accept
        )
        return result

    def pages(
        self, api_version: str, resource: str, namespace: str = "", *, limit: int = 500, **kwargs: Any
    ) -> Iterator[dict[str, Any]]:
        """Each page of a list, following ``continue`` tokens: the caller holds one page at a time.

        A list read slowly (its caller works off each page first) can outlive etcd's compaction (5
        minutes by default): the API server then refuses the next page with 410 and a token continuing
        the list at the latest resourceVersion (k8s.io/apiserver storage/etcd3/errors.go
        ``handleCompactedErrorForPaging``), which is followed: the rest of the list is as it is now, not
        as it was at the first page — what a controller reconciling each object wants anyway."""
        token: str | None = None
        while True:
            try:
                page = self.list(api_version, resource, namespace, limit=limit, continue_token=token, **kwargs)
            except Gone as ex:
                if not token or not ex.continue_token:
                    raise
                token = ex.continue_token
                continue
            yield page
            token = (page.get("metadata") or {}).get("continue") or None
            if not token:
                return

    def list_all(self, api_version: str, resource: str, namespace: str = "", **kwargs: Any) -> dict[str, Any]:
        """Every item, following ``continue`` tokens; the returned resourceVersion is the list's."""
        items: list[dict[str, Any]] = []
        page: dict[str, Any] = {}
        for page in self.pages(api_version, resource, namespace, limit=500, **kwargs):
            items += page.get("items") or []
        page["items"] = items
        return page

    def watch(
        self,
        api_version: str,
        resource: str,
        namespace: str = "",
        *,
        resource_version: str,
        label_selector: str = "",
        field_selector: str = "",
        timeout_seconds: int = 300,
        metadata_only: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """Watch events after ``resource_version``; a 410 ERROR event raises :class:`Gone`.
        ``metadata_only``: event objects are ``PartialObjectMetadata`` (:data:`METADATA_OBJECT`)."""
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_seconds,
            "labelSelector": label_selector or None,
            "fieldSelector": field_selector or None,
        }
        path = resource_path(api_version, resource, namespace)
        accept = METADATA_OBJECT if metadata_only else JSON
        raw = self._send("GET", path, query, timeout=(10.0, timeout_seconds + 30.0), stream=True, accept=accept)
        try:
            for line in iter_resp_lines(raw):  # type: ignore[no-untyped-call]  # unannotated in kubernetes
                if not line:
                    continue
                event = orjson.loads(line)
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    code = int(status.get("code") or 500)
                    raise _BY_STATUS.get(code, ClusterError)(
                        code, str(status.get("reason", "")), str(status.get("message", ""))
                    )
                yield event
        except (urllib3.exceptions.HTTPError, OSError) as ex:
            raise Unreachable(0, "Unreachable", f"watch interrupted: {type(ex).__name__}") from ex
        finally:
            raw.release_conn()

    def create(
        self, api_version: str, resource: str, namespace: str, body: dict[str, Any], *, dry_run: bool = False
    ) -> Any:
        query = {"dryRun": "All"} if dry_run else None
        return self.request("POST", resource_path(api_version, resource, namespace), query, body)

    def patch(
        self,
        api_version: str,
        resource: str,
        namespace: str,
        name: str,
        patch: Any,
        *,
        content_type: str = JSON_PATCH,
        sub: str = "",
        dry_run: bool = False,
        field_manager: str = "celmut",
    ) -> Any:
        query = {"fieldManager": field_manager, "dryRun": "All" if dry_run else None}
        return self.request(
            "PATCH", resource_path(api_version, resource, namespace, name, sub), query, patch, content_type
        )

    def replace(self, api_version: str, resource: str, namespace: str, name: str, body: dict[str, Any]) -> Any:
        """PUT the whole object; its metadata.resourceVersion makes this a compare-and-swap (409 on change)."""
        return self.request("PUT", resource_path(api_version, resource, namespace, name), None, body)

    def delete(self, api_version: str, resource: str, namespace: str, name: str, *, resource_version: str = "") -> Any:
        """DELETE; with ``resource_version``, only the object at that version (DeleteOptions preconditions:
        409 when it changed meanwhile)."""
        body = None
        if resource_version:
            body = {
                "apiVersion": "v1",
                "kind": "DeleteOptions",
                "preconditions": {"resourceVersion": resource_version},
            }
        return self.request("DELETE", resource_path(api_version, resource, namespace, name), None, body)

    def evict(self, namespace: str, name: str, *, dry_run: bool = False) -> Any:
        """Evict a pod through the Eviction API (PodDisruptionBudgets apply: 429 when refused)."""
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if dry_run:
            body["deleteOptions"] = {"dryRun": ["All"]}
        return self.request("POST", resource_path("v1", "pods", namespace, name, "eviction"), None, body)
