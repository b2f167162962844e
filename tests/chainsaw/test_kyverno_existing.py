"""Kyverno's own mutateExisting tests, run unchanged: every chainsaw test stored under
tests/data/kyverno-chainsaw ``test/conformance/chainsaw/mutating-policies/existing/`` is one case, run by
:mod:`tests.chainsaw.runner` against the fake API server with celmut's webhook and controller in the loop.
A case that cannot run here is skipped with the reason; nothing in the upstream files is edited. Their
``script`` steps (kubectl) run where kubectl is installed (the fake API server serves what kubectl asks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chainsaw.cases import cases, run_case
from tests.fakekube import FakeApiServer

CASES = cases("mutating-policies/existing/")

#: Cases that cannot run here, and why.
SKIPPED: dict[str, str] = {}

#: Cases whose one write is refused at admission, with the message the API server returns: celmut's policy
#: validating webhook answers as Kyverno's does (pkg/cel/policies/mpol/validate.go).
REFUSALS: dict[str, str] = {
    "mutating-policies/existing/reject-all-modes-disabled": (
        'admission webhook "policies.validate.celmut.io" denied the request: spec.evaluation: Forbidden: '
        "disabling both admission and mutateExisting evaluation modes is not allowed"
    ),
}

#: Cases that run and fail at one known assertion: (where it fails, why).
EXPECTED_FAILURES: dict[str, tuple[str, str]] = {
    "mutating-policies/existing/skip-background-requests": (
        "no-mutation-happens-by-default/script: exit 1",
        "the pass celmut makes when the policy is created mutates target-cm, which its targetMatchConstraints select "
        "(namespaceSelector test: enabled matches its namespace); Kyverno's background controller evaluates targets "
        "with no namespace (kyverno/kyverno#16953, open: pkg/cel/policies/mpol/engine/engine.go Evaluate), so that "
        "namespaceSelector matches nothing there and the step sees no mutation: celmut honours the selector",
    ),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.fakekube(webhooks=True, native_map=True, garbage_collection=True)
def test_kyverno_chainsaw_mutate_existing_test(case: str, fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    run_case(
        case, fake_apiserver, tmp_path, skipped=SKIPPED, expected_failures=EXPECTED_FAILURES, refusals=REFUSALS
    )
