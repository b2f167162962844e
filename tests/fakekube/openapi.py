"""The OpenAPI documents clients fetch before they write: ``/openapi/v3`` and ``/openapi/v3/{apis/g/v}``.

kubectl and Helm (helm/helm pkg/kube/client.go ``Build(..., validate=true)``, through cli-runtime's
``resource.Builder.Schema`` and k8s.io/kubectl/pkg/validation) download ``/openapi/v3`` — the index of
group-versions, each with a ``serverRelativeURL`` — then the document of every group-version they write,
and look a kind up by its ``x-kubernetes-group-version-kind`` extension. A missing kind fails the client
side validation ("unknown object type"). MODELLED: every served type has a schema; APPROXIMATED: each
schema is an open object (``x-kubernetes-preserve-unknown-fields``), so the client's field validation
accepts what the server stores (the fake does no field-level validation either).
Client-side schema validation itself (kubectl's ``validation.NewSchemaValidation``, which Helm's
``Build`` uses) still reads ``/openapi/v2`` as protobuf; the fake serves an empty Document, which decodes
to "no schema for any kind": the client then validates nothing itself and leaves it to the server, as
it does for a kind a real server publishes no schema for.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .resources import Registry, ResourceType

V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"  # as kube-apiserver labels it


def _path(rtype: ResourceType) -> str:
    return f"apis/{rtype.group}/{rtype.version}" if rtype.group else "api/v1"


def _schema_id(rtype: ResourceType) -> str:
    return ".".join(p for p in ("io.fakekube", rtype.group or "core", rtype.version, rtype.kind) if p)


def group_version_document(registry: Registry, path: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document of one group-version (``api/v1`` or ``apis/{group}/{version}``)."""
    types = [t for t in registry.types() if _path(t) == path]
    if not types:
        return None
    schemas: dict[str, Any] = {}
    for rtype in types:
        gvk = {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}
        schemas[_schema_id(rtype)] = {
            "type": "object",
            "x-kubernetes-group-version-kind": [gvk],
            "x-kubernetes-preserve-unknown-fields": True,
        }
        schemas[_schema_id(rtype) + "List"] = {
            "type": "object",
            "x-kubernetes-group-version-kind": [{**gvk, "kind": rtype.list_kind}],
            "x-kubernetes-preserve-unknown-fields": True,
        }
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "fakekube"}, "paths": {},
            "components": {"schemas": schemas}}


def index(registry: Registry) -> dict[str, Any]:
    """``/openapi/v3``: every served group-version, with a hash of its document (clients cache by it)."""
    paths: dict[str, Any] = {}
    for path in sorted({_path(t) for t in registry.types()}):
        document = group_version_document(registry, path)
        digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:16].upper()
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}
