"""Runtime stage: match → variables → mutations in order → patch. Pure: no I/O of its own; lookups
arrive through :class:`celmut.cel.Services`.

The names below load on first use (PEP 562): importing a light module of this package
(``celmut.runtime.ownership`` for its label, say) does not load the engine and the CEL layer, which
would make ``celmut --version`` and ``--help`` pay for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from celmut.lazy import lazy_attributes

if TYPE_CHECKING:
    from celmut.runtime.engine import AdmissionEngine
    from celmut.runtime.options import AdmissionOptions
    from celmut.runtime.request import AdmissionInput
    from celmut.runtime.results import AdmissionResult, PolicyOutcome

__all__ = ["AdmissionEngine", "AdmissionInput", "AdmissionOptions", "AdmissionResult", "PolicyOutcome"]
_HOMES = {
    "AdmissionEngine": "celmut.runtime.engine",
    "AdmissionOptions": "celmut.runtime.options",
    "AdmissionInput": "celmut.runtime.request",
    "AdmissionResult": "celmut.runtime.results",
    "PolicyOutcome": "celmut.runtime.results",
}


__getattr__ = lazy_attributes(__name__, _HOMES)
