"""Offline evaluation shared by ``celmut apply`` and ``celmut test``: a cluster made of files, an
engine over it, and the requests for each input resource.

Offline, CEL is bounded by its cost budget alone, not by the webhook's wall-clock deadline: what
``apply`` prints and whether a ``test`` passes never depends on how busy the machine is (the cost
budget already bounds the work, as kube-apiserver's does; the deadline exists to answer the API
server in time, and there is no API server waiting here).

``image.GetMetadata`` and ``globalContext.Get`` are served from files too
(:mod:`celmut.service.offline_context`): image data and global context values given by the caller
(a Kyverno Context file, a Test's mocks), and the ``GlobalContextEntry`` objects among the cluster
resources, whose data is read from those resources."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from celmut import cel, kinds
from celmut.cel.lookups import Authorizer, ResourceLookup
from celmut.compile.pipeline import Compilation, compile_documents
from celmut.policy import classify
from celmut.runtime import AdmissionEngine, AdmissionInput, AdmissionResult
from celmut.runtime.mutate_existing import TargetResult, mutate_existing
from celmut.service.assembly import EngineSettings, assemble_engine, crds_in, is_crd
from celmut.service.offline_context import (
    StaticGlobalContext,
    StaticImages,
    cluster_entry,
    is_global_context_entry,
)
from celmut.service.static_resources import StaticResources
from celmut.sources.documents import Document
from celmut.sources.kyverno_values import Values


def reference(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName") or "<unnamed>"
    return (
        f"{obj.get('kind', '?')} {meta['namespace']}/{name}"
        if meta.get("namespace")
        else f"{obj.get('kind', '?')} {name}"
    )


@dataclass
class ResourceRun:
    """One input resource through the admission engine, and the targets it triggered."""

    resource: dict[str, Any]
    result: AdmissionResult
    targets: list[TargetResult] = field(default_factory=list)


@dataclass
class OfflineCluster:
    """Policies + a file-backed cluster; admits resources in order, remembering what was admitted."""

    compilation: Compilation
    cluster: StaticResources
    engine: AdmissionEngine
    values: Values
    user_info: dict[str, Any] = field(default_factory=dict)  # request.userInfo of every request

    @classmethod
    def build(
        cls,
        policy_documents: Sequence[Document],
        cluster_documents: Iterable[Document] = (),
        values: Values | None = None,
        backend: str | None = None,
        read_errors: Sequence[Exception] = (),
        *,
        skip_unsupported: bool = False,
        images: StaticImages | None = None,
        global_context: StaticGlobalContext | None = None,
        user_info: dict[str, Any] | None = None,
        authorizer: Authorizer | None = None,
        lookups: ResourceLookup | None = None,
        timeout_seconds: float | None = None,
    ) -> OfflineCluster:
        """Compile the policies once, with the policy kinds (PolicyExceptions, …) found among the
        cluster resources, over a cluster made of those resources; ``read_errors`` (files that could
        not be read) lead the compilation's errors. A policy document celmut does not serve is an
        error, or with ``skip_unsupported`` only listed (``compilation.unsupported``).

        ``images`` and ``global_context`` serve ``image.GetMetadata`` and ``globalContext.Get``; the
        GlobalContextEntry objects among the cluster resources add entries (those given win, as the
        Kyverno CLI's mocks do). A GlobalContextEntry that cannot be served offline raises
        :class:`~celmut.errors.ConfigurationError` naming it. ``lookups`` (``apply --cluster``: a live,
        read-only cluster) serves ``resource.Get/List`` instead of the given resources.
        ``timeout_seconds`` adds the webhook's wall-clock deadline to each admission (``celmut
        playground``: a page must answer; the CLI keeps the cost budget alone, see the module)."""
        values = values or Values()
        objects: list[dict[str, Any]] = list(values.namespace_objects())
        policies = list(policy_documents)
        entries: list[Document] = []
        for document in cluster_documents:
            if not isinstance(document.content, dict):
                continue
            if classify(document.content) is not None:
                policies.append(document)
            else:
                objects.append(document.content)
                if is_global_context_entry(document.content):
                    entries.append(document)
        compilation = compile_documents(policies, backend, skip_unsupported=skip_unsupported)
        compilation.compiled.errors[:0] = read_errors
        crds = [o for o in objects if is_crd(o)] + crds_in(compilation.other)
        cluster = StaticResources(objects, kind_table=kinds.KindTable(crds))
        served = StaticGlobalContext()
        for document in entries:
            entry = cluster_entry(document.content, cluster, document.source)
            served.entries[entry.name] = entry
        served.entries.update(global_context.entries if global_context is not None else {})
        # Always served offline, as by the Kyverno CLI's fake provider: a missing image is an error
        # saying where image data goes, a missing entry is null.
        services = cel.Services(
            resources=lookups or cluster,
            images=images or StaticImages(),
            global_context=served,
            authorizer=authorizer,
        )
        settings = EngineSettings(services=services, timeout_seconds=timeout_seconds)
        engine = assemble_engine(compilation, settings, crds)
        return cls(compilation, cluster, engine, values, dict(user_info or {}))

    def request_for(self, resource: dict[str, Any], operation: str, old: dict[str, Any] | None) -> AdmissionInput:
        name = (resource.get("metadata") or {}).get("name", "")
        operation = self.values.operation(str(name), operation)
        request = AdmissionInput.from_object(
            resource if operation != "DELETE" else None,
            operation,
            old_object=old if operation != "DELETE" else resource,
            user_info=self.user_info,
            kind_table=self.engine.options.schemas.kinds,
        )
        sub = self.values.subresource_for(str(resource.get("kind", "")))
        if sub is not None:
            request.resource = kinds.GroupVersionResource(sub.group, sub.version, sub.parent_resource)
            request.sub_resource = sub.name
        return request

    def admit(
        self,
        resources: Sequence[dict[str, Any]],
        operation: str = "CREATE",
        old: Sequence[dict[str, Any] | None] = (),
        *,
        explain: bool = False,
    ) -> list[ResourceRun]:
        """Admit each resource in order; ``explain`` records each mutation's change (provenance)."""
        runs: list[ResourceRun] = []
        for index, resource in enumerate(resources):
            old_object = old[index] if index < len(old) else None
            request = self.request_for(resource, operation, old_object)
            result = self.engine.admit(request, explain=explain)
            run = ResourceRun(resource, result)
            if result.allowed and result.object is not None:
                self.cluster.keep(result.object)  # nothing changes an admitted object: no copy
            if result.allowed:
                run.targets = mutate_existing(self.engine, trigger=request)
                self._store(run.targets)
            runs.append(run)
        return runs

    def scan(self) -> list[TargetResult]:
        """A policy-event pass: mutateExisting policies with admission disabled, over existing targets."""
        policies = [p for p in self.engine.policies if p.mutate_existing and not p.admission]
        targets = mutate_existing(self.engine, policies=policies) if policies else []
        self._store(targets)
        return targets

    def _store(self, targets: Iterable[TargetResult]) -> None:
        for target in targets:
            if target.changed and target.mutated is not None:
                self.cluster.keep(target.mutated)
