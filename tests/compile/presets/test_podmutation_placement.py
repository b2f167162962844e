"""PodMutation spotConfig and distributionGroups: each spot mode as concrete pod changes, exact
percentages at 1, 10 and 100 pods of one workload, groups (exact split, their patches and spot
modes, combined with spotConfig), and idempotence of a second admission."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from celmut.runtime import AdmissionInput
from tests.compile.presets.test_podmutation_support import (
    NAME_ANNOTATION,
    admit,
    annotation,
    cluster,
    mutated_by,
    pod,
    podmutation,
)

SPOT = "scheduling.cast.ai/spot"
TOLERATION = {"key": SPOT, "operator": "Exists", "effect": "NoSchedule"}
PLACEMENT = "celmut.io/placement"
GROUP = "celmut.io/distribution-group"
ON_DEMAND_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": SPOT, "operator": "DoesNotExist"}]}]
        }
    }
}


def placements(spec: dict[str, Any], pods: int) -> list[Any]:
    offline = cluster(podmutation("m", spec))
    return admit(offline, *(pod(index=i) for i in range(pods)))


@pytest.mark.parametrize(
    ("mode", "expected_spec"),
    [
        ("optional-spot", {"tolerations": [TOLERATION]}),
        ("only-spot", {"tolerations": [TOLERATION], "nodeSelector": {SPOT: "true"}}),
        (
            "preferred-spot",
            {
                "tolerations": [TOLERATION],
                "affinity": {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 100, "preference": {"matchExpressions": [{"key": SPOT, "operator": "Exists"}]}}
                        ]
                    }
                },
            },
        ),
    ],
)
def test_each_spot_mode_as_pod_changes(mode: str, expected_spec: dict[str, Any]) -> None:
    (result,) = placements({"spotConfig": {"mode": mode, "distributionPercentage": 100}}, 1)
    assert result.object["spec"] == {"containers": [{"name": "c", "image": "nginx"}], **expected_spec}
    assert annotation(result, PLACEMENT) == "spot" and mutated_by(result) == "m"


@pytest.mark.parametrize(
    ("percentage", "pods", "spot"),
    [
        (0, 1, 0),
        (0, 10, 0),
        (50, 1, 0),
        (50, 10, 5),
        (50, 100, 50),
        (80, 1, 0),  # a single pod below 100 % goes on-demand
        (80, 10, 8),
        (80, 100, 80),
        (100, 1, 1),
        (100, 10, 10),
        (None, 10, 10),  # the default is 100
    ],
)
def test_distribution_percentage_is_exact(percentage: int | None, pods: int, spot: int) -> None:
    config: dict[str, Any] = {"mode": "only-spot"}
    if percentage is not None:
        config["distributionPercentage"] = percentage
    results = placements({"spotConfig": config}, pods)
    decided = [annotation(r, PLACEMENT) for r in results]
    assert decided.count("spot") == spot and decided.count("on-demand") == pods - spot
    for result, placement in zip(results, decided, strict=True):
        if placement == "spot":
            assert result.object["spec"]["nodeSelector"] == {SPOT: "true"}
            assert "affinity" not in result.object["spec"]
        else:
            assert result.object["spec"]["affinity"] == ON_DEMAND_AFFINITY
            assert "nodeSelector" not in result.object["spec"] and "tolerations" not in result.object["spec"]


@pytest.mark.parametrize("spot_config", [{}, {"distributionPercentage": 50}], ids=["empty", "percentage without mode"])
def test_spot_config_without_mode_changes_nothing(spot_config: dict[str, Any]) -> None:
    (result,) = placements({"spotConfig": spot_config}, 1)
    assert result.object["spec"] == {"containers": [{"name": "c", "image": "nginx"}]}
    assert annotation(result, PLACEMENT) is None and mutated_by(result) == "m"


@pytest.mark.parametrize("percentage", [100, 50])
def test_a_second_admission_of_a_mutated_pod_changes_nothing(percentage: int) -> None:
    offline = cluster(
        podmutation("m", {"spotConfig": {"mode": "preferred-spot", "distributionPercentage": percentage}})
    )
    for run in offline.admit([pod(index=i) for i in range(4)]):
        again = offline.engine.admit(AdmissionInput.from_object(run.result.object))
        assert again.patch == [] and not again.errored


GROUPS = [
    {
        "name": "a",
        "percentage": 30,
        "configuration": {
            "spotMode": "only-spot",
            "patchesV2": [{"operations": [{"op": "add", "path": "/metadata/labels/group", "value": "a"}]}],
        },
    },
    {
        "name": "b",
        "percentage": 30,
        "configuration": {"patches": [{"op": "add", "path": "/metadata/labels/group", "value": "b"}]},
    },
]


@pytest.mark.parametrize(
    ("pods", "expected"),
    [(1, {"(none)": 1}), (10, {"a": 3, "b": 3, "(none)": 4}), (100, {"a": 30, "b": 30, "(none)": 40})],
)
def test_distribution_groups_are_exact_and_apply_their_configuration(pods: int, expected: dict[str, int]) -> None:
    spec = {"patches": [{"op": "add", "path": "/metadata/labels/top", "value": "yes"}], "distributionGroups": GROUPS}
    results = placements(spec, pods)
    assert Counter(annotation(r, GROUP) for r in results) == expected
    for result in results:
        group = annotation(result, GROUP)
        labels = result.object["metadata"]["labels"]
        assert labels["top"] == "yes"  # the top-level configuration applies to every group
        assert labels.get("group") == (group if group != "(none)" else None)
        if group == "a":  # spotMode: spot in that mode
            assert result.object["spec"]["nodeSelector"] == {SPOT: "true"} and annotation(result, PLACEMENT) == "spot"
        else:  # no spotMode and no spotConfig: placement untouched
            assert set(result.object["spec"]) == {"containers"} and annotation(result, PLACEMENT) is None


def test_groups_without_spot_mode_are_placed_by_spot_config_counting_every_spot_pod() -> None:
    spec = {
        "spotConfig": {"mode": "optional-spot", "distributionPercentage": 50},
        "distributionGroups": [{"name": "pinned", "percentage": 50, "configuration": {"spotMode": "only-spot"}}],
    }
    results = placements(spec, 10)
    by_group = Counter((annotation(r, GROUP), annotation(r, PLACEMENT)) for r in results)
    # the 5 pinned pods fill the workload's 50 % spot share, so spotConfig puts the rest on-demand
    assert by_group == {("pinned", "spot"): 5, ("(none)", "on-demand"): 5}
    for result in results:
        if annotation(result, GROUP) == "pinned":
            assert result.object["spec"]["nodeSelector"] == {SPOT: "true"}
        else:
            assert result.object["spec"]["affinity"] == ON_DEMAND_AFFINITY


def test_a_group_spot_mode_overrides_the_spot_config_mode() -> None:
    spec = {
        "spotConfig": {"mode": "only-spot"},
        "distributionGroups": [{"name": "flexible", "percentage": 50, "configuration": {"spotMode": "preferred-spot"}}],
    }
    results = placements(spec, 10)
    for result in results:
        assert annotation(result, PLACEMENT) == "spot"
        if annotation(result, GROUP) == "flexible":
            assert "nodeSelector" not in result.object["spec"]
            assert (
                "preferredDuringSchedulingIgnoredDuringExecution" in result.object["spec"]["affinity"]["nodeAffinity"]
            )
        else:
            assert result.object["spec"]["nodeSelector"] == {SPOT: "true"}
    assert Counter(annotation(r, GROUP) for r in results) == {"flexible": 5, "(none)": 5}


def test_group_names_needing_escapes_are_recorded_verbatim() -> None:
    spec = {
        "distributionGroups": [
            {"name": 'say "hi" \\ now', "percentage": 100, "configuration": {"spotMode": "optional-spot"}}
        ]
    }
    (result,) = placements(spec, 1)
    assert annotation(result, GROUP) == 'say "hi" \\ now' and annotation(result, PLACEMENT) == "spot"


def test_pods_of_other_workloads_do_not_count() -> None:
    offline = cluster(podmutation("m", {"spotConfig": {"mode": "only-spot", "distributionPercentage": 50}}))
    results = admit(offline, *(pod("web", index=i) for i in range(4)), *(pod("api", index=i) for i in range(4)))
    decided = [annotation(r, PLACEMENT) for r in results]
    assert decided[:4].count("spot") == 2 and decided[4:].count("spot") == 2
    assert all(NAME_ANNOTATION in r.object["metadata"]["annotations"] for r in results)
