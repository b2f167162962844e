"""What an :class:`~celmut.runtime.engine.AdmissionEngine` evaluates with: one frozen settings object
from the flags to the engine."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from celmut import cel
from celmut.cel.evalcontext import DEFAULT_TIMEOUT_SECONDS
from celmut.limits import MAX_REQUEST_BYTES
from celmut.runtime import ownership
from celmut.runtime.schemas import SchemaRegistry


@dataclass(frozen=True)
class EngineSettings:
    """Plain settings of an admission engine, the same whichever surface runs it: each surface turns
    its flags into one of these, and :func:`celmut.service.assembly.assemble_engine` adds the rest."""

    services: cel.Services = field(default_factory=cel.Services)  # lookups: the cluster, files, or none
    timeout_seconds: float | None = DEFAULT_TIMEOUT_SECONDS  # CEL deadline per request
    background_usernames: frozenset[str] = frozenset()  # skipBackgroundRequests: celmut's own identity
    max_input_bytes: int = MAX_REQUEST_BYTES
    max_object_bytes: int = MAX_REQUEST_BYTES  # a mutation result, and the final patch, at most
    kubernetes_version: str | None = None  # built-in schemas of this version (default: the newest bundled)
    opt_out: ownership.OptOut | None = None  # objects opted out through their owners (the webhook's label)
    record_provenance: bool = False  # every policy records itself in celmut.io/mutated-by (else only those opted in)
    # Outcomes (skipped) for the policies whose resource rules do not name the request's kind: the
    # CLI reports them; the webhook and the controller only visit candidates (runtime/candidates.py).
    report_unselected: bool = True
    preset_failure_policy: str | None = None  # the chart's webhook.failurePolicy for the presets' policies


@dataclass(frozen=True)
class AdmissionOptions(EngineSettings):
    """What an engine evaluates with: its settings and the schemas of the kinds it knows (built by
    :func:`celmut.service.assembly.assemble_engine` from the CRDs each surface knows)."""

    schemas: SchemaRegistry = field(default_factory=SchemaRegistry)  # also the kind ↔ resource table

    @classmethod
    def of(cls, settings: EngineSettings, schemas: SchemaRegistry) -> AdmissionOptions:
        """``settings`` with ``schemas``: every setting carried over, none copied by hand."""
        return cls(schemas=schemas, **{f.name: getattr(settings, f.name) for f in fields(EngineSettings)})
