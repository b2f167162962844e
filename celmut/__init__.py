"""celmut: a Kyverno-compatible CEL mutation engine for Kubernetes.

The public API (everything else is internal)::

    import celmut

    policies = celmut.load("policies/")            # every problem at once: celmut.PolicyError
    result = policies.apply(pod, operation="CREATE", cluster=[namespace])
    result.allowed, result.object, result.patch     # the mutated object and its RFC 6902 patch
    for outcome in result.outcomes:                 # one per policy: applied / unchanged / skipped / error
        print(outcome.policy, outcome.status, outcome.reason)
    policies.explain(pod)                           # who changed which field, and why others did not
    celmut.eval("object.metadata.name", object=pod)

The names load on first use (PEP 562 ``__getattr__``): ``import celmut`` and ``celmut --version``
load no CEL, policy or cluster code. ``CELMUT_PURE=1`` makes an install that carries the compiled
(mypyc) hot path run its pure-Python modules instead (:mod:`celmut.native`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from celmut.lazy import lazy_attributes

if os.environ.get("CELMUT_PURE", "") not in ("", "0"):  # before any compiled module can be imported
    from celmut.native import prefer_source

    prefer_source()

if TYPE_CHECKING:
    from celmut.api import Policies, eval, load
    from celmut.errors import CelmutError
    from celmut.policy.errors import PolicyError, PolicySetError
    from celmut.runtime.provenance import Provenance
    from celmut.runtime.request import AdmissionInput
    from celmut.runtime.results import AdmissionResult, PolicyOutcome

__version__ = "0.1.0"

__all__ = [
    "AdmissionInput",
    "AdmissionResult",
    "CelmutError",
    "Policies",
    "PolicyError",
    "PolicyOutcome",
    "PolicySetError",
    "Provenance",
    "__version__",
    "eval",
    "load",
]
_HOMES = {
    "AdmissionInput": "celmut.runtime.request",
    "AdmissionResult": "celmut.runtime.results",
    "CelmutError": "celmut.errors",
    "Policies": "celmut.api",
    "PolicyError": "celmut.policy.errors",
    "PolicyOutcome": "celmut.runtime.results",
    "PolicySetError": "celmut.policy.errors",
    "Provenance": "celmut.runtime.provenance",
    "eval": "celmut.api",
    "load": "celmut.api",
}


__getattr__ = lazy_attributes(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted(__all__)
