"""What the loaded policies read of the objects they look up: whole objects, or metadata only.

Placement counting (the presets' siblings) and owner lookups (presets, the opt-out label) read only
apiVersion, kind and metadata, so a surface may cache pods and owners as ``PartialObjectMetadata``
(:class:`celmut.kube.lookup.CacheSet`) unless a policy's own lookup names one of them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator
from typing import Any

from celmut.compile.presets.placement import metadata_lookups

OWNER_KINDS = (("apps/v1", "replicasets"), ("apps/v1", "deployments"), ("batch/v1", "jobs"))
# Cached as PartialObjectMetadata unless a policy looks them up for more than metadata.
METADATA_RESOURCES = frozenset({("v1", "pods"), *OWNER_KINDS})
_LOOKUP = re.compile(r"resource\.(?:List|Get)\(")
_LITERAL_LOOKUP = re.compile(r'resource\.(?:List|Get)\(\s*"([^"]*)"\s*,\s*"([^"]*)"')


def _sources(value: Any, depth: int = 0) -> Iterator[str]:
    """The CEL source of every program inside a compiled policy (its dataclass fields, walked)."""
    source = getattr(value, "source", None)
    if isinstance(source, str) and hasattr(value, "evaluate"):
        yield source
    elif depth < 4 and dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            if f.name != "definition":
                yield from _sources(getattr(value, f.name), depth + 1)
    elif depth < 4 and isinstance(value, (tuple, list)):
        for item in value:
            yield from _sources(item, depth + 1)
    elif depth < 4 and isinstance(value, dict):
        for item in value.values():
            yield from _sources(item, depth + 1)


def metadata_only_resources(policies: Iterable[Any]) -> frozenset[tuple[str, str]]:
    """Of :data:`METADATA_RESOURCES`, those no policy needs whole: a lookup other than the presets'
    metadata-only ones names the resource it reads (or, with a computed name, any)."""
    known = metadata_lookups()
    whole: set[tuple[str, str]] = set()
    for policy in policies:
        for source in _sources(policy):
            if source in known or not _LOOKUP.search(source):
                continue
            literal = _LITERAL_LOOKUP.findall(source)
            if len(literal) < len(_LOOKUP.findall(source)):
                return frozenset()  # a lookup of a resource computed at run time: anything may be read whole
            whole.update((api_version, resource) for api_version, resource in literal)
    return METADATA_RESOURCES - whole


def looked_up(policies: Iterable[Any]) -> frozenset[tuple[str, str]]:
    """The (apiVersion, resource) pairs the policies' lookups name literally: the caches a scan lists
    before evaluating, so that no evaluation spends its deadline waiting for a cache's first list."""
    found: set[tuple[str, str]] = set()
    for policy in policies:
        for source in _sources(policy):
            found.update((api_version, resource) for api_version, resource in _LITERAL_LOOKUP.findall(source))
    return frozenset(found)


def lookups_beyond_the_presets(policies: Iterable[Any]) -> list[str]:
    """The names of the policies calling ``resource.Get``/``resource.List`` other than as the presets
    do (owners, siblings; written to fall back when the answer is null)."""
    known = metadata_lookups()
    names = (
        f"{policy.namespace}/{policy.name}" if getattr(policy, "namespace", "") else str(policy.name)
        for policy in policies
        if any(source not in known and _LOOKUP.search(source) for source in _sources(policy))
    )
    return list(dict.fromkeys(names))  # once per policy, not per autogen variant
