"""Parsing of API server URLs and request parameters.

Resource URLs have the real server's shapes::

    /api/v1/{plural}[/{name}[/{subresource}]]                          cluster-scoped, or all namespaces
    /api/v1/namespaces/{ns}/{plural}[/{name}[/{subresource}]]          namespaced
    /apis/{group}/{version}/...                                        the same below a group version

(``/api/v1/namespaces/{name}/status`` and ``/finalize`` are subresources of the namespace itself.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import yaml

from . import errors, protobuf
from .resources import Registry, ResourceType


@dataclass(frozen=True)
class Target:
    """What a resource URL addresses."""

    rtype: ResourceType
    namespace: str | None
    name: str | None
    subresource: str

    @property
    def is_collection(self) -> bool:
        """True for ``.../{plural}`` (list, watch, create, deletecollection)."""
        return self.name is None


def parse_target(registry: Registry, parts: list[str]) -> Target:
    """The resource a path addresses; 404 (Status NotFound) when it addresses nothing served."""
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise errors.unknown_resource()
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces" and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3 or any(not p for p in rest):
        raise errors.unknown_resource()
    rtype = registry.lookup(group, version, rest[0])
    if rtype is None:
        raise errors.unknown_resource()
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else ""
    if namespace is not None and not rtype.namespaced:
        raise errors.unknown_resource()
    if rtype.namespaced and namespace is None and name is not None:
        raise errors.unknown_resource()
    if sub and sub not in rtype.subresources:
        raise errors.unknown_resource()
    return Target(rtype, namespace, name, sub)


def query_value(query: dict[str, list[str]], key: str) -> str | None:
    """The last value of a query parameter, or None."""
    values = query.get(key)
    return values[-1] if values else None


def query_flag(query: dict[str, list[str]], key: str) -> bool:
    """A boolean query parameter (``true``/``1``)."""
    return (query_value(query, key) or "").lower() in ("true", "1")


def query_int(query: dict[str, list[str]], key: str) -> int | None:
    """An integer query parameter; 400 when it is not one."""
    value = query_value(query, key)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise errors.bad_request(f'invalid value "{value}" for {key}: must be an integer') from None


def dry_run(query: dict[str, list[str]]) -> bool:
    """``dryRun=All`` (400 for any other value)."""
    values = query.get("dryRun") or []
    for value in values:
        if value != "All":
            raise errors.bad_request(f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return bool(values)


def decode_body(content_type: str, body: bytes) -> object:
    """A POST/PUT body: JSON, YAML or protobuf (protobuf.py: the kinds modelled; 415 for other media types, 400 when it does not parse)."""
    media = content_type.split(";")[0].strip().lower()
    if not body:
        raise errors.bad_request("the body of the request is empty")
    try:
        if media in ("", "application/json", "*/*"):
            return json.loads(body)
        if media in ("application/yaml", "application/x-yaml", "text/yaml"):
            return yaml.safe_load(body.decode("utf-8"))
        if media == protobuf.MEDIA_TYPE:
            return protobuf.decode(body)
    except (ValueError, yaml.YAMLError) as exc:
        raise errors.bad_request(f"couldn't get version/kind; json parse error: {exc}") from exc
    raise errors.unsupported_media_type(
        content_type, ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
    )
