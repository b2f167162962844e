"""What the page's editor and catalog ask the server for: CEL's environment (every function with its
signatures, read from celmut's declarations), a kind's fields from its OpenAPI or CRD schema, and the
catalog of examples, policies and presets."""

from __future__ import annotations

from celmut.cel import profiles
from tests.playground.support import Playground

CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer, description: How big the widget is.}
                colour: {type: string}
"""


def test_the_environment_lists_every_function_of_each_profile_with_its_signatures(served: Playground) -> None:
    with served.client() as client:
        environment = client.get("/api/cel").json()
    for name, profile in profiles.PROFILES.items():
        listed = {f["name"] for f in environment["profiles"][name]["functions"]}
        declared = {f for f in profile.functions() if not f.startswith(("_", "!", "-", "@")) and not f.endswith("_")}
        assert listed == declared, name  # from the declarations: nothing missing, nothing hand-added
        variables = {v["name"] for v in environment["profiles"][name]["variables"]}
        assert {"object", "oldObject", "request", "namespaceObject", "variables"} <= variables
    kyverno = {f["name"]: f for f in environment["profiles"]["kyverno"]["functions"]}
    assert "resource.Get" in kyverno and "resource.Get" not in {
        f["name"] for f in environment["profiles"]["kubernetes"]["functions"]
    }  # Kyverno's lookups are not in the API server's CEL
    (starts_with,) = [f for f in environment["profiles"]["kyverno"]["functions"] if f["name"] == "startsWith"]
    assert starts_with["member"] and starts_with["overloads"] == [
        {"signature": "string.startsWith(string) -> bool", "result": "bool", "receiver": "string"}
    ]
    assert "resource.Get(string, string, string, string) -> map(string, dyn)" in [
        o["signature"] for o in kyverno["resource.Get"]["overloads"]
    ]
    assert "params" in {v["name"] for v in environment["profiles"]["kubernetes"]["variables"]}
    assert environment["request"]["namespace"] == "string"


def test_a_kind_s_fields_come_from_its_openapi_schema(served: Playground) -> None:
    rule = {"group": "", "version": "v1", "resource": "pods"}
    containers = served.post("/api/fields", {"target": rule, "path": ["spec", "containers", "[]"]}).json()
    assert containers["kind"] == "Pod" and containers["type"] == "object"
    image = {f["name"]: f for f in containers["fields"]}["image"]
    assert image["type"] == "string" and "Container image name" in image["description"]
    labels = served.post("/api/fields", {"target": {"apiVersion": "v1", "kind": "Pod"}, "path": ["metadata", "labels"]})
    assert labels.json()["type"] == "map"


def test_a_custom_resource_s_fields_come_from_its_crd_in_the_cluster_pane(served: Playground) -> None:
    target = {"apiVersion": "example.com/v1", "kind": "Widget"}
    found = served.post("/api/fields", {"target": target, "path": ["spec"], "cluster": CRD}).json()
    assert {f["name"]: f["type"] for f in found["fields"]} == {"size": "integer", "colour": "string"}
    assert served.post("/api/fields", {"target": target, "path": ["spec"]}).json()["fields"] == []
    assert served.post("/api/fields", {"target": "Pod", "path": []}).status_code == 400


def test_the_catalog_holds_the_examples_and_every_shipped_policy_and_preset(served: Playground) -> None:
    with served.client() as client:
        entries = client.get("/api/catalog").json()["entries"]
    ids = {e["id"] for e in entries}
    assert {"example:team-label", "example:spot-partial-workload", "file:presets/spot-partial.yaml"} <= ids
    assert "file:policies/examples/add-managed-by-label.yaml" in ids
    preset = next(e for e in entries if e["id"] == "file:presets/spot-partial.yaml")
    assert preset["group"] == "Presets" and "partialSpot" in preset["title"] and "40 %" in preset["description"]
    assert set(preset["state"]) == {"policies"}  # a preset fills the policies pane only
