"""The one place an admission engine is assembled, for every surface.

The webhook, the controller and the CLI differ only in the settings and the lookups they pass here
(Kyverno does the same with one ``NewEngine`` and a kube-backed or static provider): the schema
registry is built from the CRDs each surface knows, the compiled policy set is used as compiled, and
the evaluation limits come from plain :class:`EngineSettings`. A test builds the engine of each
surface from the same inputs and compares their answers (``tests/service/test_assembly.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from celmut import cel
from celmut.cel.evalcontext import DEFAULT_TIMEOUT_SECONDS
from celmut.compile.pipeline import Compilation
from celmut.runtime import AdmissionEngine, AdmissionOptions
from celmut.runtime.ownership import OptOut
from celmut.runtime.schemas import SchemaRegistry
from celmut.sources.documents import Document

DEFAULT_MAX_INPUT_BYTES = 3 * 1024 * 1024  # the API server's own request limit


@dataclass(frozen=True)
class EngineSettings:
    """Plain settings of an admission engine, the same whichever surface runs it."""

    services: cel.Services = field(default_factory=cel.Services)  # lookups: the cluster, files, or none
    timeout_seconds: float | None = DEFAULT_TIMEOUT_SECONDS  # CEL deadline per request
    background_usernames: frozenset[str] = frozenset()  # skipBackgroundRequests: celmut's own identity
    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES
    kubernetes_version: str | None = None  # built-in schemas of this version (default: the newest bundled)
    opt_out: OptOut | None = None  # objects opted out through their owners (the webhook and controller)
    record_provenance: bool = False  # every policy writes celmut.io/mutated-by (else only those opted in)
    # Report a skip for every policy whose rules do not name the request's kind (the CLI's detailed
    # results); the webhook and the controller visit only the candidates (runtime/candidates.py).
    report_unselected: bool = True
    preset_failure_policy: str | None = None  # the chart's webhook.failurePolicy for the presets' policies


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
    options = AdmissionOptions(
        services=settings.services,
        schemas=registry,
        background_usernames=settings.background_usernames,
        timeout_seconds=settings.timeout_seconds,
        max_input_bytes=settings.max_input_bytes,
        opt_out=settings.opt_out,
        record_provenance=settings.record_provenance,
        report_unselected=settings.report_unselected,
    )
    return AdmissionEngine(compilation.compiled, options=options)
