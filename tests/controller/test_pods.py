"""Which changes a running pod accepts (Kubernetes' ValidatePodUpdate) and which need a new pod."""

from __future__ import annotations

from typing import Any

import pytest

from celmut.controller.pods import controller_owner, split_live_change


def pod(**spec: Any) -> dict[str, Any]:
    base = {"containers": [{"name": "app", "image": "nginx:1"}], "tolerations": [{"key": "a", "operator": "Exists"}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"x": "1"}},
        "spec": {**base, **spec},
    }


def changed(update: dict[str, Any], **spec: Any) -> dict[str, Any]:
    new = pod(**spec)
    new["metadata"].update(update)
    return new


SPOT = {"key": "scheduling.cast.ai/spot", "operator": "Exists"}


@pytest.mark.parametrize(
    ("new", "accepted_paths", "rejected_paths"),
    [
        (changed({"labels": {"x": "2"}}), ["/metadata/labels/x"], []),
        (changed({"annotations": {"a": "b"}}), ["/metadata/annotations"], []),
        (changed({}, containers=[{"name": "app", "image": "nginx:2"}]), ["/spec/containers/0/image"], []),
        (changed({}, tolerations=[{"key": "a", "operator": "Exists"}, SPOT]), ["/spec/tolerations/1"], []),
        (changed({}, tolerations=[SPOT]), [], ["/spec/tolerations/0/key"]),
        (changed({}, nodeSelector={"spot": "true"}), [], ["/spec/nodeSelector"]),
        (changed({}, activeDeadlineSeconds=30), ["/spec/activeDeadlineSeconds"], []),
        (
            changed({"labels": {"x": "2"}}, nodeSelector={"spot": "true"}),
            ["/metadata/labels/x"],
            ["/spec/nodeSelector"],
        ),
    ],
    ids=[
        "labels are mutable",
        "annotations are mutable",
        "container images are mutable",
        "tolerations may be added",
        "tolerations may not be replaced",
        "the node selector is immutable",
        "activeDeadlineSeconds may be set",
        "a mixed change splits in two",
    ],
)
def test_split_live_change(new: dict[str, Any], accepted_paths: list[str], rejected_paths: list[str]) -> None:
    accepted, rejected = split_live_change(pod(), new)
    assert [op["path"] for op in accepted] == accepted_paths
    assert [op["path"] for op in rejected] == rejected_paths


def test_controller_owner_ignores_non_controller_references() -> None:
    p = pod()
    p["metadata"]["ownerReferences"] = [
        {"kind": "ConfigMap", "name": "c"},
        {"kind": "ReplicaSet", "name": "web-1", "controller": True},
    ]
    assert controller_owner(p) == {"kind": "ReplicaSet", "name": "web-1", "controller": True}
    assert controller_owner(pod()) is None
