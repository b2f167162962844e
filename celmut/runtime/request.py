"""The admission request as the runtime sees it, from an AdmissionReview or from a bare object.

:meth:`AdmissionInput.from_admission_request` checks the shape of every field it reads once, up
front (admission.k8s.io/v1 ``AdmissionRequest``, ``authentication.k8s.io/v1`` ``UserInfo`` and the
``ObjectMeta`` fields the runtime reads): a field of the wrong type is an :class:`InvalidRequest`
naming it, never a failure deep inside an evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from celmut import kinds
from celmut.cel.activation import admission_request
from celmut.errors import CelmutError

OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")


class InvalidRequest(CelmutError, ValueError):
    """An AdmissionRequest field has the wrong shape; ``field`` is its path (``request.userInfo.username``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field} {message}")
        self.field = field


def _optional(request: Mapping[str, Any], name: str, kind: type | tuple[type, ...], what: str, path: str) -> Any:
    value = request.get(name)
    if value is not None and not isinstance(value, kind):
        raise InvalidRequest(f"{path}.{name}", f"must be {what}")
    return value


def _string_map(value: Any, path: str) -> None:
    if value is None:
        return
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(x, str) for k, x in value.items()):
        raise InvalidRequest(path, "must be a map of strings to strings")


def _group_version(request: Mapping[str, Any], name: str, last: str, required: bool) -> dict[str, str]:
    value = request.get(name)
    path = f"request.{name}"
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise InvalidRequest(path, "must be an object")
    for key in ("group", "version", last):
        _optional(value, key, str, "a string", path)
    if required and not value.get(last):
        raise InvalidRequest(f"{path}.{last}", "must be a non-empty string")
    return value


def _user_info(request: Mapping[str, Any]) -> dict[str, Any]:
    user = _optional(request, "userInfo", dict, "an object", "request")
    if user is None:
        return {}
    path = "request.userInfo"
    _optional(user, "username", str, "a string", path)
    _optional(user, "uid", str, "a string", path)
    groups = _optional(user, "groups", list, "a list of strings", path)
    if groups is not None and not all(isinstance(g, str) for g in groups):
        raise InvalidRequest(f"{path}.groups", "must be a list of strings")
    extra = _optional(user, "extra", dict, "a map of strings to lists of strings", path)
    if extra is not None and not all(
        isinstance(k, str) and isinstance(x, list) and all(isinstance(i, str) for i in x) for k, x in extra.items()
    ):
        raise InvalidRequest(f"{path}.extra", "must be a map of strings to lists of strings")
    return dict(user)


_STRING_OR_NULL = frozenset((str, type(None)))  # what JSON decodes an optional string to


def _strings(value: Any) -> bool:
    """Null or a map of strings to strings (exact types: what JSON decodes to)."""
    if value is None:
        return True
    if type(value) is not dict:
        return False
    for key, item in value.items():  # noqa: SIM110 - a loop, not a generator per map: every review runs this
        if type(key) is not str or type(item) is not str:
            return False
    return True


def _well_formed_object(value: Any) -> bool:
    """Whether :func:`_object` accepts ``value``, without naming a field."""
    if value is None:
        return True
    get = value.get if type(value) is dict else None
    if get is None or type(get("apiVersion")) not in _STRING_OR_NULL or type(get("kind")) not in _STRING_OR_NULL:
        return False
    metadata = get("metadata")
    if metadata is None:
        return True
    if type(metadata) is not dict:
        return False
    get = metadata.get
    for key in _METADATA_STRINGS:
        if type(get(key)) not in _STRING_OR_NULL:
            return False
    return _null_or_list_of(get("ownerReferences"), dict) and _strings(get("labels")) and _strings(get("annotations"))


def _null_or_list_of(value: Any, kind: type) -> bool:
    """Null or a list whose items are all exactly of type ``kind``."""
    if value is None:
        return True
    if type(value) is not list:
        return False
    for item in value:  # noqa: SIM110 - a loop, not a generator per list: every review runs this
        if type(item) is not kind:
            return False
    return True


def _well_formed_group_version(value: Any, last: str, required: bool) -> bool:
    if value is None:
        return not required
    if type(value) is not dict:
        return False
    get = value.get
    if type(get("group")) not in _STRING_OR_NULL or type(get("version")) not in _STRING_OR_NULL:
        return False
    named = get(last)
    return type(named) is str and named != "" if required else type(named) in _STRING_OR_NULL


def _well_formed_user(user: Any) -> bool:
    if user is None:
        return True
    if type(user) is not dict:
        return False
    get = user.get
    if type(get("username")) not in _STRING_OR_NULL or type(get("uid")) not in _STRING_OR_NULL:
        return False
    extra = get("extra")
    if not _null_or_list_of(get("groups"), str):
        return False
    if extra is not None:
        if type(extra) is not dict:
            return False
        for key, values in extra.items():
            if type(key) is not str or values is None or not _null_or_list_of(values, str):
                return False
    return True


def _well_formed(request: dict[str, Any]) -> bool:
    """Whether :meth:`AdmissionInput.from_admission_request` accepts ``request``, checked with exact
    types and no error text: a review as kube-apiserver sends it pays only this; anything else takes the
    checks that name the field. Loops and set lookups rather than a call per field: this runs on every
    review (4.7 -> ~2.5 us for a pod's; ``tests/runtime/test_request_fast_path.py`` holds it to the
    checks that name the field)."""
    get = request.get
    obj, old, dry_run, options = get("object"), get("oldObject"), get("dryRun"), get("options")
    if type(get("uid")) is not str or get("operation") not in OPERATIONS or (obj is None and old is None):
        return False
    for key in _REQUEST_STRINGS:
        if type(get(key)) not in _STRING_OR_NULL:
            return False
    return (
        (dry_run is None or type(dry_run) is bool)
        and (options is None or type(options) is dict)
        and _well_formed_group_version(get("kind"), "kind", True)
        and _well_formed_group_version(get("resource"), "resource", True)
        and _well_formed_group_version(get("requestKind"), "kind", False)
        and _well_formed_group_version(get("requestResource"), "resource", False)
        and _well_formed_user(get("userInfo"))
        and _well_formed_object(obj)
        and _well_formed_object(old)
    )


_METADATA_STRINGS = ("name", "generateName", "namespace", "uid", "resourceVersion")
_REQUEST_STRINGS = ("subResource", "requestSubResource", "name", "namespace")


def _object(request: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """``object``/``oldObject``: null or an object whose ``ObjectMeta`` fields have their types."""
    value = _optional(request, name, dict, "an object", "request")
    if value is None:
        return None
    path = f"request.{name}"
    _optional(value, "apiVersion", str, "a string", path)
    _optional(value, "kind", str, "a string", path)
    metadata = _optional(value, "metadata", dict, "an object", path)
    if metadata is not None:
        path += ".metadata"
        for key in _METADATA_STRINGS:
            _optional(metadata, key, str, "a string", path)
        _string_map(metadata.get("labels"), f"{path}.labels")
        _string_map(metadata.get("annotations"), f"{path}.annotations")
        owners = _optional(metadata, "ownerReferences", list, "a list of objects", path)
        if owners is not None and not all(isinstance(o, dict) for o in owners):
            raise InvalidRequest(f"{path}.ownerReferences", "must be a list of objects")
    checked: dict[str, Any] = value
    return checked


@dataclass
class AdmissionInput:
    """One request: operation, objects and who asks. ``object`` is None for DELETE."""

    operation: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    kind: kinds.GroupVersionKind
    resource: kinds.GroupVersionResource
    sub_resource: str = ""
    name: str = ""
    namespace: str = ""
    user_info: dict[str, Any] = field(default_factory=dict)
    dry_run: bool = False
    uid: str = ""
    options: Any = None
    namespace_object: dict[str, Any] | None = None
    input_size: int | None = None  # bytes of the encoded request, when known

    @classmethod
    def from_object(
        cls,
        obj: dict[str, Any] | None,
        operation: str = "CREATE",
        *,
        old_object: dict[str, Any] | None = None,
        user_info: dict[str, Any] | None = None,
        namespace_object: dict[str, Any] | None = None,
        sub_resource: str = "",
        dry_run: bool = False,
        kind_table: kinds.KindTable = kinds.BUILTIN,
    ) -> AdmissionInput:
        """A request for ``obj`` as the CLI and background scans build it (``kind_table`` names the
        resource of a custom kind)."""
        subject = obj if obj is not None else old_object or {}
        metadata = subject.get("metadata") or {}
        return cls(
            operation=operation,
            object=obj,
            old_object=old_object,
            kind=kinds.gvk_of(subject),
            resource=kind_table.gvr_of(subject),
            sub_resource=sub_resource,
            name=str(metadata.get("name", "")),
            namespace=str(metadata.get("namespace", "")),
            user_info=dict(user_info or {}),
            dry_run=dry_run,
            namespace_object=namespace_object,
        )

    @classmethod
    def from_admission_request(
        cls, request: dict[str, Any], *, namespace_object: dict[str, Any] | None = None, input_size: int | None = None
    ) -> AdmissionInput:
        """From ``AdmissionReview.request`` (admission.k8s.io v1/v1beta1); raises
        :class:`InvalidRequest` naming the first field of the wrong shape."""
        if type(request) is dict and _well_formed(request):
            return cls._from_well_formed(request, namespace_object, input_size)
        if not isinstance(request, dict):
            raise InvalidRequest("request", "must be an object")
        uid = _optional(request, "uid", str, "a string", "request")
        operation = request.get("operation")
        if operation not in OPERATIONS:
            raise InvalidRequest("request.operation", f"must be one of {', '.join(OPERATIONS)}")
        kind = _group_version(request, "kind", "kind", required=True)
        resource = _group_version(request, "resource", "resource", required=True)
        _group_version(request, "requestKind", "kind", required=False)
        _group_version(request, "requestResource", "resource", required=False)
        strings = {name: _optional(request, name, str, "a string", "request") or "" for name in _REQUEST_STRINGS}
        user_info = _user_info(request)
        obj, old = _object(request, "object"), _object(request, "oldObject")
        if obj is None and old is None:
            raise InvalidRequest("request.object", "is missing (the request carries neither object nor oldObject)")
        dry_run = _optional(request, "dryRun", bool, "a boolean", "request")  # "false" is not a dry run
        options = _optional(request, "options", dict, "an object", "request")
        return cls(
            operation=operation,
            object=obj,
            old_object=old,
            kind=kinds.GroupVersionKind(kind.get("group") or "", kind.get("version") or "", kind.get("kind") or ""),
            resource=kinds.GroupVersionResource(
                resource.get("group") or "", resource.get("version") or "", resource.get("resource") or ""
            ),
            sub_resource=strings["subResource"],
            name=strings["name"],
            namespace=strings["namespace"],
            user_info=user_info,
            dry_run=dry_run is True,
            uid=uid or "",
            options=options,
            namespace_object=namespace_object,
            input_size=input_size,
        )

    @classmethod
    def _from_well_formed(
        cls, request: dict[str, Any], namespace_object: dict[str, Any] | None, input_size: int | None
    ) -> AdmissionInput:
        """:meth:`from_admission_request` of a request :func:`_well_formed` accepted."""
        get = request.get
        kind, resource, user = request["kind"], request["resource"], get("userInfo")
        return cls(
            operation=request["operation"],
            object=get("object"),
            old_object=get("oldObject"),
            kind=kinds.GroupVersionKind(kind.get("group") or "", kind.get("version") or "", kind["kind"]),
            resource=kinds.GroupVersionResource(
                resource.get("group") or "", resource.get("version") or "", resource["resource"]
            ),
            sub_resource=get("subResource") or "",
            name=get("name") or "",
            namespace=get("namespace") or "",
            user_info=dict(user) if user is not None else {},
            dry_run=get("dryRun") is True,
            uid=request["uid"],
            options=get("options"),
            namespace_object=namespace_object,
            input_size=input_size,
        )

    @property
    def subject(self) -> dict[str, Any]:
        """The object the request is about (the old object for DELETE)."""
        return self.object if self.object is not None else (self.old_object or {})

    def cel_request(self) -> dict[str, Any]:
        """The AdmissionRequest CEL sees as ``request``; ``request.object`` is the incoming object."""
        return admission_request(
            operation=self.operation,
            object=self.object,
            old_object=self.old_object,
            kind={"group": self.kind.group, "version": self.kind.version, "kind": self.kind.kind},
            resource={
                "group": self.resource.group,
                "version": self.resource.version,
                "resource": self.resource.resource,
            },
            sub_resource=self.sub_resource,
            name=self.name,
            namespace=self.namespace,
            user_info=self.user_info,
            dry_run=self.dry_run,
            uid=self.uid,
            options=self.options,
        )
