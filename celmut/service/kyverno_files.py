"""The Kyverno CLI's own files (``cli.kyverno.io/v1alpha1``) besides Tests and Values, and how it
reads resources — so suites and flags written for ``kyverno test``/``kyverno apply`` work unchanged.

* :func:`default_namespace` — a namespaced resource without ``metadata.namespace`` is in
  ``default``, in inputs and expected files alike (``cmd/cli/kubectl-kyverno/resource/resource.go``
  ``YamlToUnstructured``). Kyverno sets it on every kind, cluster-scoped ones included; celmut sets it
  only where the API server would (``EnsureObjectNamespaceMatchesRequestNamespace`` fills the request
  namespace into a namespaced object and clears it on a cluster-scoped one), so a policy reading
  ``object.metadata.namespace`` on a Namespace sees what a cluster sends. Comparisons and resource
  references still treat a cluster-scoped object as in ``default`` (``celmut test``),
  so suites written against Kyverno's behaviour pass.
* :func:`unwrap_cluster_resources` — a ``ClusterResource`` wrapper (``spec.resources`` inline objects,
  ``spec.crds`` file paths) becomes its objects (``apis/v1alpha1/clusterresource.go``; the Test loader
  resolves ``crds`` against the test's directory, ``commands/test/test.go`` ``runTest``).
* :func:`load_context` — a ``Context`` file (``--context-file``, a Test's ``context:``): ``spec.images``,
  ``spec.resources``, ``spec.globalContext`` (``apis/v1alpha1/context.go``; ``valueFile`` relative to the
  file's directory and preferred over ``value``); its ``spec.http`` stubs are not served (a warning).
* :func:`load_user_info` — a ``UserInfo`` file (``-u/--userinfo``, a Test's ``userinfo:``): the requests'
  ``userInfo``.
* :func:`mock_entries` — a Test's ``globalContextEntries`` mocks, validated with Kyverno's messages
  (``ValidateGlobalContextEntries``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from celmut import kinds
from celmut.service.offline_context import MockEntry, compile_path
from celmut.sources.documents import Document, DocumentError, describe_type, load_documents, load_single
from celmut.sources.go_json import OBJECT_META_FIELDS, TYPE_META_FIELDS, json_field_keys, strict_fields

# cmd/cli/kubectl-kyverno/apis/v1alpha1/context.go: Context, ContextSpec, ImageData, GlobalContextEntry, HTTPStub.
CONTEXT_FIELDS = (*TYPE_META_FIELDS, "metadata", "spec")
CONTEXT_SPEC_FIELDS = ("resources", "images", "globalContext", "http")
IMAGE_DATA_FIELDS = (
    "image", "resolvedImage", "registry", "repository", "tag", "digest", "imageIndex", "manifest", "config",
)  # fmt: skip
GLOBAL_CONTEXT_FIELDS = ("name", "projection", "value", "valueFile")
HTTP_STUB_FIELDS = ("method", "url", "status", "headers", "body", "bodyFile")

CLI_GROUP = "cli.kyverno.io"
DEFAULT_NAMESPACE = "default"


def is_cli_kind(obj: Any, kind: str) -> bool:
    """Whether ``obj`` is a ``cli.kyverno.io`` document of ``kind`` (any version)."""
    return (
        isinstance(obj, Mapping)
        and obj.get("kind") == kind
        and str(obj.get("apiVersion") or "").partition("/")[0] == CLI_GROUP
    )


def default_namespace(obj: dict[str, Any], kind_table: kinds.KindTable = kinds.BUILTIN) -> dict[str, Any]:
    """``obj`` with ``metadata.namespace: default`` when its kind is namespaced and it has none (a copy
    only when it changes)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and meta.get("namespace"):
        return obj
    if not kind_table.is_namespaced(str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")):
        return obj
    return {**obj, "metadata": {**(meta if isinstance(meta, dict) else {}), "namespace": DEFAULT_NAMESPACE}}


def _mapping(value: Any, where: str, source: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DocumentError(source, f"{where}: must be a map, not {describe_type(value)}")
    return value


def _list(value: Any, where: str, source: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise DocumentError(source, f"{where}: must be a list, not {describe_type(value)}")
    return value


def unwrap_cluster_resources(documents: Iterable[Document], base: Path | None = None) -> list[Document]:
    """The documents with each ClusterResource wrapper replaced by its ``spec.resources`` and the
    CRDs its ``spec.crds`` name (paths relative to ``base``: a Test's directory; by default the
    wrapper file's)."""
    out: list[Document] = []
    for document in documents:
        if not is_cli_kind(document.content, "ClusterResource"):
            out.append(document)
            continue
        spec = _mapping(document.content.get("spec"), "spec", document.source)
        for index, item in enumerate(_list(spec.get("resources"), "spec.resources", document.source)):
            if not isinstance(item, dict):
                raise DocumentError(document.source, f"spec.resources[{index}]: not a Kubernetes object")
            out.append(Document(f"{document.source} spec.resources", index, item))
        for index, path in enumerate(_list(spec.get("crds"), "spec.crds", document.source)):
            if not isinstance(path, str):
                raise DocumentError(document.source, f"spec.crds[{index}]: must be a file name")
            out += load_documents((base if base is not None else Path(document.path).parent) / path)
    return out


@dataclass
class ContextFile:
    """What a Context file serves: objects for lookups, image data, global context values."""

    resources: list[dict[str, Any]] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)
    global_context: dict[str, dict[str, Any]] = field(default_factory=dict)  # name → projection → value
    warnings: list[str] = field(default_factory=list)


def load_context(path: str | Path) -> ContextFile:
    """The Context file at ``path``; a DocumentError names the file and field of a wrong shape.

    Read as Kyverno reads it (``cmd/cli/kubectl-kyverno/context/load.go`` → ``LoadYAML``, ``UnmarshalStrict``):
    struct keys match case-insensitively, an unknown one is an error; ``resources`` are objects, kept as written.
    """
    return context_from(load_single(path), str(path), Path(path).parent)


def context_from(content: Any, source: str, base: Path | None) -> ContextFile:
    """:func:`load_context` of a document already read (``source`` names it in errors); a
    ``valueFile`` is read relative to ``base``, and is an error without one (text pasted in
    ``celmut playground`` has no directory)."""
    doc = strict_fields(_mapping(content, "the Context document", source), CONTEXT_FIELDS, "", source)
    strict_fields(_mapping(doc.get("metadata"), "metadata", source), OBJECT_META_FIELDS, "metadata", source)
    spec = strict_fields(_mapping(doc.get("spec"), "spec", source), CONTEXT_SPEC_FIELDS, "spec", source)
    context = ContextFile()
    for index, item in enumerate(_list(spec.get("resources"), "spec.resources", source)):
        if not isinstance(item, dict) or not item.get("apiVersion") or not item.get("kind"):
            raise DocumentError(source, f"spec.resources[{index}]: not a Kubernetes object (apiVersion and kind)")
        context.resources.append(item)
    for index, item in enumerate(_list(spec.get("images"), "spec.images", source)):
        at = f"spec.images[{index}]"
        image = strict_fields(_mapping(item, at, source), IMAGE_DATA_FIELDS, at, source)
        if not isinstance(image.get("image"), str) or not image["image"]:
            raise DocumentError(source, f"spec.images[{index}].image: required")
        context.images.append(image)
    for index, item in enumerate(_list(spec.get("globalContext"), "spec.globalContext", source)):
        at = f"spec.globalContext[{index}]"
        entry = strict_fields(_mapping(item, at, source), GLOBAL_CONTEXT_FIELDS, at, source)
        if not isinstance(entry.get("name"), str) or not entry["name"]:
            raise DocumentError(source, f"spec.globalContext[{index}].name: required")
        value = entry.get("value")
        if entry.get("valueFile"):
            if base is None:
                raise DocumentError(source, f"{at}.valueFile: no files here; give the value inline (value:)")
            value = load_single(base / str(entry["valueFile"]))
        context.global_context.setdefault(entry["name"], {})[str(entry.get("projection") or "")] = value
    for index, item in enumerate(_list(spec.get("http"), "spec.http", source)):
        at = f"spec.http[{index}]"
        strict_fields(_mapping(item, at, source), HTTP_STUB_FIELDS, at, source)
    if spec.get("http"):
        context.warnings.append(
            f"{source}: spec.http: HTTP stubs are not served by celmut; http.Get/http.Post calls fail offline"
        )
    return context


# A UserInfo file's fields (kyverno RequestInfo and the CLI's UserInfo wrapper).
USER_INFO_FIELDS = ("apiVersion", "kind", "metadata", "roles", "clusterRoles", "userInfo")


def load_user_info(path: str | Path) -> dict[str, Any]:
    """The ``userInfo`` (username, uid, groups, extra) of a Kyverno UserInfo file, for the requests."""
    return user_info_from(load_single(path), str(path))


def user_info_from(content: Any, source: str) -> dict[str, Any]:
    """:func:`load_user_info` of a document already read (``source`` names it in errors)."""
    doc = json_field_keys(_mapping(content, "the UserInfo document", source), USER_INFO_FIELDS)
    user = json_field_keys(_mapping(doc.get("userInfo"), "userInfo", source), ("username", "uid", "groups", "extra"))
    out: dict[str, Any] = {}
    for key in ("username", "uid"):
        if user.get(key) is not None:
            if not isinstance(user[key], str):
                raise DocumentError(source, f"userInfo.{key}: must be a string, not {describe_type(user[key])}")
            out[key] = user[key]
    groups = _list(user.get("groups"), "userInfo.groups", source)
    if not all(isinstance(g, str) for g in groups):
        raise DocumentError(source, "userInfo.groups: must be a list of strings")
    if groups:
        out["groups"] = groups
    extra = _mapping(user.get("extra"), "userInfo.extra", source)
    if extra:
        out["extra"] = extra
    return out


def mock_entries(items: Any, source: str, base: Path) -> list[MockEntry]:
    """A Test's ``globalContextEntries``, checked as Kyverno checks them (``ValidateGlobalContextEntries``);
    a bad JMESPath is a ConfigurationError naming the field."""
    out: list[MockEntry] = []
    seen: set[str] = set()
    for index, item in enumerate(_list(items, "globalContextEntries", source)):
        where = f"globalContextEntries[{index}]"
        entry = _mapping(item, where, source)
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise DocumentError(source, f"{where}.name: name is required")
        if name in seen:
            raise DocumentError(source, f"{where}.name: duplicate name {name!r}")
        seen.add(name)
        projections: dict[str, Any] = {}
        for p_index, projection in enumerate(_list(entry.get("projections"), f"{where}.projections", source)):
            at = f"{where}.projections[{p_index}]"
            spec = _mapping(projection, at, source)
            if not spec.get("name"):
                raise DocumentError(source, f"{at}.name: projection name is required")
            if not spec.get("path"):
                raise DocumentError(source, f"{at}.path: path is required")
            projections[str(spec["name"])] = compile_path(spec["path"], f"{source}: {at}.path")
        resources = _list(entry.get("resources"), f"{where}.resources", source)
        for f_index, path in enumerate(_list(entry.get("resourceFiles"), f"{where}.resourceFiles", source)):
            if not isinstance(path, str):
                raise DocumentError(source, f"{where}.resourceFiles[{f_index}]: must be a file name")
            resources += [d.content for d in load_documents(base / path)]
        if entry.get("resources") is not None or entry.get("resourceFiles") is not None:
            root: Any = resources  # the shape of the real kubernetesResource cache: a list of objects
        elif entry.get("data") is None:
            raise DocumentError(source, f"{where}.data: data is required")
        else:
            root = entry["data"]
        field_path = entry.get("fieldPath")
        compiled = compile_path(field_path, f"{source}: {where}.fieldPath") if field_path else None
        out.append(MockEntry(name, root, compiled, projections))
    return out


def is_policy_exception(content: Any) -> bool:
    """A Kyverno ``PolicyException`` (``policies.kyverno.io``), what ``kyverno apply -e`` reads."""
    if not isinstance(content, dict):
        return False
    group = str(content.get("apiVersion") or "").rpartition("/")[0]
    return content.get("kind") == "PolicyException" and group == "policies.kyverno.io"


def describe(content: Any) -> str:
    """``Kind name`` of an object, or what the document is instead (``a string``)."""
    if not isinstance(content, dict):
        return describe_type(content)
    meta = content.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return f"{content.get('kind') or 'an object without kind'} {name or ''}".strip()


def bind_unbound_admission_policies(documents: list[Document]) -> tuple[list[Document], list[str]]:
    """``documents`` plus a binding for each MutatingAdmissionPolicy no binding refers to, and a note
    per policy so bound.

    The Kyverno CLI mutates with such a policy as if it were bound to everything its
    matchConstraints match ("no bindings: offline CEL matcher", pkg/admissionpolicy/mutate.go
    ``Mutate``), where an API server would never run it. A policy with ``paramKind`` is left alone:
    without a binding there are no params to give it.
    """
    bound: set[str] = set()
    unbound: list[tuple[str, str]] = []
    for document in documents:
        content = document.content if isinstance(document.content, dict) else {}
        api_version = str(content.get("apiVersion") or "")
        if not api_version.startswith("admissionregistration.k8s.io/"):
            continue
        spec = content.get("spec") if isinstance(content.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        if content.get("kind") == "MutatingAdmissionPolicyBinding":
            bound.add(str(spec.get("policyName") or ""))
        elif content.get("kind") == "MutatingAdmissionPolicy" and not spec.get("paramKind"):
            name = str((content.get("metadata") or {}).get("name") or "")
            unbound.append((name, api_version))
    added: list[Document] = []
    notes: list[str] = []
    for name, api_version in unbound:
        if name and name not in bound:
            binding = {
                "apiVersion": api_version,
                "kind": "MutatingAdmissionPolicyBinding",
                "metadata": {"name": f"{name}-unbound"},
                "spec": {"policyName": name},
            }
            added.append(Document(f"(kyverno CLI) binding for {name}", len(added), binding))
            notes.append(
                f"MutatingAdmissionPolicy {name} has no binding: applied to everything its matchConstraints "
                "match, as the Kyverno CLI does (an API server would not run it)"
            )
    return documents + added, notes
