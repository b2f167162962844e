"""A workload run "as its pods" does per pod what one pod needs, whatever the number of pods: counted
in calls (Python's profiler counts them), never in seconds, for a Deployment of N and of 2N replicas.

The partialSpot preset lists each pod's siblings (the pods before it) and counts them, as it does in a
cluster: the items its lists answer grow as N², which is the policy's own work. Everything around it
must grow as N: one admission and one list per pod, the reason read from that admission (no second
evaluation, no second list), each stored pod converted to CEL's value form once, the lists reading no
stored object beyond those they answer, and no copy of each listed pod. The run was quadratic in the
last two before: every list scanned and copied every stored object."""

from __future__ import annotations

import cProfile
import pstats
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from celmut.playground import session, workload_run

ROOT = Path(__file__).resolve().parents[2]
POLICIES = (ROOT / "examples" / "spot-presets" / "spot-partial.yaml").read_text()
DEPLOYMENT = (ROOT / "examples" / "workloads" / "web-deployment.yaml").read_text()
N = 20

# (file under celmut/, function): the functions counted
ADMISSIONS = ("runtime/engine.py", "admit")
LISTS = ("service/static_resources.py", "list_values")
COPIED_LISTS = ("service/static_resources.py", "list")
EXPLANATIONS = ("playground/decisions.py", "explain")
CONVERSIONS = ("cel/libs/kyverno/json.py", "shared_cel_value")  # a stored object into CEL's value form
STORED_READS = ("service/static_resources.py", "value")  # a stored object read by a list
LABEL_READS = ("service/static_resources.py", "_labels")  # a stored object's labels read (indexed or scanned)
COPIES = ("jsonutil.py", "json_copy")  # each JSON value copied (it recurses)


def counted_run(replicas: int) -> tuple[dict[str, Any], Counter[tuple[str, str]]]:
    """The run's answer and the calls it made, by (file under celmut/, function)."""
    state = session.State(policies=POLICIES, resources=DEPLOYMENT.replace("replicas: 10", f"replicas: {replicas}"))
    profile = cProfile.Profile()
    profile.enable()
    try:
        answer = workload_run.run(state, 0)
    finally:
        profile.disable()
    calls: Counter[tuple[str, str]] = Counter()
    for (filename, _, function), (_, total, *_) in pstats.Stats(profile).stats.items():  # type: ignore[attr-defined]
        if "/celmut/" in filename:
            calls[filename.rsplit("/celmut/", 1)[1], function] += total
    assert not answer.get("errors") and len(answer["pods"]) == replicas, answer.get("errors")
    return answer, calls


@pytest.fixture(scope="module")
def runs() -> dict[int, tuple[dict[str, Any], Counter[tuple[str, str]]]]:
    workload_run.run(session.State(policies=POLICIES, resources=DEPLOYMENT), 0)  # compiled CEL, imports
    return {n: counted_run(n) for n in (N, 2 * N)}


@pytest.mark.parametrize("counted", [ADMISSIONS, LISTS, EXPLANATIONS], ids=lambda c: c[1])
def test_each_pod_is_admitted_listed_and_explained_once(runs: Any, counted: tuple[str, str]) -> None:
    for n, (_, calls) in runs.items():
        assert calls[counted] == n, (counted, n)


def test_no_list_copies_the_stored_pods(runs: Any) -> None:
    assert [calls[COPIED_LISTS] for _, calls in runs.values()] == [0, 0]


def test_each_stored_pod_is_made_a_cel_value_once(runs: Any) -> None:
    """Each pod once, on its first listing: all but the last, which no pod after it lists."""
    for n, (_, calls) in runs.items():
        assert calls[CONVERSIONS] == n - 1


def test_a_list_reads_only_the_pods_it_answers(runs: Any) -> None:
    """The stored pods read by the lists are the siblings each pod counted, none more (no scan): the
    N² that is the policy's."""
    for answer, calls in runs.values():
        earlier = sum(pod["decisions"][0]["numbers"]["earlier"] for pod in answer["pods"])
        assert earlier == len(answer["pods"]) * (len(answer["pods"]) - 1) // 2  # every pod before it
        assert calls[STORED_READS] == earlier


@pytest.mark.parametrize("counted", [LABEL_READS, COPIES], ids=lambda c: c[1])
def test_what_the_run_indexes_and_copies_grows_with_the_pods(runs: Any, counted: tuple[str, str]) -> None:
    """Twice the pods, about twice the calls (a count growing as N² would nearly quadruple)."""
    small, large = runs[N][1][counted], runs[2 * N][1][counted]
    assert small > 0 and large <= 2 * small + 2, (counted, small, large)
