"""Cases of list-map keys present, absent and duplicated (in the patch and in the object), and of nulls:
CEL's own and those read from the object."""

from __future__ import annotations

from tests.typed_apply.expressions import (
    AFTER_ADMISSION,
    DEFAULTS,
    HELPERS,
    KEYS,
    MERGE,
    OBJECTS_GO,
    SCALAR,
    TYPED,
    VALIDATE,
    T,
    pod_container,
    spec,
    template_spec,
)
from tests.typed_apply.model import GROUP, Case

NOTE_NULL = {
    "apiVersion": f"{GROUP}/v1",
    "kind": "TypedApplyCase",
    "metadata": {"name": "typed", "namespace": "default", "labels": {"app": "typed"}},
    "spec": {"note": None, "count": 3, "config": {"x": {"y": None, "z": [1, {"w": 2}]}}},
}
GO_NILS = {  # config holds nulls for spec fields that hold values: ``Object{spec: object.spec.config}`` applies them
    "apiVersion": f"{GROUP}/v1",
    "kind": "TypedApplyCase",
    "metadata": {"name": "typed", "namespace": "default", "labels": {"app": "typed"}},
    "spec": {"note": "hello", "labels": {"a": "b"}, "config": {"note": None, "labels": None}},
}
ENV_TWICE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "typed", "namespace": "default", "labels": {"app": "typed"}},
    "spec": {
        "containers": [
            {"name": "nginx", "image": "nginx", "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}
        ]
    },
}


LIST_MAP_KEYS = [
    Case(
        "list-map-key-duplicated",
        "list-map-keys",
        VALIDATE + " visitListItems",
        "pods",
        spec(
            'containers: [Object.spec.containers{name: "a", image: "x"}, Object.spec.containers{name: "a", image: "y"}]'
        ),
        ("error", TYPED + '.spec.containers: duplicate entries for key [name="a"]'),
    ),
    Case(
        "list-map-key-absent-takes-its-default",
        "list-map-keys",
        DEFAULTS + "; then the Pod's validation",
        "pods",
        spec('containers: [Object.spec.containers{image: "x"}]'),
        ("invalid", "spec.containers.1.image", "x"),
    ),
    Case(
        "list-map-key-absent-twice-is-a-duplicate",
        "list-map-keys",
        DEFAULTS,
        "pods",
        spec('containers: [Object.spec.containers{image: "x"}, Object.spec.containers{image: "y"}]'),
        ("error", TYPED + '.spec.containers: duplicate entries for key [name=""]'),
    ),
    Case(
        "list-map-key-present-merges",
        "list-map-keys",
        MERGE,
        "pods",
        spec('containers: [Object.spec.containers{name: "nginx", image: "nginx:2"}]'),
        ("ok", "spec.containers.0.image", "nginx:2"),
    ),
    Case(
        "list-map-key-defaulted-protocol",
        "list-map-keys",
        HELPERS + " getAssociativeKeyDefault (+default=TCP)",
        "pods",
        pod_container(
            "ports: [Object.spec.containers.ports{containerPort: 80}, "
            'Object.spec.containers.ports{containerPort: 80, protocol: "TCP"}]'
        ),
        (
            "error",
            TYPED + '.spec.containers[name="nginx"].ports: duplicate entries for key [containerPort=80,protocol="TCP"]',
        ),
    ),
    Case(
        "list-map-key-defaulted-on-both-sides-merges",
        "list-map-keys",
        DEFAULTS + "; " + MERGE,
        "services",
        spec('ports: [Object.spec.ports{port: 80, name: "http"}]'),
        ("ok", "spec.ports.0.name", "http"),
    ),
    Case(
        "list-map-key-given-a-wrong-type",
        "list-map-keys",
        HELPERS + " (the key, then its field)",
        "deployments",
        template_spec(
            f'containers: [{T}.containers{{name: "c", ports: [{T}.containers.ports{{containerPort: 80, protocol: 6}}]}}]'
        ),
        (
            "error",
            TYPED + '.spec.template.spec.containers[name="c"].ports[containerPort=80,protocol=6].protocol: '
            "expected string, got &value.valueUnstructured{Value:6}",
        ),
    ),
    Case(
        "live-duplicates-collapse-into-the-applied-item",
        "list-map-keys",
        MERGE + " indexListPathElements",
        "pods",
        pod_container('env: [Object.spec.containers.env{name: "A", value: "3"}]'),
        ("ok", "spec.containers.0.env", [{"name": "A", "value": "3"}]),
        obj=ENV_TWICE,
    ),
    Case(
        "crd-list-map-key-absent-without-default",
        "list-map-keys",
        KEYS,
        "typedapplycases",
        spec("items: [Object.spec.items{port: 2}]"),
        (
            "error",
            TYPED + ".spec.items: element 0: associative list with keys has an element that omits all key "
            'fields ["name"] (and doesn\'t have default values for any key fields)',
        ),
    ),
    Case(
        "crd-list-map-key-duplicated",
        "list-map-keys",
        VALIDATE + " visitListItems",
        "typedapplycases",
        spec('items: [Object.spec.items{name: "b"}, Object.spec.items{name: "b"}]'),
        ("error", TYPED + '.spec.items: duplicate entries for key [name="b"]'),
    ),
    Case(
        "crd-list-map-key-present-merges",
        "list-map-keys",
        MERGE,
        "typedapplycases",
        spec('items: [Object.spec.items{name: "a", port: 5}]'),
        ("ok", "spec.items.0.port", 5),
    ),
    Case(
        "crd-list-map-key-defaulted-duplicate",
        "list-map-keys",
        HELPERS + " getAssociativeKeyDefault (the CRD's default)",
        "typedapplycases",
        spec('ports: [Object.spec.ports{port: 80}, Object.spec.ports{port: 80, protocol: "TCP"}]'),
        ("error", TYPED + '.spec.ports: duplicate entries for key [port=80,protocol="TCP"]'),
    ),
    Case(
        "crd-list-map-key-partly-absent",
        "list-map-keys",
        KEYS + " (one key is enough); " + AFTER_ADMISSION,
        "typedapplycases",
        spec('ports: [Object.spec.ports{protocol: "UDP"}]'),
        ("invalid", "spec.ports.0.protocol", "UDP"),
    ),
    Case(
        "crd-set-item-duplicated",
        "list-map-keys",
        VALIDATE + " visitListItems (a set)",
        "typedapplycases",
        spec('tags: ["a", "a"]'),
        ("error", TYPED + '.spec.tags: duplicate entries for key [="a"]'),
    ),
    Case(
        "crd-set-item-given-an-int",
        "list-map-keys",
        HELPERS + " setItemToPathElement; " + SCALAR,
        "typedapplycases",
        spec("tags: [1]"),
        ("error", TYPED + ".spec.tags[=1]: expected string, got &value.valueUnstructured{Value:1}"),
    ),
]

NULLS = [
    Case(
        "null-in-an-int32-field",
        "nulls",
        SCALAR + " (CEL null is structpb.NullValue, no nil)",
        "deployments",
        spec("replicas: null"),
        ("error", TYPED + ".spec.replicas: expected numeric (int or float), got structpb.NullValue"),
    ),
    Case(
        "null-in-a-string-field",
        "nulls",
        SCALAR + " (CEL null is structpb.NullValue, no nil)",
        "deployments",
        template_spec(f'containers: [{T}.containers{{name: "c", image: null}}]'),
        (
            "error",
            TYPED
            + '.spec.template.spec.containers[name="c"].image: expected string, got &value.valueUnstructured{Value:0}',
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
    Case(
        "null-as-a-label-value",
        "nulls",
        OBJECTS_GO + " (a map's value: Value())",
        "configmaps",
        'Object{metadata: Object.metadata{labels: {"a": null}}}',
        ("error", TYPED + ".metadata.labels.a: expected string, got &value.valueUnstructured{Value:0}"),
    ),
    Case(
        "null-as-a-keyed-list-item",
        "nulls",
        KEYS + " (structpb.NullValue is no null)",
        "pods",
        spec("containers: [null]"),
        ("error", TYPED + ".spec.containers: element 0: associative list with keys may not have non-map elements"),
    ),
    Case(
        "crd-null-in-a-nullable-field",
        "nulls",
        SCALAR + " (nullable is not in the structured-merge-diff schema)",
        "typedapplycases",
        spec("note: null"),
        ("error", TYPED + ".spec.note: expected string, got &value.valueUnstructured{Value:0}"),
    ),
    Case(
        "crd-null-read-from-the-object",
        "nulls",
        OBJECTS_GO + " (a field read from the object is CEL's null too)",
        "typedapplycases",
        spec("note: object.spec.note"),
        ("error", TYPED + ".spec.note: expected string, got &value.valueUnstructured{Value:0}"),
        obj=NOTE_NULL,
    ),
    Case(
        "crd-null-inside-an-object-read-whole",
        "nulls",
        SCALAR + " (a null inside the object's own map is a Go nil)",
        "typedapplycases",
        "Object{spec: object.spec}",
        ("ok", "spec.note", None),
        obj=NOTE_NULL,
    ),
    Case(
        "crd-null-inside-a-preserved-map-read-whole",
        "nulls",
        VALIDATE + " mapValue (a Go nil is a map)",
        "typedapplycases",
        "Object{spec: Object.spec{config: object.spec.config}}",
        ("ok", "spec.config.x.y", None),
        obj=NOTE_NULL,
    ),
    Case(
        "crd-null-in-a-preserved-map-literal",
        "nulls",
        VALIDATE + " doMap (deduced: a map first)",
        "typedapplycases",
        spec('config: {"a": null}'),
        ("error", TYPED + ".spec.config.a: expected map, got &{NULL_VALUE}"),
    ),
    Case(
        "crd-go-nil-read-into-a-new-field-stays-null",
        "nulls",
        MERGE + " (an empty pair is a leaf: the applied nil)",
        "typedapplycases",
        "Object{spec: Object.spec{config: Object.spec.config{copy: object.spec.config.x}}}",
        ("ok", "spec.config.copy.y", None),
        obj=NOTE_NULL,
    ),
    Case(
        "crd-go-nil-replaces-a-live-scalar",
        "nulls",
        MERGE + " doScalar (ruleKeepRHS: the applied nil)",
        "typedapplycases",
        "Object{spec: object.spec.config}",
        ("ok", "spec.note", None),
        obj=GO_NILS,
    ),
    Case(
        "crd-go-nil-keeps-a-live-map",
        "nulls",
        MERGE + " doMap (a nil map merged with the live one keeps it)",
        "typedapplycases",
        "Object{spec: object.spec.config}",
        ("ok", "spec.labels.a", "b"),
        obj=GO_NILS,
    ),
]

KEY_CASES = LIST_MAP_KEYS + NULLS
