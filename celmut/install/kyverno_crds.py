"""The ``policies.kyverno.io`` kinds celmut serves: MutatingPolicy, NamespacedMutatingPolicy and
PolicyException, as Kyverno defines them.

The schemas follow Kyverno's generated CRDs field for field (kyverno/api ``policies.kyverno.io`` types
and ``config/crds/policies.kyverno.io_*.yaml``, as of Kyverno 1.17+: ``targetMatchConditions``,
``auditAnnotations``, ``evaluation.skipBackgroundRequests`` and ``useServerSideApply``, PolicyException
``expiresAt``/``properties``), so that a policy one accepts the other accepts too, and either can
replace the other's CRD: celmut installs them on a cluster without Kyverno, and Kyverno can take
them over later. What used to differ, and now follows Kyverno (each pinned by
``tests/install/test_kyverno_crd_parity.py``):

* **storage version v1beta1** (``+kubebuilder:storageversion`` on the v1beta1 types), so a CRD one
  tool created and the other updates keeps ``status.storedVersions`` at ``[v1beta1]``; v1, v1beta1
  and the deprecated v1alpha1 are all served, with the same schema;
* ``selectableFields: [.spec.evaluation.mode]`` on the policy kinds (``+kubebuilder:selectablefield``):
  ``kubectl get mpol --field-selector spec.evaluation.mode=JSON`` (Kubernetes >= 1.31);
* ``evaluation.skipBackgroundRequests`` defaults to ``true`` in the stored object
  (``+kubebuilder:default=true``);
* ``status.conditionStatus.conditions`` is a plain list (two conditions may share a type), and
  ``status.autogen`` is typed (``configs: {<group>: {spec, targets}}``) rather than free-form.

Descriptions are shortened. Another product may own these CRDs: they are rows of
:data:`celmut.install.shared_crds.SHARED_CRDS`, which says how celmut installs them only while absent
or its own and never deletes them. ``helm.sh/resource-policy: keep`` stays on them for releases of the
chart that rendered them as ordinary templates (it is not what protects them now).
"""

from __future__ import annotations

from celmut.install import schema as s
from celmut.install.crd import CRD, Version

GROUP = "policies.kyverno.io"
VERSIONS = ("v1", "v1beta1", "v1alpha1")
STORAGE_VERSION = "v1beta1"  # Kyverno's: kyverno/api api/policies.kyverno.io/v1beta1 (+kubebuilder:storageversion)
KEEP = (("helm.sh/resource-policy", "keep"),)
SELECTABLE_FIELDS = (".spec.evaluation.mode",)
_POLICY_COLUMNS = (
    {"jsonPath": ".metadata.creationTimestamp", "name": "AGE", "type": "date"},
    {"jsonPath": ".status.conditionStatus.ready", "name": "READY", "type": "string"},
)


def _mutating_policy_spec(description: str = "The desired behaviour of the mutating policy.") -> s.Schema:
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
                        "Ignore requests made by the background controller.", default=True
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
        description,
    )


def _autogen_status() -> s.Schema:
    """kyverno/api ``MutatingPolicyAutogenStatus``: ``configs`` maps a group of generated variants to its
    spec and the resources it targets (``MutatingPolicyAutogen``, ``Target``)."""
    target = s.obj(
        {
            "group": s.string("API group of the target."),
            "kind": s.string("Kind of the target."),
            "resource": s.string("Resource of the target."),
            "version": s.string("API version of the target."),
        },
        required=("kind", "resource", "version"),
    )
    config = s.obj(
        {
            "spec": _mutating_policy_spec("The spec of the generated variant."),
            "targets": s.arr(target, "The resources the variant applies to."),
        },
        required=("spec", "targets"),
    )
    return s.obj(
        {"configs": s.obj(description="Generated variants by group.", additionalProperties=config)},
        "The generated variants (written by Kyverno).",
    )


def _policy_status() -> s.Schema:
    return s.obj(
        {
            "autogen": _autogen_status(),
            "conditionStatus": s.obj(
                {
                    "conditions": s.conditions(
                        "Conditions, e.g. celmut.io/Compiled written by celmut.", keyed_by_type=False
                    ),
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
        annotations=KEEP,
        versions=tuple(
            Version(
                v,
                schema,
                storage=v == STORAGE_VERSION,
                deprecated=v == "v1alpha1",
                printer_columns=_POLICY_COLUMNS,
                selectable_fields=SELECTABLE_FIELDS,
            )
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
        annotations=KEEP,
        versions=tuple(
            Version(v, schema, storage=v == STORAGE_VERSION, deprecated=v == "v1alpha1", status_subresource=False)
            for v in VERSIONS
        ),
    )


#: kyverno/kyverno config/crds/kyverno/kyverno.io_globalcontextentries.yaml: v2, v2alpha1 (deprecated)
#: and v2beta1 (stored), one schema.
GCE_GROUP = "kyverno.io"
GCE_VERSIONS = (("v2", False, False), ("v2alpha1", False, True), ("v2beta1", True, False))  # name, storage, deprecated
_GCE_COLUMNS = (
    {"jsonPath": ".metadata.creationTimestamp", "name": "AGE", "type": "date"},
    {"jsonPath": ".spec.apiCall.refreshInterval", "name": "REFRESH INTERVAL", "type": "string"},
    {"jsonPath": ".status.lastRefreshTime", "name": "LAST REFRESH", "type": "date"},
)


def _global_context_entry() -> CRD:
    """Kyverno's GlobalContextEntry (api/kyverno/v2alpha1/global_context_entry_types.go): data that
    ``globalContext.Get`` reads, a watched resource list or a polled API call."""
    key_ref = s.obj(
        {
            "key": s.string("Key within the Secret's or ConfigMap's data."),
            "name": s.string("Name of the Secret or ConfigMap."),
            "namespace": s.string("Its namespace."),
        },
        required=("key", "name"),
    )
    value_from = s.obj({"configMapKeyRef": key_ref, "secretKeyRef": key_ref}, "A value read from a key.")
    api_call = s.obj(
        {
            "data": s.arr(
                s.obj(
                    {"key": s.string("The key of the value."), "value": s.any_value("The value.")},
                    required=("key", "value"),
                ),
                "The POST data (method POST only).",
            ),
            "method": s.string("GET or POST.", enum=("GET", "POST"), default="GET"),
            "refreshInterval": s.string(
                "How often the call is made (a Go duration).", format="duration", default="10m"
            ),
            "retryLimit": s.integer("Tries of a failing call.", minimum=1, default=3, format=""),
            "service": s.obj(
                {
                    "caBundle": s.string("PEM CA bundle that verifies the service."),
                    "caBundleFrom": value_from,
                    "headers": s.arr(
                        s.obj(
                            {
                                "key": s.string("Header name."),
                                "value": s.string("Header value."),
                                "valueFrom": value_from,
                            },
                            required=("key",),
                        ),
                        "HTTP headers sent.",
                    ),
                    "url": s.string("The JSON web service URL."),
                },
                "A call to a JSON web service (exclusive with urlPath).",
                required=("url",),
            ),
            "urlPath": s.string("A Kubernetes API path, as `kubectl get --raw` takes (exclusive with service)."),
        },
        "Results of an API call, cached (exclusive with kubernetesResource).",
    )
    spec = s.obj(
        {
            "apiCall": api_call,
            "kubernetesResource": s.obj(
                {
                    "group": s.string("The resource's API group."),
                    "namespace": s.string("One namespace; empty: all (or a cluster-scoped resource)."),
                    "resource": s.string("The plural resource name, e.g. deployments."),
                    "version": s.string("The resource's API version."),
                },
                "A list of Kubernetes objects, watched (exclusive with apiCall).",
                required=("resource", "version"),
            ),
            "projections": s.arr(
                s.obj(
                    {
                        "jmesPath": s.string("JMESPath over the cached data."),
                        "name": s.string("The projection's name, globalContext.Get's second argument."),
                    },
                    required=("jmesPath", "name"),
                ),
                "Named JMESPath results of the cached data.",
            ),
        },
        "What to cache.",
        oneOf=[{"required": ["kubernetesResource"]}, {"required": ["apiCall"]}],
    )
    status = s.obj(
        {
            "conditions": s.conditions(keyed_by_type=False),
            "lastRefreshTime": s.string("Last successful refresh of the API call.", format="date-time"),
            "ready": s.boolean("Deprecated in favor of conditions."),
        },
        "Runtime data of the entry.",
    )
    schema = s.root(spec, status, "GlobalContextEntry declares resources to be cached.")
    return CRD(
        group=GCE_GROUP,
        kind="GlobalContextEntry",
        plural="globalcontextentries",
        scope="Cluster",
        short_names=("gctxentry",),
        categories=("kyverno",),
        annotations=KEEP,
        versions=tuple(
            Version(name, schema, storage=storage, deprecated=deprecated, printer_columns=_GCE_COLUMNS)
            for name, storage, deprecated in GCE_VERSIONS
        ),
    )


def kyverno_crds() -> list[CRD]:
    return [
        _mutating_policy("MutatingPolicy", "mutatingpolicies", "mpol", "Cluster"),
        _mutating_policy("NamespacedMutatingPolicy", "namespacedmutatingpolicies", "nmpol", "Namespaced"),
        _policy_exception(),
        _global_context_entry(),
    ]
