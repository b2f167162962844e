"""Where Kyverno's MutatingPolicy and Kubernetes' MutatingAdmissionPolicy evaluate differently.

One small strategy object per family, chosen once per policy (:func:`of`), instead of
``policy.semantics == "kubernetes"`` tests scattered through the evaluator:

* **Kyverno** (``MutatingPolicy``, ``NamespacedMutatingPolicy``): the resource filter
  ``[ReplicaSet/*,*,*]`` skips ReplicaSets a Deployment controls (``ownership.py``); a mutation patches
  the JSON it received; any error discards the policy's whole result and its ``failurePolicy``
  decides the request (kyverno ``pkg/cel/policies/mpol/engine/engine.go``).
* **Kubernetes** (``MutatingAdmissionPolicy`` through its bindings): no resource filter; a built-in
  kind is decoded to its Go type and re-encoded around each mutation (``decode.py``); with
  ``failurePolicy: Ignore`` a matchCondition error skips the binding and a failing mutation skips
  only itself (k8s.io/apiserver ``pkg/admission/plugin/policy/mutating/dispatcher.go``).
"""

from __future__ import annotations

from dataclasses import dataclass

from celmut.compile.compiled import CompiledPolicy
from celmut.runtime.request import AdmissionInput


@dataclass(frozen=True)
class Semantics:
    """How one family of policies evaluates; see the module docstring for the sources."""

    name: str
    filters_controlled_replicasets: bool  # Kyverno's [ReplicaSet/*,*,*] resource filter
    decodes_builtin_kinds: bool  # mutations work on the Go object of a built-in kind
    isolates_errors: bool  # failurePolicy Ignore skips only the failing condition check or mutation
    binds: bool  # evaluated once per binding (and per param object), not once per policy
    honours_exceptions: bool  # PolicyExceptions (a Kyverno kind) name only Kyverno policies
    note_prefix: str  # before each note of a mutation that did not take effect

    def no_object_reason(self, request: AdmissionInput) -> str:
        """Why a request without an object (DELETE, CONNECT) mutates nothing."""
        if self.binds:
            return "the request carries no object to mutate"
        return f"{request.operation} requests carry no object to mutate"


KYVERNO = Semantics(
    "kyverno",
    filters_controlled_replicasets=True,
    decodes_builtin_kinds=False,
    isolates_errors=False,
    binds=False,
    honours_exceptions=True,
    note_prefix="",
)
KUBERNETES = Semantics(
    "kubernetes",
    filters_controlled_replicasets=False,
    decodes_builtin_kinds=True,
    isolates_errors=True,
    binds=True,
    honours_exceptions=False,
    note_prefix="ignored: ",
)
_BY_NAME = {s.name: s for s in (KYVERNO, KUBERNETES)}


def of(policy: CompiledPolicy) -> Semantics:
    """The semantics ``policy`` evaluates with."""
    return _BY_NAME[policy.semantics]
