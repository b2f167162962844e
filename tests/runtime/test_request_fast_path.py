"""``AdmissionInput.from_admission_request`` checks a review as kube-apiserver sends it with exact-type
tests alone (``_well_formed``), and anything else with the checks that name the field: both paths must
give the same AdmissionInput, or the same InvalidRequest, for any request. Hypothesis replaces one
field of a valid request (or of its object's metadata, or its userInfo) with arbitrary JSON and
compares the two."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from celmut.runtime import request as request_module
from celmut.runtime.request import AdmissionInput, InvalidRequest
from tests.server.support import admission_request, pod

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
REQUEST_FIELDS = [
    "uid", "operation", "kind", "resource", "requestKind", "requestResource", "subResource",
    "requestSubResource", "name", "namespace", "userInfo", "object", "oldObject", "dryRun", "options",
]  # fmt: skip
METADATA_FIELDS = ["name", "generateName", "namespace", "uid", "resourceVersion", "labels", "annotations"]
METADATA_FIELDS += ["ownerReferences"]
NESTED = {
    "kind": ["group", "version", "kind"],
    "resource": ["group", "version", "resource"],
    "requestKind": ["group", "version", "kind"],
    "userInfo": ["username", "uid", "groups", "extra"],
}


def outcome(request: Any, *, fast: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The AdmissionInput, or (field, message) of the InvalidRequest, through one path."""
    with monkeypatch.context() as patched:
        if not fast:
            patched.setattr(request_module, "_well_formed", lambda _request: False)
        try:
            return AdmissionInput.from_admission_request(copy.deepcopy(request), input_size=10)
        except InvalidRequest as ex:
            return (ex.field, str(ex))


VALID = [
    pytest.param(admission_request(pod()), id="create"),
    pytest.param(admission_request(None, "DELETE", oldObject=pod()), id="delete: oldObject only"),
    pytest.param(admission_request(pod(), "UPDATE", oldObject=pod(), dryRun=True), id="update, dry run"),
    pytest.param(
        {k: v for k, v in admission_request(pod()).items() if k not in ("requestKind", "userInfo", "dryRun")},
        id="optional fields absent",
    ),
    pytest.param(
        admission_request(pod(), userInfo={"username": "a", "extra": {"scopes": ["x"]}}, options={"kind": "x"}),
        id="extra and options",
    ),
]


@pytest.mark.parametrize("request_", VALID)
def test_a_well_formed_request_takes_the_fast_path_to_the_same_input(
    request_: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert request_module._well_formed(request_)
    assert outcome(request_, fast=True, monkeypatch=monkeypatch) == outcome(
        request_, fast=False, monkeypatch=monkeypatch
    )


@settings(max_examples=300, deadline=None)
@given(
    field=st.sampled_from(REQUEST_FIELDS),
    nested=st.integers(min_value=0, max_value=8),
    value=JSON,
    delete=st.booleans(),
)
def test_any_change_to_a_request_gives_the_same_answer_on_both_paths(
    field: str, nested: int, value: Any, delete: bool
) -> None:
    request = admission_request(pod())
    target: dict[str, Any] = request
    key = field
    if field == "object" and nested < len(METADATA_FIELDS):
        target, key = request["object"]["metadata"], METADATA_FIELDS[nested]
    elif field in NESTED and nested < len(NESTED[field]):
        target, key = request[field], NESTED[field][nested]
    if delete:
        target.pop(key, None)
    else:
        target[key] = value
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert outcome(request, fast=True, monkeypatch=monkeypatch) == outcome(
            request, fast=False, monkeypatch=monkeypatch
        )
