"""What the webhook itself stamps on an admitted object (the split decision's id, issue 38):
``runtime.results.with_annotations`` extends the response patch so that applying it gives the object."""

from __future__ import annotations

import jsonpatch
import pytest

from celmut.runtime.patch import diff
from celmut.runtime.results import AdmissionResult, with_annotations


def admitted(original: dict, mutated: dict) -> AdmissionResult:
    return AdmissionResult(allowed=True, original=original, object=mutated, patch=diff(original, mutated), outcomes=[])


@pytest.mark.parametrize(
    "metadata",
    [
        pytest.param({"name": "p"}, id="no-annotations-map: the map is added"),
        pytest.param({"name": "p", "annotations": {"a": "1"}}, id="annotations-map: one member is added"),
        pytest.param({"name": "p", "annotations": {"celmut.io/decision": "old"}}, id="a different value: replaced"),
    ],
)
def test_the_patch_gives_the_stamped_object(metadata: dict) -> None:
    original = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata}
    mutated = {**original, "metadata": {**metadata, "labels": {"placed": "yes"}}}
    stamped = with_annotations(admitted(original, mutated), {"celmut.io/decision": "uid-1"})
    assert stamped.object is not None and stamped.object["metadata"]["annotations"]["celmut.io/decision"] == "uid-1"
    assert jsonpatch.apply_patch(original, stamped.patch) == stamped.object
    assert mutated["metadata"] == {**metadata, "labels": {"placed": "yes"}}  # the policies' object is not changed


def test_nothing_changes_when_the_stamp_is_there_or_the_request_is_denied() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"annotations": {"celmut.io/decision": "uid-1"}}}
    result = admitted(pod, pod)
    assert with_annotations(result, {"celmut.io/decision": "uid-1"}) is result
    denied = AdmissionResult.denied(pod, [], "no")
    assert with_annotations(denied, {"celmut.io/decision": "uid-2"}) is denied
