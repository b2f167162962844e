"""Which of the admission's patch pointers each policy took part in (``provenance.attributed``): the
webhook's audit annotations and ``celmut.io/mutated-by`` name fields by it. Each pointer's value in
the policy's input and output is compared, in the patch's order, whatever the walk shares."""

from __future__ import annotations

import copy
from typing import Any

from celmut.runtime.patch import diff
from celmut.runtime.provenance import FieldChange, attributed, pointers_of
from celmut.runtime.results import PolicyOutcome


def outcome(before: dict[str, Any], after: dict[str, Any]) -> PolicyOutcome:
    return PolicyOutcome("p", "MutatingPolicy", "applied", before=before, after=after)


def test_each_pointer_is_named_in_patch_order_with_its_operation() -> None:
    before: dict[str, Any] = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"x": [1, 2]}}
    after = copy.deepcopy(before)
    after["metadata"]["labels"]["a"] = "9"
    del after["metadata"]["labels"]["b"]
    after["metadata"]["annotations"] = {"n": "v"}
    after["spec"]["x"].append(3)
    patch = [
        {"op": "add", "path": "/spec/x/2", "value": 3},
        {"op": "remove", "path": "/metadata/labels/b"},
        {"op": "replace", "path": "/metadata/labels/a", "value": "9"},
        {"op": "add", "path": "/metadata/annotations", "value": {"n": "v"}},
        {"op": "add", "path": "/metadata/annotations/n", "value": "v"},  # a pointer below another
        {"op": "replace", "path": "/metadata/labels/a", "value": "9"},  # and one given twice
        {"op": "add", "path": "/status/unrelated", "value": 1},  # in neither object
    ]
    assert attributed(outcome(before, after), pointers_of(patch)) == (
        FieldChange("add", "/spec/x/2", 3),
        FieldChange("remove", "/metadata/labels/b", None),
        FieldChange("replace", "/metadata/labels/a", "9"),
        FieldChange("add", "/metadata/annotations", {"n": "v"}),
        FieldChange("add", "/metadata/annotations/n", "v"),
        FieldChange("replace", "/metadata/labels/a", "9"),
    )


def test_a_subtree_the_policy_left_as_it_was_names_nothing_below_it() -> None:
    shared = {"containers": [{"name": "app", "image": "nginx"}]}
    before = {"metadata": {"labels": {"a": "1"}}, "spec": shared}
    after = {"metadata": {"labels": {"a": "2"}}, "spec": shared}
    equal_copy = {"metadata": {"labels": {"a": "1"}}, "spec": copy.deepcopy(shared)}
    patch = [{"op": "replace", "path": "/spec/containers/0/image", "value": "x"}]
    patch += diff(before, after)
    pointers = pointers_of(patch)
    assert attributed(outcome(before, after), pointers) == (FieldChange("replace", "/metadata/labels/a", "2"),)
    assert attributed(outcome(before, equal_copy), pointers) == ()  # equal values, not the same objects
    escaped = pointers_of([{"op": "add", "path": "/metadata/labels/x~1y~0z", "value": "1"}])
    labelled = {"metadata": {"labels": {"x/y~z": "1"}}}
    assert attributed(outcome({"metadata": {}}, labelled), escaped) == (
        FieldChange("add", "/metadata/labels/x~1y~0z", "1"),
    )
