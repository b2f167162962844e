"""Kyverno's chainsaw cases — every one the fake API server runs (test_kyverno_reporting.py,
test_kyverno_existing.py) — on a real API server, with celmut's webhook and controller in this process
(:mod:`tests.chainsaw.real_cluster`). Opt-in, for development: CI has no API server.

    CELMUT_REAL_CLUSTER=1 KUBECONFIG=... pytest tests/chainsaw/test_kyverno_real_cluster.py

Skipped unless ``CELMUT_REAL_CLUSTER=1`` and ``$KUBECONFIG`` reaches an API server that serves the
webhook certificates of ``$KUBE_RIG_HOME/kube/pki`` (:func:`tests.chainsaw.real_cluster.default_pki`). A
case is judged as on the fake (same skips, expected failures and refusals), plus what only a real cluster
lacks (:data:`tests.chainsaw.real_cluster.REAL_ONLY`). The cluster may be shared: the run is scoped to
its own label and deletes all it created.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import kubernetes.client
import pytest

from tests.chainsaw.real_cluster import RealRun, declared, default_pki, reachable, real_run

OPT_IN = "CELMUT_REAL_CLUSTER"


def _why_not() -> str:
    if os.environ.get(OPT_IN) != "1":
        return f"a real API server run: set {OPT_IN}=1 and KUBECONFIG"
    why = reachable(os.environ.get("KUBECONFIG"))
    if not why and not (default_pki() / "webhook.crt").is_file():
        why = f"no webhook certificate in {default_pki()}"
    return why


WHY_NOT = _why_not()
pytestmark = pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT or "runs")


@pytest.fixture(scope="module")
def real() -> Iterator[RealRun]:
    saved = kubernetes.client.Configuration.get_default_copy()
    kubernetes.client.Configuration.set_default(kubernetes.client.Configuration())
    try:
        with real_run(Path(os.environ["KUBECONFIG"]), default_pki()) as run:
            yield run
    finally:
        kubernetes.client.Configuration.set_default(saved)


@pytest.mark.parametrize("case", sorted(declared()))
def test_kyverno_chainsaw_case_on_a_real_api_server(case: str, real: RealRun) -> None:
    outcome, detail = real.case(case)
    print(f"{case}: {outcome}: {detail}")
    if outcome == "skipped":
        pytest.skip(detail)
    if outcome == "xfail":
        pytest.xfail(detail)
    assert outcome == "passed", detail
