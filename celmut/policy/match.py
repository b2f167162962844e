"""``MatchResources`` (admissionregistration.k8s.io) and label selectors: models and parsing.

Shared by MutatingPolicy (``matchConstraints``, ``targetMatchConstraints``), PolicyException,
MutatingAdmissionPolicy and its binding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from celmut.policy.fields import Reader

OPERATIONS = ("*", "CREATE", "UPDATE", "DELETE", "CONNECT")
SCOPES = ("*", "Cluster", "Namespaced")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelSelector:
    """A Kubernetes label selector; the empty selector matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.match_labels:
            out["matchLabels"] = dict(self.match_labels)
        if self.match_expressions:
            out["matchExpressions"] = [
                {"key": r.key, "operator": r.operator, **({"values": list(r.values)} if r.values else {})}
                for r in self.match_expressions
            ]
        return out


@dataclass(frozen=True)
class ResourceRule:
    """One ``NamedRuleWithOperations``."""

    api_groups: tuple[str, ...] = ()
    api_versions: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    operations: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    scope: str = "*"

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "apiGroups": list(self.api_groups),
            "apiVersions": list(self.api_versions),
            "operations": list(self.operations),
            "resources": list(self.resources),
        }
        if self.resource_names:
            out["resourceNames"] = list(self.resource_names)
        if self.scope != "*":
            out["scope"] = self.scope
        return out


@dataclass(frozen=True)
class MatchResources:
    resource_rules: tuple[ResourceRule, ...] = ()
    exclude_resource_rules: tuple[ResourceRule, ...] = ()
    namespace_selector: LabelSelector = field(default_factory=LabelSelector)
    object_selector: LabelSelector = field(default_factory=LabelSelector)
    match_policy: str = "Equivalent"

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"resourceRules": [r.to_dict() for r in self.resource_rules]}
        if self.exclude_resource_rules:
            out["excludeResourceRules"] = [r.to_dict() for r in self.exclude_resource_rules]
        if not self.namespace_selector.is_empty:
            out["namespaceSelector"] = self.namespace_selector.to_dict()
        if not self.object_selector.is_empty:
            out["objectSelector"] = self.object_selector.to_dict()
        if self.match_policy != "Equivalent":
            out["matchPolicy"] = self.match_policy
        return out


def parse_selector(reader: Reader | None) -> LabelSelector:
    if reader is None:
        return LabelSelector()
    labels = reader.string_map("matchLabels")
    requirements = []
    for item in reader.items("matchExpressions"):
        key = item.string("key", required=True)
        operator = item.string("operator", required=True, enum=SELECTOR_OPERATORS)
        values = tuple(item.string_list("values") or ())
        if operator in ("In", "NotIn") and not values:
            item.fail(f"values: Required value: must be specified when operator is {operator}")
        if operator in ("Exists", "DoesNotExist") and values:
            item.fail(f"values: Forbidden: may not be specified when operator is {operator}")
        requirements.append(Requirement(key, operator, values))
    return LabelSelector(tuple(sorted(labels.items())), tuple(requirements))


def parse_rule(reader: Reader, *, operations_required: bool = True) -> ResourceRule:
    operations = reader.string_list("operations", required=operations_required) or []
    for index, operation in enumerate(operations):
        if operation not in OPERATIONS:
            reader.fail(
                f"Unsupported value: {operation!r}: supported values: {', '.join(OPERATIONS)}", f"operations[{index}]"
            )
    resources = reader.string_list("resources") or []
    for index, resource in enumerate(resources):
        if resource.count("/") > 1 or resource in ("", "/"):
            reader.fail(
                f"Invalid value: {resource!r}: must be a resource or resource/subresource", f"resources[{index}]"
            )
    return ResourceRule(
        api_groups=tuple(reader.string_list("apiGroups") or ()),
        api_versions=tuple(reader.string_list("apiVersions") or ()),
        resources=tuple(resources),
        operations=tuple(operations),
        resource_names=tuple(reader.string_list("resourceNames") or ()),
        scope=reader.string("scope", default="*", enum=SCOPES),
    )


def parse_match_resources(reader: Reader, *, operations_required: bool = True) -> MatchResources:
    return MatchResources(
        resource_rules=tuple(
            parse_rule(r, operations_required=operations_required) for r in reader.items("resourceRules")
        ),
        exclude_resource_rules=tuple(
            parse_rule(r, operations_required=operations_required) for r in reader.items("excludeResourceRules")
        ),
        namespace_selector=parse_selector(reader.optional_child("namespaceSelector")),
        object_selector=parse_selector(reader.optional_child("objectSelector")),
        match_policy=reader.string("matchPolicy", default="Equivalent", enum=("Exact", "Equivalent")),
    )
