"""The one place an admission engine is assembled, for every surface.

The webhook, the controller and the CLI differ only in the settings and the lookups they pass here
(Kyverno does the same with one ``NewEngine`` and a kube-backed or static provider): the schema
registry is built from the CRDs each surface knows, the compiled policy set is used as compiled, and
the evaluation limits come from one frozen :class:`EngineSettings` (``runtime/options.py``), which
the engine's options extend with the schemas, so no setting is copied by hand. A test builds the
engine of each surface from the same inputs and compares their answers
(``tests/service/test_assembly.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from celmut import cel
from celmut.compile.compiled import CompiledPolicy
from celmut.compile.pipeline import Compilation
from celmut.limits import MAX_REQUEST_BYTES
from celmut.runtime import AdmissionEngine, AdmissionOptions
from celmut.runtime.options import EngineSettings
from celmut.runtime.schemas import SchemaRegistry
from celmut.service.lookup_needs import lookups_beyond_the_presets
from celmut.sources.documents import Document

log = logging.getLogger("celmut.server")

DEFAULT_MAX_INPUT_BYTES = MAX_REQUEST_BYTES  # the API server's own request limit

__all__ = ["EngineSettings", "assemble_engine", "cluster_services", "crds_in", "is_crd", "narrowed"]


def cluster_services(
    base: cel.Services,
    resources: cel.ResourceLookup | None,
    global_context: cel.GlobalContextLookup | None,
    images: cel.ImageMetadataLookup | None,
    authorizer: cel.Authorizer | None = None,
) -> cel.Services:
    """The lookups of an engine in the cluster (the webhook's and the controller's alike): the
    surface's HTTP policy and settings in ``base``, with the cluster's objects, its GlobalContextEntry
    store, the registry reader and SubjectAccessReviews; a lookup not given stays as in ``base``."""
    return replace(
        base,
        resources=resources if resources is not None else base.resources,
        global_context=global_context if global_context is not None else base.global_context,
        images=images if images is not None else base.images,
        authorizer=authorizer if authorizer is not None else base.authorizer,
    )


def is_crd(content: object) -> bool:
    return isinstance(content, Mapping) and content.get("kind") == "CustomResourceDefinition"


def crds_in(documents: Iterable[Document]) -> list[Mapping[str, Any]]:
    """The CustomResourceDefinitions among some documents."""
    return [d.content for d in documents if is_crd(d.content)]


def assemble_engine(
    compilation: Compilation, settings: EngineSettings, crds: Iterable[Mapping[str, Any]] = ()
) -> AdmissionEngine:
    """The admission engine for a compiled policy set.

    Custom resources get their CRD's schema from ``crds`` and from the CRDs that came with the
    policies (``compilation.other``); the registry belongs to this engine alone.
    """
    registry = SchemaRegistry([*crds, *crds_in(compilation.other)], settings.kubernetes_version)
    answered = without_cluster(settings)
    if answered is not settings:
        looking_up = lookups_beyond_the_presets(compilation.compiled.policies)
        if looking_up:
            log.warning(
                "no cluster resource lookup: resource.Get and resource.List answer null",
                extra={"policies": ", ".join(looking_up)},
            )
    return AdmissionEngine(compilation.compiled, options=AdmissionOptions.of(answered, registry))


def without_cluster(settings: EngineSettings) -> EngineSettings:
    """Without a resource lookup (``celmut serve`` without ``--from-cluster``), an engine's
    ``resource.Get``/``resource.List`` answer null: there is no cluster to find anything in. The
    placement presets then derive workloads from names and split by hash, without an error (Kyverno's
    ``orValue`` is strict: they cannot absorb one)."""
    if settings.services.resources is not None or settings.services.null_without_resources:
        return settings
    return replace(settings, services=replace(settings.services, null_without_resources=True))


def narrowed(engine: AdmissionEngine, policies: Sequence[CompiledPolicy]) -> AdmissionEngine:
    """An engine like ``engine`` (same settings, schemas and PolicyExceptions) over some of its
    policies: the controller's drift pass runs only the policies that correct drift."""
    return AdmissionEngine(policies, engine.exceptions, engine.options)
