"""What CEL's ``image.GetMetadata`` and ``globalContext.Get`` read offline, from files.

The Kyverno CLI serves both from a fake context provider (``pkg/cel/libs`` ``FakeContextProvider``,
filled by ``cmd/cli/kubectl-kyverno/processor`` ``NewContextProvider`` from the ``--context-file``
/ the Test's ``context:``, and by ``cmd/cli/kubectl-kyverno/store`` from the Test's
``globalContextEntries``); celmut does the same with these providers of :class:`celmut.cel.Services`:

* :class:`StaticImages` — image data by exact reference (``spec.images[].image``);
* :class:`StaticGlobalContext` — entries by name, each one of:

  - :class:`ContextFileEntry`: a Context file's ``spec.globalContext`` (a value per projection, the
    ``""`` projection being the fallback — Kyverno's ``AddGlobalReference(name, projection, value)``);
  - :class:`MockEntry`: a Test's ``globalContextEntries`` mock (``data`` or ``resources``, an optional
    ``fieldPath``, then named JMESPath projections — ``store/gctx_resolve.go``);
  - :class:`ClusterEntry`: a ``GlobalContextEntry`` object among the cluster resources; its
    ``kubernetesResource`` list or ``apiCall`` ``urlPath`` is served from those resources, and its
    ``projections`` are JMESPath over that data (``commands/apply/global_context.go``). Read when
    asked, so it sees the objects admitted before, as a watch-fed cache would.

A missing entry is ``null`` (Kyverno's providers return nil for it); a missing projection or image is
an evaluation error naming what is available, with Kyverno's wording.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import jmespath
import jmespath.exceptions

from celmut.cel.lookups import LookupFailed, ResourceLookup
from celmut.errors import ConfigurationError
from celmut.jsonutil import json_copy

GCE_GROUP, GCE_KIND = "kyverno.io", "GlobalContextEntry"
GCE_VERSIONS = ("v2alpha1", "v2beta1", "v2")  # v2 is what kyverno apply recognises, v2alpha1 what clusters served first
# ImageData's fields without `omitempty` (cmd/cli/kubectl-kyverno/apis/v1alpha1/context.go): always present.
_IMAGE_FIELDS = ("image", "resolvedImage", "registry", "repository")


class StaticImages:
    """Image metadata (the Context file's ``spec.images``) keyed by the exact image reference."""

    def __init__(self, images: Sequence[Mapping[str, Any]] = ()) -> None:
        self._images: dict[str, dict[str, Any]] = {}
        for image in images:
            data = {key: "" for key in _IMAGE_FIELDS} | json_copy(dict(image))
            self._images[str(data["image"])] = data

    def __bool__(self) -> bool:
        return bool(self._images)

    def get_metadata(self, reference: str) -> dict[str, Any]:
        data = self._images.get(reference)
        if data is None:
            raise LookupFailed(
                f"image data for {reference} not found in the context - available images: "
                f"[{' '.join(sorted(self._images))}]. Add the missing image data to your context file"
            )
        return json_copy(data)


def compile_path(expression: Any, where: str) -> Any:
    """A JMESPath expression compiled once; a ConfigurationError naming ``where`` when it is invalid."""
    if not isinstance(expression, str) or not expression:
        raise ConfigurationError(f"{where}: a JMESPath expression is required")
    try:
        return jmespath.compile(expression)
    except jmespath.exceptions.JMESPathError as ex:
        raise ConfigurationError(f"{where}: invalid JMESPath {expression!r}: {ex}") from None


def _search(compiled: Any, data: Any, entry: str) -> Any:
    try:
        return compiled.search(data)
    except jmespath.exceptions.JMESPathError as ex:
        raise LookupFailed(f'global context entry "{entry}": projection failed: {ex}') from None


class GlobalEntry(Protocol):
    def get(self, projection: str) -> Any: ...


@dataclass
class ContextFileEntry:
    """A Context file's values for one name, per projection (``""`` is the fallback)."""

    name: str
    values: dict[str, Any] = field(default_factory=dict)

    def get(self, projection: str) -> Any:
        for key in (projection, ""):
            if key in self.values:
                return json_copy(self.values[key])
        raise LookupFailed(
            f'global context entry "{self.name}" projection "{projection}" not found - available projections: '
            f"[{' '.join(sorted(self.values))}]. Add the missing projection to your context file"
        )


@dataclass
class MockEntry:
    """A Test's ``globalContextEntries`` item: the root (``data``, or the list of ``resources``), narrowed
    by ``fieldPath``; with projections the value is ``{name: search(path, root)}``."""

    name: str
    root: Any
    field_path: Any = None  # compiled JMESPath
    projections: dict[str, Any] = field(default_factory=dict)  # name → compiled JMESPath

    def value(self) -> Any:
        root = _search(self.field_path, self.root, self.name) if self.field_path is not None else self.root
        if not self.projections:
            return root
        return {name: _search(path, root, self.name) for name, path in self.projections.items()}

    def get(self, projection: str) -> Any:
        value = self.value()
        if not projection:
            return value
        if not isinstance(value, dict):
            raise LookupFailed(f'projection "{projection}" not found in global context entry "{self.name}"')
        return value.get(projection)


@dataclass
class ClusterEntry:
    """A GlobalContextEntry object: its data read from the offline cluster on each use."""

    name: str
    data: Callable[[], Any]
    projections: dict[str, Any] = field(default_factory=dict)  # name → compiled JMESPath

    def get(self, projection: str) -> Any:
        data = self.data()
        if not projection:
            return data
        path = self.projections.get(projection)
        if path is None:
            raise LookupFailed(f'global context entry "{self.name}": projection "{projection}" not found')
        return _search(path, data, self.name)


class StaticGlobalContext:
    """Global context entries by name (a :class:`~celmut.cel.lookups.GlobalContextLookup`)."""

    def __init__(self, entries: Mapping[str, GlobalEntry] | None = None) -> None:
        self.entries: dict[str, GlobalEntry] = dict(entries or {})

    def __bool__(self) -> bool:
        return bool(self.entries)

    def get(self, entry: str, projection: str = "") -> Any:
        found = self.entries.get(entry)
        return None if found is None else found.get(projection)


# --- GlobalContextEntry objects ---------------------------------------------------------------------


def is_global_context_entry(obj: Any) -> bool:
    if not isinstance(obj, Mapping) or obj.get("kind") != GCE_KIND:
        return False
    group, _, version = str(obj.get("apiVersion") or "").partition("/")
    return group == GCE_GROUP and version in GCE_VERSIONS


def cluster_entry(obj: Mapping[str, Any], cluster: ResourceLookup, source: str) -> ClusterEntry:
    """The entry a GlobalContextEntry object defines over ``cluster``; a ConfigurationError naming
    ``source`` and the field for a spec that cannot be served offline."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    where = f"{source}: GlobalContextEntry {name or '<unnamed>'}"
    if not name:
        raise ConfigurationError(f"{where}: metadata.name is required")
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise ConfigurationError(f"{where}: spec must be a map")
    projections: dict[str, Any] = {}
    for index, item in enumerate(spec.get("projections") or []):
        at = f"{where}: spec.projections[{index}]"
        if not isinstance(item, Mapping) or not item.get("name"):
            raise ConfigurationError(f"{at}.name is required")
        projections[str(item["name"])] = compile_path(item.get("jmesPath"), f"{at}.jmesPath")
    resource, call = spec.get("kubernetesResource"), spec.get("apiCall")
    if isinstance(resource, Mapping) and resource.get("resource"):
        group, version = str(resource.get("group") or ""), str(resource.get("version") or "")
        api_version = f"{group}/{version}" if group else version
        namespace = str(resource.get("namespace") or "")
        plural = str(resource["resource"])

        def listed() -> Any:
            return cluster.list(api_version, plural, namespace).get("items", [])

        return ClusterEntry(name, listed, projections)
    if isinstance(call, Mapping):
        method = str(call.get("method") or "GET").upper()
        url_path = call.get("urlPath")
        if call.get("service") or not url_path:
            raise ConfigurationError(
                f"{where}: spec.apiCall: only a urlPath into the cluster resources is served offline, "
                "not a service call"
            )
        if method != "GET":
            raise ConfigurationError(f"{where}: spec.apiCall.method: only GET is served offline, not {method}")
        path = str(url_path)
        return ClusterEntry(name, lambda: api_get(cluster, path), projections)
    raise ConfigurationError(f"{where}: spec needs kubernetesResource (group, version, resource) or apiCall.urlPath")


def api_get(cluster: ResourceLookup, url_path: str) -> Any:
    """The API server's answer to ``GET url_path`` (``/api/v1/namespaces/ns/configmaps``,
    ``/apis/apps/v1/deployments``, ``…/name``; ``?labelSelector=a=b,c=d``) from ``cluster``."""
    parts = urllib.parse.urlsplit(url_path)
    segments = [s for s in parts.path.split("/") if s]
    if segments[:1] == ["api"] and len(segments) >= 3:
        api_version, rest = segments[1], segments[2:]
    elif segments[:1] == ["apis"] and len(segments) >= 4:
        api_version, rest = f"{segments[1]}/{segments[2]}", segments[3:]
    else:
        raise LookupFailed(f"apiCall {url_path}: not a Kubernetes API path (/api/v1/… or /apis/group/version/…)")
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if len(rest) == 1:
        labels: dict[str, str] = {}
        for selector in urllib.parse.parse_qs(parts.query).get("labelSelector", []):
            for term in filter(None, selector.split(",")):
                key, _, value = term.partition("=")
                labels[key.strip()] = value.lstrip("=").strip()
        return cluster.list(api_version, rest[0], namespace, labels or None)
    if len(rest) == 2:
        return cluster.get(api_version, rest[0], namespace, rest[1])
    raise LookupFailed(f"apiCall {url_path}: unsupported path (a subresource?)")
