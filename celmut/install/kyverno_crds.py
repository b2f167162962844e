"""The ``policies.kyverno.io`` kinds celmut serves: MutatingPolicy, NamespacedMutatingPolicy and
PolicyException, as Kyverno defines them.

The schemas follow Kyverno's CRDs field for field (kyverno/api ``policies.kyverno.io`` types, as of
Kyverno 1.17+: ``targetMatchConditions``, ``auditAnnotations``, ``evaluation.skipBackgroundRequests``
and ``useServerSideApply``, PolicyException ``expiresAt``/``properties``), and are no stricter: an
object Kyverno's CRD accepts is accepted here, so celmut can install them on a cluster without Kyverno
and Kyverno can take them over later. Descriptions are shortened. Served versions are v1 (storage),
v1beta1 and the deprecated v1alpha1, all with the same schema.
"""

from __future__ import annotations

from typing import Any

from celmut.install import schema as s
from celmut.install.crd import CRD, Version

GROUP = "policies.kyverno.io"
VERSIONS = ("v1", "v1beta1", "v1alpha1")
_POLICY_COLUMNS = (
    {"jsonPath": ".metadata.creationTimestamp", "name": "AGE", "type": "date"},
    {"jsonPath": ".status.conditionStatus.ready", "name": "READY", "type": "string"},
)


def _mutating_policy_spec() -> s.Schema:
    mutation = s.obj(
        {
            "applyConfiguration": s.obj(
                {"expression": s.string("CEL building an apply configuration (Object{...}).")},
                "The configuration merged into the object like server-side apply.",
            ),
            "jsonPatch": s.obj(
                {"expression": s.string("CEL returning a list of JSONPatch values.")},
                "A JSON patch (RFC 6902) built by CEL.",
            ),
            "patchType": s.string("ApplyConfiguration or JSONPatch."),
        },
        "One mutation: a CEL expression building a patch.",
        required=("patchType",),
    )
    return s.obj(
        {
            "auditAnnotations": s.arr(
                s.obj(
                    {
                        "key": s.string("The audit annotation key (the policy name is prefixed)."),
                        "valueExpression": s.string("CEL returning the value (a string, or null to skip)."),
                    },
                    required=("key", "valueExpression"),
                ),
                "Annotations recorded on the audit event after the mutations succeed.",
                list_type="atomic",
            ),
            "autogen": s.obj(
                {
                    "mutatingAdmissionPolicy": s.obj(
                        {"enabled": s.boolean("Generate a Kubernetes MutatingAdmissionPolicy (default false).")},
                        "Whether to generate a MutatingAdmissionPolicy.",
                    ),
                    "podControllers": s.obj(
                        {"controllers": s.strings("Pod controllers to generate variants for; [] for none.")},
                        "Variants of a pod policy for pod controllers.",
                    ),
                },
                "Configuration of the generated variants.",
            ),
            "evaluation": s.obj(
                {
                    "admission": s.obj(
                        {"enabled": s.boolean("Apply the policy during admission.", default=True)},
                        "Policy evaluation during admission.",
                    ),
                    "background": s.obj(
                        {"enabled": s.boolean("Apply the policy in background scans.", default=True)},
                        "Policy evaluation during background scans.",
                    ),
                    "mode": s.string("Kubernetes (the default) or JSON."),
                    "mutateExisting": s.obj(
                        {"enabled": s.boolean("Mutate existing resources.", default=False)},
                        "Mutation of existing resources (targetMatchConstraints, else matchConstraints).",
                    ),
                    "skipBackgroundRequests": s.boolean(
                        "Ignore requests made by the background controller (default true)."
                    ),
                    "useServerSideApply": s.boolean(
                        "Apply configurations replace atomic values instead of rejecting them (default false)."
                    ),
                },
                "How and when the policy is evaluated.",
            ),
            "failurePolicy": s.string("What an error does: Fail (the default) or Ignore.", enum=("Ignore", "Fail")),
            "matchConditions": s.arr(
                s.match_condition(),
                "CEL conditions that must all hold for the policy to apply (at most 64).",
                list_type="map",
                map_keys=("name",),
            ),
            "matchConstraints": s.match_resources("The resources and operations the policy is designed for."),
            "mutations": s.arr(mutation, "The mutations, applied in order.", list_type="atomic"),
            "reinvocationPolicy": s.string("Never (the default) or IfNeeded."),
            "targetMatchConditions": s.arr(
                s.match_condition(),
                "CEL conditions a mutateExisting target must meet (object is the target).",
                list_type="map",
                map_keys=("name",),
            ),
            "targetMatchConstraints": s.match_resources(
                "The existing resources a mutateExisting policy mutates.",
                {"expression": s.string("CEL returning the target objects.")},
            ),
            "variables": s.arr(
                s.named_expression("A CEL identifier, used as variables.<name>.", "The CEL expression."),
                "Named CEL expressions, evaluated lazily; each may use the ones before it.",
                list_type="map",
                map_keys=("name",),
            ),
            "webhookConfiguration": s.obj(
                {"timeoutSeconds": s.integer("Seconds allowed to apply this policy (1–30, default 10).")},
                "Configuration of the webhook that serves the policy.",
            ),
        },
        "The desired behaviour of the mutating policy.",
    )


_PRESERVE_UNKNOWN_FIELDS: dict[str, Any] = {"x-kubernetes-preserve-unknown-fields": True}


def _policy_status() -> s.Schema:
    return s.obj(
        {
            "autogen": s.obj(
                description="The generated variants (written by Kyverno).",
                **_PRESERVE_UNKNOWN_FIELDS,
            ),
            "conditionStatus": s.obj(
                {
                    "conditions": s.conditions("Conditions, e.g. celmut.io/Compiled written by celmut."),
                    "message": s.string("A summary of the conditions."),
                    "ready": s.boolean("Whether the policy is ready to be served."),
                },
                "Readiness of the policy.",
            ),
            "generated": s.boolean("Whether a MutatingAdmissionPolicy was generated from the policy."),
        },
        "Policy runtime data.",
    )


def _mutating_policy(kind: str, plural: str, short_name: str, scope: str) -> CRD:
    schema = s.root(
        _mutating_policy_spec(),
        _policy_status(),
        f"{kind}: CEL mutations for admission requests and existing resources.",
    )
    return CRD(
        group=GROUP,
        kind=kind,
        plural=plural,
        scope=scope,
        short_names=(short_name,),
        categories=("kyverno",),
        versions=tuple(
            Version(v, schema, storage=v == "v1", deprecated=v == "v1alpha1", printer_columns=_POLICY_COLUMNS)
            for v in VERSIONS
        ),
    )


def _policy_exception() -> CRD:
    spec = s.obj(
        {
            "allowedValues": s.strings("Values CEL expressions can read as exceptions.allowedValues."),
            "evaluationMode": s.string("Which controller compiles and handles this exception."),
            "expiresAt": s.string("When the exception stops applying (RFC 3339).", format="date-time"),
            "images": s.strings("Container images CEL expressions can read as exceptions.allowedImages."),
            "matchConditions": s.arr(
                s.match_condition(), "CEL conditions that must all hold for a resource to be excluded."
            ),
            "policyRefs": s.arr(
                s.obj(
                    {"kind": s.string("The kind of the policy."), "name": s.string("The name of the policy.")},
                    required=("kind", "name"),
                ),
                "The policies the exception applies to.",
            ),
            "properties": s.string_map("Additional metadata, e.g. reason, ticket, approved-by."),
            "reportResult": s.string(
                "How an excluded resource is reported: skip (the default) or pass.",
                enum=("skip", "pass"),
                default="skip",
            ),
        },
        "Which policies the exception applies to, and when.",
        required=("policyRefs",),
    )
    schema = s.obj(
        {
            "apiVersion": s.string("The versioned schema of this representation of an object."),
            "kind": s.string("The REST resource this object represents."),
            "metadata": {"type": "object"},
            "spec": spec,
        },
        "PolicyException declares resources to be excluded from specified policies.",
        required=("spec",),
    )
    return CRD(
        group=GROUP,
        kind="PolicyException",
        plural="policyexceptions",
        scope="Namespaced",
        versions=tuple(
            Version(v, schema, storage=v == "v1", deprecated=v == "v1alpha1", status_subresource=False)
            for v in VERSIONS
        ),
    )


def kyverno_crds() -> list[CRD]:
    return [
        _mutating_policy("MutatingPolicy", "mutatingpolicies", "mpol", "Cluster"),
        _mutating_policy("NamespacedMutatingPolicy", "namespacedmutatingpolicies", "nmpol", "Namespaced"),
        _policy_exception(),
    ]
