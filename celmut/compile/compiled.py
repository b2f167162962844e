"""Compiled policies: everything the runtime needs, with every CEL expression already a program.

The runtime never parses or type-checks; it only evaluates these. Each program keeps the field path
it came from so an evaluation error can name it (``spec.mutations[1].jsonPatch.expression``).
"""

from __future__ import annotations

import datetime
import functools
from dataclasses import dataclass, field
from typing import Any, Literal

from celmut.cel.backends.base import Program
from celmut.compile.result_shapes import Shape
from celmut.policy.match import MatchResources

Semantics = Literal["kyverno", "kubernetes"]


@dataclass(frozen=True)
class CompiledExpression:
    """A named CEL program and the field path of its source expression."""

    name: str
    program: Program
    path: str

    @property
    def source(self) -> str:
        return self.program.source


@dataclass(frozen=True)
class CompiledMutation:
    patch_type: str  # ApplyConfiguration | JSONPatch
    program: Program
    path: str
    shape: Shape = None  # an ApplyConfiguration's: which lists and maps its result builds (result_shapes)


@dataclass(frozen=True)
class CompiledTarget:
    """``targetMatchConstraints``: resource rules to list targets from, and/or a CEL expression."""

    match: MatchResources | None
    expression: CompiledExpression | None


@dataclass(frozen=True)
class CompiledBinding:
    """A MutatingAdmissionPolicyBinding resolved against its policy."""

    name: str
    match: MatchResources | None
    param_name: str = ""
    param_namespace: str = ""
    param_selector: Any = None
    param_not_found_action: str = "Deny"


@dataclass(frozen=True)
class CompiledPolicy:
    """One evaluable unit: a MutatingPolicy, one of its autogen variants, or a MutatingAdmissionPolicy."""

    kind: str  # MutatingPolicy | NamespacedMutatingPolicy | MutatingAdmissionPolicy
    name: str
    namespace: str
    source: str
    semantics: Semantics
    match: MatchResources
    match_conditions: tuple[CompiledExpression, ...]
    variables: dict[str, Program]
    mutations: tuple[CompiledMutation, ...]
    failure_policy: str
    reinvocation_policy: str = "Never"
    admission: bool = True
    mutate_existing: bool = False
    skip_background_requests: bool = True
    use_server_side_apply: bool = False
    target: CompiledTarget | None = None
    target_match_conditions: tuple[CompiledExpression, ...] = ()
    audit_annotations: tuple[CompiledExpression, ...] = ()
    autogen: str = ""  # "", "defaults" or "cronjobs"
    bindings: tuple[CompiledBinding, ...] = ()
    param_kind: tuple[str, str] | None = None  # (apiVersion, kind) for MutatingAdmissionPolicy params
    timeout_seconds: int | None = None
    restart_policy: str = "deferred"  # "immediate": the controller may replace pods (PodMutation presets)
    record_provenance: bool = False  # write celmut.io/mutated-by on the objects it changes
    json_mode: bool = False  # spec.evaluation.mode JSON: mutates JSON documents, never admission requests
    definition: Any = field(default=None, compare=False, repr=False)  # the source model

    @functools.cached_property  # asked for every outcome of every request: made once
    def display_name(self) -> str:
        name = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{name} (autogen {self.autogen})" if self.autogen else name

    @property
    def order_key(self) -> tuple[int, str, str, int]:
        """The documented chaining order: MutatingAdmissionPolicies, then MutatingPolicies, then
        NamespacedMutatingPolicies, each by namespace and name; autogen variants follow their policy."""
        rank = {"MutatingAdmissionPolicy": 0, "MutatingPolicy": 1, "NamespacedMutatingPolicy": 2}.get(self.kind, 3)
        return (rank, self.namespace, self.name, {"": 0, "defaults": 1, "cronjobs": 2}.get(self.autogen, 3))


@dataclass(frozen=True)
class CompiledException:
    name: str
    namespace: str
    policy_refs: tuple[tuple[str, str], ...]  # (name, kind)
    match_conditions: tuple[CompiledExpression, ...]
    images: tuple[str, ...] = ()
    allowed_values: tuple[str, ...] = ()
    priority: int = 0
    expires_at: datetime.datetime | None = None  # spec.expiresAt: from then on it skips nothing
    report_result: str = "skip"  # spec.reportResult: how a report shows what it spared (skip or pass)

    def expired(self, now: datetime.datetime) -> bool:
        """kyverno/api PolicyException.IsExpired: ``spec.expiresAt`` has passed."""
        return self.expires_at is not None and now >= self.expires_at

    def refers_to(self, name: str, kind: str) -> bool:
        return any(ref_name == name and (not ref_kind or ref_kind == kind) for ref_name, ref_kind in self.policy_refs)

    @property
    def is_partial(self) -> bool:
        return bool(self.images or self.allowed_values)


@dataclass
class CompiledPolicySet:
    """Compiled policies in their documented evaluation order, exceptions, and rejections."""

    policies: list[CompiledPolicy] = field(default_factory=list)
    exceptions: list[CompiledException] = field(default_factory=list)
    errors: list[Exception] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def sort(self) -> None:
        self.policies.sort(key=lambda p: p.order_key)
