"""Building blocks of structural OpenAPI v3 schemas (``apiextensions.k8s.io/v1``) and the Kubernetes
types CRDs embed: label selectors, ``MatchResources``, match conditions, status conditions.

Helpers return plain dicts, so a CRD reads like its YAML; every node has a ``type`` (or
``x-kubernetes-preserve-unknown-fields`` for free-form values), as structural schemas require.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Schema = dict[str, Any]


def _with(schema: Schema, description: str, extra: dict[str, Any]) -> Schema:
    if description:
        schema["description"] = description
    schema.update({k: v for k, v in extra.items() if v is not None})
    return schema


def obj(
    properties: dict[str, Schema] | None = None,
    description: str = "",
    *,
    required: Sequence[str] = (),
    **extra: Any,
) -> Schema:
    """An object with known ``properties`` (unknown fields are pruned by the API server)."""
    schema: Schema = {"type": "object"}
    if properties is not None:
        schema["properties"] = properties
    if required:
        schema["required"] = list(required)
    return _with(schema, description, extra)


def arr(
    items: Schema,
    description: str = "",
    *,
    list_type: str | None = None,
    map_keys: Sequence[str] = (),
    min_items: int | None = None,
    max_items: int | None = None,
) -> Schema:
    schema: Schema = {"type": "array", "items": items}
    if list_type:
        schema["x-kubernetes-list-type"] = list_type
    if map_keys:
        schema["x-kubernetes-list-map-keys"] = list(map_keys)
    return _with(schema, description, {"minItems": min_items, "maxItems": max_items})


def string(
    description: str = "",
    *,
    enum: Sequence[str] | None = None,
    pattern: str | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    default: str | None = None,
    format: str | None = None,
) -> Schema:
    extra = {
        "enum": list(enum) if enum else None,
        "pattern": pattern,
        "minLength": min_length,
        "maxLength": max_length,
        "default": default,
        "format": format,
    }
    return _with({"type": "string"}, description, extra)


def integer(
    description: str = "",
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    default: int | None = None,
    format: str = "int32",
) -> Schema:
    extra = {"minimum": minimum, "maximum": maximum, "default": default}
    return _with({"type": "integer", "format": format}, description, extra)


def boolean(description: str = "", *, default: bool | None = None) -> Schema:
    return _with({"type": "boolean"}, description, {"default": default})


def string_map(description: str = "") -> Schema:
    return _with({"type": "object", "additionalProperties": {"type": "string"}}, description, {})


def any_value(description: str = "") -> Schema:
    """Any JSON value (a JSON Patch ``value``): kept as written."""
    return _with({"x-kubernetes-preserve-unknown-fields": True}, description, {})


def strings(description: str = "", **kwargs: Any) -> Schema:
    return arr({"type": "string"}, description, **kwargs)


# --- Kubernetes types embedded in CRDs -----------------------------------------------------------------


def label_selector(description: str = "") -> Schema:
    """``metav1.LabelSelector`` (atomic, as in the built-in types)."""
    requirement = obj(
        {
            "key": string("The label key that the selector applies to."),
            "operator": string("In, NotIn, Exists or DoesNotExist."),
            "values": strings("Values for In and NotIn; empty for Exists and DoesNotExist.", list_type="atomic"),
        },
        required=("key", "operator"),
    )
    return obj(
        {
            "matchExpressions": arr(requirement, "Label selector requirements, ANDed.", list_type="atomic"),
            "matchLabels": string_map("{key: value} pairs, each an In requirement with one value, ANDed."),
        },
        description,
        **{"x-kubernetes-map-type": "atomic"},
    )


def named_expression(name_description: str, expression_description: str) -> Schema:
    """``{name, expression}``: a match condition or a variable."""
    return obj(
        {"expression": string(expression_description), "name": string(name_description)},
        required=("expression", "name"),
    )


def match_condition() -> Schema:
    return named_expression(
        "Identifies the condition; a qualified name (e.g. 'my.name' or 'example.com/MyName').",
        "A CEL expression that must evaluate to bool.",
    )


def _resource_rule() -> Schema:
    """``NamedRuleWithOperations``."""

    def atomic(description: str) -> Schema:
        return strings(description, list_type="atomic")

    return obj(
        {
            "apiGroups": atomic("API groups of the resources; '*' is all groups."),
            "apiVersions": atomic("API versions of the resources; '*' is all versions."),
            "operations": atomic("CREATE, UPDATE, DELETE, CONNECT or '*'."),
            "resourceNames": atomic("Names the rule applies to; empty means every name."),
            "resources": atomic("Resources ('pods', 'pods/status', '*', '*/scale' ...)."),
            "scope": string("Cluster, Namespaced or '*' (the default)."),
        },
        **{"x-kubernetes-map-type": "atomic"},
    )


def match_resources(description: str, extra: dict[str, Schema] | None = None) -> Schema:
    """``admissionregistration.k8s.io/v1`` ``MatchResources`` (plus ``extra`` properties)."""
    properties: dict[str, Schema] = {
        "excludeResourceRules": arr(
            _resource_rule(),
            "Operations and resources the policy never matches (win over resourceRules).",
            list_type="atomic",
        ),
        "matchPolicy": string("Exact or Equivalent (the default): also match the resource through other versions."),
        "namespaceSelector": label_selector("Runs the policy on objects whose namespace matches."),
        "objectSelector": label_selector("Runs the policy on objects whose labels (old or new) match."),
        "resourceRules": arr(_resource_rule(), "Operations and resources the policy matches.", list_type="atomic"),
        **(extra or {}),
    }
    return obj(dict(sorted(properties.items())), description, **{"x-kubernetes-map-type": "atomic"})


def conditions(description: str = "Observed conditions, one per type.", *, keyed_by_type: bool = True) -> Schema:
    """A list of ``metav1.Condition``: keyed by ``type`` (one per type), or a plain (atomic) list as
    Kyverno's ``ConditionStatus.conditions`` is (no list-type marker: two conditions may share a type)."""
    condition = obj(
        {
            "lastTransitionTime": string("When the condition last changed status.", format="date-time"),
            "message": string("Human-readable details.", max_length=32768),
            "observedGeneration": integer(
                "The .metadata.generation the condition was set for.", minimum=0, format="int64"
            ),
            "reason": string(
                "Programmatic identifier of the last transition (CamelCase).",
                max_length=1024,
                min_length=1,
                pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
            ),
            "status": string("True, False or Unknown.", enum=("True", "False", "Unknown")),
            "type": string(
                "The condition type, e.g. celmut.io/Compiled.",
                max_length=316,
                pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
            ),
        },
        "A metav1.Condition.",
        required=("lastTransitionTime", "message", "reason", "status", "type"),
    )
    if not keyed_by_type:
        return arr(condition, description)
    return arr(condition, description, list_type="map", map_keys=("type",))


def root(spec: Schema, status: Schema, description: str, *, spec_required: bool = True) -> Schema:
    """The openAPIV3Schema of a custom resource: apiVersion, kind, metadata, spec and status."""
    return obj(
        {
            "apiVersion": string("The versioned schema of this representation of an object."),
            "kind": string("The REST resource this object represents."),
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        description,
        required=("spec",) if spec_required else (),
    )
