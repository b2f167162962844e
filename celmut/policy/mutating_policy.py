"""Kyverno ``MutatingPolicy`` / ``NamespacedMutatingPolicy`` (policies.kyverno.io v1alpha1, v1beta1,
v1): the model and its validating parser.

Defaults and checks follow Kyverno (semantics document §1): failurePolicy Fail, reinvocationPolicy
Never, admission enabled, background enabled, mutateExisting disabled, skipBackgroundRequests true,
useServerSideApply false; ``matchConstraints`` needs at least one resource rule; admission and
mutateExisting cannot both be disabled (both refused with Kyverno's own messages); at most 64 match
conditions with unique names.

``spec.evaluation.mode: JSON`` makes a document policy (Kyverno's JSON document mutation, run by
``kyverno apply --json`` / a Test's ``jsonPayloads``): no ``matchConstraints`` needed, JSONPatch
mutations only, no mutateExisting, target matching, server-side apply or reinvocation
(``docs/proposals/json-document-mutation.md``, "Field and expression contract").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from celmut.policy.errors import FieldError
from celmut.policy.fields import Reader
from celmut.policy.match import MatchResources, parse_match_resources

GROUP = "policies.kyverno.io"
VERSIONS = ("v1alpha1", "v1beta1", "v1")
KINDS = ("MutatingPolicy", "NamespacedMutatingPolicy")
PATCH_TYPES = ("ApplyConfiguration", "JSONPatch")
AUTOGEN_CONTROLLERS = ("daemonsets", "deployments", "replicasets", "statefulsets", "jobs", "cronjobs")
_SPEC_FIELDS = (
    "matchConstraints",
    "failurePolicy",
    "targetMatchConstraints",
    "targetMatchConditions",
    "matchConditions",
    "variables",
    "autogen",
    "mutations",
    "webhookConfiguration",
    "evaluation",
    "reinvocationPolicy",
    "auditAnnotations",
)
# celmut's extension, written by the PodMutation preset (``spec.restartPolicy``): with ``immediate``
# the background controller replaces running pods whose changes a running pod cannot take.
RESTART_POLICY_ANNOTATION = "celmut.io/restart-policy"
RESTART_POLICIES = ("deferred", "immediate")
# celmut's extension: "true" makes the webhook record the policy, and the fields it changed, in the
# ``celmut.io/mutated-by`` annotation of each object it mutates (``serve --record-provenance``: all).
RECORD_PROVENANCE_ANNOTATION = "celmut.io/record-provenance"


def record_provenance(metadata: Reader) -> bool:
    """The policy's ``celmut.io/record-provenance`` annotation ("true" or "false", default false)."""
    value = metadata.child("annotations").string(RECORD_PROVENANCE_ANNOTATION, default="false", enum=("true", "false"))
    return value == "true"


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9](/([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass(frozen=True)
class NamedExpression:
    """A match condition or variable: ``name`` and a CEL ``expression`` found at ``path``."""

    name: str
    expression: str
    path: str


@dataclass(frozen=True)
class Mutation:
    patch_type: str  # ApplyConfiguration | JSONPatch
    expression: str
    path: str  # of the expression, e.g. spec.mutations[0].jsonPatch.expression


@dataclass(frozen=True)
class AuditAnnotation:
    key: str
    value_expression: str
    path: str


@dataclass(frozen=True)
class Evaluation:
    admission: bool = True
    background: bool = True
    mutate_existing: bool = False
    skip_background_requests: bool = True
    use_server_side_apply: bool = False
    mode: str = "Kubernetes"


@dataclass(frozen=True)
class TargetMatchConstraints:
    match: MatchResources | None
    expression: str = ""
    expression_path: str = ""


@dataclass(frozen=True)
class MutatingPolicy:
    kind: str
    api_version: str
    name: str
    namespace: str  # "" for the cluster-scoped kind
    source: str
    match_constraints: MatchResources
    match_conditions: tuple[NamedExpression, ...] = ()
    variables: tuple[NamedExpression, ...] = ()
    mutations: tuple[Mutation, ...] = ()
    failure_policy: str = "Fail"
    reinvocation_policy: str = "Never"
    target_match_constraints: TargetMatchConstraints | None = None
    target_match_conditions: tuple[NamedExpression, ...] = ()
    evaluation: Evaluation = field(default_factory=Evaluation)
    autogen_controllers: tuple[str, ...] | None = None  # None: all controllers; (): none
    autogen_admission_policy: bool = False
    timeout_seconds: int | None = None
    audit_annotations: tuple[AuditAnnotation, ...] = ()
    restart_policy: str = "deferred"  # RESTART_POLICY_ANNOTATION: may the controller replace pods?
    record_provenance: bool = False  # RECORD_PROVENANCE_ANNOTATION
    warnings: tuple[str, ...] = ()  # accepted but worth saying (a condition name that is not qualified)
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_json_mode(self) -> bool:
        """A document policy: it mutates JSON documents, never Kubernetes admission requests."""
        return self.evaluation.mode == "JSON"

    @property
    def is_namespaced(self) -> bool:
        return self.kind == "NamespacedMutatingPolicy"

    @property
    def key(self) -> str:
        """A unique, stable identifier: ``MutatingPolicy/name`` or ``NamespacedMutatingPolicy/ns/name``."""
        return f"{self.kind}/{self.namespace}/{self.name}" if self.namespace else f"{self.kind}/{self.name}"


def parse_named_expressions(
    spec: Reader,
    field_name: str,
    *,
    identifiers: bool,
    max_items: int | None = None,
    lenient_names: list[str] | None = None,
) -> tuple[NamedExpression, ...]:
    """The named expressions at ``field_name``. A name must be a CEL identifier (variables) or a
    qualified name (conditions); with ``lenient_names`` (a list of warnings), a condition name that is
    not a qualified name is only a warning added there."""
    out: list[NamedExpression] = []
    seen: set[str] = set()
    for item in spec.items(field_name, max_items=max_items):
        name = item.string("name", required=True)
        expression = item.string("expression", required=True)
        if name:
            pattern = _IDENTIFIER if identifiers else _QUALIFIED_NAME
            if not pattern.match(name) and lenient_names is not None and not identifiers:
                lenient_names.append(
                    f"{item.at('name')}: {name!r} is not a qualified name; accepted as Kyverno does for a "
                    "MutatingPolicy, but the API server refuses it in a MutatingAdmissionPolicy or webhook"
                )
            elif not pattern.match(name):
                what = "a CEL identifier" if identifiers else "a qualified name"
                item.fail(f"Invalid value: {name!r}: must be {what}", "name")
            if name in seen:
                item.fail(f"Duplicate value: {name!r}", "name")
            seen.add(name)
        out.append(NamedExpression(name, expression, item.at("expression")))
    return tuple(out)


def _parse_mutations(spec: Reader) -> tuple[Mutation, ...]:
    out: list[Mutation] = []
    for item in spec.items("mutations"):
        patch_type = item.string("patchType", required=True, enum=PATCH_TYPES)
        if patch_type == "ApplyConfiguration":
            body = item.child("applyConfiguration")
            out.append(Mutation(patch_type, body.string("expression", required=True), body.at("expression")))
            if item.has("jsonPatch"):
                item.fail("Forbidden: must not be set when patchType is ApplyConfiguration", "jsonPatch")
        elif patch_type == "JSONPatch":
            body = item.child("jsonPatch")
            out.append(Mutation(patch_type, body.string("expression", required=True), body.at("expression")))
            if item.has("applyConfiguration"):
                item.fail("Forbidden: must not be set when patchType is JSONPatch", "applyConfiguration")
    return tuple(out)


def _parse_evaluation(spec: Reader) -> Evaluation:
    ev = spec.child("evaluation")
    return Evaluation(
        admission=ev.child("admission").boolean("enabled", True),
        background=ev.child("background").boolean("enabled", True),
        mutate_existing=ev.child("mutateExisting").boolean("enabled", False),
        skip_background_requests=ev.boolean("skipBackgroundRequests", True),
        use_server_side_apply=ev.boolean("useServerSideApply", False),
        mode=ev.string("mode", default="Kubernetes", enum=("Kubernetes", "JSON")),
    )


def _check_json_mode(spec: Reader, evaluation: Evaluation, mutations: tuple[Mutation, ...], reinvocation: str) -> None:
    """What a JSON-mode policy cannot use: it has no admission request, cluster or schema."""
    for index, mutation in enumerate(mutations):
        if mutation.patch_type != "JSONPatch":
            spec.fail("Forbidden: a JSON-mode policy mutates with JSONPatch only", f"mutations[{index}].patchType")
    if evaluation.mutate_existing:
        spec.fail("Forbidden: a JSON-mode policy cannot mutate existing resources", "evaluation.mutateExisting")
    if evaluation.use_server_side_apply:
        spec.fail("Forbidden: a JSON-mode policy does not use server-side apply", "evaluation.useServerSideApply")
    for name in ("targetMatchConstraints", "targetMatchConditions"):
        if spec.has(name):
            spec.fail("Forbidden: a JSON-mode policy has no targets", name)
    if reinvocation == "IfNeeded":
        spec.fail("Forbidden: a JSON-mode policy runs once per document", "reinvocationPolicy")


def _parse_autogen(spec: Reader) -> tuple[tuple[str, ...] | None, bool]:
    autogen = spec.child("autogen")
    controllers = autogen.child("podControllers").string_list("controllers")
    if controllers is not None:
        for index, controller in enumerate(controllers):
            if controller not in AUTOGEN_CONTROLLERS:
                autogen.fail(
                    f"Unsupported value: {controller!r}: supported values: {', '.join(AUTOGEN_CONTROLLERS)}",
                    f"podControllers.controllers[{index}]",
                )
    generate_map = autogen.child("mutatingAdmissionPolicy").boolean("enabled", False)
    return (tuple(controllers) if controllers is not None else None), generate_map


def _parse_metadata(doc: dict[str, Any], kind: str, errors: list[FieldError]) -> tuple[Reader, str, str, str]:
    """The metadata reader, name, namespace (namespaced kind only) and restart-policy annotation."""
    meta = Reader(doc.get("metadata"), "metadata", errors)
    name = meta.string("name", required=True)
    namespace = meta.string("namespace") if kind == "NamespacedMutatingPolicy" else ""
    annotations = meta.child("annotations")
    restart_policy = annotations.string(RESTART_POLICY_ANNOTATION, default="deferred", enum=RESTART_POLICIES)
    return meta, name, namespace, restart_policy


#: Kyverno's words for what its policy webhook refuses (pkg/cel/policies/mpol/validate.go ``Validate``),
#: so celmut's webhook, status and CLI say what Kyverno says.
MATCH_CONSTRAINTS_REQUIRED = "Required value: a matchConstraints with at least one resource rule is required"
NO_EVALUATION_MODE = "Forbidden: disabling both admission and mutateExisting evaluation modes is not allowed"


def _parse_match_constraints(spec: Reader, json_mode: bool) -> MatchResources:
    """``spec.matchConstraints``: required, with at least one resource rule, unless in JSON mode."""
    match = parse_match_resources(spec.child("matchConstraints"))
    if not match.resource_rules and not json_mode:
        spec.fail(MATCH_CONSTRAINTS_REQUIRED, "matchConstraints")
    return match


def _parse_target_match_constraints(spec: Reader) -> TargetMatchConstraints | None:
    """``spec.targetMatchConstraints`` (mutateExisting targets), or None when absent."""
    if not spec.has("targetMatchConstraints"):
        return None
    target_reader = spec.child("targetMatchConstraints")
    target_match = parse_match_resources(target_reader, operations_required=False)
    return TargetMatchConstraints(
        match=target_match if target_match.resource_rules else None,
        expression=target_reader.string("expression"),
        expression_path=target_reader.at("expression"),
    )


def _check_applies_somewhere(spec: Reader, evaluation: Evaluation) -> None:
    """Admission and mutateExisting cannot both be disabled: the policy would never apply."""
    if not evaluation.admission and not evaluation.mutate_existing:
        spec.fail(NO_EVALUATION_MODE, "evaluation")


def _parse_audit_annotations(spec: Reader) -> tuple[AuditAnnotation, ...]:
    """``spec.auditAnnotations``: key and valueExpression, both required."""
    return tuple(
        AuditAnnotation(
            item.string("key", required=True), item.string("valueExpression", required=True), item.at("valueExpression")
        )
        for item in spec.items("auditAnnotations")
    )


def parse_mutating_policy(doc: dict[str, Any], source: str, errors: list[FieldError]) -> MutatingPolicy:
    """Parse and validate one document; field errors are appended to ``errors``."""
    kind = doc.get("kind", "")
    meta, name, namespace, restart_policy = _parse_metadata(doc, kind, errors)
    spec = Reader(doc.get("spec"), "spec", errors)
    spec.unknown_fields(_SPEC_FIELDS)

    evaluation = _parse_evaluation(spec)
    json_mode = evaluation.mode == "JSON"
    match = _parse_match_constraints(spec, json_mode)
    target = _parse_target_match_constraints(spec)
    _check_applies_somewhere(spec, evaluation)
    controllers, generate_map = _parse_autogen(spec)
    # Kyverno compiles MutatingPolicy condition names without checking them (pkg/cel/policies/mpol/
    # compiler/compiler.go: conditions are only compiled), and public policies use sentences as names.
    warnings: list[str] = []
    audit = _parse_audit_annotations(spec)
    mutations = _parse_mutations(spec)
    reinvocation = spec.string("reinvocationPolicy", default="Never", enum=("Never", "IfNeeded"))
    if json_mode:
        _check_json_mode(spec, evaluation, mutations, reinvocation)
    return MutatingPolicy(
        kind=kind,
        api_version=doc.get("apiVersion", ""),
        name=name,
        namespace=namespace,
        source=source,
        match_constraints=match,
        match_conditions=parse_named_expressions(
            spec, "matchConditions", identifiers=False, max_items=64, lenient_names=warnings
        ),
        variables=parse_named_expressions(spec, "variables", identifiers=True),
        mutations=mutations,
        failure_policy=spec.string("failurePolicy", default="Fail", enum=("Ignore", "Fail")),
        reinvocation_policy=reinvocation,
        target_match_constraints=target,
        target_match_conditions=parse_named_expressions(
            spec, "targetMatchConditions", identifiers=False, lenient_names=warnings
        ),
        evaluation=evaluation,
        autogen_controllers=controllers,
        autogen_admission_policy=generate_map,
        timeout_seconds=spec.child("webhookConfiguration").integer("timeoutSeconds", minimum=1, maximum=30),
        audit_annotations=audit,
        restart_policy=restart_policy or "deferred",
        record_provenance=record_provenance(meta),
        warnings=tuple(warnings),
        raw=doc,
    )
