"""The subset of the API server's validation the fake applies on writes.

* 400 BadRequest for bodies that would not even decode: non-object metadata, label/annotation values that
  are not strings (the real server fails to unmarshal them into ``map[string]string``).
* 422 Invalid for: a missing ``metadata.name`` without ``generateName``; names that are not DNS subdomains
  (DNS labels for namespaces and services; any path segment for RBAC kinds and custom resources);
  malformed label keys/values and annotation keys; pods without containers, containers without
  name/image or with duplicate names; changes to a pod's spec other than the ones the real server allows
  (container images, activeDeadlineSeconds, tolerations, terminationGracePeriodSeconds, schedulingGates);
  changes to the data of an ``immutable`` ConfigMap/Secret; CRDs whose name is not ``<plural>.<group>``
  or that have no single storage version.

Everything else (schemas of built-in kinds, CRD openAPIV3Schema) is NOT validated.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import bad_request, invalid
from .resize import resize_causes
from .resources import ResourceType

Obj = dict[str, Any]
Cause = tuple[str, str, str]

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS_LABEL_KINDS = frozenset({"Namespace", "Service"})
_PATH_SEGMENT_GROUPS = frozenset({"rbac.authorization.k8s.io"})
_MUTABLE_POD_SPEC = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "schedulingGates")


def _name_problem(rtype: ResourceType, name: str) -> str | None:
    if not rtype.builtin or rtype.group in _PATH_SEGMENT_GROUPS:
        if name in (".", "..") or "/" in name or "%" in name:
            return f"Invalid value: \"{name}\": may not contain '/' or '%' and may not be '.' or '..'"
        return None
    if rtype.kind in _DNS_LABEL_KINDS:
        if len(name) > 63 or not _DNS_LABEL.match(name):
            return (
                f'Invalid value: "{name}": a lowercase RFC 1123 label must consist of lower case alphanumeric '
                "characters or '-', and must start and end with an alphanumeric character"
            )
        return None
    if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        return (
            f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric '
            "characters, '-' or '.', and must start and end with an alphanumeric character"
        )
    return None


def _key_problem(key: str) -> str | None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f'Invalid value: "{key}": prefix part must be a lowercase RFC 1123 subdomain'
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        return (
            f"Invalid value: \"{key}\": name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None


def _check_string_map(meta: Obj, field: str) -> None:
    value = meta.get(field)
    if value is None:
        return
    if not isinstance(value, dict):
        raise bad_request(f"json: cannot unmarshal into Go struct field ObjectMeta.metadata.{field} of type map")
    for key, item in value.items():
        if not isinstance(item, str):
            raise bad_request(
                f"json: cannot unmarshal {type(item).__name__} into Go struct field ObjectMeta.metadata.{field} "
                f"of type string (key {key!r})"
            )


def check_decodable(obj: Any) -> None:
    """400 for bodies the real server could not decode into its typed metadata."""
    if not isinstance(obj, dict):
        raise bad_request("the body of the request must be a JSON object")
    meta = obj.get("metadata")
    if meta is None:
        return
    if not isinstance(meta, dict):
        raise bad_request("json: cannot unmarshal into Go struct field of type v1.ObjectMeta")
    for field in ("name", "namespace", "generateName", "resourceVersion", "uid"):
        if meta.get(field) is not None and not isinstance(meta[field], str):
            raise bad_request(f"json: cannot unmarshal into Go struct field ObjectMeta.metadata.{field} of type string")
    _check_string_map(meta, "labels")
    _check_string_map(meta, "annotations")


def _meta_causes(rtype: ResourceType, obj: Obj) -> list[Cause]:
    meta = obj.get("metadata") or {}
    causes: list[Cause] = []
    name = meta.get("name") or ""
    if not name:
        causes.append(("FieldValueRequired", "metadata.name", "Required value: name or generateName is required"))
    else:
        problem = _name_problem(rtype, name)
        if problem:
            causes.append(("FieldValueInvalid", "metadata.name", problem))
    for key, value in (meta.get("labels") or {}).items():
        problem = _key_problem(key)
        if problem:
            causes.append(("FieldValueInvalid", "metadata.labels", problem))
        elif len(value) > 63 or not _LABEL_VALUE.match(value):
            causes.append(
                (
                    "FieldValueInvalid",
                    "metadata.labels",
                    f'Invalid value: "{value}": a valid label must be an empty string or consist of alphanumeric '
                    "characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                )
            )
    for key in meta.get("annotations") or {}:
        problem = _key_problem(key)
        if problem:
            causes.append(("FieldValueInvalid", "metadata.annotations", problem))
    return causes


def _pod_causes(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict) or not spec.get("containers"):
        return [("FieldValueRequired", "spec.containers", "Required value")]
    causes: list[Cause] = []
    seen: set[str] = set()
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for index, container in enumerate(spec.get(field) or []):
            path = f"spec.{field}[{index}]"
            if not isinstance(container, dict):
                causes.append(("FieldValueInvalid", path, "Invalid value: must be an object"))
                continue
            cname = container.get("name")
            if not cname:
                causes.append(("FieldValueRequired", f"{path}.name", "Required value"))
            elif cname in seen:
                causes.append(("FieldValueDuplicate", f"{path}.name", f'Duplicate value: "{cname}"'))
            else:
                seen.add(cname)
            if not container.get("image") and field != "ephemeralContainers":
                causes.append(("FieldValueRequired", f"{path}.image", "Required value"))
    return causes


def _crd_causes(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    group, plural = spec.get("group") or "", names.get("plural") or ""
    causes: list[Cause] = []
    if not group or "." not in group:
        causes.append(
            ("FieldValueInvalid", "spec.group", f'Invalid value: "{group}": should be a domain with at least one dot')
        )
    if not plural or not names.get("kind"):
        causes.append(("FieldValueRequired", "spec.names", "Required value: plural and kind are required"))
    if obj.get("metadata", {}).get("name") != f"{plural}.{group}":
        causes.append(
            (
                "FieldValueInvalid",
                "metadata.name",
                f'Invalid value: "{obj["metadata"].get("name")}": must be spec.names.plural+"."+spec.group',
            )
        )
    versions = spec.get("versions") or []
    if sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(
            (
                "FieldValueInvalid",
                "spec.versions",
                "Invalid value: must have exactly one version marked as storage version",
            )
        )
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(
            ("FieldValueNotSupported", "spec.scope", 'Unsupported value: supported values: "Cluster", "Namespaced"')
        )
    return causes


def _kind_causes(rtype: ResourceType, obj: Obj) -> list[Cause]:
    if rtype.builtin and rtype.kind == "Pod":
        return _pod_causes(obj)
    if rtype.builtin and rtype.kind == "CustomResourceDefinition":
        return _crd_causes(obj)
    return []


def validate_create(rtype: ResourceType, obj: Obj) -> None:
    """Validate an object about to be created (422 with every problem found)."""
    causes = _meta_causes(rtype, obj) + _kind_causes(rtype, obj)
    if causes:
        raise invalid(rtype.kind, rtype.group, obj.get("metadata", {}).get("name") or "", causes)


def _without_mutable_pod_fields(spec: Obj) -> Obj:
    stripped = {k: v for k, v in spec.items() if k not in _MUTABLE_POD_SPEC}
    for field in ("containers", "initContainers"):
        if isinstance(stripped.get(field), list):
            stripped[field] = [
                {k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c for c in stripped[field]
            ]
    return stripped


def validate_update(rtype: ResourceType, old: Obj, new: Obj, subresource: str = "") -> None:
    """Validate an update of ``old`` into ``new`` through the main resource or a subresource."""
    causes = _meta_causes(rtype, new) + _kind_causes(rtype, new)
    if rtype.builtin and rtype.kind == "Pod" and subresource not in ("status", "resize", "ephemeralcontainers"):
        old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
        if _without_mutable_pod_fields(old_spec) != _without_mutable_pod_fields(new_spec):
            causes.append(
                (
                    "FieldValueForbidden",
                    "spec",
                    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
                    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions "
                    "to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it "
                    "was previously negative)",
                )
            )
    if rtype.builtin and rtype.kind == "Pod" and subresource == "resize":
        causes += resize_causes(old, new)
    if rtype.builtin and rtype.kind in ("ConfigMap", "Secret") and old.get("immutable"):
        for field in ("data", "binaryData", "stringData"):
            if old.get(field) != new.get(field):
                causes.append(("FieldValueForbidden", field, "Forbidden: field is immutable when `immutable` is set"))
        if not new.get("immutable"):
            causes.append(("FieldValueForbidden", "immutable", "Forbidden: field is immutable when `immutable` is set"))
    if causes:
        raise invalid(rtype.kind, rtype.group, new.get("metadata", {}).get("name") or "", causes)
