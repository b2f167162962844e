"""The mutating half of kube-apiserver's admission chain, and writes that go through it (opt-in).

A real API server runs every CREATE/UPDATE through its admission plugins before storing the object
(``pkg/kubeapiserver/options/plugins.go`` ``AllOrderedPlugins``): the in-tree mutating plugins, then
``MutatingAdmissionPolicy``, then ``MutatingAdmissionWebhook``; then, on the final object,
``ValidatingAdmissionWebhook`` (:mod:`.validating_webhooks`; object validation is not modelled). The
whole mutating chain runs at most twice (``staging/src/k8s.io/apiserver/pkg/admission/reinvocation.go``):
when a plugin asks for it, every plugin runs again with ``IsReinvoke`` set and decides itself what to
re-run. Defaulting and the in-tree plugins are not modelled.

:class:`AdmissionChain` holds the plugins (:mod:`.native_map`, :mod:`.webhooks`, and the validating
:mod:`.validating_webhooks`) in the real order; :class:`ApiWrites` is the REST handlers' write path —
decode, admission, then the store — used by the HTTP handler and by the fake controllers
(:mod:`.controllers`), so an object a controller creates is admitted like one a user creates.

With no plugin enabled (the default) writes go straight to the store, exactly as before.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from . import errors
from .patches import APPLY_PATCH, apply_patch
from .resources import ResourceType
from .watch import Entry

if TYPE_CHECKING:
    from .store import Store

Obj = dict[str, Any]
MAX_CONFLICT_RETRIES = 5  # GuaranteedUpdate retries a write whose object changed while it was admitted


@dataclass
class Attributes:
    """One request as admission plugins see it (``admission.Attributes``); plugins replace ``obj``."""

    operation: str  # CREATE | UPDATE | DELETE | CONNECT
    rtype: ResourceType
    namespace: str
    name: str
    subresource: str
    obj: Any  # the object (None for DELETE; the options object, e.g. PodExecOptions, for CONNECT)
    old: Obj | None
    user: str | None
    dry_run: bool
    #: Set by a plugin whose change requires the chain to run again (``SetShouldReinvoke``).
    should_reinvoke: bool = False
    is_reinvoke: bool = False
    #: The request's audit annotations (``AddAnnotation``): what the audit event of the request carries.
    audit_annotations: dict[str, str] = field(default_factory=dict)
    uid: str = field(default_factory=lambda: str(uuid.uuid4()))

    def admission_request(self, matched: ResourceType | None = None) -> Obj:
        """The ``AdmissionReview.request`` for this attempt (a fresh uid per webhook call, as the
        dispatcher's ``CreateAdmissionObjects`` makes one per call). ``matched``: the equivalent resource a
        ``matchPolicy: Equivalent`` webhook matched (``kind``/``resource`` name it, ``requestKind``/
        ``requestResource`` the one requested; the caller converts the objects)."""
        rtype = self.rtype
        kind = {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}
        resource = {"group": rtype.group, "version": rtype.version, "resource": rtype.plural}
        target = matched or rtype
        request: Obj = {
            "uid": str(uuid.uuid4()),
            "kind": {"group": target.group, "version": target.version, "kind": target.kind},
            "resource": {"group": target.group, "version": target.version, "resource": target.plural},
            "requestKind": kind,
            "requestResource": resource,
            "name": self.name,
            "namespace": self.namespace,
            "operation": self.operation,
            "userInfo": {"username": self.user or "system:anonymous", "groups": ["system:authenticated"]},
            "object": self.obj,
            "oldObject": self.old,
            "dryRun": self.dry_run,
            "options": {"kind": _OPTIONS[self.operation], "apiVersion": "meta.k8s.io/v1"},
        }
        if self.operation == "CONNECT":  # the options object is the request's object (PodExecOptions ...)
            request["options"] = None
        if self.subresource:
            request["subResource"] = self.subresource
            request["requestSubResource"] = self.subresource
        return request


_OPTIONS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions", "CONNECT": ""}


class MutatingPlugin(Protocol):
    """One mutating admission plugin. ``admit`` replaces ``attrs.obj`` and raises :class:`ApiError`
    to reject; on the second pass (``attrs.is_reinvoke``) it re-runs what its own rules say."""

    name: str

    def admit(self, attrs: Attributes, state: dict[str, Any]) -> None: ...


class ValidatingPlugin(Protocol):
    """One validating admission plugin: sees the final object, may only reject (raise :class:`ApiError`)."""

    name: str

    def validate(self, attrs: Attributes) -> None: ...


class AdmissionChain:
    """The enabled mutating plugins, in kube-apiserver's order, run at most twice; then the validating
    plugins, once, on the final object."""

    def __init__(self) -> None:
        self.plugins: list[MutatingPlugin] = []
        self.validators: list[ValidatingPlugin] = []

    @property
    def active(self) -> bool:
        return bool(self.plugins or self.validators)

    def add_validator(self, plugin: ValidatingPlugin) -> None:
        self.validators.append(plugin)

    def validate(self, attrs: Attributes) -> None:
        """The validating phase (``ValidatingAdmissionWebhook``), after every mutation."""
        for plugin in self.validators:
            plugin.validate(attrs)

    def add(self, plugin: MutatingPlugin) -> None:
        """Enable a plugin; the chain keeps the real order (native MAP before webhooks)."""
        self.plugins.append(plugin)
        self.plugins.sort(key=lambda p: PLUGIN_ORDER.index(p.name))

    def plugin(self, name: str) -> MutatingPlugin | None:
        return next((p for p in self.plugins if p.name == name), None)

    def admit(self, attrs: Attributes) -> None:
        """Run the chain on ``attrs`` (``reinvocation.go`` ``reinvoker.Admit``)."""
        states: dict[str, dict[str, Any]] = {p.name: {} for p in self.plugins}
        for plugin in self.plugins:
            plugin.admit(attrs, states[plugin.name])
        if attrs.should_reinvoke:
            attrs.is_reinvoke = True
            for plugin in self.plugins:
                plugin.admit(attrs, states[plugin.name])


#: ``AllOrderedPlugins``, the mutating plugins this fake models (MAP before the webhooks).
PLUGIN_ORDER = ("MutatingAdmissionPolicy", "MutatingAdmissionWebhook")


def _set_namespace(rtype: ResourceType, obj: Obj, namespace: str | None) -> str:
    """The request namespace, written into the object before admission as the create handler does
    (``rest.EnsureObjectNamespaceMatchesRequestNamespace``)."""
    meta = obj.setdefault("metadata", {})
    if not rtype.namespaced:
        return ""
    ns = namespace or meta.get("namespace") or "default"
    if meta.get("namespace") not in (None, "", ns):
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    meta["namespace"] = ns
    return str(ns)


class ApiWrites:
    """The REST handlers' write path: admission (when enabled), then the store."""

    def __init__(self, store: Store, chain: AdmissionChain) -> None:
        self.store = store
        self.chain = chain

    def create(
        self, obj: Obj, rtype: ResourceType, namespace: str | None, *, user: str | None = None, dry_run: bool = False
    ) -> Entry:
        if not self.chain.active:
            return self.store.create_entry(obj, rtype, namespace, from_api=True, dry_run=dry_run)
        obj = copy.deepcopy(obj)
        obj.setdefault("apiVersion", rtype.api_version)
        obj.setdefault("kind", rtype.kind)
        ns = _set_namespace(rtype, obj, namespace)
        name = str((obj.get("metadata") or {}).get("name") or "")
        attrs = Attributes("CREATE", rtype, ns, name, "", obj, None, user, dry_run)
        self.chain.admit(attrs)
        self.chain.validate(attrs)
        return self.store.create_entry(attrs.obj, rtype, ns or None, from_api=True, dry_run=dry_run)

    def update(
        self,
        obj: Obj,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        *,
        subresource: str = "",
        user: str | None = None,
        dry_run: bool = False,
    ) -> Entry:
        if not self.chain.active:
            return self.store.update_entry(
                obj, rtype, namespace, name=name, subresource=subresource, dry_run=dry_run, from_api=True
            )
        old = self.store.get_entry(rtype, name, namespace)
        obj = copy.deepcopy(obj)
        ns = _set_namespace(rtype, obj, namespace)
        attrs = Attributes("UPDATE", rtype, ns, name, subresource, obj, old.copy(), user, dry_run)
        self.chain.admit(attrs)
        self.chain.validate(attrs)
        return self.store.update_entry(
            attrs.obj, rtype, ns or None, name=name, subresource=subresource, dry_run=dry_run, from_api=True
        )

    def admit_delete(
        self, rtype: ResourceType, namespace: str | None, name: str, *, user: str | None = None, dry_run: bool = False
    ) -> None:
        """A DELETE through admission before the store deletes (``object`` null, ``oldObject`` the stored
        object): webhooks registered for DELETE are called and may deny it; no patch applies."""
        if not self.chain.active:
            return
        old = self.store.get_entry(rtype, name, namespace)
        attrs = Attributes("DELETE", rtype, namespace or "", name, "", None, old.copy(), user, dry_run)
        self.chain.admit(attrs)
        self.chain.validate(attrs)

    def admit_connect(
        self, rtype: ResourceType, namespace: str | None, name: str, subresource: str, options: Obj, *, user: str | None
    ) -> None:
        """A CONNECT (``pods/exec``, ``pods/attach``, ``pods/portforward``, ``*/proxy``): admitted with the
        options object (e.g. ``PodExecOptions``) as ``object``; webhooks may deny it."""
        if not self.chain.active:
            return
        self.store.get_entry(rtype, name, namespace)  # 404 for a missing object, before admission
        attrs = Attributes("CONNECT", rtype, namespace or "", name, subresource, options, None, user, False)
        self.chain.admit(attrs)
        self.chain.validate(attrs)

    def patch(
        self,
        rtype: ResourceType,
        name: str,
        patch: Any,
        content_type: str,
        namespace: str | None,
        *,
        subresource: str = "",
        user: str | None = None,
        dry_run: bool = False,
    ) -> Entry:
        """A PATCH: the patched object is admitted as an UPDATE (retried when the object changed meanwhile,
        as ``GuaranteedUpdate`` does)."""
        if not self.chain.active:
            return self.store.patch_entry(
                rtype, name, patch, content_type, namespace, subresource=subresource, dry_run=dry_run
            )
        for _ in range(MAX_CONFLICT_RETRIES):
            if not self.store.exists(rtype, name, namespace) and content_type == APPLY_PATCH and not subresource:
                return self.store.patch_entry(rtype, name, patch, content_type, namespace, dry_run=dry_run)
            old = self.store.get_entry(rtype, name, namespace)
            patched = apply_patch(content_type, old.copy_as(rtype), patch)  # as the request's version serves it
            meta = patched.setdefault("metadata", {})
            pinned_by_client = meta.get("resourceVersion") not in (None, "", old.obj["metadata"]["resourceVersion"])
            if pinned_by_client:
                raise errors.conflict(rtype.plural, rtype.group, name)
            meta["resourceVersion"] = old.obj["metadata"]["resourceVersion"]
            ns = _set_namespace(rtype, patched, namespace)
            attrs = Attributes("UPDATE", rtype, ns, name, subresource, patched, old.copy_as(rtype), user, dry_run)
            self.chain.admit(attrs)
            self.chain.validate(attrs)
            attrs.obj.setdefault("metadata", {})["resourceVersion"] = old.obj["metadata"]["resourceVersion"]
            try:
                return self.store.update_entry(
                    attrs.obj, rtype, ns or None, name=name, subresource=subresource, dry_run=dry_run
                )
            except errors.ApiError as ex:
                if ex.code != 409:
                    raise
        raise errors.conflict(rtype.plural, rtype.group, name)
