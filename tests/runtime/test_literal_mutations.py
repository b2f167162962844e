"""A literal mutation (its expression a literal tree, folded once by the CEL engine) is measured,
checked and converted once, at its first use (``celmut.runtime.mutation_step._Literal``): every
admission after it must see what the first one saw — the same object, the same error, the same limit —
and nothing an admission does to its object may reach the next one."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakekube_tests.manifests import structural_widget_crd
from tests.runtime.helpers import admit, applyconfig, engine, jsonpatch, map_policy, mpol, pod

LABEL = jsonpatch('[JSONPatch{op: "add", path: "/metadata/labels/team", value: "payments"}]')
ANNOTATION = applyconfig('Object{metadata: Object.metadata{annotations: {"owner": "platform"}}}')
# the API server checks typed constructions' names at admission (dynamic/objects.go
# CheckTypeNamesMatchFieldPathNames): a wrong one fails every request, not just the first
MISNAMED_APPLY = applyconfig('Object{spec: Object.spec.wrong{nodeName: "n"}}')
MISNAMED_PATCH = jsonpatch(
    '[JSONPatch{op: "add", path: "/spec/containers/-", value: Object.spec.containers{name: "x", '
    "ports: [Object.spec.containers.portsZ{containerPort: 8080}]}}]"
)
UNKNOWN_OP = jsonpatch(
    '[JSONPatch{op: "add", path: "/metadata/labels/a", value: "b"}, JSONPatch{op: "frob", path: "/x"}]'
)


def test_a_literal_mutation_applies_the_same_at_every_admission() -> None:
    policies = engine(mpol("literal", LABEL + ANNOTATION))
    for name in ("first", "second", "third"):
        result = admit(policies, pod(name))
        assert result.allowed and result.object is not None
        assert result.object["metadata"]["labels"] == {"app": "web", "team": "payments"}
        assert result.object["metadata"]["annotations"] == {"owner": "platform"}
        assert [op["path"] for op in result.patch] == ["/metadata/labels/team", "/metadata/annotations"]


@pytest.mark.parametrize(
    ("mutation", "message"),
    [
        pytest.param(MISNAMED_APPLY, 'unexpected type name "Object.spec.wrong"', id="misnamed ApplyConfiguration"),
        pytest.param(MISNAMED_PATCH, 'unexpected type name "Object.spec.containers.portsZ"', id="misnamed JSONPatch"),
        pytest.param(UNKNOWN_OP, "JSON Patch: Unexpected kind: frob (JSONPatch[1]", id="an unknown op"),
    ],
)
def test_a_literal_that_fails_fails_at_every_admission(mutation: str, message: str) -> None:
    policies = engine(map_policy(mutation))
    for _ in range(3):
        result = admit(policies, pod())
        assert not result.allowed and message in result.message


def test_a_literal_over_the_size_limit_fails_at_every_admission() -> None:
    policies = engine(mpol("big", ANNOTATION), max_object_bytes=40)
    for _ in range(2):
        result = admit(policies, pod())
        assert not result.allowed and "bytes of JSON, over the limit of 40" in result.message


def test_changing_one_admitted_object_does_not_change_the_next() -> None:
    policies = engine(mpol("literal", LABEL + ANNOTATION))
    first: Any = admit(policies, pod()).object
    first["metadata"]["annotations"]["owner"] = "someone else"
    first["metadata"]["labels"]["team"] = "someone else"
    second: Any = admit(policies, pod()).object
    assert second["metadata"]["annotations"] == {"owner": "platform"}
    assert second["metadata"]["labels"]["team"] == "payments"


# a listType=set of atomic objects: structured-merge-diff takes each applied item whole
# A list of objects merged by key. (A ``listType: set`` of atomic objects is valid in a CRD, but
# structured-merge-diff refuses every object in a set: typed/helpers.go ``setItemToPathElement``.)
KEYED_OBJECTS = {
    "rules": {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["port"],
        "items": {"type": "object", "properties": {"port": {"type": "integer"}}},
    }
}


def test_an_applied_list_item_is_not_shared_between_admissions() -> None:
    """A new item of a keyed list is built from the applied one (structured-merge-diff typed/merge.go):
    celmut copies it, so changing one admitted object leaves the literal, and the next admission, alone."""
    mutation = applyconfig("Object{spec: Object.spec{rules: [Object.spec.rules{port: 80}]}}")
    policies = engine(
        mpol("rules", mutation, resources="widgets").replace("apiGroups: ['']", "apiGroups: [example.com]"),
        cluster=[structural_widget_crd(KEYED_OBJECTS)],
    )
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}}
    first: Any = admit(policies, widget).object
    assert first["spec"]["rules"] == [{"port": 80}]
    first["spec"]["rules"][0]["port"] = 9999
    second: Any = admit(policies, widget).object
    assert second["spec"]["rules"] == [{"port": 80}]
