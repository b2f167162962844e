"""JSONPatch as the API server applies it: gopkg.in/evanphx/json-patch.v4 ``patch.go`` (used by
k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch/json_patch.go), where it differs from
RFC 6902. Each row names the v4 function whose behaviour it pins; the messages are v4's, behind the
API server's ``JSON Patch: `` prefix.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from celmut.jsonutil import PointerTokens, split_pointer
from celmut.runtime import mutations
from celmut.runtime.failures import MutationError
from celmut.runtime.jsonpatch_v4 import JsonPatchError, JsonPatchTestFailed, apply_patch

DOC: dict[str, Any] = {"metadata": {"labels": {"a": "1"}, "gone": None}, "list": ["x", "y", "z"], "n": 3}

APPLIES = [
    # (v4 function, operation, expected document)
    (
        "Patch.replace + partialDoc.get (a missing member is nil, not an error): replace adds it",
        {"op": "replace", "path": "/metadata/labels/b", "value": "2"},
        {**DOC, "metadata": {"labels": {"a": "1", "b": "2"}, "gone": None}},
    ),
    (
        "Patch.replace of an unset field adds it (json_patch_test.go 'replace map value of unset field')",
        {"op": "replace", "path": "/metadata/annotations", "value": {"x": "y"}},
        {**DOC, "metadata": {"labels": {"a": "1"}, "gone": None, "annotations": {"x": "y"}}},
    ),
    (
        "partialArray.set: a negative index counts from the end (SupportNegativeIndices)",
        {"op": "replace", "path": "/list/-1", "value": "Z"},
        {**DOC, "list": ["x", "y", "Z"]},
    ),
    (
        "partialArray.add: index == len appends",
        {"op": "add", "path": "/list/3", "value": "w"},
        {**DOC, "list": ["x", "y", "z", "w"]},
    ),
    (
        "partialArray.add: -1 is len+1-1, so it appends",
        {"op": "add", "path": "/list/-1", "value": "w"},
        {**DOC, "list": ["x", "y", "z", "w"]},
    ),
    (
        "partialArray.add: -4 on three items inserts at 0",
        {"op": "add", "path": "/list/-4", "value": "w"},
        {**DOC, "list": ["w", "x", "y", "z"]},
    ),
    (
        "partialArray.add: strconv.Atoi reads +1 and 01 as 1",
        {"op": "add", "path": "/list/+1", "value": "w"},
        {**DOC, "list": ["x", "w", "y", "z"]},
    ),
    (
        "partialArray.remove: a negative index counts from the end",
        {"op": "remove", "path": "/list/-3"},
        {**DOC, "list": ["y", "z"]},
    ),
    (
        "findObject: an intermediate negative index walks from the end",
        {"op": "replace", "path": "/list/-1", "value": {"k": 1}},
        {**DOC, "list": ["x", "y", {"k": 1}]},
    ),
    (
        "findObject: a path without a leading / splits the same way ('a/n' is '/n')",
        {"op": "replace", "path": "a/n", "value": 4},
        {**DOC, "n": 4},
    ),
    (
        "Patch.copy: copying a missing member copies null (partialDoc.get returns nil)",
        {"op": "copy", "from": "/metadata/nothing", "path": "/copied"},
        {**DOC, "copied": None},
    ),
    (
        "Patch.copy to the end of a list",
        {"op": "copy", "from": "/list/0", "path": "/list/-"},
        {**DOC, "list": ["x", "y", "z", "x"]},
    ),
    (
        "Patch.move a member to another key",
        {"op": "move", "from": "/metadata/labels/a", "path": "/metadata/labels/b"},
        {**DOC, "metadata": {"labels": {"b": "1"}, "gone": None}},
    ),
    (
        "Patch.replace of the root with an object replaces the document",
        {"op": "replace", "path": "", "value": {"only": True}},
        {"only": True},
    ),
    (
        "Patch.replace of the root with a scalar: errors.Wrapf(nil, …) is nil, the op is ignored",
        {"op": "replace", "path": "", "value": 1},
        DOC,
    ),
    (
        "Patch.test: numbers compare by value (the CEL value reaches v4 as a float64)",
        {"op": "test", "path": "/n", "value": 3.0},
        DOC,
    ),
]


@pytest.mark.parametrize(("operation", "expected"), [row[1:] for row in APPLIES], ids=[row[0] for row in APPLIES])
def test_v4_applies(operation: dict[str, Any], expected: Any) -> None:
    before = repr(DOC)
    assert apply_patch(DOC, [operation]) == expected
    assert repr(DOC) == before  # the input is never modified


FAILS = [
    # (v4 function, operation, v4's error text)
    (
        "Patch.add: parent missing",
        {"op": "add", "path": "/spec/missing/deep", "value": 1},
        'add operation does not apply: doc is missing path: "/spec/missing/deep": missing value',
    ),
    (
        "Patch.add: path '' has no container (findObject needs a /)",
        {"op": "add", "path": "", "value": {}},
        'add operation does not apply: doc is missing path: "": missing value',
    ),
    (
        "findObject: walking through null is a missing path",
        {"op": "add", "path": "/metadata/gone/x", "value": 1},
        'add operation does not apply: doc is missing path: "/metadata/gone/x": missing value',
    ),
    (
        "findObject: walking through a scalar is a missing path",
        {"op": "add", "path": "/n/x", "value": 1},
        'add operation does not apply: doc is missing path: "/n/x": missing value',
    ),
    (
        "partialArray.add: index > len",
        {"op": "add", "path": "/list/5", "value": 1},
        "error in add for path: '/list/5': Unable to access invalid index: 5: invalid index referenced",
    ),
    (
        "partialArray.add: a negative index below -(len+1)",
        {"op": "add", "path": "/list/-5", "value": 1},
        "error in add for path: '/list/-5': Unable to access invalid index: -5: invalid index referenced",
    ),
    (
        "partialArray.add: not a number",
        {"op": "add", "path": "/list/x", "value": 1},
        "error in add for path: '/list/x': value was not a proper array index: 'x': "
        'strconv.Atoi: parsing "x": invalid syntax',
    ),
    (
        "partialDoc.remove: a missing member",
        {"op": "remove", "path": "/metadata/labels/absent"},
        "error in remove for path: '/metadata/labels/absent': Unable to remove nonexistent key: absent: missing value",
    ),
    (
        "Patch.remove: parent missing",
        {"op": "remove", "path": "/metadata/annotations/a"},
        'remove operation does not apply: doc is missing path: "/metadata/annotations/a": missing value',
    ),
    (
        "partialArray.remove: index == len",
        {"op": "remove", "path": "/list/3"},
        "error in remove for path: '/list/3': Unable to access invalid index: 3: invalid index referenced",
    ),
    (
        "Patch.replace: '-' is no index (json_patch_test.go 'replace end of list with - not allowed')",
        {"op": "replace", "path": "/list/-", "value": 1},
        "replace operation does not apply: doc is missing key: /list/-: missing value",
    ),
    (
        "Patch.replace: list index out of range",
        {"op": "replace", "path": "/list/3", "value": 1},
        "replace operation does not apply: doc is missing key: /list/3: missing value",
    ),
    (
        "Patch.replace: parent missing",
        {"op": "replace", "path": "/spec/x/y", "value": 1},
        "replace operation does not apply: doc is missing path: /spec/x/y: missing value",
    ),
    (
        "Patch.move: from a missing member fails on partialDoc.remove (the message names the key)",
        {"op": "move", "from": "/metadata/labels/absent", "path": "/x"},
        "error in move for path: 'absent': Unable to remove nonexistent key: absent: missing value",
    ),
    (
        "Patch.move: from parent missing",
        {"op": "move", "from": "/a/b", "path": "/x"},
        "move operation does not apply: doc is missing from path: /a/b: missing value",
    ),
    (
        "Patch.move: destination parent missing",
        {"op": "move", "from": "/n", "path": "/a/b"},
        "move operation does not apply: doc is missing destination path: /a/b: missing value",
    ),
    (
        "Patch.copy: from list index out of range",
        {"op": "copy", "from": "/list/9", "path": "/x"},
        "error in copy for from: '/list/9': Unable to access invalid index: 9: invalid index referenced",
    ),
    (
        "Patch.copy: destination parent missing",
        {"op": "copy", "from": "/n", "path": "/a/b"},
        "copy operation does not apply: doc is missing destination path: /a/b: missing value",
    ),
    (
        "Patch.copy: destination index out of range",
        {"op": "copy", "from": "/n", "path": "/list/7"},
        "error while adding value during copy: Unable to access invalid index: 7: invalid index referenced",
    ),
    (
        "Patch.test: parent missing is an error, not a failed test",
        {"op": "test", "path": "/spec/x", "value": 1},
        "test operation does not apply: is missing path: /spec/x: missing value",
    ),
    (
        "Patch.test: list index out of range is an error",
        {"op": "test", "path": "/list/9", "value": "x"},
        "error in test for path: '/list/9': Unable to access invalid index: 9: invalid index referenced",
    ),
    ("Patch.ApplyIndent: an unknown op", {"op": "merge", "path": "/n"}, "Unexpected kind: merge"),
]


@pytest.mark.parametrize(("operation", "message"), [row[1:] for row in FAILS], ids=[row[0] for row in FAILS])
def test_v4_refuses_with_its_own_message(operation: dict[str, Any], message: str) -> None:
    with pytest.raises(JsonPatchError) as raised:
        apply_patch(DOC, [operation])
    assert str(raised.value) == message


TEST_FAILS = [
    ("Patch.test: a missing member fails the test (val == nil)", {"op": "test", "path": "/metadata/x", "value": "a"}),
    ("Patch.test: a null member fails even a test for null", {"op": "test", "path": "/metadata/gone", "value": None}),
    ("Patch.test: 1 is not '1'", {"op": "test", "path": "/metadata/labels/a", "value": 1}),
    ("lazyNode.equal: objects need the same keys", {"op": "test", "path": "/metadata/labels", "value": {}}),
    ("lazyNode.equal: lists compare in order", {"op": "test", "path": "/list", "value": ["z", "y", "x"]}),
]


@pytest.mark.parametrize("operation", [row[1] for row in TEST_FAILS], ids=[row[0] for row in TEST_FAILS])
def test_v4_test_failures_drop_the_patch(operation: dict[str, Any]) -> None:
    with pytest.raises(JsonPatchTestFailed):
        apply_patch(DOC, [{"op": "add", "path": "/before", "value": 1}, operation])


def test_the_engine_entry_point_carries_the_api_servers_prefix() -> None:
    """json_patch.go: ``fmt.Errorf("JSON Patch: %w", err)``."""
    with pytest.raises(MutationError, match=r"^JSON Patch: replace operation does not apply: doc is missing key"):
        mutations.apply_json_patch(DOC, [{"op": "replace", "path": "/list/-", "value": 1}])
    with pytest.raises(mutations.TestFailed):
        mutations.apply_json_patch(DOC, [{"op": "test", "path": "/n", "value": 4}])


def test_a_whole_patch_is_applied_in_order_on_copies() -> None:
    operations = [
        {"op": "replace", "path": "/metadata/labels/b", "value": "2"},
        {"op": "move", "from": "/metadata/labels/b", "path": "/list/0"},
        {"op": "copy", "from": "/list/0", "path": "/metadata/labels/c"},
        {"op": "remove", "path": "/list/-1"},
        {"op": "test", "path": "/metadata/labels/c", "value": "2"},
    ]
    assert apply_patch(DOC, operations) == {
        **DOC,
        "metadata": {"labels": {"a": "1", "c": "2"}, "gone": None},
        "list": ["2", "x", "y"],
    }
    assert DOC["list"] == ["x", "y", "z"] and DOC["metadata"]["labels"] == {"a": "1"}


def _go_replacer(token: str) -> str:
    """Go's ``strings.NewReplacer("~1", "/", "~0", "~").Replace`` (v4's ``decodePatchKey``): one
    left-to-right pass, the first pattern that matches at a position wins."""
    out, i = [], 0
    while i < len(token):
        if token.startswith("~1", i):
            out.append("/")
            i += 2
        elif token.startswith("~0", i):
            out.append("~")
            i += 2
        else:
            out.append(token[i])
            i += 1
    return "".join(out)


def test_keys_decode_as_gos_one_pass_replacer() -> None:
    """decodePatchKey is a strings.Replacer; the two str.replace calls of the paths' split
    (``jsonutil.split_pointer``, remembered or not) give the same key for every string of up to six
    characters over the alphabet that matters (``~01a``)."""
    remembered = PointerTokens()
    for length in range(7):
        for letters in itertools.product("~01a", repeat=length):
            token = "".join(letters)
            assert split_pointer("/x/" + token) == ("x", _go_replacer(token)), token
            assert remembered.tokens("/" + token) == remembered.tokens("/" + token) == (_go_replacer(token),)


KEYS = st.sampled_from(["a", "b", "0", "-", "~1x", "-1"])
PATHS = st.lists(KEYS, min_size=1, max_size=2).map(lambda keys: "/" + "/".join(keys))
VALUES = st.recursive(
    st.none() | st.integers(-2, 2) | st.sampled_from(["x", "y"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=5,
)
OPERATIONS = st.one_of(
    st.builds(lambda p, v: {"op": "add", "path": p, "value": v}, PATHS, VALUES),
    st.builds(lambda p, v: {"op": "replace", "path": p, "value": v}, PATHS, VALUES),
    st.builds(lambda p: {"op": "remove", "path": p}, PATHS),
    st.builds(lambda f, p: {"op": "move", "from": f, "path": p}, PATHS, PATHS),
    st.builds(lambda f, p: {"op": "copy", "from": f, "path": p}, PATHS, PATHS),
    st.builds(lambda p, v: {"op": "test", "path": p, "value": v}, PATHS, VALUES),
)


def _one_at_a_time(document: Any, operations: list[dict[str, Any]]) -> Any:
    """Each operation as a patch of its own: every container on its path copied again."""
    for operation in operations:
        document = apply_patch(document, [operation])
    return document


def _outcome(apply: Any, document: Any, operations: list[dict[str, Any]]) -> Any:
    try:
        return ("patched", apply(document, operations))
    except JsonPatchTestFailed as failed:
        return ("test failed", failed.path)
    except JsonPatchError as ex:
        return ("error", str(ex))


@settings(max_examples=600, deadline=None)
@given(document=st.dictionaries(KEYS, VALUES, max_size=4), operations=st.lists(OPERATIONS, max_size=8))
def test_one_patch_copies_each_container_once_with_the_same_result(
    document: dict[str, Any], operations: list[dict[str, Any]]
) -> None:
    """A patch copies a container the first time an operation walks through it and changes that copy
    in place afterwards: the result (or the error) is the one of applying each operation alone, with
    its own copies, and the input is never modified."""
    before = copy.deepcopy(document)
    remembered = PointerTokens()  # an engine's: the second patch finds its paths split

    def with_tokens(document: Any, operations: list[dict[str, Any]]) -> Any:
        return apply_patch(document, operations, remembered)

    assert _outcome(apply_patch, document, operations) == _outcome(_one_at_a_time, document, operations)
    assert _outcome(with_tokens, document, operations) == _outcome(with_tokens, document, operations)
    assert _outcome(with_tokens, document, operations) == _outcome(apply_patch, document, operations)
    assert document == before


def test_a_container_changed_then_copied_is_two_containers() -> None:
    """The copy a patch made of ``/metadata`` is changed in place by its later operations; a ``copy``
    of it must be a container of its own, or changing one would change both."""
    operations = [
        {"op": "add", "path": "/metadata/x", "value": 1},
        {"op": "copy", "from": "/metadata", "path": "/copied"},
        {"op": "add", "path": "/copied/y", "value": 2},
        {"op": "move", "from": "/copied", "path": "/moved"},
        {"op": "add", "path": "/moved/z", "value": 3},
    ]
    patched = apply_patch(DOC, operations)
    assert patched["metadata"] == {"labels": {"a": "1"}, "gone": None, "x": 1}
    assert patched["moved"] == {"labels": {"a": "1"}, "gone": None, "x": 1, "y": 2, "z": 3}
    assert "copied" not in patched and DOC["metadata"] == {"labels": {"a": "1"}, "gone": None}
