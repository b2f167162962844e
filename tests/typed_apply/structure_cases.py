"""Cases of unknown fields of a typed struct, of lists and maps the expression builds (how the API
server hands them to structured-merge-diff), and of the order of the API server's steps and errors."""

from __future__ import annotations

from tests.typed_apply.expressions import (
    ATOMIC,
    CONVERTER,
    FIELDS,
    INTERNAL,
    JSON_PATCH,
    KEYS,
    OBJECTS_GO,
    SMD_GO,
    TO_POD,
    TYPED,
    VALIDATE,
    T,
    patch,
    pod_container,
    spec,
    template_spec,
)
from tests.typed_apply.model import Case

UNKNOWN_FIELDS = [
    Case(
        "unknown-spec-field",
        "unknown-fields",
        FIELDS,
        "deployments",
        spec("replicaCount: 3"),
        ("error", TYPED + ".spec.replicaCount: field not declared in schema"),
    ),
    Case(
        "unknown-container-field",
        "unknown-fields",
        FIELDS,
        "deployments",
        template_spec(f'containers: [{T}.containers{{name: "c", imagePolicy: "Always"}}]'),
        ("error", TYPED + '.spec.template.spec.containers[name="c"].imagePolicy: field not declared in schema'),
    ),
    Case(
        "unknown-top-level-field",
        "unknown-fields",
        FIELDS,
        "configmaps",
        'Object{stringData: {"a": "b"}}',
        ("error", TYPED + ".stringData: field not declared in schema"),
    ),
    Case(
        "unknown-metadata-field",
        "unknown-fields",
        FIELDS,
        "configmaps",
        "Object{metadata: Object.metadata{bogus: 1}}",
        ("error", TYPED + ".metadata.bogus: field not declared in schema"),
    ),
    Case(
        "crd-unknown-field",
        "unknown-fields",
        FIELDS,
        "typedapplycases",
        spec("unknownField: 1"),
        ("error", TYPED + ".spec.unknownField: field not declared in schema"),
    ),
    Case(
        "crd-unknown-nested-field",
        "unknown-fields",
        FIELDS,
        "typedapplycases",
        spec("nested: Object.spec.nested{other: 1}"),
        ("error", TYPED + ".spec.nested.other: field not declared in schema"),
    ),
    Case(
        "crd-preserved-field-takes-any-field",
        "unknown-fields",
        "kube-openapi schemaconv (preserve-unknown-fields)",
        "typedapplycases",
        spec("config: Object.spec.config{a: Object.spec.config.a{b: 1}}"),
        ("ok", "spec.config.a.b", 1),
    ),
    Case(
        "jsonpatch-unknown-field",
        "unknown-fields",
        JSON_PATCH,
        "configmaps",
        patch('add /stringData {"a": "b"}'),
        ("error", INTERNAL + 'strict decoding error: unknown field "stringData"'),
        kyverno=("ok", "stringData.a", "b"),
    ),
]

BUILT_VALUES = [
    Case(
        "toleration-as-a-map-literal",
        "built-values",
        OBJECTS_GO + " ([]ref.Val items are no maps)",
        "pods",
        spec('tolerations: [{"key": "a", "operator": "Exists"}]'),
        ("error", TYPED + ".spec.tolerations[0]: expected map, got &{map[key:a operator:Exists]}"),
    ),
    Case(
        "container-as-a-map-literal",
        "built-values",
        OBJECTS_GO + "; " + KEYS,
        "pods",
        spec('containers: [{"name": "nginx", "image": "x"}]'),
        ("error", TYPED + ".spec.containers: element 0: associative list with keys may not have non-map elements"),
    ),
    Case(
        "map-literals-from-a-comprehension",
        "built-values",
        OBJECTS_GO,
        "pods",
        spec('tolerations: object.spec.containers.map(c, {"key": c.name})'),
        ("error", TYPED + ".spec.tolerations[0]: expected map, got &{map[key:nginx]}"),
    ),
    Case(
        "map-literal-appended-to-a-list-read-from-the-object",
        "built-values",
        OBJECTS_GO + " (cel-go baseList.Add)",
        "deployments",
        template_spec('tolerations: object.spec.template.spec.?tolerations.orValue([]) + [{"key": "a"}]'),
        ("error", TYPED + ".spec.template.spec.tolerations[0]: expected map, got &{map[key:a]}"),
    ),
    Case(
        "map-literals-in-a-variable",
        "built-values",
        OBJECTS_GO,
        "pods",
        spec("tolerations: variables.tolerations"),
        ("error", TYPED + ".spec.tolerations[0]: expected map, got &{map[key:a]}"),
        variables=(("tolerations", '[{"key": "a"}]'),),
    ),
    Case(
        "list-literal-in-a-list",
        "built-values",
        OBJECTS_GO,
        "pods",
        pod_container('args: [["a"]]'),
        (
            "error",
            TYPED + '.spec.containers[name="nginx"].args[0]: expected string, got '
            '&value.valueUnstructured{Value:[]ref.Val{"a"}}',
        ),
    ),
    Case(
        "split-gives-a-go-string-slice",
        "built-values",
        OBJECTS_GO + " (cel-go strings: []string is no []any)",
        "pods",
        pod_container('args: "a b".split(" ")'),
        ("error", TYPED + '.spec.containers[name="nginx"].args: expected list, got &{[a b]}'),
    ),
    Case(
        "crd-map-literal-in-a-preserved-map-literal",
        "built-values",
        OBJECTS_GO,
        "typedapplycases",
        spec('config: {"a": {"b": 1}}'),
        ("error", TYPED + ".spec.config.a: expected map, got &{map[b:1]}"),
    ),
    Case(
        "crd-list-literal-in-a-preserved-map-literal",
        "built-values",
        OBJECTS_GO,
        "typedapplycases",
        spec('config: {"a": [1]}'),
        ("error", TYPED + ".spec.config.a: expected map, got &{[1]}"),
    ),
    Case(
        "crd-empty-map-literal-in-a-preserved-map-literal",
        "built-values",
        OBJECTS_GO,
        "typedapplycases",
        spec('config: {"a": {}}'),
        ("error", TYPED + ".spec.config.a: expected map, got &{map[]}"),
    ),
    Case(
        "map-literal-as-a-typed-field",
        "built-values",
        OBJECTS_GO + " (a field's own map: map[string]any)",
        "deployments",
        'Object{spec: Object.spec{template: Object.spec.template{metadata: Object.spec.template.metadata{labels: {"tier": "web"}}}}}',
        ("ok", "spec.template.metadata.labels.tier", "web"),
    ),
    Case(
        "typed-constructions-from-a-comprehension",
        "built-values",
        OBJECTS_GO + " (an ObjectVal's Value() is a map)",
        "pods",
        spec('containers: object.spec.containers.map(c, Object.spec.containers{name: c.name, image: "y"})'),
        ("ok", "spec.containers.0.image", "y"),
    ),
    Case(
        "list-read-from-the-object",
        "built-values",
        OBJECTS_GO + " (the object's own values are plain Go values)",
        "pods",
        spec("containers: object.spec.containers"),
        ("ok", "spec.containers.0.image", "nginx:1.27"),
    ),
    Case(
        "typed-construction-appended-to-a-list-read-from-the-object",
        "built-values",
        OBJECTS_GO,
        "deployments",
        template_spec(f'containers: object.spec.template.spec.containers + [{T}.containers{{name: "d", image: "y"}}]'),
        ("ok", "spec.template.spec.containers.1.name", "d"),
    ),
    Case(
        "map-literals-in-both-branches-of-a-conditional",
        "built-values",
        OBJECTS_GO,
        "pods",
        spec('tolerations: object.metadata.name == "typed" ? [{"key": "a"}] : [{"key": "b"}]'),
        ("error", TYPED + ".spec.tolerations[0]: expected map, got &{map[key:a]}"),
    ),
    Case(
        "map-literal-as-an-optional-item",
        "built-values",
        OBJECTS_GO + " (an optional list item)",
        "pods",
        spec('tolerations: [?optional.of({"key": "a"})]'),
        ("error", TYPED + ".spec.tolerations[0]: expected map, got &{map[key:a]}"),
    ),
    Case(
        "map-literals-through-two-variables",
        "built-values",
        OBJECTS_GO,
        "pods",
        spec("tolerations: variables.chosen"),
        ("error", TYPED + ".spec.tolerations[0]: expected map, got &{map[key:a]}"),
        variables=(("tolerations", '[{"key": "a"}]'), ("chosen", "variables.tolerations")),
    ),
    Case(
        "map-literals-after-an-empty-list",
        "built-values",
        OBJECTS_GO + " (cel-go baseList.Add returns the other list)",
        "pods",
        spec('tolerations: [] + [{"key": "a"}]'),
        ("error", TYPED + ".spec.tolerations[0]: expected map, got &{map[key:a]}"),
    ),
    Case(
        "concatenation-in-a-list-is-a-go-list",
        "built-values",
        OBJECTS_GO + " (concatList.Value() is []any)",
        "pods",
        pod_container('args: [["a"] + ["b"]]'),
        (
            "error",
            TYPED + '.spec.containers[name="nginx"].args[0]: expected string, got '
            '&value.valueUnstructured{Value:[]interface {}{"a", "b"}}',
        ),
    ),
    Case(
        "split-in-a-map-literal",
        "built-values",
        OBJECTS_GO + " (cel-go strings: []string)",
        "configmaps",
        'Object{metadata: Object.metadata{annotations: {"a": "x,y".split(",")}}}',
        (
            "error",
            TYPED + '.metadata.annotations.a: expected string, got &value.valueUnstructured{Value:[]string{"x", "y"}}',
        ),
    ),
]

ORDER = [
    Case(
        "typed-conversion-before-the-atomic-guard",
        "order",
        SMD_GO + " ApplyStructuredMergeDiff",
        "pods",
        spec('nodeSelector: {"disk": "ssd"}, activeDeadlineSeconds: "x"'),
        ("error", TYPED + ".spec.activeDeadlineSeconds: expected numeric (int or float), got string"),
    ),
    Case(
        "atomic-guard-names-list-items-by-index",
        "order",
        SMD_GO + " findAtomics",
        "pods",
        pod_container('args: ["-v"]'),
        ("error", ATOMIC + ".spec.containers[0].args"),
    ),
    Case(
        "typed-conversion-before-the-go-conversion",
        "order",
        SMD_GO + " (then the dispatcher's ConvertToVersion)",
        "deployments",
        spec('replicas: 1.5, paused: "x"'),
        ("error", TYPED + ".spec.paused: expected boolean, got &{x}"),
    ),
    Case(
        "several-wrong-fields-are-all-listed",
        "order",
        VALIDATE + " (Go's random map order)",
        "deployments",
        spec('replicas: "three", paused: "yes", minReadySeconds: "x"'),
        (
            "error",
            TYPED + "errors:\n  .spec.replicas: expected numeric (int or float), got string\n"
            "  .spec.paused: expected boolean, got &{yes}\n"
            "  .spec.minReadySeconds: expected numeric (int or float), got string",
        ),
        varies=True,
    ),
    Case(
        "crd-several-wrong-fields-are-all-listed",
        "order",
        VALIDATE + " (Go's random map order)",
        "typedapplycases",
        spec('count: "x", title: 1, enabled: 2'),
        (
            "error",
            TYPED + "errors:\n  .spec.count: expected numeric (int or float), got string\n"
            "  .spec.title: expected string, got &value.valueUnstructured{Value:1}\n"
            "  .spec.enabled: expected boolean, got &{2}",
        ),
        varies=True,
    ),
    Case(
        "an-undeclared-field-ends-its-maps-walk",
        "order",
        FIELDS + " (stops at an undeclared field)",
        "typedapplycases",
        spec('unknownA: 1, count: "x"'),
        ("error", TYPED + ".spec.unknownA: field not declared in schema"),
        varies=True,
        also=(
            TYPED + "errors:\n  .spec.count: expected numeric (int or float), got string\n"
            "  .spec.unknownA: field not declared in schema",
        ),
    ),
    Case(
        "go-conversion-stops-at-the-first-field-in-go-order",
        "order",
        CONVERTER + " (struct fields in declaration order)",
        "pods",
        spec(
            'initContainers: [Object.spec.initContainers{name: "i", image: "x", ports: '
            "[Object.spec.initContainers.ports{containerPort: 1.5}]}], "
            'containers: [Object.spec.containers{name: "nginx", lifecycle: Object.spec.containers.lifecycle{'
            "preStop: Object.spec.containers.lifecycle.preStop{sleep: "
            "Object.spec.containers.lifecycle.preStop.sleep{seconds: 2.5}}}}]"
        ),
        ("error", TO_POD + "cannot convert float64 to int32"),
        kyverno=("ok", "spec.initContainers.0.ports.0.containerPort", 1.5),
    ),
    Case(
        "jsonpatch-first-type-error-in-sorted-key-order",
        "order",
        JSON_PATCH + " (json-patch v4 writes keys sorted)",
        "deployments",
        patch("replace /spec/replicas 1.5", 'add /spec/paused "x"'),
        (
            "error",
            INTERNAL + "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool",
        ),
        kyverno=("ok", "spec.paused", "x"),
    ),
    Case(
        "jsonpatch-an-unmarshalers-error-ends-the-decoding",
        "order",
        JSON_PATCH + " (UnmarshalJSON's error is returned)",
        "deployments",
        patch("replace /spec/replicas 1.5", 'add /spec/strategy {"rollingUpdate": {"maxSurge": 1.5}}'),
        (
            "error",
            INTERNAL + "json: cannot unmarshal number 1.5 into Go struct field "
            "RollingUpdateDeployment.spec.strategy.rollingUpdate.maxSurge of type int32",
        ),
        kyverno=("ok", "spec.replicas", 1.5),
    ),
    Case(
        "jsonpatch-type-error-before-unknown-fields",
        "order",
        JSON_PATCH + " (strict errors only without others)",
        "deployments",
        patch('add /spec/paused "x"', "add /spec/bogus 1"),
        (
            "error",
            INTERNAL + "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool",
        ),
        kyverno=("ok", "spec.bogus", 1),
    ),
]

STRUCTURE_CASES = UNKNOWN_FIELDS + BUILT_VALUES + ORDER
