"""``MutatingAdmissionPolicy``: the API server's native MAP plugin, evaluated with celmut's own MAP runtime.

kube-apiserver ≥ 1.32 (GA in 1.36, ``admissionregistration.k8s.io/v1``) runs the stored
MutatingAdmissionPolicies and their bindings itself, before the mutating webhooks
(``pkg/kubeapiserver/options/plugins.go``; ``staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/mutating/``).
This plugin does the same on CREATE/UPDATE/CONNECT (never DELETE) with the policies and bindings in the
store, compiled by celmut's pipeline and evaluated by the engine ``celmut.service.assembly.assemble_engine``
builds — the MAP semantics celmut already implements (per-kind failurePolicy, JSONPatch/ApplyConfiguration,
params through the store).

Reinvocation follows ``mutating/dispatcher.go``: an invocation that changes the object asks the chain
for a second pass and marks the ``IfNeeded`` policies invoked before it; at the second pass the marked
policies run again, and all invoked ``IfNeeded`` ones when another plugin (a webhook) changed the object
since this plugin's last output. (celmut's engine re-runs ``IfNeeded`` policies itself; here that is
switched off so the chain decides, as in the API server.)

The API server also compiles a MutatingAdmissionPolicy when it is written, in its own CEL environment,
and refuses one that does not compile with a 422 (``pkg/registry/admissionregistration/
mutatingadmissionpolicy/strategy.go`` → validation); this plugin does the same with celmut's Kubernetes
CEL profile, so a policy using a Kyverno-only library (``resource.Get``) never reaches storage.

Reusable on its own: ``NativeAdmissionPolicies(store).mutate(obj, operation=...)`` admits one object.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from celmut import cel
from celmut.cel.lookups import LookupFailed, ResourceNotFound
from celmut.compile.pipeline import Compilation, compile_documents
from celmut.runtime import AdmissionEngine, AdmissionInput
from celmut.service.assembly import EngineSettings, assemble_engine
from celmut.sources.documents import Document

from . import errors
from .admission import Attributes

if TYPE_CHECKING:
    from .store import Store

Obj = dict[str, Any]
NAME = "MutatingAdmissionPolicy"
KINDS = (
    ("admissionregistration.k8s.io/v1/mutatingadmissionpolicies", "MutatingAdmissionPolicy"),
    ("admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding"),
)


class StoreLookup:
    """celmut's ``ResourceLookup`` over the fake store, in process (namespaces and MAP params)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _path(self, api_version: str, resource: str) -> str:
        return f"{api_version}/{resource}"

    def get(self, api_version: str, resource: str, namespace: str, name: str) -> dict[str, Any]:
        try:
            return self.store.get(self._path(api_version, resource), name, namespace or None)
        except errors.ApiError as ex:
            raise ResourceNotFound(ex.message) from None

    def list(
        self, api_version: str, resource: str, namespace: str, labels: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        selector = ",".join(f"{k}={v}" for k, v in (labels or {}).items()) or None
        items = self.store.list(self._path(api_version, resource), namespace or None, label_selector=selector)
        return {"apiVersion": api_version, "kind": "List", "metadata": {}, "items": items}

    def post(self, api_version: str, resource: str, namespace: str, data: dict[str, Any]) -> dict[str, Any]:
        raise LookupFailed("the native MAP plugin does not create objects")

    def resource_for_kind(self, api_version: str, kind: str) -> str | None:
        rtype = self.store.registry.by_kind(api_version, kind)
        return rtype.plural if rtype is not None else None


class NativeAdmissionPolicies:
    """The ``MutatingAdmissionPolicy`` admission plugin over the MAPs and bindings in a store."""

    name = NAME

    def __init__(self, store: Store) -> None:
        self.store = store
        self.lookup = StoreLookup(store)
        self._key: object = None
        self._compilation: Compilation | None = None
        self._if_needed: set[str] = set()
        self.invocations = 0  # how many requests a policy matched (for tests)

    # -- the stored policies, compiled once per change --------------------------------------------------
    def _documents(self) -> list[Document]:
        documents = []
        for path, kind in KINDS:
            for obj in self.store.list(path):
                documents.append(Document(f"fakekube:{kind}/{obj['metadata']['name']}", 0, obj))
        return documents

    def compilation(self) -> Compilation:
        """The stored MAPs compiled (a MAP the pipeline refuses is left out, as the API server's 422 would
        have kept it out of storage)."""
        documents = self._documents()
        key = tuple((d.path, d.content["metadata"].get("resourceVersion")) for d in documents)
        if key != self._key or self._compilation is None:
            compilation = compile_documents(documents)
            policies = [
                dataclasses.replace(p, reinvocation_policy="Never")  # the chain reinvokes, not the engine
                for p in compilation.compiled.policies
                if p.kind == "MutatingAdmissionPolicy"
            ]
            compiled = dataclasses.replace(compilation.compiled, policies=policies)
            self._compilation = dataclasses.replace(compilation, compiled=compiled)
            self._if_needed = {
                p.display_name for p in compilation.compiled.policies if p.reinvocation_policy == "IfNeeded"
            }
            self._key = key
        return self._compilation

    def _engine(self, only: set[str] | None = None) -> AdmissionEngine:
        compilation = self.compilation()
        if only is not None:
            kept = [p for p in compilation.compiled.policies if p.display_name in only]
            compilation = dataclasses.replace(
                compilation, compiled=dataclasses.replace(compilation.compiled, policies=kept)
            )
        settings = EngineSettings(services=cel.Services(resources=self.lookup), timeout_seconds=None)
        return assemble_engine(compilation, settings)

    # -- evaluation -------------------------------------------------------------------------------------
    def _run(self, attrs: Attributes, only: set[str] | None = None) -> list[tuple[str, bool]]:
        """Admit ``attrs.obj``; (policy, changed the object) per invocation, in order."""
        namespace_object = None
        if attrs.namespace:
            try:
                namespace_object = self.store.get("namespaces", attrs.namespace)
            except errors.ApiError:
                namespace_object = None
        request = AdmissionInput.from_admission_request(attrs.admission_request(), namespace_object=namespace_object)
        result = self._engine(only).admit(request)
        if not result.allowed:
            raise errors.ApiError(403, result.message or "admission request denied by policy", "Invalid")
        if result.object is not None:
            attrs.obj = json.loads(json.dumps(result.object))
        invoked = [(o.policy, o.status == "applied") for o in result.outcomes if o.matched]
        self.invocations += len(invoked)
        return invoked

    def validate(self, attrs: Attributes) -> None:
        """Refuse a MutatingAdmissionPolicy whose expressions do not compile (422, one cause per field)."""
        if attrs.rtype.kind != "MutatingAdmissionPolicy" or attrs.subresource or attrs.is_reinvoke or attrs.obj is None:
            return
        from celmut.compile.policies import compile_admission_policy
        from celmut.policy.admission_policy import parse_admission_policy
        from celmut.policy.errors import FieldError, PolicyError

        found: list[FieldError] = []
        model = parse_admission_policy(attrs.obj, attrs.name, found)
        if not found:
            try:
                compile_admission_policy(model, [])
            except PolicyError as ex:
                found = list(ex.errors)
        if found:
            causes = [("FieldValueInvalid", f.path, f"Invalid value: {f.message}") for f in found]
            raise errors.invalid(attrs.rtype.kind, attrs.rtype.group, attrs.name, causes)

    def admit(self, attrs: Attributes, state: dict[str, Any]) -> None:
        self.validate(attrs)
        if attrs.operation not in ("CREATE", "UPDATE", "CONNECT") or not self._documents():
            return
        self.compilation()
        if not attrs.is_reinvoke:
            invoked = self._run(attrs)
            reinvocable: list[str] = []
            marked: set[str] = set()
            for policy, changed in invoked:
                if changed:
                    marked.update(reinvocable)  # RequireReinvokingPreviouslyInvokedPlugins
                    attrs.should_reinvoke = True
                if policy in self._if_needed:
                    reinvocable.append(policy)
            state.update(invoked_if_needed=set(reinvocable), marked=marked, last_output=attrs.obj)
            return
        marked = set(state.get("marked") or ())
        if attrs.obj != state.get("last_output"):
            marked |= set(state.get("invoked_if_needed") or ())
        if marked:
            self._run(attrs, only=marked)

    def mutate(self, obj: Obj, *, operation: str = "CREATE", old: Obj | None = None, user: str | None = None) -> Obj:
        """Admit one object through the stored MAPs alone (both passes); the result."""
        rtype = self.store.registry.by_kind(str(obj.get("apiVersion")), str(obj.get("kind")))
        if rtype is None:
            raise errors.bad_request(f"no resource serves {obj.get('apiVersion')} {obj.get('kind')}")
        meta = obj.get("metadata") or {}
        attrs = Attributes(
            operation, rtype, str(meta.get("namespace") or ""), str(meta.get("name") or ""), "", obj, old, user, False
        )
        state: dict[str, Any] = {}
        self.admit(attrs, state)
        if attrs.should_reinvoke:
            attrs.is_reinvoke = True
            self.admit(attrs, state)
        return attrs.obj
