"""Kyverno's own MutatingPolicy test material (chainsaw e2e and CLI kyverno-test.yaml cases), replayed
through celmut's runtime: admission requests in timeline order, mutateExisting passes on policy
events and admission triggers, and the expected objects compared the way Kyverno's tools compare
them. The cases live in tests/data/conformance/kyverno-mpol (copied from ../shared/conformance, with
its README), so a clone runs them; a missing file is a failure, never a skip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from celmut.cel.backends.select import ENV_VAR
from celmut.cli.suite_compare import tidy
from celmut.runtime import AdmissionInput
from celmut.runtime.mutate_existing import mutate_existing
from celmut.service.offline import OfflineCluster
from celmut.sources.documents import Document
from tests.cel.pycode_reference import COMPILED, REFERENCE
from tests.runtime.comparison import partial_match

CASES_FILE = Path(__file__).resolve().parents[1] / "data" / "conformance" / "kyverno-mpol" / "cases.json"

# Cases that cannot pass offline, with the concrete reason. (Empty: every case runs.)
KNOWN_GAPS: dict[str, str] = {}


def _load_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(CASES_FILE.read_text())["cases"]
    return cases


CASES = _load_cases()


def _key(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    return (obj.get("apiVersion", ""), obj.get("kind", ""), meta.get("namespace", "") or "", meta.get("name", ""))


class Replay:
    """Runs one case's timeline against an in-memory cluster."""

    def __init__(self, case: dict[str, Any]) -> None:
        self.case = case
        documents = [Document("case.yaml", i, doc) for i, doc in enumerate(case["policies"])]
        extra = [Document("extra.yaml", i, doc) for i, doc in enumerate(case["extra"])]
        self.offline = OfflineCluster.build(documents, extra)
        self.compilation = self.offline.compilation
        self.policies = self.compilation.policies
        self.compiled = self.compilation.compiled
        self.cluster = self.offline.cluster
        self.engine = self.offline.engine
        self.admitted: dict[int, Any] = {}
        self.results: dict[int, Any] = {}

    def store(self, obj: dict[str, Any]) -> None:
        self.cluster.put(obj)

    def background(self, trigger: AdmissionInput | None, policies: list[Any] | None = None) -> None:
        for target in mutate_existing(self.engine, trigger=trigger, policies=policies):
            assert target.outcome.status != "error", f"{target.reference}: {target.outcome.reason}"
            if target.changed:
                self.store(target.mutated)

    def run(self) -> None:
        for event in self.case["timeline"]:
            if event["event"] == "policy-create":
                policies = [p for p in self.engine.policies if p.name == event["name"] and not p.autogen]
                self.background(None, policies)
            elif event["event"] == "admission":
                index = event["resource"]
                request = AdmissionInput.from_object(
                    self.case["resources"][index],
                    self.case["operations"][index],
                    old_object=self.case["old_objects"][index],
                )
                result = self.engine.admit(request)
                assert result.allowed, f"resource {index} denied: {result.message}"
                self.results[index] = result
                self.admitted[index] = result.object
                self.store(result.object)
                self.background(request)

    def current(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        for candidate in self.cluster.objects:
            if _key(candidate) == _key(obj):
                return candidate
        return None


def _compare(actual: Any, expected: Any, how: str) -> list[str]:
    if how == "exact-tidy":
        return [] if tidy(actual) == tidy(expected) else [f"tidy(actual) != tidy(expected):\n{actual}\n{expected}"]
    return partial_match(actual, expected)


def _snapshot(replay: Replay) -> dict[str, Any]:
    """Everything a replay produced: admitted objects, patches, outcomes, the cluster's objects."""
    return {
        "admitted": replay.admitted,
        "patches": {i: r.patch for i, r in replay.results.items()},
        "outcomes": {i: sorted((o.policy, o.status) for o in r.outcomes) for i, r in replay.results.items()},
        "cluster": sorted(replay.cluster.objects, key=_key),
    }


ADMITTING = [c for c in CASES if not c["flags"].get("expect_policy_rejected")]


@pytest.mark.parametrize("case", ADMITTING, ids=[c["id"] for c in ADMITTING])
def test_both_engines_produce_the_same_results(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Differential: the compiled engine and the planner, its reference, give identical objects,
    patches and outcomes."""
    snapshots = []
    for engine in (COMPILED, REFERENCE):
        monkeypatch.setenv(ENV_VAR, engine)
        replay = Replay(case)
        replay.run()
        snapshots.append(_snapshot(replay))
    assert snapshots[0] == snapshots[1]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_kyverno_conformance_case(case: dict[str, Any]) -> None:
    if case["id"] in KNOWN_GAPS:
        pytest.skip(KNOWN_GAPS[case["id"]])
    replay = Replay(case)
    if case["flags"].get("expect_policy_rejected"):
        assert replay.policies.errors or replay.compiled.errors, "the policy should have been rejected"
        return
    assert not replay.compiled.errors, [str(e) for e in replay.compiled.errors]
    replay.run()
    for index, expected in enumerate(case["expected"]):
        if expected is None:
            continue
        problems = _compare(replay.admitted.get(index), expected, case["expected_match"])
        assert not problems, f"resource {index}: {problems}"
    for target in case["expected_targets"]:
        actual = replay.current(target["object"])
        assert actual is not None, f"target {_key(target['object'])} not found"
        problems = _compare(actual, target["object"], case["expected_match"])
        assert not problems, f"target {_key(target['object'])}: {problems}"
    for absent in case["expected_absent"]:
        ref = absent["ref"]
        actual = (
            replay.admitted.get(int(ref.split(":")[1]))
            if ref.startswith("resource:")
            else replay.current(absent["object"])
        )
        assert partial_match(actual, absent["object"]), f"{ref} should not match {absent['object']}"
    for expected_result in case.get("cli_results") or []:
        matched = expected_result.get("matched", "")
        if not matched.startswith("resource:"):
            continue
        result = replay.results[int(matched.split(":")[1])]
        statuses = {o.status for o in result.outcomes if o.policy.split(" ")[0] == expected_result["policy"]}
        if expected_result["result"] == "skip":
            assert "applied" not in statuses, statuses
        elif expected_result["result"] == "pass":
            assert "applied" in statuses or "unchanged" in statuses, statuses
