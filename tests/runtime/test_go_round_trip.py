"""What kube-apiserver does to an object around a MutatingAdmissionPolicy mutation (issue 13 A/B).

Built-in kinds are Go structs there: encoded with ``encoding/json`` before a JSONPatch, decoded
strictly and re-encoded after it (``k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch/
json_patch.go``). ``omitempty`` drops empty maps and lists but never a struct (``status: {}``,
``resources: {}`` stay); custom resources stay unstructured and keep everything. Each row names the
API-server behaviour it pins.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.fakekube_tests.manifests import structural_widget_crd
from tests.runtime.helpers import admit, applyconfig, jsonpatch, map_policy, mpol

# --- objects as kube-apiserver sends them in an AdmissionReview (defaulted, Go-encoded) -------------

CONTAINER = {
    "name": "nginx",
    "image": "nginx:1.27",
    "resources": {},  # ResourceRequirements is a non-pointer struct: always encoded
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "imagePullPolicy": "IfNotPresent",
}
POD_SPEC = {
    "containers": [CONTAINER],
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "securityContext": {},  # a non-nil *PodSecurityContext with no field set
    "schedulerName": "default-scheduler",
    "enableServiceLinks": True,
    "preemptionPolicy": "PreemptLowerPriority",
    "priority": 0,
}
TEMPLATE = {"metadata": {"creationTimestamp": None, "labels": {"app": "web"}}, "spec": POD_SPEC}
META = {"name": "web", "namespace": "default", "creationTimestamp": None, "labels": {"app": "web"}}
SELECTOR = {"matchLabels": {"app": "web"}}


def _obj(api_version: str, kind: str, spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": META, "spec": spec, "status": status or {}}


AS_SENT = {
    "Pod": _obj("v1", "Pod", POD_SPEC),
    "Deployment": _obj(
        "apps/v1",
        "Deployment",
        {
            "replicas": 1,
            "selector": SELECTOR,
            "template": TEMPLATE,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
        },
    ),
    "Service": _obj(
        "v1",
        "Service",
        {
            "ports": [{"protocol": "TCP", "port": 80, "targetPort": 8080}],
            "selector": {"app": "web"},
            "type": "ClusterIP",
            "sessionAffinity": "None",
            "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster",
        },
        {"loadBalancer": {}},  # LoadBalancerStatus is a struct: kept empty
    ),
    "StatefulSet": _obj(
        "apps/v1",
        "StatefulSet",
        {
            "replicas": 1,
            "selector": SELECTOR,
            "template": TEMPLATE,
            "serviceName": "web",
            "podManagementPolicy": "OrderedReady",
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            "revisionHistoryLimit": 10,
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
        },
        {"replicas": 0, "availableReplicas": 0},  # StatefulSetStatus.replicas has no omitempty
    ),
    "DaemonSet": _obj(
        "apps/v1",
        "DaemonSet",
        {
            "selector": SELECTOR,
            "template": TEMPLATE,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "revisionHistoryLimit": 10,
        },
        {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0},
    ),
    "ReplicaSet": _obj(
        "apps/v1", "ReplicaSet", {"replicas": 1, "selector": SELECTOR, "template": TEMPLATE}, {"replicas": 0}
    ),
    "Job": _obj(
        "batch/v1",
        "Job",
        {
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 6,
            "template": {**TEMPLATE, "spec": {**POD_SPEC, "restartPolicy": "Never"}},
            "completionMode": "NonIndexed",
            "suspend": False,
            "podReplacementPolicy": "TerminatingOrFailed",
        },
    ),
    "CronJob": _obj(
        "batch/v1",
        "CronJob",
        {
            "schedule": "*/5 * * * *",
            "concurrencyPolicy": "Allow",
            "suspend": False,
            "jobTemplate": {
                "metadata": {"creationTimestamp": None},
                "spec": {"template": {**TEMPLATE, "spec": {**POD_SPEC, "restartPolicy": "OnFailure"}}},
            },
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 1,
        },
    ),
}
RESOURCES = {
    "Pod": ("", "v1", "pods"),
    "Service": ("", "v1", "services"),
    "Deployment": ("apps", "v1", "deployments"),
    "StatefulSet": ("apps", "v1", "statefulsets"),
    "DaemonSet": ("apps", "v1", "daemonsets"),
    "ReplicaSet": ("apps", "v1", "replicasets"),
    "Job": ("batch", "v1", "jobs"),
    "CronJob": ("batch", "v1", "cronjobs"),
    "Widget": ("example.com", "v1", "widgets"),
}


def admission_policy(kind: str, mutations: str, failure: str = "Fail") -> str:
    group, version, resource = RESOURCES[kind]
    return map_policy(mutations, failure=failure, group=group, version=version, resource=resource)


NO_OP_MUTATIONS = [
    pytest.param(jsonpatch('[JSONPatch{op: "test", path: "/metadata/name", value: "web"}]'), id="a test that holds"),
    pytest.param(
        jsonpatch('[JSONPatch{op: "replace", path: "/metadata/labels/app", value: "web"}]'), id="the same label"
    ),
    pytest.param(applyconfig('Object{metadata: Object.metadata{labels: {"app": "web"}}}'), id="apply the same label"),
]


@pytest.mark.parametrize("kind", list(AS_SENT))
@pytest.mark.parametrize("mutation", NO_OP_MUTATIONS)
def test_a_no_op_admission_policy_gives_an_empty_patch_on_every_kind_the_presets_touch(
    kind: str, mutation: str
) -> None:
    """encoding/json never omits a struct: status: {}, securityContext: {}, resources: {},
    status.loadBalancer: {} and creationTimestamp: null survive the API server's round trip, so a
    mutation that changes nothing changes nothing (before: remove /status, /spec/securityContext …)."""
    sent = AS_SENT[kind]
    result = admit(admission_policy(kind, mutation), copy.deepcopy(sent))
    assert result.allowed, result.message
    assert result.patch == []
    assert result.object == sent


def test_a_real_change_patches_only_what_changed() -> None:
    result = admit(
        admission_policy("Deployment", jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/team", value: "a"}]')),
        copy.deepcopy(AS_SENT["Deployment"]),
    )
    assert result.patch == [{"op": "add", "path": "/metadata/labels/team", "value": "a"}]


# --- custom resources stay unstructured ------------------------------------------------------------

WIDGET_CRD = structural_widget_crd(
    {
        "options": {"type": "object", "additionalProperties": {"type": "string"}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "note": {"type": "string", "nullable": True},
        "size": {"type": "integer"},
    }
)


def widget() -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "annotations": {}},
        "spec": {"options": {}, "tags": [], "note": None, "size": 1},
    }


@pytest.mark.parametrize(
    "mutation",
    [
        pytest.param(jsonpatch('[JSONPatch{op: "replace", path: "/spec/size", value: 2}]'), id="JSONPatch"),
        pytest.param(applyconfig("Object{spec: Object.spec{size: 2}}"), id="ApplyConfiguration"),
    ],
)
def test_a_custom_resource_keeps_empty_maps_lists_and_nulls(mutation: str) -> None:
    """patch/json_patch.go decodes a CR into unstructured.Unstructured: nothing is omitted (before:
    options, tags, note and metadata.annotations were deleted)."""
    from tests.runtime.helpers import engine

    eng = engine(admission_policy("Widget", mutation), cluster=[WIDGET_CRD])
    result = admit(eng, widget())
    assert result.allowed, result.message
    assert result.object["spec"] == {"options": {}, "tags": [], "note": None, "size": 2}
    assert result.object["metadata"]["annotations"] == {}
    assert result.patch == [{"op": "replace", "path": "/spec/size", "value": 2}]


# --- B: decode and re-encode as the API server does ------------------------------------------------


def pod() -> dict[str, Any]:
    return copy.deepcopy(AS_SENT["Pod"])


def test_null_into_a_string_map_becomes_an_empty_string() -> None:
    """Go's json leaves a map[string]string element at its zero value for null: ``b: ""``."""
    result = admit(
        admission_policy("Pod", jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/b", value: null}]')), pod()
    )
    assert result.object["metadata"]["labels"] == {"app": "web", "b": ""}
    assert result.patch == [{"op": "add", "path": "/metadata/labels/b", "value": ""}]


def test_a_map_emptied_by_a_patch_disappears() -> None:
    """omitempty drops the now empty annotations map when the object is re-encoded."""
    obj = pod()
    obj["metadata"] = {**obj["metadata"], "annotations": {"only": "x"}}
    move = jsonpatch('[JSONPatch{op: "move", from: "/metadata/annotations/only", path: "/metadata/labels/only"}]')
    result = admit(admission_policy("Pod", move), obj)
    assert "annotations" not in result.object["metadata"]
    assert result.object["metadata"]["labels"] == {"app": "web", "only": "x"}


def test_a_field_set_to_null_by_a_patch_is_removed_and_a_list_emptied_keeps_its_struct_parent() -> None:
    """null into a pointer (securityContext) is nil, omitted; removing the last env entry leaves an
    empty slice, omitted, while the container struct stays."""
    obj = pod()
    obj["spec"]["containers"][0] = {**CONTAINER, "env": [{"name": "A", "value": "1"}]}
    mutations = jsonpatch(
        '[JSONPatch{op: "replace", path: "/spec/securityContext", value: null},'
        ' JSONPatch{op: "remove", path: "/spec/containers/0/env/0"}]'
    )
    result = admit(admission_policy("Pod", mutations), obj)
    assert "securityContext" not in result.object["spec"]
    assert result.object["spec"]["containers"][0] == CONTAINER


def test_kyverno_patches_the_json_as_received() -> None:
    """A MutatingPolicy is no Go round trip (Kyverno works on unstructured objects): a null label
    stays null."""
    result = admit(mpol("p", jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/b", value: null}]')), pod())
    assert result.object["metadata"]["labels"] == {"app": "web", "b": None}


WRONG_SHAPES = [
    pytest.param(
        '[JSONPatch{op: "copy", from: "/spec/containers/0/name", path: "/spec/containers/0/env/-"}]',
        "json: cannot unmarshal string into Go struct field Container.spec.containers.env of type v1.EnvVar",
        id="a string where an EnvVar belongs",
    ),
    pytest.param(
        '[JSONPatch{op: "add", path: "/spec/containers/0/env", value: {"name": "A"}}]',
        "json: cannot unmarshal object into Go struct field Container.spec.containers.env of type []v1.EnvVar",
        id="an object where a list belongs",
    ),
    pytest.param(
        '[JSONPatch{op: "replace", path: "/spec", value: "x"}]',
        "json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec",
        id="a string where the spec struct belongs",
    ),
    pytest.param(
        '[JSONPatch{op: "add", path: "/metadata/labels/n", value: 1}]',
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
        id="a number in a string map",
    ),
    pytest.param(
        '[JSONPatch{op: "replace", path: "/spec/priority", value: "high"}]',
        "json: cannot unmarshal string into Go struct field PodSpec.spec.priority of type int32",
        id="a string where an int32 belongs",
    ),
    pytest.param(
        '[JSONPatch{op: "replace", path: "/spec/priority", value: 1.5}]',
        "json: cannot unmarshal number 1.5 into Go struct field PodSpec.spec.priority of type int32",
        id="a fraction where an int32 belongs",
    ),
]


@pytest.mark.parametrize(("patch", "message"), WRONG_SHAPES)
def test_a_value_of_the_wrong_json_type_is_the_api_servers_internal_error_whatever_the_failure_policy(
    patch: str, message: str
) -> None:
    """json_patch.go wraps the decoder's UnmarshalTypeError in NewInternalError, a StatusError the
    dispatcher returns as is: the request is rejected even under failurePolicy Ignore."""
    obj = pod()
    obj["spec"]["containers"][0] = {**CONTAINER, "env": [{"name": "A", "value": "1"}]}
    result = admit(admission_policy("Pod", jsonpatch(patch), failure="Ignore"), obj)
    assert not result.allowed
    assert f"Internal error occurred: {message}" in result.message


def test_a_whole_double_fits_an_integer_field() -> None:
    """cel-go turns a double into a JSON number Go prints without a fraction (2.0 → 2): it decodes."""
    result = admit(
        admission_policy("Pod", jsonpatch('[JSONPatch{op: "replace", path: "/spec/priority", value: 2.0}]')), pod()
    )
    assert result.allowed and result.object["spec"]["priority"] == 2


BINARY = applyconfig(
    'Object{metadata: Object.metadata{annotations: {"blob": string(b"hi")}}, binaryData: {"blob": b"hi"}}'
)


def configmap_policy(policy: str) -> str:
    return policy.replace("resources: [pods]", "resources: [configmaps]")


@pytest.mark.parametrize("semantics", ["MutatingAdmissionPolicy", "MutatingPolicy"])
def test_bytes_in_an_apply_configuration_are_rejected(semantics: str) -> None:
    """structured-merge-diff validates the applied object and a CEL bytes value is a Go []byte,
    which is no string (typed/validate.go validateScalar, which prints the value with %#v inside its
    *value.valueUnstructured; Kyverno mpol/compiler/applyconfig.go uses the same merge). A JSONPatch
    value, by contrast, is base64-encoded (cel-go Bytes.ConvertToNative)."""
    text = admission_policy("Pod", BINARY) if semantics == "MutatingAdmissionPolicy" else mpol("p", BINARY)
    result = admit(configmap_policy(text), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    assert not result.allowed
    assert (
        "error applying patch: failed to convert patch object to typed object: .binaryData.blob: "
        "expected string, got &value.valueUnstructured{Value:[]uint8{0x68, 0x69}}"
    ) in result.message


def test_bytes_in_a_json_patch_value_are_base64() -> None:
    result = admit(
        configmap_policy(
            admission_policy("Pod", jsonpatch('[JSONPatch{op: "add", path: "/binaryData", value: {"blob": b"hi"}}]'))
        ),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
    )
    assert result.allowed and result.object["binaryData"] == {"blob": "aGk="}


# --- type names of typed constructions: checked at admission --------------------------------------

MISNAMED = [
    pytest.param(
        applyconfig('Object{spec: Object.spec.wrong{nodeName: "n"}}'),
        'type mismatch: unexpected type name "Object.spec.wrong", expected "Object.spec", '
        "which matches field name path from root Object type",
        id="ApplyConfiguration",
    ),
    pytest.param(
        jsonpatch(
            '[JSONPatch{op: "add", path: "/spec/containers/-", value: Object.spec.containers{name: "x", '
            "ports: [Object.spec.containers.portsZ{containerPort: 8080}]}}]"
        ),
        'type mismatch: unexpected type name "Object.spec.containers.portsZ", expected '
        '"Object.spec.containers.ports", which matches field name path from root Object type',
        id="JSONPatch value",  # patch/json_patch_test.go "jsonPatch invalid CEL initializer type"
    ),
]


@pytest.mark.parametrize(("mutation", "message"), MISNAMED)
def test_a_misnamed_construction_loads_and_fails_at_admission_following_the_failure_policy(
    mutation: str, message: str
) -> None:
    """dynamic/objects.go CheckTypeNamesMatchFieldPathNames runs on the result (patch/smd.go,
    patch/json_patch.go): the API server creates the policy; the error is a policy error."""
    failing = admit(admission_policy("Pod", mutation, failure="Fail"), pod())
    assert not failing.allowed and message in failing.message
    ignored = admit(admission_policy("Pod", mutation + ADD_LABEL, failure="Ignore"), pod())
    assert ignored.allowed and ignored.object["metadata"]["labels"]["later"] == "1"
    assert message in ignored.outcomes[0].reason


ADD_LABEL = jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/later", value: "1"}]')


def test_a_misnamed_construction_in_a_branch_not_taken_is_fine() -> None:
    """The check reads the value, not the expression: only the constructions evaluated count."""
    mutation = applyconfig('Object{spec: true ? Object.spec{nodeName: "n"} : Object.spec.wrong{nodeName: "m"}}')
    result = admit(admission_policy("Pod", mutation), pod())
    assert result.allowed and result.object["spec"]["nodeName"] == "n"


def test_kyverno_also_checks_type_names_at_admission() -> None:
    """Kyverno's mpol compiler does not check names (compiler.go); applyconfig.go does, at run time."""
    result = admit(mpol("p", applyconfig('Object{spec: Object.spec.wrong{nodeName: "n"}}')), pod())
    assert not result.allowed
    assert 'unexpected type name "Object.spec.wrong", expected "Object.spec"' in result.message
