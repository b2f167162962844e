"""ApplyConfiguration merges with the real Kubernetes schemas: granular maps, listType=map and set,
atomic fields rejected anywhere (or replaced with useServerSideApply), CRD schemas, and the
no-schema fallback."""

from __future__ import annotations

from tests.fakekube_tests.manifests import structural_widget_crd
from tests.runtime.helpers import admit, applyconfig, engine, mpol, pod


def run(expression: str, obj: dict, *, extra: str = "", cluster: list | None = None, resources: str = "pods") -> object:
    text = mpol("p", applyconfig(expression), extra=extra, resources=resources)
    return admit(engine(text, cluster or []), obj)


def test_list_map_items_merge_by_key_in_structured_merge_diffs_order() -> None:
    """structured-merge-diff typed/merge.go visitListItems: an applied item the live list lacks comes
    before the shared item that follows it in the applied list (merge_test.go "associative list":
    live [b] + applied [a, b, c] → [a, b, c]); live items the applied list does not name keep their place."""
    obj = pod()
    obj["spec"]["containers"].append({"name": "sidecar", "image": "busybox"})
    expression = (
        "Object{spec: Object.spec{containers: ["
        'Object.spec.containers{name: "new", image: "x"}, '
        'Object.spec.containers{name: "nginx", securityContext: Object.spec.containers.securityContext{runAsNonRoot: true}}]}}'
    )
    containers = run(expression, obj).object["spec"]["containers"]
    assert [c["name"] for c in containers] == ["new", "nginx", "sidecar"]
    assert containers[1] == {"name": "nginx", "image": "nginx:1.27", "securityContext": {"runAsNonRoot": True}}


def test_env_merges_by_name_and_ports_by_container_port_and_defaulted_protocol() -> None:
    obj = pod()
    obj["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "protocol": "TCP", "name": "http"}]
    expression = (
        'Object{spec: Object.spec{containers: [Object.spec.containers{name: "nginx", '
        "ports: [Object.spec.containers.ports{containerPort: 80, hostPort: 8080}], "
        'env: [Object.spec.containers.env{name: "A", value: "1"}]}]}}'
    )
    container = run(expression, obj).object["spec"]["containers"][0]
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP", "name": "http", "hostPort": 8080}]
    assert container["env"] == [{"name": "A", "value": "1"}]


def test_set_lists_are_unioned_in_structured_merge_diffs_order() -> None:
    """merge_test.go "struct grab bag": setStr ["a"] + ["b", "a"] → ["b", "a"] (the applied order
    for shared values), ["a", "c"] + ["b"] → ["a", "c", "b"]."""
    obj = pod()
    obj["metadata"]["finalizers"] = ["a"]
    expression = 'Object{metadata: Object.metadata{finalizers: ["b", "a"]}}'
    assert run(expression, obj).object["metadata"]["finalizers"] == ["b", "a"]
    obj["metadata"]["finalizers"] = ["a", "c"]
    expression = 'Object{metadata: Object.metadata{finalizers: ["b"]}}'
    assert run(expression, obj).object["metadata"]["finalizers"] == ["a", "c", "b"]


def test_atomic_fields_are_rejected_anywhere_even_in_a_new_list_item() -> None:
    """patch/smd.go validatePatch/findAtomics: list items are named by index (pathString of Index elements)."""
    for expression, path in [
        ('Object{spec: Object.spec{nodeSelector: {"disk": "ssd"}}}', ".spec.nodeSelector"),
        ('Object{spec: Object.spec{tolerations: [Object.spec.tolerations{key: "k"}]}}', ".spec.tolerations"),
        (
            'Object{spec: Object.spec{containers: [Object.spec.containers{name: "new", args: ["-v"]}]}}',
            ".spec.containers[0].args",
        ),
    ]:
        result = run(expression, pod())
        assert not result.allowed
        assert f"may not mutate atomic arrays, maps or structs: {path}" in result.message


def test_use_server_side_apply_replaces_atomic_fields_whole() -> None:
    obj = pod(nodeSelector={"zone": "a"})
    extra = "  evaluation: {useServerSideApply: true}"
    result = run('Object{spec: Object.spec{nodeSelector: {"disk": "ssd"}}}', obj, extra=extra)
    assert result.object["spec"]["nodeSelector"] == {"disk": "ssd"}


def test_undeclared_fields_are_rejected() -> None:
    result = run("Object{spec: Object.spec{notAField: 1}}", pod())
    assert not result.allowed and ".spec.notAField: field not declared in schema" in result.message


def test_custom_resources_merge_with_their_crd_schema() -> None:
    crd = structural_widget_crd(
        {"tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}}
    )
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"tags": ["a"]},
    }
    text = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: widgets}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{annotations: {"x": "y"}}, spec: Object.spec{tags: ["b"]}}'
"""
    from celmut.runtime import AdmissionInput

    result = engine(text, [crd]).admit(AdmissionInput.from_object(widget))
    assert result.object["spec"]["tags"] == ["a", "b"]
    assert result.object["metadata"]["annotations"] == {"x": "y"}


def test_without_any_schema_maps_merge_and_lists_are_replaced() -> None:
    gadget = {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "g"},
        "spec": {"items": [1], "keep": True},
    }
    text = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: gadgets}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [gadgets]}]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{spec: Object.spec{items: [2]}}'
"""
    from celmut.runtime import AdmissionInput

    result = engine(text).admit(AdmissionInput.from_object(gadget))
    assert result.object["spec"] == {"items": [2], "keep": True}
