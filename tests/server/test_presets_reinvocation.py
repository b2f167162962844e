"""Reinvocation through the webhook: a second call with the already-mutated object changes nothing,
for every shipped policy and preset (the spot presets are alternatives: each is served on its own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from celmut.sources.documents import load_documents
from tests.server.support import admission_request, decoded_patch, running_server

ROOT = Path(__file__).resolve().parents[2]
SPOT_PRESETS = sorted(p.name for p in (ROOT / "examples" / "spot-presets").glob("spot-*.yaml"))
COMMON = sorted(str(p) for p in (ROOT / "policies").rglob("*.yaml"))  # policies/ holds no spot preset


def sample_pods() -> list[dict[str, Any]]:
    pods = []
    for folder in ("examples/resources", "examples/preset-pods"):
        pods += [d.content for d in load_documents(str(ROOT / folder)) if d.content.get("kind") == "Pod"]
    return pods


@pytest.mark.parametrize("spot_preset", SPOT_PRESETS)
def test_a_second_call_with_the_mutated_pod_changes_nothing(tmp_path: Path, spot_preset: str) -> None:
    policies = [*COMMON, str(ROOT / "examples" / "spot-presets" / spot_preset), str(ROOT / "examples" / "pinning-plan.yaml")]
    pods = sample_pods()
    assert len(pods) >= 8
    with running_server(tmp_path, policies) as server:
        mutated_somewhere = 0
        for pod in pods:
            first = server.review(admission_request(pod))
            assert first["response"]["allowed"], first["response"]
            patch = decoded_patch(first)
            mutated_somewhere += bool(patch)
            mutated = jsonpatch.apply_patch(pod, patch)
            second = server.review(admission_request(mutated))
            assert decoded_patch(second) == [], f"{pod['metadata']['name']}: reinvocation changed the pod again"
        assert mutated_somewhere == len(pods)  # every sample pod is changed by some shipped policy
