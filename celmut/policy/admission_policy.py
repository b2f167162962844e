"""Kubernetes ``MutatingAdmissionPolicy`` and ``MutatingAdmissionPolicyBinding``
(admissionregistration.k8s.io v1alpha1, v1beta1, v1): models and validating parsers.

Validation follows what kube-apiserver refuses at creation (see kubernetes-map-observed.md):
``reinvocationPolicy`` is required in v1, ``mutations`` must not be empty, ``failurePolicy``
defaults to Fail, a binding must name its policy and, with ``paramRef``, a
``parameterNotFoundAction``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from celmut.policy.errors import FieldError
from celmut.policy.fields import Reader
from celmut.policy.match import LabelSelector, MatchResources, parse_match_resources, parse_selector
from celmut.policy.mutating_policy import Mutation, NamedExpression, parse_named_expressions, record_provenance

GROUP = "admissionregistration.k8s.io"
VERSIONS = ("v1alpha1", "v1beta1", "v1")
POLICY_KIND = "MutatingAdmissionPolicy"
BINDING_KIND = "MutatingAdmissionPolicyBinding"
KINDS = (POLICY_KIND, BINDING_KIND)


@dataclass(frozen=True)
class ParamKind:
    api_version: str
    kind: str


@dataclass(frozen=True)
class MutatingAdmissionPolicy:
    name: str
    api_version: str
    source: str
    match_constraints: MatchResources
    mutations: tuple[Mutation, ...]
    match_conditions: tuple[NamedExpression, ...] = ()
    variables: tuple[NamedExpression, ...] = ()
    failure_policy: str = "Fail"
    reinvocation_policy: str = "Never"
    param_kind: ParamKind | None = None
    record_provenance: bool = False  # celmut.io/record-provenance
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def key(self) -> str:
        return f"{POLICY_KIND}/{self.name}"


@dataclass(frozen=True)
class ParamRef:
    name: str = ""
    namespace: str = ""
    selector: LabelSelector | None = None
    parameter_not_found_action: str = "Deny"


@dataclass(frozen=True)
class MutatingAdmissionPolicyBinding:
    name: str
    source: str
    policy_name: str
    param_ref: ParamRef | None = None
    match_resources: MatchResources | None = None


def _parse_mutations(spec: Reader) -> tuple[Mutation, ...]:
    out: list[Mutation] = []
    for item in spec.items("mutations", required=True):
        patch_type = item.string("patchType", required=True, enum=("ApplyConfiguration", "JSONPatch"))
        body_field = "applyConfiguration" if patch_type == "ApplyConfiguration" else "jsonPatch"
        if patch_type:
            body = item.child(body_field)
            out.append(Mutation(patch_type, body.string("expression", required=True), body.at("expression")))
    if spec.has("mutations") and not out:
        spec.fail("Required value: at least one mutation is required", "mutations")
    return tuple(out)


def parse_admission_policy(doc: dict[str, Any], source: str, errors: list[FieldError]) -> MutatingAdmissionPolicy:
    api_version = doc.get("apiVersion", "")
    meta = Reader(doc.get("metadata"), "metadata", errors)
    spec = Reader(doc.get("spec"), "spec", errors)
    if not spec.has("matchConstraints"):
        spec.fail("Required value", "matchConstraints")
    match = parse_match_resources(spec.child("matchConstraints"))
    if spec.has("matchConstraints") and not match.resource_rules:
        spec.fail("Required value: at least one resource rule is needed", "matchConstraints.resourceRules")
    reinvocation_required = api_version.endswith("/v1")
    param_kind = None
    if spec.has("paramKind"):
        pk = spec.child("paramKind")
        param_kind = ParamKind(pk.string("apiVersion", required=True), pk.string("kind", required=True))
    return MutatingAdmissionPolicy(
        name=meta.string("name", required=True),
        api_version=api_version,
        source=source,
        match_constraints=match,
        mutations=_parse_mutations(spec),
        match_conditions=parse_named_expressions(spec, "matchConditions", identifiers=False, max_items=64),
        variables=parse_named_expressions(spec, "variables", identifiers=True),
        failure_policy=spec.string("failurePolicy", default="Fail", enum=("Ignore", "Fail")),
        reinvocation_policy=spec.string(
            "reinvocationPolicy", required=reinvocation_required, default="Never", enum=("Never", "IfNeeded")
        ),
        param_kind=param_kind,
        record_provenance=record_provenance(meta),
        raw=doc,
    )


def parse_binding(doc: dict[str, Any], source: str, errors: list[FieldError]) -> MutatingAdmissionPolicyBinding:
    meta = Reader(doc.get("metadata"), "metadata", errors)
    spec = Reader(doc.get("spec"), "spec", errors)
    param_ref = None
    if spec.has("paramRef"):
        pr = spec.child("paramRef")
        name = pr.string("name")
        selector = parse_selector(pr.optional_child("selector"))
        if name and pr.has("selector"):
            pr.fail("Forbidden: name and selector are mutually exclusive")
        if not name and not pr.has("selector"):
            pr.fail("Required value: one of name or selector must be set")
        param_ref = ParamRef(
            name=name,
            namespace=pr.string("namespace"),
            selector=selector if pr.has("selector") else None,
            parameter_not_found_action=pr.string(
                "parameterNotFoundAction", required=True, default="Deny", enum=("Allow", "Deny")
            ),
        )
    match = None
    if spec.has("matchResources"):
        match = parse_match_resources(spec.child("matchResources"))
    return MutatingAdmissionPolicyBinding(
        name=meta.string("name", required=True),
        source=source,
        policy_name=spec.string("policyName", required=True),
        param_ref=param_ref,
        match_resources=match,
    )
