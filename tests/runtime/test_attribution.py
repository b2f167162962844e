"""Which of the admission's patch pointers each policy took part in (``provenance.attributed``): the
webhook's audit annotations and ``celmut.io/mutated-by`` name fields by it. Each pointer's value in
the policy's input and output is compared, in the patch's order, whatever the walk shares."""

from __future__ import annotations

import copy
import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from celmut.jsonutil import escape_pointer, unescape_pointer
from celmut.runtime.jsonpatch_v4 import JsonPatchError, JsonPatchTestFailed, apply_patch
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


KEYS = st.sampled_from(["a", "b", "x/y", "t~1", "0"])
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(0, 2) | st.sampled_from(["v", "w"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=6,
)
POINTERS = st.lists(KEYS, min_size=1, max_size=3).map(lambda keys: "/" + "/".join(escape_pointer(k) for k in keys))
OPERATIONS = st.lists(
    st.one_of(
        st.builds(lambda p, v: {"op": "add", "path": p, "value": v}, POINTERS, VALUES),
        st.builds(lambda p: {"op": "remove", "path": p}, POINTERS),
    ),
    max_size=4,
)


def _at(document: Any, pointer: str) -> Any:
    """The value at ``pointer`` walked naively (no shortcut), or the marker for none."""
    for token in pointer.split("/")[1:]:
        token = unescape_pointer(token)
        if isinstance(document, dict) and token in document:
            document = document[token]
        elif isinstance(document, list) and token.isdigit() and int(token) < len(document):
            document = document[int(token)]
        else:
            return "<missing>"
    return document


def _patched(document: Any, operations: list[dict[str, Any]]) -> Any:
    try:
        return apply_patch(document, operations)
    except (JsonPatchError, JsonPatchTestFailed):
        return document


def assert_each_policy_named_as_the_naive_walk(objects: list[Any], patch: list[dict[str, Any]]) -> None:
    """For each step from one object to the next (a policy's input and output), ``attributed`` names the
    pointers of ``patch`` whose value differs between the two, walked naively, in the patch's order."""
    pointers = pointers_of(patch)
    for before, after in itertools.pairwise(objects):
        expected = []
        for op in patch:
            old, new = _at(before, op["path"]), _at(after, op["path"])
            if old is new or (type(old) is type(new) and old == new):
                continue
            kind = "add" if old == "<missing>" else "remove" if new == "<missing>" else "replace"
            expected.append((kind, op["path"]))
        assert [(c.op, c.path) for c in attributed(outcome(before, after), pointers)] == expected


@settings(max_examples=300, deadline=None)
@given(original=st.dictionaries(KEYS, VALUES, max_size=4), changes=st.lists(OPERATIONS, min_size=1, max_size=3))
def test_each_policy_is_named_for_the_pointers_whose_value_it_changed(
    original: dict[str, Any], changes: list[list[dict[str, Any]]]
) -> None:
    """Policies change copies of what they touch and share the rest (as mutations do); for each, the
    pointers of the whole admission's patch it is named for are those whose value differs between
    its input and its output, walked without any shortcut: the one-look path for a map's members and
    the pointer cache give the same answer as walking every pointer in full."""
    objects = [original]
    for operations in changes:
        objects.append(_patched(objects[-1], operations))
    patch = diff(original, objects[-1])
    assert_each_policy_named_as_the_naive_walk(objects, patch)


MEMBER_KEYS = st.sampled_from([f"k{i}" for i in range(8)] + ["x/y", "t~1"])
MEMBER_VALUES = st.none() | st.booleans() | st.integers(0, 2) | st.floats(0, 1) | st.sampled_from(["v", "1"])


@settings(max_examples=300, deadline=None)
@given(
    labels=st.dictionaries(MEMBER_KEYS, MEMBER_VALUES, max_size=8),
    steps=st.lists(st.dictionaries(MEMBER_KEYS, MEMBER_VALUES | st.just(None), max_size=4), min_size=1, max_size=4),
    removals=st.lists(st.sets(MEMBER_KEYS, max_size=2), min_size=4, max_size=4),
)
def test_a_long_run_of_a_maps_members_is_named_as_walking_each_member(
    labels: dict[str, Any], steps: list[dict[str, Any]], removals: list[set[str]]
) -> None:
    """A run of one map's members (a pod's labels, annotations: one look per member) names the same
    pointers as the naive walk, including a value replaced by
    an equal one of another type (``True`` by ``1``, ``1`` by ``1.0``: replaced, as JSON tells them apart)
    and an equal value in a new object (not replaced)."""
    objects = [{"metadata": {"labels": labels}, "spec": {"a": 1}}]
    for step, removed in zip(steps, removals, strict=False):
        previous = objects[-1]
        changed = {**previous["metadata"]["labels"], **step}  # copy-on-write: a new map, the rest shared
        for key in removed:
            changed.pop(key, None)
        objects.append({**previous, "metadata": {**previous["metadata"], "labels": changed}})
    patch = diff(objects[0], objects[-1])
    patch += [
        {"op": "add", "path": f"/metadata/labels/{escape_pointer(k)}", "value": 0} for k in ("k0", "k1", "k2", "k3")
    ]
    assert_each_policy_named_as_the_naive_walk(objects, patch)


def test_a_member_replaced_by_an_equal_value_of_another_type_is_named() -> None:
    before = {"metadata": {"labels": {"a": True, "b": 1, "c": "x", "d": "y", "e": "z"}}}
    after = {"metadata": {"labels": {"a": 1, "b": 1.0, "c": "x", "d": "y2", "e": "z"}}}
    patch = [
        {"op": "replace", "path": f"/metadata/labels/{k}", "value": after["metadata"]["labels"][k]} for k in "abcde"
    ]
    pointers = pointers_of(patch)
    assert attributed(outcome(before, after), pointers) == (
        FieldChange("replace", "/metadata/labels/a", 1),
        FieldChange("replace", "/metadata/labels/b", 1.0),
        FieldChange("replace", "/metadata/labels/d", "y2"),
    )
