"""Runtime stage: match → variables → mutations in order → patch. Pure: no I/O of its own; lookups
arrive through :class:`celmut.cel.Services`."""

from celmut.runtime.engine import AdmissionEngine, AdmissionOptions
from celmut.runtime.request import AdmissionInput
from celmut.runtime.results import AdmissionResult, PolicyOutcome

__all__ = ["AdmissionEngine", "AdmissionInput", "AdmissionOptions", "AdmissionResult", "PolicyOutcome"]
