"""One of Kyverno's stored chainsaw tests, run against the fake API server with celmut in the loop: which
cases a folder holds, and a case's run with the skips and expected failures its test module declares."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chainsaw.celmut_cluster import celmut_cluster
from tests.chainsaw.runner import CHAINSAW, Run
from tests.fakekube import FakeApiServer


def cases(*prefixes: str) -> list[str]:
    """The tests (folders holding a ``chainsaw-test.yaml``) under the given upstream folders."""
    found = (p.parent.relative_to(CHAINSAW).as_posix() for p in CHAINSAW.rglob("chainsaw-test.yaml"))
    return sorted(case for case in found if case.startswith(prefixes))


def namespace_for(case: str, prefix: str = "chainsaw-") -> str:
    """The namespace chainsaw would make for the test (a ``.chainsaw-tests`` folder: its parent's name)."""
    name = Path(case).name if not Path(case).name.startswith(".") else Path(case).parent.name
    return f"{prefix}{name}"[:63]


def run_case(
    case: str,
    fake: FakeApiServer,
    tmp_path: Path,
    *,
    skipped: dict[str, str],
    expected_failures: dict[str, tuple[str, str]],
    skipped_operations: dict[str, dict[str, str]] | None = None,
    refusals: dict[str, str] | None = None,
) -> None:
    """Run ``case``: skipped with its reason, or expected to fail where declared (where it fails, why);
    a case in ``refusals`` must see exactly that one write refused, with that message."""
    if case in skipped:
        pytest.skip(skipped[case])
    with celmut_cluster(fake, tmp_path) as cluster:
        kubeconfig = fake.kubeconfig(tmp_path / "kubeconfig")  # the tests' scripts run kubectl against it
        run = Run(CHAINSAW / case, cluster, namespace=namespace_for(case), kubeconfig=kubeconfig)
        run.skipped_operations.update((skipped_operations or {}).get(case, {}))
        try:
            if case not in expected_failures:
                run.run()
                if refusals and case in refusals:
                    assert [e.split(": ", 1)[1] for e in run.errors] == [refusals[case]]
            else:
                where, _why = expected_failures[case]
                with pytest.raises(AssertionError) as failed:
                    run.run()
                assert str(failed.value).startswith(where), str(failed.value)
        finally:
            for note in run.notes:
                print(f"{case}: {note}")
            for where, why in run.skipped_operations.items():
                print(f"{case}: not run: {where}: {why}")
    if case in expected_failures:
        pytest.xfail(expected_failures[case][1])
