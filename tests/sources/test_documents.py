"""Reading documents: standard input as ``-``, documents named as errors name them, objects that
must be objects, and Kyverno values files whose shape is checked (issue 15, items 1, 2 and 4)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from celmut.sources.documents import Document, DocumentError, kubernetes_objects, load_documents
from celmut.sources.kyverno_values import load_values, parse_values


def test_standard_input_is_read_as_yaml_or_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}}'))
    assert [(d.path, d.content["kind"]) for d in load_documents("-")] == [("<stdin>", "Pod")]
    monkeypatch.setattr("sys.stdin", io.StringIO("{kind: Pod, apiVersion: v1}\n---\nkind: Service\n"))  # YAML flow
    assert [d.content["kind"] for d in load_documents("-")] == ["Pod", "Service"]


def test_invalid_yaml_on_standard_input_names_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("kind: [unclosed\n"))
    with pytest.raises(DocumentError, match=r"^<stdin>: invalid YAML at line 2"):
        load_documents("-")


def test_a_document_is_named_by_file_then_index() -> None:
    assert Document("a.yaml", 0, {}).source == "a.yaml" and Document("a.yaml", 3, {}).source == "a.yaml#3"


OBJECTS: list[tuple[str, Any, str]] = [
    ("a scalar", "web", "a.yaml#1: not a Kubernetes object: a string"),
    ("no kind", {"apiVersion": "v1", "metadata": {"name": "web"}}, "a.yaml#1: not a Kubernetes object: kind not set"),
    ("neither", {"metadata": {}}, "not a Kubernetes object: apiVersion and kind not set"),
    ("an empty kind", {"apiVersion": "v1", "kind": ""}, "kind not set"),
]


@pytest.mark.parametrize(("content", "message"), [r[1:] for r in OBJECTS], ids=[r[0] for r in OBJECTS])
def test_resources_must_be_objects_with_apiversion_and_kind(content: Any, message: str) -> None:
    good = Document("a.yaml", 0, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ok"}})
    with pytest.raises(DocumentError) as raised:
        kubernetes_objects([good, Document("a.yaml", 1, content)])
    assert message in str(raised.value)


VALUES: list[tuple[str, Any, str]] = [
    ("a scalar file", "hello", "the values document: must be a map, not a string"),
    ("a list file", [1], "the values document: must be a map, not a list"),
    ("globalValues as a list", {"globalValues": [1]}, "globalValues: must be a map, not a list"),
    ("policies as a number", {"policies": 5}, "policies: must be a list, not a number"),
    ("a policy that is a string", {"policies": ["p"]}, "policies[0]: must be a map, not a string"),
    ("resources as a map", {"policies": [{"name": "p", "resources": {"a": 1}}]},
     "policies[0].resources: must be a list, not a map"),
    ("values as a string", {"policies": [{"resources": [{"name": "r", "values": "x"}]}]},
     "policies[0].resources[0].values: must be a map, not a string"),
    ("namespaceSelector labels as a list", {"namespaceSelector": [{"name": "ns", "labels": ["a"]}]},
     "namespaceSelector[0].labels: must be a map, not a list"),
    ("a subresource as a string", {"subresources": [{"subresource": "pods/binding"}]},
     "subresources[0].subresource: must be a map, not a string"),
]  # fmt: skip


@pytest.mark.parametrize(("doc", "message"), [r[1:] for r in VALUES], ids=[r[0] for r in VALUES])
def test_values_files_of_the_wrong_shape_name_the_file_and_field(doc: Any, message: str) -> None:
    with pytest.raises(DocumentError) as raised:
        parse_values(doc, "values.yaml")
    assert str(raised.value) == f"values.yaml: {message}"


def test_a_good_values_file_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Values\nglobalValues: {request.operation: UPDATE}\n"
        "namespaceSelector: [{name: shop, labels: {team: a}}]\n"
    )
    values = load_values(path)
    assert values.operation("x", "CREATE") == "UPDATE" and values.namespace_labels == {"shop": {"team": "a"}}
