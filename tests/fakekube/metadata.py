"""Metadata-only reads: ``Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1``.

The real API server answers a list with that Accept header as a ``meta.k8s.io/v1``
``PartialObjectMetadataList`` whose items are ``PartialObjectMetadata`` (apiVersion, kind and the
whole ``metadata``, nothing else), and a watch or get with ``as=PartialObjectMetadata`` as events of
such objects (k8s.io/apiserver/pkg/endpoints/handlers/response.go, ``transformObject``;
client-go's metadata client sends these headers, k8s.io/client-go/metadata/metadata.go). A media
range without ``as=`` (``application/json`` as a fallback) still gets whole objects, as upstream.
"""

from __future__ import annotations

import json
from typing import Any

API_VERSION = "meta.k8s.io/v1"


def wants(accept: str, kind: str) -> bool:
    """Whether the first acceptable media range of ``accept`` asks for ``kind`` (``PartialObjectMetadata``
    or ``PartialObjectMetadataList``) of meta.k8s.io/v1."""
    for media_range in accept.split(","):
        params = dict(
            (p.split("=", 1)[0].strip(), p.split("=", 1)[1].strip()) for p in media_range.split(";")[1:] if "=" in p
        )
        if "as" not in params:
            return False  # a plain range comes first: whole objects
        if params.get("as") == kind and params.get("g") == "meta.k8s.io" and params.get("v") == "v1":
            return True
    return False


def partial(obj: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": API_VERSION, "metadata": obj.get("metadata") or {}}


def partial_item(raw: bytes) -> bytes:
    return json.dumps(partial(json.loads(raw)), separators=(",", ":")).encode()


def partial_event(line: bytes) -> bytes:
    """A watch event line with its object reduced to metadata (ERROR events unchanged)."""
    if not line.strip():
        return line
    event = json.loads(line)
    if event.get("type") == "ERROR":
        return line
    event["object"] = partial(event.get("object") or {})
    return json.dumps(event, separators=(",", ":")).encode() + (b"\n" if line.endswith(b"\n") else b"")
