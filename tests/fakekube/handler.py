"""The HTTP request handler: authentication, fault injection, discovery and the resource verbs.

Every answer is ``application/json`` (``/healthz`` & co. excepted) with the real server's status codes;
errors are ``Status`` bodies. Watches are chunked streams of newline-delimited JSON events.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import traceback
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

import orjson

from . import authorization, errors, metadata, openapi
from .patches import APPLY_PATCH, PATCH_TYPES, STRATEGIC_MERGE_PATCH, AppliedConfig, apply_patch, parse_patch_body
from .routes import Target, decode_body, dry_run, parse_target, query_flag, query_int, query_value
from .selectors import combine, parse_field_selector, parse_label_selector
from .streaming import WatchStreamMixin
from .subresources import evict, scale_of, write_scale

if TYPE_CHECKING:
    from .server import FakeApiServer

Query = dict[str, list[str]]


class ApiHandler(WatchStreamMixin, BaseHTTPRequestHandler):
    """Serves one connection (HTTP/1.1 keep-alive) for a :class:`~tests.fakekube.server.FakeApiServer`."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "fakekube"
    api: FakeApiServer

    # -- plumbing ----------------------------------------------------------------------------------
    def setup(self) -> None:
        """Finish the TLS handshake (in this thread) and register the connection."""
        self.api = self.server.api  # type: ignore[attr-defined]
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(10)
            self.request.do_handshake()
            self.request.settimeout(None)
        super().setup()
        self.api._connection_opened(self.request)

    def finish(self) -> None:
        """Unregister the connection."""
        self.api._connection_closed(self.request)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def _send(
        self, code: int, body: bytes, content_type: str = "application/json", headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        # end_headers() + write(body) would be two writes (two TCP segments); one is faster for clients.
        self._headers_buffer.append(b"\r\n")
        if self.command != "HEAD":
            self._headers_buffer.append(body)
        self.flush_headers()

    def _send_json(self, code: int, obj: Any) -> None:
        self._send(code, orjson.dumps(obj))

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self) -> None:
        """GET."""
        self._dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def _dispatch(self) -> None:
        self.streaming = False
        split = urlsplit(self.path)
        path = unquote(split.path)
        query: Query = parse_qs(split.query, keep_blank_values=True)
        body = self._read_body()
        auth = self.headers.get("Authorization") or ""
        token = auth[7:].strip() if auth[:7].lower() == "bearer " else None
        ctype, accept = self.headers.get("Content-Type") or "", self.headers.get("Accept") or ""
        user = self.api._record(self.command, path, query, token, ctype, body, accept)
        # kubectl --as: the request acts as that user (every caller here may impersonate, as an admin may)
        user = self.headers.get("Impersonate-User") or user
        try:
            if token is None and self.api.require_auth:
                raise errors.ApiError(401, "Unauthorized", "Unauthorized")
            self.api._before_request(self.command, path)
            self._route(path, query, body, user)
        except errors.ApiError as exc:
            if exc.code == 0 or self.streaming:
                self._abort()
                return
            body_bytes = json.dumps(exc.status(), separators=(",", ":")).encode()
            self._send(exc.code, body_bytes, headers=exc.headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # an error in the fake itself: answer as the server would, but loudly
            traceback.print_exc()
            if self.streaming:
                self._abort()
            else:
                self._send_json(500, errors.ApiError(500, f"fakekube internal error: {exc!r}").status())

    def _abort(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    # -- routing -----------------------------------------------------------------------------------
    def _route(self, path: str, query: Query, body: bytes, user: str | None) -> None:
        parts = [p for p in path.split("/") if p]
        if path in ("/healthz", "/readyz", "/livez"):
            self._send(200, b"ok", "text/plain; charset=utf-8")
            return
        if parts == ["openapi", "v2"]:  # see openapi.py: an empty (valid) protobuf Document
            self._send(200, b"", openapi.V2_PROTOBUF)
            return
        discovery = self._discovery(parts)
        if discovery is not None:
            if self.command not in ("GET", "HEAD"):
                raise errors.method_not_allowed()
            self._send_json(200, discovery)
            return
        target = parse_target(self.api.registry, parts)
        method = self.command
        if method == "GET" and target.is_collection and query_flag(query, "watch"):
            self._watch(target, query, user)
        elif method == "GET":
            self._get(target, query)
        elif method == "POST":
            self._post(target, query, body, user)
        elif method == "PUT":
            self._put(target, query, body, user)
        elif method == "PATCH":
            self._patch(target, query, body, user)
        elif method == "DELETE":
            self._delete(target, query, body, user)
        else:
            raise errors.method_not_allowed()

    def _discovery(self, parts: list[str]) -> dict[str, Any] | None:
        registry = self.api.registry
        if parts == ["version"]:
            return self.api.version_info
        if parts[:2] == ["openapi", "v3"]:
            if len(parts) == 2:
                return openapi.index(registry)
            return openapi.group_version_document(registry, "/".join(parts[2:])) or _raise(errors.unknown_resource())
        if parts == ["api"]:
            address = f"{self.api.host}:{self.api.port}"
            return {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
            }
        if parts == ["apis"]:
            return registry.api_group_list()
        if parts == ["api", "v1"]:
            return registry.resource_list("", "v1")
        if len(parts) == 2 and parts[0] == "apis":
            return registry.api_group(parts[1]) or _raise(errors.unknown_resource())
        if len(parts) == 3 and parts[0] == "apis":
            return registry.resource_list(parts[1], parts[2]) or _raise(errors.unknown_resource())
        if len(parts) == 2 and parts[0] == "api":
            raise errors.unknown_resource()
        return None

    def _verb(self, target: Target, verb: str) -> None:
        if verb not in target.rtype.verbs:
            raise errors.method_not_allowed()

    # -- verbs -------------------------------------------------------------------------------------
    def _get(self, target: Target, query: Query) -> None:
        store, rtype = self.api.store, target.rtype
        if target.is_collection:
            self._verb(target, "list")
            self._list(target, query)
            return
        self._verb(target, "get")
        assert target.name is not None
        if target.subresource == "eviction":
            raise errors.method_not_allowed()
        entry = store.get_entry(rtype, target.name, target.namespace)
        if target.subresource == "scale":
            self._send_json(200, scale_of(rtype, entry.obj))
        else:
            self._send(200, entry.raw_as(rtype))

    def _list(self, target: Target, query: Query) -> None:
        rtype = target.rtype
        rv = query_value(query, "resourceVersion")
        match = query_value(query, "resourceVersionMatch") or None
        cont = query_value(query, "continue") or None
        if match not in (None, "Exact", "NotOlderThan"):
            raise errors.bad_request(f'resourceVersionMatch: Unsupported value: "{match}"')
        if match and not rv:
            raise errors.bad_request(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
            )
        if match == "Exact" and rv == "0":
            raise errors.bad_request(
                'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
            )
        if cont and rv:
            raise errors.bad_request("specifying resource version is not allowed when using continue")
        pred = combine(
            parse_label_selector(query_value(query, "labelSelector")),
            parse_field_selector(query_value(query, "fieldSelector"), rtype.kind),
        )
        limit = query_int(query, "limit") or 0
        result = self.api.store.list_entries(rtype, target.namespace, pred, limit, cont, rv, match)
        meta: dict[str, Any] = {"resourceVersion": str(result.resource_version)}
        if result.continue_token:
            meta["continue"] = result.continue_token
        if result.remaining is not None:
            meta["remainingItemCount"] = result.remaining
        head = json.dumps({"kind": rtype.list_kind, "apiVersion": rtype.api_version, "metadata": meta})
        items = b",".join(entry.list_item(rtype) for entry in result.entries)
        if metadata.wants(self.headers.get("Accept") or "", "PartialObjectMetadataList"):
            head = json.dumps(
                {"kind": "PartialObjectMetadataList", "apiVersion": metadata.API_VERSION, "metadata": meta}
            )
            items = b",".join(metadata.partial_item(entry.list_item(rtype)) for entry in result.entries)
        self._send(200, head[:-1].encode() + b',"items":[' + items + b"]}")

    def _post(self, target: Target, query: Query, body: bytes, user: str | None) -> None:
        content_type = self.headers.get("Content-Type") or ""
        if target.subresource in CONNECT_SUBRESOURCES and target.name is not None:
            self._connect(target, query, user)
            return
        if target.subresource == "eviction" and target.name is not None:
            assert target.namespace is not None
            self._send_json(
                201,
                evict(self.api.store, target.namespace, target.name, decode_body(content_type, body), dry_run(query)),
            )
            return
        if not target.is_collection or (target.rtype.namespaced and target.namespace is None):
            raise errors.method_not_allowed()
        self._verb(target, "create")
        if target.rtype.plural == "subjectaccessreviews":  # a question: answered, nothing stored
            self._send_json(201, authorization.review(self.api.store, decode_body(content_type, body)))
            return
        obj = decode_body(content_type, body)
        if not isinstance(obj, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        entry = self.api.writes.create(obj, target.rtype, target.namespace, user=user, dry_run=dry_run(query))
        self._send(201, entry.raw)

    def _connect(self, target: Target, query: Query, user: str | None) -> None:
        """``POST pods/<name>/exec`` (attach, portforward): admitted as CONNECT with the options object the
        query gives, then refused as the real server refuses a request without a stream upgrade (no kubelet)."""
        kind = CONNECT_SUBRESOURCES[target.subresource]
        options: dict[str, Any] = {"apiVersion": "v1", "kind": kind}
        for key, values in query.items():
            if key in ("stdin", "stdout", "stderr", "tty"):
                options[key] = values[-1] == "true"
            elif key == "command":
                options[key] = list(values)
            elif key in ("container", "ports"):
                options[key] = values[-1]
        assert target.name is not None
        self.api.writes.admit_connect(
            target.rtype, target.namespace, target.name, target.subresource, options, user=user
        )
        raise errors.ApiError(400, "Upgrade request required", "BadRequest")

    def _put(self, target: Target, query: Query, body: bytes, user: str | None) -> None:
        if target.is_collection or target.subresource == "eviction":
            raise errors.method_not_allowed()
        self._verb(target, "update")
        assert target.name is not None
        obj = decode_body(self.headers.get("Content-Type") or "", body)
        store, rtype = self.api.store, target.rtype
        if target.subresource == "scale":
            self._send_json(200, write_scale(store, rtype, target.namespace or "", target.name, obj, dry_run(query)))
            return
        if not isinstance(obj, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        entry = self.api.writes.update(
            obj, rtype, target.namespace, target.name, subresource=target.subresource, user=user, dry_run=dry_run(query)
        )
        self._send(200, entry.raw_as(rtype))  # answered in the request's version

    def _patch(self, target: Target, query: Query, body: bytes, user: str | None) -> None:
        if target.is_collection or target.subresource == "eviction":
            raise errors.method_not_allowed()
        self._verb(target, "patch")
        assert target.name is not None
        store, rtype = self.api.store, target.rtype
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        accepted = [t for t in PATCH_TYPES if rtype.builtin or t != STRATEGIC_MERGE_PATCH]
        if content_type not in accepted:
            raise errors.unsupported_media_type(content_type, accepted)
        if content_type == APPLY_PATCH and not query_value(query, "fieldManager"):
            raise errors.ApiError(
                422,
                'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
                "Invalid",
            )
        patch = parse_patch_body(content_type, body)
        if content_type == APPLY_PATCH and isinstance(patch, dict):
            force = (query_value(query, "force") or "").lower() == "true"
            patch = AppliedConfig(patch, query_value(query, "fieldManager") or "", force)
        if target.subresource == "scale":
            scale = apply_patch(
                content_type, scale_of(rtype, store.get_entry(rtype, target.name, target.namespace).obj), patch
            )
            self._send_json(200, write_scale(store, rtype, target.namespace or "", target.name, scale, dry_run(query)))
            return
        created = content_type == APPLY_PATCH and not store.exists(rtype, target.name, target.namespace)
        entry = self.api.writes.patch(
            rtype,
            target.name,
            patch,
            content_type,
            target.namespace,
            subresource=target.subresource,
            user=user,
            dry_run=dry_run(query),
        )
        self._send(201 if created else 200, entry.raw_as(rtype))

    def _delete(self, target: Target, query: Query, body: bytes, user: str | None = None) -> None:
        store, rtype = self.api.store, target.rtype
        content_type = self.headers.get("Content-Type") or "application/json"
        options = decode_body(content_type, body) if body else {}
        if not isinstance(options, dict):
            raise errors.bad_request("the body of a DELETE must be DeleteOptions")
        is_dry_run = dry_run(query) or options.get("dryRun") == ["All"]
        if target.subresource:
            raise errors.method_not_allowed()
        if target.is_collection:
            self._verb(target, "deletecollection")
            pred = combine(
                parse_label_selector(query_value(query, "labelSelector")),
                parse_field_selector(query_value(query, "fieldSelector"), rtype.kind),
            )
            for entry in store.list_entries(rtype, target.namespace, pred).entries:
                meta = entry.obj["metadata"]
                store.delete_entry(rtype, meta["name"], meta.get("namespace"), dry_run=is_dry_run)
            self._send_json(200, errors.success_status())
            return
        self._verb(target, "delete")
        assert target.name is not None
        self.api.writes.admit_delete(rtype, target.namespace, target.name, user=user, dry_run=is_dry_run)
        entry, deleted = store.delete_entry(
            rtype,
            target.name,
            target.namespace,
            preconditions=options.get("preconditions"),
            dry_run=is_dry_run,
            grace_period_seconds=_grace_period(options, query),
        )
        if deleted and not rtype.returns_deleted_object:
            details = {
                "name": target.name,
                "group": rtype.group,
                "kind": rtype.plural,
                "uid": entry.obj["metadata"]["uid"],
            }
            self._send_json(200, errors.success_status(200, {k: v for k, v in details.items() if v}))
        else:
            self._send(200, entry.raw_as(rtype))  # answered in the request's version


def _grace_period(options: dict[str, Any], query: Query) -> int | None:
    """DeleteOptions.gracePeriodSeconds, from the body or the query (the server decodes both)."""
    value = options.get("gracePeriodSeconds", query_value(query, "gracePeriodSeconds"))
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise errors.bad_request(f"invalid gracePeriodSeconds: {value!r}") from None


CONNECT_SUBRESOURCES = {"exec": "PodExecOptions", "attach": "PodAttachOptions", "portforward": "PodPortForwardOptions"}


def _raise(exc: Exception) -> Any:
    raise exc
