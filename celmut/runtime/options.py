"""What an :class:`~celmut.runtime.engine.AdmissionEngine` evaluates with."""

from __future__ import annotations

from dataclasses import dataclass, field

from celmut import cel
from celmut.cel.evalcontext import DEFAULT_TIMEOUT_SECONDS
from celmut.limits import MAX_REQUEST_BYTES
from celmut.runtime import ownership
from celmut.runtime.schemas import SchemaRegistry


@dataclass
class AdmissionOptions:
    """What an engine evaluates with; assembled by :mod:`celmut.service.assembly`."""

    services: cel.Services = field(default_factory=cel.Services)
    schemas: SchemaRegistry = field(default_factory=SchemaRegistry)  # also the kind ↔ resource table
    background_usernames: frozenset[str] = frozenset()  # skipBackgroundRequests: celmut's own identity
    timeout_seconds: float | None = DEFAULT_TIMEOUT_SECONDS
    max_input_bytes: int = MAX_REQUEST_BYTES
    opt_out: ownership.OptOut | None = None  # objects whose owners opted out of celmut (the webhook's label)
    max_object_bytes: int = MAX_REQUEST_BYTES  # a mutation result, and the final patch, at most
    record_provenance: bool = False  # every policy records itself in celmut.io/mutated-by (else only those opted in)
    # Outcomes (skipped) for the policies whose resource rules do not name the request's kind: the
    # CLI reports them; the webhook and the controller only visit candidates (runtime/candidates.py).
    report_unselected: bool = True
