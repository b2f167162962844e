"""Which MutatingPolicies the API server applies, from the MutatingAdmissionPolicies celmut generated.

A policy is applied natively when every MutatingAdmissionPolicy generated for it (its own and one per
pod-controller autogen variant, :func:`celmut.compile.to_map.expected_names`) exists, labelled as
celmut's and owned by the policy, and a binding of the same kind names it: the API server then runs it
before calling any webhook, so celmut's webhook must leave the policy alone — and serve it again as soon
as one of them is missing (the controller's generator repairs it; kyverno
``pkg/controllers/webhook/controller.go`` drops a generated policy the same way, on ``status.generated``).
A MutatingAdmissionPolicy of that name that someone else made (Kyverno's generator labels its own
``managed-by: kyverno``) does not count: celmut cannot know what it applies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from celmut.compile import to_map
from celmut.policy.errors import FieldError
from celmut.policy.mutating_policy import parse_mutating_policy

Obj = Mapping[str, Any]


def generated_for(obj: Obj, uid: str) -> bool:
    """Whether ``obj`` is a MutatingAdmissionPolicy (or binding) celmut generated for the policy ``uid``."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    return (
        bool(uid)
        and labels.get(to_map.MANAGED_BY[0]) == to_map.MANAGED_BY[1]
        and any(isinstance(r, dict) and r.get("uid") == uid for r in meta.get("ownerReferences") or [])
    )


class NativeIndex:
    """The expected MutatingAdmissionPolicy names of each policy, parsed once per generation."""

    def __init__(self) -> None:
        self._expected: dict[str, tuple[object, tuple[str, ...]]] = {}  # uid -> (generation, names)

    def expected(self, policy: Obj) -> tuple[str, ...]:
        meta = policy.get("metadata") or {}
        uid, generation = str(meta.get("uid") or ""), meta.get("generation")
        known = self._expected.get(uid)
        if known is None or known[0] != generation:
            errors: list[FieldError] = []
            model = parse_mutating_policy(dict(policy), f"MutatingPolicy/{meta.get('name')}", errors)
            known = (generation, to_map.expected_names(model) if model.name else ())
            self._expected[uid] = known
        return known[1]

    def applied(
        self, policies: Iterable[Obj], maps: Iterable[Obj], bindings: Iterable[Obj]
    ) -> tuple[tuple[str, str], ...]:
        """(policy name, its MutatingAdmissionPolicies) for each policy the API server applies."""
        by_name = {str(o["metadata"]["name"]): o for o in maps}
        bound = {str(o["metadata"]["name"]): o for o in bindings}
        policies = list(policies)
        present = {str((p.get("metadata") or {}).get("uid") or "") for p in policies}
        for gone in set(self._expected) - present:  # deleted policies: not kept for ever
            del self._expected[gone]
        if not by_name or not bound:
            return ()
        native: list[tuple[str, str]] = []
        for policy in policies:
            meta = policy.get("metadata") or {}
            uid = str(meta.get("uid") or "")
            names = self.expected(policy)
            if names and all(self._in_service(name, uid, by_name, bound) for name in names):
                native.append((str(meta.get("name")), ", ".join(names)))
        return tuple(sorted(native))

    @staticmethod
    def _in_service(name: str, uid: str, maps: Mapping[str, Obj], bindings: Mapping[str, Obj]) -> bool:
        policy, binding = maps.get(name), bindings.get(to_map.binding_name(name))
        return (
            policy is not None
            and binding is not None
            and generated_for(policy, uid)
            and generated_for(binding, uid)
            and (binding.get("spec") or {}).get("policyName") == name
        )
