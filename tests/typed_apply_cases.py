"""ApplyConfiguration cases by family, each naming the upstream function it pins.

Shared by the differential tests (tests/runtime/test_typed_apply.py, which run them through celmut
for a MutatingPolicy and a MutatingAdmissionPolicy) and by benchmarks/typed_apply_real.py, which runs
them through a native MutatingAdmissionPolicy on a real kube-apiserver and records its answers.

``expect`` is what kube-apiserver v1.36 does for a MutatingAdmissionPolicy: ``("ok", path, value)``
(the mutated object has ``value`` at the dotted ``path``) or ``("error", text)`` (the request is denied
with ``text`` in the message). ``kyverno`` is the MutatingPolicy answer where it differs: Kyverno runs
the same structured-merge-diff steps on the unstructured object and has no Go-type conversion
afterwards, so a ``converter.go`` row is applied there as merged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

VALIDATE = "structured-merge-diff typed/validate.go"
HELPERS = "structured-merge-diff typed/helpers.go"
SMD_GO = "k8s.io/apiserver policy/mutating/patch/smd.go"
CONVERTER = "apimachinery runtime/converter.go fromUnstructured"
UNMARSHALERS = "apimachinery intstr.IntOrString / resource.Quantity UnmarshalJSON"

TYPED = "error applying patch: failed to convert patch object to typed object: "
ATOMIC = "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: "
TO_DEPLOYMENT = "unable to convert unstructured object to apps/v1, Kind=Deployment: "
TO_CONFIGMAP = "unable to convert unstructured object to /v1, Kind=ConfigMap: "
TO_POD = "unable to convert unstructured object to /v1, Kind=Pod: "

_D = "Object.spec.template.spec"
_C = f"{_D}.containers"


def deployment_spec(fields: str) -> str:
    return f"Object{{spec: Object.spec{{{fields}}}}}"


def container(fields: str) -> str:
    """A Deployment's container ``c`` with ``fields``."""
    return (
        f"Object{{spec: Object.spec{{template: Object.spec.template{{spec: {_D}{{"
        f'containers: [{_C}{{name: "c", {fields}}}]}}}}}}}}'
    )


def pod_spec(fields: str) -> str:
    return f"Object{{spec: Object.spec{{{fields}}}}}"


@dataclass(frozen=True)
class Case:
    id: str
    family: str
    upstream: str
    resource: str  # deployments, configmaps, pods
    expression: str
    expect: tuple[Any, ...]
    kyverno: tuple[Any, ...] | None = None  # the MutatingPolicy answer, when it differs

    def expected(self, semantics: str) -> tuple[Any, ...]:
        return self.kyverno if semantics == "MutatingPolicy" and self.kyverno is not None else self.expect


CASES: list[Case] = [
    # --- scalar type per schema type (validateScalar) ---------------------------------------------------
    Case(
        "int32-field-given-a-string",
        "scalar",
        VALIDATE + " validateScalar",
        "deployments",
        deployment_spec('replicas: "three"'),
        ("error", TYPED + ".spec.replicas: expected numeric (int or float), got string"),
    ),
    Case(
        "int32-field-given-a-bool",
        "scalar",
        VALIDATE + " validateScalar",
        "deployments",
        deployment_spec("replicas: true"),
        ("error", TYPED + ".spec.replicas: expected numeric (int or float), got bool"),
    ),
    Case(
        "int32-field-given-a-uint",
        "scalar",
        VALIDATE + " validateScalar (uint64 is no IsInt)",
        "deployments",
        deployment_spec("replicas: 3u"),
        ("error", TYPED + ".spec.replicas: expected numeric (int or float), got uint64"),
    ),
    Case(
        "string-field-given-an-int",
        "scalar",
        VALIDATE + " validateScalar",
        "deployments",
        container("imagePullPolicy: 42"),
        (
            "error",
            TYPED + '.spec.template.spec.containers[name="c"].imagePullPolicy: expected string, got '
            "&value.valueUnstructured{Value:42}",
        ),
    ),
    Case(
        "string-field-given-a-double",
        "scalar",
        VALIDATE + " validateScalar",
        "deployments",
        container("image: 1.5"),
        (
            "error",
            TYPED + '.spec.template.spec.containers[name="c"].image: expected string, got '
            "&value.valueUnstructured{Value:1.5}",
        ),
    ),
    Case(
        "string-field-given-a-bool",
        "scalar",
        VALIDATE + " validateScalar",
        "deployments",
        container("image: true"),
        (
            "error",
            TYPED + '.spec.template.spec.containers[name="c"].image: expected string, got '
            "&value.valueUnstructured{Value:true}",
        ),
    ),
    Case(
        "bool-field-given-a-string",
        "scalar",
        VALIDATE + " validateScalar",
        "deployments",
        deployment_spec('paused: "yes"'),
        ("error", TYPED + ".spec.paused: expected boolean, got &{yes}"),
    ),
    Case(
        "bool-field-given-an-int",
        "scalar",
        VALIDATE + " validateScalar",
        "deployments",
        deployment_spec("paused: 1"),
        ("error", TYPED + ".spec.paused: expected boolean, got &{1}"),
    ),
    Case(
        "struct-field-given-a-string",
        "scalar",
        VALIDATE + " doMap/mapValue",
        "deployments",
        deployment_spec('strategy: "Recreate"'),
        ("error", TYPED + ".spec.strategy: expected map, got &{Recreate}"),
    ),
    Case(
        "list-field-given-a-string",
        "scalar",
        VALIDATE + " doList/listValue",
        "deployments",
        container('args: "x"'),
        ("error", TYPED + '.spec.template.spec.containers[name="c"].args: expected list, got &{x}'),
    ),
    Case(
        "well-typed-int32",
        "scalar",
        VALIDATE + " validateScalar",
        "deployments",
        deployment_spec("replicas: 3"),
        ("ok", "spec.replicas", 3),
    ),
    Case(
        "well-typed-string-and-bool",
        "scalar",
        VALIDATE + " validateScalar",
        "deployments",
        deployment_spec("paused: true, minReadySeconds: 5, revisionHistoryLimit: 2"),
        ("ok", "spec.paused", True),
    ),
    # --- int-or-string ----------------------------------------------------------------------------------
    Case(
        "int-or-string-given-an-int",
        "int-or-string",
        VALIDATE + " validateScalar (untyped)",
        "deployments",
        deployment_spec(
            "strategy: Object.spec.strategy{rollingUpdate: Object.spec.strategy.rollingUpdate{maxSurge: 2}}"
        ),
        ("ok", "spec.strategy.rollingUpdate.maxSurge", 2),
    ),
    Case(
        "int-or-string-given-a-string",
        "int-or-string",
        VALIDATE + " validateScalar (untyped)",
        "deployments",
        deployment_spec(
            'strategy: Object.spec.strategy{rollingUpdate: Object.spec.strategy.rollingUpdate{maxSurge: "50%"}}'
        ),
        ("ok", "spec.strategy.rollingUpdate.maxSurge", "50%"),
    ),
    Case(
        "int-or-string-given-a-fraction",
        "int-or-string",
        UNMARSHALERS,
        "deployments",
        deployment_spec(
            "strategy: Object.spec.strategy{rollingUpdate: Object.spec.strategy.rollingUpdate{maxSurge: 1.5}}"
        ),
        ("error", TO_DEPLOYMENT + "json: cannot unmarshal number 1.5 into Go value of type int32"),
        kyverno=("ok", "spec.strategy.rollingUpdate.maxSurge", 1.5),
    ),
    Case(
        "int-or-string-given-a-bool",
        "int-or-string",
        UNMARSHALERS,
        "deployments",
        deployment_spec(
            "strategy: Object.spec.strategy{rollingUpdate: Object.spec.strategy.rollingUpdate{maxSurge: true}}"
        ),
        ("error", TO_DEPLOYMENT + "json: cannot unmarshal bool into Go value of type int32"),
        kyverno=("ok", "spec.strategy.rollingUpdate.maxSurge", True),
    ),
    Case(
        "int-or-string-given-a-map",
        "int-or-string",
        VALIDATE + " validateScalar (untyped)",
        "deployments",
        deployment_spec(
            'strategy: Object.spec.strategy{rollingUpdate: Object.spec.strategy.rollingUpdate{maxSurge: {"a": 1}}}'
        ),
        ("error", TYPED + ".spec.strategy.rollingUpdate.maxSurge: expected any scalar, got &{map[a:1]}"),
    ),
    # --- quantities -------------------------------------------------------------------------------------
    Case(
        "quantity-given-a-double",
        "quantity",
        UNMARSHALERS,
        "deployments",
        container('resources: Object.spec.template.spec.containers.resources{limits: {"cpu": 1.5}}'),
        ("ok", "spec.template.spec.containers.0.resources.limits.cpu", "1500m"),
        kyverno=("ok", "spec.template.spec.containers.0.resources.limits.cpu", 1.5),
    ),
    Case(
        "quantity-given-a-bad-string",
        "quantity",
        UNMARSHALERS,
        "deployments",
        container('resources: Object.spec.template.spec.containers.resources{limits: {"cpu": "lots"}}'),
        (
            "error",
            TO_DEPLOYMENT + "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        kyverno=("ok", "spec.template.spec.containers.0.resources.limits.cpu", "lots"),
    ),
    Case(
        "quantity-given-a-bool",
        "quantity",
        UNMARSHALERS,
        "deployments",
        container('resources: Object.spec.template.spec.containers.resources{limits: {"cpu": true}}'),
        (
            "error",
            TO_DEPLOYMENT + "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        kyverno=("ok", "spec.template.spec.containers.0.resources.limits.cpu", True),
    ),
    Case(
        "quantity-given-a-list",
        "quantity",
        VALIDATE + " validateScalar (untyped)",
        "deployments",
        container('resources: Object.spec.template.spec.containers.resources{limits: {"cpu": [1]}}'),
        (
            "error",
            TYPED + '.spec.template.spec.containers[name="c"].resources.limits.cpu: expected any scalar, got &{[1]}',
        ),
    ),
    # --- maps of strings --------------------------------------------------------------------------------
    Case(
        "label-given-an-int",
        "map-of-strings",
        VALIDATE + " validateScalar",
        "configmaps",
        'Object{metadata: Object.metadata{labels: {"tier": 1}}}',
        ("error", TYPED + ".metadata.labels.tier: expected string, got &value.valueUnstructured{Value:1}"),
    ),
    Case(
        "configmap-data-given-a-bool",
        "map-of-strings",
        VALIDATE + " validateScalar",
        "configmaps",
        'Object{data: {"enabled": true}}',
        ("error", TYPED + ".data.enabled: expected string, got &value.valueUnstructured{Value:true}"),
    ),
    Case(
        "annotation-given-a-map",
        "map-of-strings",
        VALIDATE + " validateScalar",
        "configmaps",
        'Object{metadata: Object.metadata{annotations: {"a": {"b": "c"}}}}',
        (
            "error",
            TYPED + ".metadata.annotations.a: expected string, got "
            '&value.valueUnstructured{Value:map[string]interface {}{"b":"c"}}',
        ),
    ),
    Case(
        "configmap-data-of-strings",
        "map-of-strings",
        VALIDATE + " validateScalar",
        "configmaps",
        'Object{data: {"a": "1"}}',
        ("ok", "data.a", "1"),
    ),
    # --- list-map keys ----------------------------------------------------------------------------------
    Case(
        "list-map-key-duplicated",
        "list-map-keys",
        VALIDATE + " visitListItems",
        "pods",
        pod_spec(
            'containers: [Object.spec.containers{name: "a", image: "x"}, Object.spec.containers{name: "a", image: "y"}]'
        ),
        ("error", TYPED + '.spec.containers: duplicate entries for key [name="a"]'),
    ),
    Case(
        "list-map-key-absent",
        "list-map-keys",
        HELPERS + " keyedAssociativeListItemToPathElement",
        "pods",
        pod_spec('containers: [Object.spec.containers{image: "x"}]'),
        (
            "error",
            TYPED + ".spec.containers: element 0: associative list with keys has an element that "
            'omits all key fields ["name"] (and doesn\'t have default values for any key fields)',
        ),
    ),
    Case(
        "list-map-key-present-merges",
        "list-map-keys",
        "structured-merge-diff typed/merge.go",
        "pods",
        pod_spec('containers: [Object.spec.containers{name: "nginx", image: "nginx:2"}]'),
        ("ok", "spec.containers.0.image", "nginx:2"),
    ),
    Case(
        "list-map-key-defaulted-protocol",
        "list-map-keys",
        HELPERS + " getAssociativeKeyDefault",
        "pods",
        pod_spec(
            'containers: [Object.spec.containers{name: "nginx", ports: '
            "[Object.spec.containers.ports{containerPort: 80}, "
            'Object.spec.containers.ports{containerPort: 80, protocol: "TCP"}]}]'
        ),
        (
            "error",
            TYPED + '.spec.containers[name="nginx"].ports: duplicate entries for key [containerPort=80,protocol="TCP"]',
        ),
    ),
    # --- byte fields ------------------------------------------------------------------------------------
    Case(
        "binary-data-unpadded",
        "bytes",
        CONVERTER + " sliceFromUnstructured",
        "configmaps",
        'Object{binaryData: {"a": "aGk"}}',
        ("error", TO_CONFIGMAP + "error decoding from json: illegal base64 data at input byte 0"),
        kyverno=("ok", "binaryData.a", "aGk"),
    ),
    Case(
        "binary-data-bad-character",
        "bytes",
        CONVERTER + " sliceFromUnstructured",
        "configmaps",
        'Object{binaryData: {"a": "aGk*"}}',
        ("error", TO_CONFIGMAP + "error decoding from json: illegal base64 data at input byte 3"),
        kyverno=("ok", "binaryData.a", "aGk*"),
    ),
    Case(
        "binary-data-valid",
        "bytes",
        CONVERTER + " sliceFromUnstructured",
        "configmaps",
        'Object{binaryData: {"a": "aGk="}}',
        ("ok", "binaryData.a", "aGk="),
    ),
    Case(
        "binary-data-given-cel-bytes",
        "bytes",
        VALIDATE + " validateScalar",
        "configmaps",
        'Object{binaryData: {"a": b"hi"}}',
        ("error", TYPED + ".binaryData.a: expected string, got &value.valueUnstructured{Value:[]uint8{0x68, 0x69}}"),
    ),
    # --- integer ranges ---------------------------------------------------------------------------------
    Case(
        "int32-field-given-a-fraction",
        "integer-range",
        CONVERTER + " fromUnstructured",
        "deployments",
        deployment_spec("replicas: 1.5"),
        ("error", TO_DEPLOYMENT + "cannot convert float64 to int32"),
        kyverno=("ok", "spec.replicas", 1.5),
    ),
    Case(
        "int32-field-given-an-integral-double",
        "integer-range",
        CONVERTER + " fromUnstructured",
        "deployments",
        deployment_spec("replicas: 3.0"),
        ("ok", "spec.replicas", 3),
        kyverno=("ok", "spec.replicas", 3.0),
    ),
    Case(
        "int32-field-beyond-its-range-wraps",
        "integer-range",
        CONVERTER + " fromUnstructured (reflect Convert)",
        "deployments",
        deployment_spec("replicas: 4294967299"),
        ("ok", "spec.replicas", 3),
        kyverno=("ok", "spec.replicas", 4294967299),
    ),
    Case(
        "int64-field-given-a-fraction",
        "integer-range",
        CONVERTER + " fromUnstructured",
        "deployments",
        container(
            "lifecycle: Object.spec.template.spec.containers.lifecycle{preStop: "
            "Object.spec.template.spec.containers.lifecycle.preStop{sleep: "
            "Object.spec.template.spec.containers.lifecycle.preStop.sleep{seconds: 2.5}}}"
        ),
        ("error", TO_DEPLOYMENT + "cannot convert float64 to int64"),
        kyverno=("ok", "spec.template.spec.containers.0.lifecycle.preStop.sleep.seconds", 2.5),
    ),
    # --- nulls ------------------------------------------------------------------------------------------
    Case(
        "null-in-an-int32-field",
        "nulls",
        VALIDATE + " validateScalar (CEL null is structpb.NullValue)",
        "deployments",
        deployment_spec("replicas: null"),
        ("error", TYPED + ".spec.replicas: expected numeric (int or float), got structpb.NullValue"),
    ),
    Case(
        "null-in-a-string-field",
        "nulls",
        VALIDATE + " validateScalar (CEL null is structpb.NullValue)",
        "deployments",
        container("image: null"),
        (
            "error",
            TYPED + '.spec.template.spec.containers[name="c"].image: expected string, got '
            "&value.valueUnstructured{Value:0}",
        ),
    ),
    Case(
        "null-in-a-map-field",
        "nulls",
        VALIDATE + " doMap/mapValue",
        "configmaps",
        "Object{metadata: Object.metadata{labels: null}}",
        ("error", TYPED + ".metadata.labels: expected map, got &{NULL_VALUE}"),
    ),
    # --- unknown fields of a typed struct ---------------------------------------------------------------
    Case(
        "unknown-spec-field",
        "unknown-fields",
        VALIDATE + " visitMapItems",
        "deployments",
        deployment_spec("replicaCount: 3"),
        ("error", TYPED + ".spec.replicaCount: field not declared in schema"),
    ),
    Case(
        "unknown-container-field",
        "unknown-fields",
        VALIDATE + " visitMapItems",
        "deployments",
        container('imagePolicy: "Always"'),
        ("error", TYPED + '.spec.template.spec.containers[name="c"].imagePolicy: field not declared in schema'),
    ),
    Case(
        "unknown-top-level-field",
        "unknown-fields",
        VALIDATE + " visitMapItems",
        "configmaps",
        'Object{stringData: {"a": "b"}}',
        ("error", TYPED + ".stringData: field not declared in schema"),
    ),
    # --- the order of the steps -------------------------------------------------------------------------
    Case(
        "typed-conversion-before-the-atomic-guard",
        "order",
        SMD_GO + " ApplyStructuredMergeDiff",
        "pods",
        pod_spec('nodeSelector: {"disk": "ssd"}, activeDeadlineSeconds: "x"'),
        ("error", TYPED + ".spec.activeDeadlineSeconds: expected numeric (int or float), got string"),
    ),
    Case(
        "atomic-guard-names-list-items-by-index",
        "order",
        SMD_GO + " findAtomics",
        "pods",
        pod_spec('containers: [Object.spec.containers{name: "nginx", args: ["-v"]}]'),
        ("error", ATOMIC + ".spec.containers[0].args"),
    ),
]
