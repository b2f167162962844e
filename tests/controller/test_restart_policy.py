"""PodMutation ``restartPolicy: immediate`` (issue 29): CAST AI documents it as "reserved for future
use" (a no-op there; /work/shared/reference/castai-pod-mutator-reference.txt, restartPolicy), so the
controller evicts running pods for it only with ``--allow-immediate-restart`` (chart:
``controller.allowImmediateRestart``); either way the PodMutation's status says which."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from celmut.controller.restart_policy import CONDITION_TYPE, status_patch, wanted_condition
from celmut.main import main
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually
from tests.kube.crds import policy_crds
from tests.waiting import HANG_SECONDS

from .support import running, write_policies
from .test_evictions import drift_policy, pod_or_none, replica

PODMUTATIONS = "podmutations"


def podmutation(name: str, restart: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "filterV2": {"workload": {"namespaces": [{"type": "exact", "value": "default"}]}},
        "patchesV2": [{"operations": [{"op": "add", "path": "/metadata/labels/placed", "value": "spot"}]}],
    }
    if restart is not None:
        spec["restartPolicy"] = restart
    return {"apiVersion": "pod-mutations.cast.ai/v1", "kind": "PodMutation", "metadata": {"name": name}, "spec": spec}


def restart_condition(fake: FakeApiServer, name: str) -> dict[str, Any] | None:
    conditions = (fake.store.get(PODMUTATIONS, name).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == CONDITION_TYPE), None)


def test_immediate_without_the_opt_in_evicts_and_patches_nothing(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """As CAST AI does: running pods are left alone; the mutation reaches pods when they are recreated."""
    fake_apiserver.store.create(replica("web-a"))
    policies = write_policies(tmp_path / "policies", drift_policy("immediate"))
    with running(fake_apiserver, tmp_path, policies) as controller:
        assert controller.wait_idle(HANG_SECONDS)
        assert not fake_apiserver.requests_matching("POST", r"/eviction$")
        assert not fake_apiserver.requests_matching("PATCH", r"/pods/")
    assert "placed" not in pod_or_none(fake_apiserver, "web-a")["metadata"]["labels"]  # type: ignore[index]


def test_a_dry_run_without_the_opt_in_reports_no_pod_to_evict(
    fake_apiserver: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_apiserver.store.create(replica("web-a"))
    policies = write_policies(tmp_path / "policies", drift_policy("immediate"))
    kubeconfig = str(fake_apiserver.kubeconfig(tmp_path / "kubeconfig"))
    assert (
        main(["controller", "--dry-run", "--kubeconfig", kubeconfig, "--policies", str(policies), "--report", "-"]) == 0
    )
    assert "would-evict" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("allowed", "status", "reason", "fragment"),
    [
        (False, "False", "Disabled", "set the chart value controller.allowImmediateRestart=true"),
        (True, "True", "Enabled", "at most 60 a minute"),
    ],
    ids=["not-enabled: CAST AI's no-op", "enabled: evicts"],
)
def test_a_podmutation_asking_for_immediate_says_in_its_status_whether_it_is_acted_on(
    fake_apiserver: FakeApiServer, tmp_path: Path, allowed: bool, status: str, reason: str, fragment: str
) -> None:
    for definition in policy_crds():
        fake_apiserver.store.create(definition)
    fake_apiserver.store.create(podmutation("spot-now", "immediate"))
    fake_apiserver.store.create(podmutation("spot-later", "deferred"))
    fake_apiserver.store.create(podmutation("spot-default", None))
    (tmp_path / "none").mkdir()
    with running(fake_apiserver, tmp_path, tmp_path / "none", from_cluster=True, allow_immediate_restart=allowed):
        eventually(lambda: restart_condition(fake_apiserver, "spot-now") is not None, what="the restart condition")
        found = restart_condition(fake_apiserver, "spot-now")
        assert found is not None
        assert (found["status"], found["reason"]) == (status, reason) and fragment in found["message"]
        assert restart_condition(fake_apiserver, "spot-later") is None
        assert restart_condition(fake_apiserver, "spot-default") is None


def test_the_condition_is_written_once_and_taken_back_when_the_policy_stops_asking() -> None:
    """Idempotent across replicas and restarts: a stored condition that says it already gets no write."""
    asking = podmutation("spot-now", "immediate")
    asking["metadata"]["generation"] = 3
    wanted = wanted_condition(asking, allowed=False, per_minute=60)
    first = status_patch(asking, wanted)
    assert first is not None
    asking["status"] = first["status"] | {"conditions": [*first["status"]["conditions"]]}
    assert status_patch(asking, wanted) is None
    asking["status"]["conditions"].append({"type": "celmut.io/Compiled", "status": "True"})
    stopped = {**asking, "spec": {**asking["spec"], "restartPolicy": "deferred"}}
    taken_back = status_patch(stopped, wanted_condition(stopped, allowed=False, per_minute=60))
    assert taken_back == {"status": {"conditions": [{"type": "celmut.io/Compiled", "status": "True"}]}}
