"""Issue 28: what a background scan finds failing is also a PolicyViolation Event on the policy and on the
resource, as Kyverno's reports controller posts them (chainsaw mutating-policies/reporting/events-violation)
— once each time a result becomes a fail, not on every rescan — with ``--events per-object``; by default
(issue 35) one Event per policy and namespace, on the policy, counting the resources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from celmut.controller.report_loop import ReportingConfig
from tests.controller.support import add_label, configmap, policy, running, write_policies
from tests.controller.test_policy_reports import install_report_crds, results
from tests.fakekube import FakeApiServer
from tests.kube.crds import policy_crds
from tests.waiting import eventually


def violations(fake: FakeApiServer) -> list[tuple[str, str, str]]:
    """(namespace, involved kind, involved name) of each PolicyViolation Event."""
    found = [e for ns in ("default",) for e in fake.store.list("events", ns) if e.get("reason") == "PolicyViolation"]
    return sorted((e["metadata"]["namespace"], e["involvedObject"]["kind"], e["involvedObject"]["name"]) for e in found)


@pytest.mark.fakekube(garbage_collection=True)
def test_a_resource_that_becomes_failing_gets_one_pair_of_violation_events(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake = fake_apiserver
    install_report_crds(fake)
    for definition in policy_crds():
        fake.store.create(definition)
    fake.store.create(configmap("cm"))
    fake.store.create(policy("add-foo", add_label("foo", "bar"), admission=True, mutate_existing=False))
    no_files = write_policies(tmp_path / "none")
    settings: dict[str, Any] = {"reports": ReportingConfig(interval=0.05), "from_cluster": True, "events": "per-object"}
    with running(fake, tmp_path, no_files, **settings) as controller:
        eventually(lambda: results(fake, "cm") == [("add-foo", "fail", "mutation is not applied")])
        eventually(lambda: len(violations(fake)) == 2)
        assert violations(fake) == [("default", "ConfigMap", "cm"), ("default", "MutatingPolicy", "add-foo")]
        event: dict[str, Any] = next(
            e for e in fake.store.list("events", "default") if e["involvedObject"]["kind"] == "MutatingPolicy"
        )
        assert event["type"] == "Warning" and event["reportingComponent"] == "celmut-scan"
        assert event["involvedObject"]["apiVersion"] == "policies.kyverno.io/v1beta1"

        assert controller.reports is not None
        for _ in range(2):  # rescans that find the same post nothing more
            controller.reports.scan_due()
            eventually(lambda: not controller.reports.scan_pending())  # type: ignore[union-attr]
        controller.reports.scan_due()
        eventually(lambda: not controller.reports.scan_pending())  # type: ignore[union-attr]
        assert len(violations(fake)) == 2

        cm = fake.store.get("configmaps", "cm", "default")
        cm["metadata"]["labels"] = {"foo": "bar"}
        fake.store.update(cm)  # now it passes ...
        eventually(lambda: results(fake, "cm") == [("add-foo", "pass", "success")])
        cm = fake.store.get("configmaps", "cm", "default")
        cm["metadata"]["labels"] = {}
        fake.store.update(cm)  # ... and fails again: a new pair
        eventually(lambda: len(violations(fake)) == 4)


@pytest.mark.fakekube(garbage_collection=True)
def test_by_default_the_violations_of_a_namespace_are_one_counted_event_on_the_policy(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Issue 35: 12 resources of two namespaces newly failing a policy are 2 Events (client-go's
    EventCorrelator folds similar events: tools/record/events_cache.go), not 24."""
    fake = fake_apiserver
    install_report_crds(fake)
    for definition in policy_crds():
        fake.store.create(definition)
    for index in range(12):
        fake.store.create(configmap(f"cm-{index}", "default" if index % 2 else "shop"))
    fake.store.create(policy("add-foo", add_label("foo", "bar"), admission=True, mutate_existing=False))
    settings: dict[str, Any] = {"reports": ReportingConfig(interval=0.05), "from_cluster": True}
    with running(fake, tmp_path, write_policies(tmp_path / "none"), **settings):

        def folded() -> list[tuple[str, str, str, int]]:
            found = [e for ns in ("default", "shop") for e in fake.store.list("events", ns)]
            return sorted(
                (e["metadata"]["namespace"], e["involvedObject"]["kind"], e["reason"], e["count"]) for e in found
            )

        eventually(lambda: folded() == [("default", "MutatingPolicy", "PolicyViolation", 6)] * 2)
        messages = sorted(e["message"] for e in fake.store.list("events", "default"))
        assert all(m.startswith("(combined from similar events): ConfigMap ") for m in messages)
        assert [m.split("ConfigMap ")[1].split("/")[0] for m in messages] == ["default", "shop"]
