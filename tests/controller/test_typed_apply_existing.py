"""mutateExisting goes through the API server's typed conversion too: the background controller
(against the fake API server) never writes a target an ApplyConfiguration would make ill-typed — it
reports the API server's message — and writes the well-typed one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.controller.support import configmap, policy, running, write_policies
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually


def apply_configuration_policy(name: str, expression: str) -> dict[str, Any]:
    document = policy(name, "[]")
    document["spec"]["mutations"] = [
        {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}
    ]
    return document


def test_mutate_existing_reports_an_ill_typed_configuration_and_leaves_the_target(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake_apiserver.store.create(configmap("settings"))
    ill_typed = apply_configuration_policy("enable-bool", 'Object{data: {"enabled": true}}')
    well_typed = apply_configuration_policy("enable-string", 'Object{data: {"mode": "on"}}')
    policies = write_policies(tmp_path / "policies", ill_typed, well_typed)
    with running(fake_apiserver, tmp_path, policies) as controller:

        def failed() -> list[Any]:
            return [o for o in controller.report.outcomes() if "enable-bool" in o.failed]

        eventually(failed, what="the ill-typed configuration in the report")
        (outcome,) = failed()  # the target's pass: the other policy's configuration written, this one refused
        assert outcome.action == "patched" and [c.policy for c in outcome.changes] == ["enable-string"]
        assert outcome.message == (
            "policy enable-bool: spec.mutations[0].applyConfiguration.expression: error applying patch: failed to "
            "convert patch object to typed object: .data.enabled: expected string, got &value.valueUnstructured{Value:true}"
        )
        assert fake_apiserver.store.get("configmaps", "settings", "default")["data"] == {"mode": "on"}
