"""The admission request as the runtime sees it, from an AdmissionReview or from a bare object."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from celmut import kinds
from celmut.cel.activation import admission_request


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
        """From ``AdmissionReview.request`` (admission.k8s.io v1/v1beta1)."""
        kind = request.get("kind") or {}
        resource = request.get("resource") or {}
        obj, old = request.get("object"), request.get("oldObject")
        return cls(
            operation=str(request.get("operation", "")),
            object=obj if isinstance(obj, dict) else None,
            old_object=old if isinstance(old, dict) else None,
            kind=kinds.GroupVersionKind(kind.get("group", ""), kind.get("version", ""), kind.get("kind", "")),
            resource=kinds.GroupVersionResource(
                resource.get("group", ""), resource.get("version", ""), resource.get("resource", "")
            ),
            sub_resource=str(request.get("subResource") or ""),
            name=str(request.get("name") or ""),
            namespace=str(request.get("namespace") or ""),
            user_info=dict(request.get("userInfo") or {}),
            dry_run=bool(request.get("dryRun")),
            uid=str(request.get("uid") or ""),
            options=request.get("options"),
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
