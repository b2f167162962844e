"""The in-memory object store behind the fake API server.

Objects are keyed by (group, version, plural, namespace, name). One global, monotonically increasing
resourceVersion is stamped on every write; every write is also appended to a bounded event history that
feeds watches, consistent paginated lists and ``resourceVersionMatch=Exact`` lists (older states are
rebuilt by undoing history). Reading before the history window raises 410 Expired, as the real server does.

The write semantics follow the generic registry of the real server: uid/creationTimestamp/generation on
create, ``generateName``, 409 AlreadyExists / Conflict, a write that changes nothing is not committed (no
new resourceVersion, no event), ``generation`` is bumped when anything outside metadata/status changes, the
main resource ignores ``.status`` of kinds with a status subresource and ``/status`` changes only ``.status``,
and objects with finalizers are only marked with ``deletionTimestamp`` until their finalizers are gone.

In-process use (test setup): ``store.create(obj)``, ``store.get("pods", "x", "default")``,
``store.list("pods", "default", label_selector="app=x")``, ``store.update(obj)``, ``store.patch(...)``,
``store.delete("pods", "x", "default")``; they return private copies and raise :class:`ApiError`.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

import orjson

from . import errors, graceful
from .apply import server_side_apply
from .defaults import admission_policy_defaults, crd_status, now, qos_class
from .history import History, key_of
from .patches import APPLY_PATCH, MERGE_PATCH, AppliedConfig, apply_patch
from .resize import kept_by_resize
from .resources import CRD_GVR, Registry, ResourceType
from .selectors import combine, parse_field_selector, parse_label_selector
from .validation import check_decodable, validate_create, validate_update
from .watch import ADDED, DELETED, MODIFIED, Entry

Obj = dict[str, Any]
_GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def _spec_part(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


class Store(History):
    """The object store: CRUD with the real server's semantics on top of :class:`History`."""

    def __init__(self, registry: Registry | None = None, history_size: int = 50_000, strict_namespaces: bool = False):
        super().__init__(history_size)
        self.registry = registry or Registry()
        self.strict_namespaces = strict_namespaces
        #: Opt-in (``FakeApiServer(garbage_collection=True)``): the garbage collector's background deletion.
        self.garbage_collection = False
        for ns in DEFAULT_NAMESPACES:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    # -- basics ------------------------------------------------------------------------------------
    def resolve(self, resource: str | ResourceType) -> ResourceType:
        """A resource type from a name such as ``pods``/``deployments.apps``/``apps/v1/deployments``."""
        if isinstance(resource, ResourceType):
            return resource
        try:
            return self.registry.resolve(resource)
        except KeyError:
            raise errors.unknown_resource() from None

    def _type_of(self, obj: Obj, resource: str | ResourceType | None) -> ResourceType:
        if resource is not None:
            return self.resolve(resource)
        rtype = self.registry.by_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if rtype is None:
            raise errors.bad_request(f"no resource serves apiVersion={obj.get('apiVersion')} kind={obj.get('kind')}")
        return rtype

    @staticmethod
    def _namespace(rtype: ResourceType, obj: Obj, namespace: str | None) -> str:
        if not rtype.namespaced:
            return ""
        return namespace or (obj.get("metadata") or {}).get("namespace") or "default"

    def _canonical(self, rtype: ResourceType, obj: Obj) -> Obj:
        if obj.get("apiVersion", rtype.api_version) != rtype.api_version or obj.get("kind", rtype.kind) != rtype.kind:
            raise errors.bad_request(
                f"the API version in the data ({obj.get('apiVersion')}) does not match the expected API version "
                f"({rtype.api_version}) or kind {obj.get('kind')} is not {rtype.kind}"
            )
        rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        canonical = {"apiVersion": rtype.api_version, "kind": rtype.kind, **rest}
        if rtype.builtin and rtype.kind == "MutatingAdmissionPolicy":
            return admission_policy_defaults(canonical)
        return canonical

    # -- reads -------------------------------------------------------------------------------------
    def get_entry(self, resource: str | ResourceType, name: str, namespace: str | None = None) -> Entry:
        """The stored entry (404 when absent)."""
        rtype = self.resolve(resource)
        ns = (namespace or "default") if rtype.namespaced else ""
        entry = self._objects.get(rtype.storage_key, {}).get((ns, name))
        if entry is None:
            raise errors.not_found(rtype.plural, rtype.group, name)
        return entry

    def exists(self, resource: str | ResourceType, name: str, namespace: str | None = None) -> bool:
        """Whether the object is stored."""
        rtype = self.resolve(resource)
        return (((namespace or "default") if rtype.namespaced else ""), name) in self._objects.get(
            rtype.storage_key, {}
        )

    def get(self, resource: str | ResourceType, name: str, namespace: str | None = None) -> Obj:
        """A copy of a stored object (404 when absent), as ``resource``'s version serves it."""
        rtype = self.resolve(resource)
        copied: Obj = orjson.loads(self.get_entry(rtype, name, namespace).raw_as(rtype))
        return copied

    def list(
        self,
        resource: str | ResourceType,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[Obj]:
        """Copies of the stored objects of a type (all namespaces when ``namespace`` is None)."""
        rtype = self.resolve(resource)
        pred = combine(parse_label_selector(label_selector), parse_field_selector(field_selector, rtype.kind))
        ns = namespace if rtype.namespaced else None
        return [orjson.loads(e.raw_as(rtype)) for e in self.list_entries(rtype, ns, pred).entries]

    # -- create ------------------------------------------------------------------------------------
    def create_entry(
        self,
        obj: Obj,
        resource: str | ResourceType | None = None,
        namespace: str | None = None,
        *,
        from_api: bool = False,
        dry_run: bool = False,
    ) -> Entry:
        """Create an object.

        ``from_api=True`` behaves as a create through the API: ``.status`` of kinds with a status subresource
        is dropped (pods get ``phase: Pending``) and a set ``metadata.resourceVersion`` is a 400."""
        check_decodable(obj)
        rtype = self._type_of(obj, resource)
        obj = self._canonical(rtype, orjson.loads(orjson.dumps(obj)))
        meta = obj.setdefault("metadata", {})
        ns = self._namespace(rtype, obj, namespace)
        if rtype.namespaced:
            if meta.get("namespace") not in (None, "", ns):
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        with self._lock:
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + "".join(random.choices(_GENERATE_CHARS, k=5))
            validate_create(rtype, obj)
            if from_api and meta.get("resourceVersion"):
                raise errors.bad_request("resourceVersion should not be set on objects to be created")
            name = meta["name"]
            bucket = self._objects.setdefault(rtype.storage_key, {})
            if (ns, name) in bucket:
                raise errors.already_exists(rtype.plural, rtype.group, name)
            if (
                rtype.namespaced
                and self.strict_namespaces
                and ("", ns) not in self._objects.get(("", "v1", "namespaces"), {})
            ):
                raise errors.not_found("namespaces", "", ns)
            for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
                meta.pop(field, None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now()
            meta["generation"] = 1
            if from_api and "status" in rtype.subresources:
                obj.pop("status", None)
                if rtype.builtin and rtype.kind == "Pod":
                    obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj)}
            if rtype.gvr == CRD_GVR:
                obj["status"] = crd_status(obj)
            if rtype.builtin and rtype.kind == "Namespace":
                meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = name
                obj.setdefault("spec", {"finalizers": ["kubernetes"]})
                obj.setdefault("status", {"phase": "Active"})
            if dry_run:
                return Entry.of(obj)
            if rtype.gvr == CRD_GVR:
                self.registry.register_crd(obj)
            return self._commit(rtype, ns, name, obj, ADDED, None)

    def create(self, obj: Obj, resource: str | ResourceType | None = None, namespace: str | None = None) -> Obj:
        """Create an object (its type from ``resource`` or its apiVersion/kind); returns the stored copy."""
        return self.create_entry(obj, resource, namespace).copy()

    # -- update / patch ----------------------------------------------------------------------------
    def _update_locked(self, rtype: ResourceType, old: Entry, new: Obj, subresource: str, dry_run: bool) -> Entry:
        check_decodable(new)
        new = self._canonical(rtype, orjson.loads(orjson.dumps(new)))
        meta = new.setdefault("metadata", {})
        old_meta = old.obj["metadata"]
        if meta.get("uid") not in (None, "", old_meta["uid"]):
            raise errors.conflict(
                rtype.plural,
                rtype.group,
                old_meta["name"],
                f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: {old_meta['uid']}",
            )
        if meta.get("name", old_meta["name"]) != old_meta["name"]:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({old_meta['name']})"
            )
        if subresource == "resize" and rtype.builtin and rtype.kind == "Pod":
            new = kept_by_resize(old.obj, new)  # podResizeStrategy.PrepareForUpdate
            meta = new["metadata"]
        if subresource == "status":
            status = new.get("status")
            new = old.copy()
            meta = new["metadata"]
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
        elif "status" in rtype.subresources:
            if "status" in old.obj:
                new["status"] = orjson.loads(orjson.dumps(old.obj["status"]))
            else:
                new.pop("status", None)
        for field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        meta["name"] = old_meta["name"]
        if rtype.namespaced:
            meta["namespace"] = old_meta["namespace"]
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if _spec_part(new) != _spec_part(old.obj):
            meta["generation"] = int(old_meta.get("generation", 0)) + 1
        if rtype.gvr == CRD_GVR:
            new["status"] = crd_status(new, old.obj.get("status"))
            # apiextensions validation.go ValidateCustomResourceDefinitionStoredVersions: a version objects
            # may still be stored at cannot leave spec.versions
            listed = {v.get("name") for v in (new.get("spec") or {}).get("versions") or []}
            for index, stored in enumerate(new["status"]["storedVersions"]):
                if stored not in listed:
                    raise errors.ApiError(
                        422,
                        f'CustomResourceDefinition.apiextensions.k8s.io "{old_meta["name"]}" is invalid: '
                        f'status.storedVersions[{index}]: Invalid value: "{stored}": must appear in spec.versions',
                        "Invalid",
                    )
        validate_update(rtype, old.obj, new, subresource)
        if new == old.obj:
            return old
        if dry_run:
            return Entry.of(new)
        ns, name = key_of(old)
        # generic registry ShouldDeleteDuringUpdate: the last finalizer is gone and no grace period runs
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and not meta.get("deletionGracePeriodSeconds"):
            return self._delete_locked(rtype, old, new)
        if rtype.gvr == CRD_GVR:
            self.registry.register_crd(new)
        return self._commit(rtype, ns, name, new, MODIFIED, old)

    def update_entry(
        self,
        obj: Obj,
        resource: str | ResourceType | None = None,
        namespace: str | None = None,
        *,
        name: str | None = None,
        subresource: str = "",
        dry_run: bool = False,
        from_api: bool = False,
    ) -> Entry:
        """Replace an object (PUT); a set ``metadata.resourceVersion`` must match the stored one (409).

        With ``from_api=True`` custom resources and CRDs, which do not allow unconditional updates on the
        real server, must carry a resourceVersion (422 otherwise)."""
        check_decodable(obj)
        rtype = self._type_of(obj, resource)
        meta = obj.get("metadata") or {}
        ns = self._namespace(rtype, obj, namespace)
        if name is not None and meta.get("name") != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        if rtype.namespaced and meta.get("namespace") not in (None, "", ns):
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        with self._lock:
            old = self.get_entry(rtype, meta.get("name") or "", ns)
            if from_api and not meta.get("resourceVersion") and (not rtype.builtin or rtype.gvr == CRD_GVR):
                raise errors.invalid(
                    rtype.kind,
                    rtype.group,
                    meta.get("name") or "",
                    [
                        (
                            "FieldValueInvalid",
                            "metadata.resourceVersion",
                            "Invalid value: 0x0: must be specified for an update",
                        )
                    ],
                )
            if meta.get("resourceVersion") not in (None, "", old.obj["metadata"]["resourceVersion"]):
                raise errors.conflict(rtype.plural, rtype.group, meta["name"])
            return self._update_locked(rtype, old, obj, subresource, dry_run)

    def update(self, obj: Obj, resource: str | ResourceType | None = None, namespace: str | None = None) -> Obj:
        """Replace an object; returns the stored copy."""
        return self.update_entry(obj, resource, namespace).copy()

    def update_status(self, obj: Obj, resource: str | ResourceType | None = None, namespace: str | None = None) -> Obj:
        """Replace an object's ``.status`` (as ``PUT .../status``); returns the stored copy."""
        return self.update_entry(obj, resource, namespace, subresource="status").copy()

    def patch_entry(
        self,
        resource: str | ResourceType,
        name: str,
        patch: Any,
        patch_type: str = MERGE_PATCH,
        namespace: str | None = None,
        *,
        subresource: str = "",
        dry_run: bool = False,
    ) -> Entry:
        """Patch an object; a patched ``metadata.resourceVersion`` differing from the stored one is a 409."""
        rtype = self.resolve(resource)
        ns = (namespace or "default") if rtype.namespaced else ""
        with self._lock:
            old = self._objects.get(rtype.storage_key, {}).get((ns, name))
            if old is None:
                if patch_type == APPLY_PATCH and not subresource:
                    applied = patch.obj if isinstance(patch, AppliedConfig) else patch
                    if not isinstance(applied, dict) or (applied.get("metadata") or {}).get("name") != name:
                        raise errors.bad_request("the name of the applied object does not match the name on the URL")
                    if isinstance(patch, AppliedConfig):
                        applied = server_side_apply(None, applied, patch.manager, patch.force)
                    return self.create_entry(applied, rtype, ns or None, from_api=True, dry_run=dry_run)
                raise errors.not_found(rtype.plural, rtype.group, name)
            # the patch applies to the object as the request's version serves it (a custom object stored
            # through another version of its CRD: conversion None, only apiVersion changes), as on the API server
            patched = apply_patch(patch_type, old.copy_as(rtype), patch)
            check_decodable(patched)
            rv = (patched.get("metadata") or {}).get("resourceVersion")
            if rv not in (None, "", old.obj["metadata"]["resourceVersion"]):
                raise errors.conflict(rtype.plural, rtype.group, name)
            return self._update_locked(rtype, old, patched, subresource, dry_run)

    def patch(
        self,
        resource: str | ResourceType,
        name: str,
        patch: Any,
        patch_type: str = MERGE_PATCH,
        namespace: str | None = None,
        subresource: str = "",
    ) -> Obj:
        """Patch an object (merge patch by default); returns the stored copy."""
        return self.patch_entry(resource, name, patch, patch_type, namespace, subresource=subresource).copy()

    # -- delete ------------------------------------------------------------------------------------
    def _delete_locked(self, rtype: ResourceType, old: Entry, final: Obj | None = None) -> Entry:
        ns, name = key_of(old)
        obj = final if final is not None else old.copy()
        entry = self._commit(rtype, ns, name, obj, DELETED, old)
        if rtype.gvr == CRD_GVR:
            for gone_type in self.registry.unregister_crd(name):
                for other in list(self._objects.get(gone_type.storage_key, {}).values()):
                    self._delete_locked(gone_type, other)
        if rtype.builtin and rtype.kind == "Namespace":
            for key, bucket in list(self._objects.items()):
                other_type = self.registry.by_storage_key(key)
                for other in [e for k, e in bucket.items() if k[0] == name]:
                    if other_type is not None:
                        self._delete_locked(other_type, other)
        if self.garbage_collection:
            self._collect_dependents(str(old.obj["metadata"].get("uid")))
        return entry

    # -- garbage collection (opt-in) -----------------------------------------------------------------
    def _live_uids(self) -> set[str]:
        return {str(e.obj["metadata"].get("uid")) for bucket in self._objects.values() for e in bucket.values()}

    def _collect_dependents(self, uid: str) -> None:
        """The garbage collector after an owner is deleted, with background propagation
        (``pkg/controller/garbagecollector/garbagecollector.go`` ``attemptToDeleteItem``): a dependent
        none of whose owners remains is deleted (finalizers respected: it is only marked); one with
        other live owners loses the reference to the deleted one. An owner reference whose apiVersion
        and kind no served type has cannot be verified (``isDangling``: ``gc.apiResource`` fails and
        the item is requeued), so its dependent stays."""
        live = self._live_uids()
        for key, bucket in list(self._objects.items()):
            dependent_type = self.registry.by_storage_key(key)
            if dependent_type is None:
                continue
            for entry in list(bucket.values()):
                meta = entry.obj["metadata"]
                references = meta.get("ownerReferences") or []
                if not any(r.get("uid") == uid for r in references):
                    continue
                if any(
                    self.registry.by_kind(str(r.get("apiVersion", "")), str(r.get("kind", ""))) is None
                    for r in references
                    if r.get("uid") == uid
                ):
                    continue
                remaining = [r for r in references if r.get("uid") != uid and r.get("uid") in live]
                updated = entry.copy()
                if remaining:
                    updated["metadata"]["ownerReferences"] = remaining
                    self._commit(dependent_type, *key_of(entry), updated, MODIFIED, entry)
                elif meta.get("finalizers"):
                    if not meta.get("deletionTimestamp"):
                        updated["metadata"]["deletionTimestamp"] = now()
                        self._commit(dependent_type, *key_of(entry), updated, MODIFIED, entry)
                else:
                    self._delete_locked(dependent_type, entry)

    def delete_entry(
        self,
        resource: str | ResourceType,
        name: str,
        namespace: str | None = None,
        *,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
        grace_period_seconds: int | None = None,
    ) -> tuple[Entry, bool]:
        """Delete an object: returns (entry, deleted_now); with finalizers it is only marked for deletion,
        and a pod bound to a node only once its grace period is 0 (:mod:`.graceful`: Terminating until then)."""
        rtype = self.resolve(resource)
        with self._lock:
            old = self.get_entry(rtype, name, namespace)
            meta = old.obj["metadata"]
            pre = preconditions or {}
            if pre.get("uid") not in (None, "", meta["uid"]):
                raise errors.conflict(
                    rtype.plural,
                    rtype.group,
                    name,
                    f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta['uid']}",
                )
            if pre.get("resourceVersion") not in (None, "", meta["resourceVersion"]):
                raise errors.conflict(
                    rtype.plural,
                    rtype.group,
                    name,
                    f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                    f"ResourceVersion in object meta: {meta['resourceVersion']}",
                )
            if rtype.builtin and rtype.kind == "Pod":
                period = graceful.grace_period(old.obj, grace_period_seconds)
                if period > 0:
                    marked = graceful.marked_terminating(old.copy(), period)
                    if marked is None:
                        return old, False
                    if dry_run:
                        return Entry.of(marked), False
                    return self._commit(rtype, *key_of(old), marked, MODIFIED, old), False
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp"):
                    return old, False
                marked = old.copy()
                marked["metadata"]["deletionTimestamp"] = now()
                marked["metadata"]["deletionGracePeriodSeconds"] = 0
                if dry_run:
                    return Entry.of(marked), False
                return self._commit(rtype, *key_of(old), marked, MODIFIED, old), False
            if dry_run:
                return old, True
            return self._delete_locked(rtype, old), True

    def delete(
        self, resource: str | ResourceType, name: str, namespace: str | None = None, *, grace_period: int | None = None
    ) -> Obj:
        """Delete an object (a pod bound to a node: gracefully, see :mod:`.graceful`); returns its last state."""
        return self.delete_entry(resource, name, namespace, grace_period_seconds=grace_period)[0].copy()
