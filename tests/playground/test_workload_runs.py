"""A workload run as its pods answers the same however its lookups are served, and each pod's reason
agrees with the pods before it.

The run reads the offline cluster's lists without copying them and explains each pod from the values
its admission computed (nothing listed or counted twice). The same run with the page connected to a
cluster (here an empty one) reads every list as a copy, as the run did before: every answer must be
identical, under each spot preset (examples/spot-presets; with a template's spot-percentage too, which
the all-spot presets split by) and a PodMutation with distribution groups, at 10 and 100 replicas. And
each pod's numbers must be those of the pods before it in the answer itself."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from celmut.playground import session, workload_run
from celmut.playground.layered import Layered
from celmut.service.static_resources import StaticResources
from tests.playground.support import without_timings

ROOT = Path(__file__).resolve().parents[2]
DEPLOYMENT = (ROOT / "examples" / "workloads" / "web-deployment.yaml").read_text()
CLUSTER = (ROOT / "examples" / "cluster.yaml").read_text()
PERCENTAGE = "      annotations: {scheduling.cast.ai/spot-percentage: '30'}\n"
PODMUTATION = """apiVersion: pod-mutations.cast.ai/v1
kind: PodMutation
metadata: {name: groups}
spec:
  spotConfig: {mode: optional-spot, distributionPercentage: 50}
  distributionGroups:
  - name: a
    percentage: 30
    configuration:
      spotMode: only-spot
      patchesV2: [{operations: [{op: add, path: /metadata/labels/group, value: a}]}]
  - name: b
    percentage: 30
    configuration:
      patches: [{op: add, path: /metadata/labels/group, value: b}]
"""
PRESETS = sorted((ROOT / "examples" / "spot-presets").glob("*.yaml"))
SCENARIOS = [
    *[(p.stem, p.read_text(), None) for p in PRESETS],
    *[(f"{p.stem} (template at 30 %)", p.read_text(), 30) for p in PRESETS],
    ("PodMutation with distribution groups", PODMUTATION, None),
]


def state(policies: str, replicas: int, percent: int | None) -> session.State:
    resources = DEPLOYMENT.replace("replicas: 10", f"replicas: {replicas}")
    if percent is not None:
        resources = resources.replace("        app: web\n    spec:", f"        app: web\n{PERCENTAGE}    spec:")
        assert PERCENTAGE in resources
    return session.State(policies=policies, resources=resources, cluster=CLUSTER)


def check_reasons(answer: dict[str, Any], percent: int | None) -> None:
    """Each pod's numbers are those of the pods before it, and its placement follows from them."""
    placements: list[str] = []
    groups: list[str] = []
    for index, pod in enumerate(answer["pods"]):
        (decision,) = pod["decisions"]
        numbers = decision["numbers"]
        if "group" in decision:
            assert numbers == {"total": index + 1, "counts": {"a": 0, "b": 0, "(none)": 0} | Counter(groups)}
            groups.append(decision["group"])
        elif percent is None:
            assert numbers == {} and decision["placement"] == "spot"  # every pod on spot
        else:
            allowed = (index + 1) * percent // 100
            on_spot = placements.count("spot")
            assert numbers == {"percent": percent, "earlier": index, "earlierOnSpot": on_spot,
                               "total": index + 1, "allowedOnSpot": allowed}  # fmt: skip
            assert decision["placement"] == ("spot" if on_spot < allowed else "on-demand")
        placements.append(decision["placement"])


@pytest.mark.parametrize("replicas", [10, 100])
@pytest.mark.parametrize(("policies", "percent"), [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS])
def test_a_workload_run_answers_as_with_every_read_copied(policies: str, percent: int | None, replicas: int) -> None:
    offline = workload_run.run(state(policies, replicas, percent), 0)
    assert not offline.get("errors") and len(offline["pods"]) == replicas, offline.get("errors")
    split = percent if percent is not None else 40 if "partial" in policies else None
    check_reasons(offline, split)
    copied = workload_run.run(state(policies, replicas, percent), 0, lookups=Layered(StaticResources()))
    assert without_timings(copied) == without_timings(offline)
