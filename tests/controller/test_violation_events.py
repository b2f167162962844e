"""What a background scan finds failing is a PolicyViolation Event on the resource and one on the policy, as
Kyverno's reports controller posts them by default (kyverno ``pkg/controllers/report/utils/events.go``
``generateFailEventsPerEr``; chainsaw ``mutating-policies/reporting/events-violation``) — once each time a
result becomes a fail, a repeat counted on the same Event as client-go's EventCorrelator counts it — and
with ``--events aggregated`` one counted Event per policy and namespace, on the policy."""

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


def violations(fake: FakeApiServer, *namespaces: str) -> list[dict[str, Any]]:
    found = [e for ns in namespaces or ("default",) for e in fake.store.list("events", ns)]
    return sorted(
        (e for e in found if e.get("reason") == "PolicyViolation"),
        key=lambda e: (e["metadata"]["namespace"], e["involvedObject"]["kind"], e["involvedObject"]["name"]),
    )


def _cluster(fake: FakeApiServer, *configmaps: dict[str, Any]) -> None:
    install_report_crds(fake)
    for definition in policy_crds():
        fake.store.create(definition)
    for cm in configmaps:
        fake.store.create(cm)
    fake.store.create(policy("add-foo", add_label("foo", "bar"), admission=True, mutate_existing=False))


@pytest.mark.fakekube(garbage_collection=True)
def test_a_resource_that_becomes_failing_gets_kyvernos_pair_of_violation_events(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake = fake_apiserver
    _cluster(fake, configmap("cm"))
    settings: dict[str, Any] = {"reports": ReportingConfig(interval=0.05), "from_cluster": True}
    with running(fake, tmp_path, write_policies(tmp_path / "none"), **settings) as controller:
        eventually(lambda: results(fake, "cm") == [("add-foo", "fail", "mutation is not applied")])
        eventually(lambda: len(violations(fake)) == 2)
        on_resource, on_policy = violations(fake)
        # pkg/event/events.go NewResourceViolationEvent and NewPolicyFailEvent, from the scan's component
        assert (on_resource["involvedObject"]["kind"], on_resource["involvedObject"]["name"]) == ("ConfigMap", "cm")
        assert on_resource["message"] == "policy add-foo/ fail: mutation is not applied"
        assert "related" not in on_resource
        assert on_policy["involvedObject"] == {
            **on_policy["involvedObject"],
            "apiVersion": "policies.kyverno.io/v1beta1",
            "kind": "MutatingPolicy",
            "name": "add-foo",
        }
        assert on_policy["message"] == "ConfigMap default/cm: fail; mutation is not applied"
        assert on_policy["related"]["name"] == "cm" and on_policy["related"]["kind"] == "ConfigMap"
        for event in (on_resource, on_policy):
            assert (event["type"], event["action"], event["reportingComponent"]) == (
                "Warning",
                "Resource Passed",
                "celmut-scan",
            )
            assert event["reportingInstance"].startswith("celmut-scan-")

        assert controller.reports is not None
        for _ in range(2):  # rescans that find the same post nothing more
            controller.reports.scan_due()
            eventually(lambda: not controller.reports.scan_pending())  # type: ignore[union-attr]
        assert [e["count"] for e in violations(fake)] == [1, 1]

        cm = fake.store.get("configmaps", "cm", "default")
        cm["metadata"]["labels"] = {"foo": "bar"}
        fake.store.update(cm)  # now it passes ...
        eventually(lambda: results(fake, "cm") == [("add-foo", "pass", "success")])
        cm = fake.store.get("configmaps", "cm", "default")
        cm["metadata"]["labels"] = {}
        fake.store.update(cm)  # ... and fails again: the same two Events, counted (client-go's eventLogger)
        eventually(lambda: [e["count"] for e in violations(fake)] == [2, 2])
        assert len(violations(fake)) == 2


@pytest.mark.fakekube(garbage_collection=True)
def test_many_violations_of_one_policy_fold_on_the_policy_and_each_resource_keeps_its_own(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """client-go's EventAggregator: from the 10th distinct message about one object within 10 minutes, the
    policy's Events become one ``(combined from similar events)`` Event counting them; each resource still
    gets its own (chainsaw events-violation asserts the ConfigMap's)."""
    fake = fake_apiserver
    _cluster(fake, *(configmap(f"cm-{index:02d}") for index in range(14)))
    settings: dict[str, Any] = {"reports": ReportingConfig(interval=0.05), "from_cluster": True}
    with running(fake, tmp_path, write_policies(tmp_path / "none"), **settings) as controller:
        eventually(lambda: len([e for e in violations(fake) if e["involvedObject"]["kind"] == "ConfigMap"]) == 14)
        eventually(lambda: controller.events is not None and controller.events.pending() == 0)
        on_policy = [e for e in violations(fake) if e["involvedObject"]["kind"] == "MutatingPolicy"]
        combined = [e for e in on_policy if e["message"].startswith("(combined from similar events): ConfigMap ")]
        assert len(on_policy) == 9 + 1 and len(combined) == 1
        assert combined[0]["count"] == 14 - 9


@pytest.mark.fakekube(garbage_collection=True)
def test_aggregated_the_violations_of_a_namespace_are_one_counted_event_on_the_policy(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """``--events aggregated`` (very large clusters): 12 resources of two namespaces newly failing a policy
    are 2 Events on the policy, counted, and none on the resources."""
    fake = fake_apiserver
    _cluster(fake, *(configmap(f"cm-{index}", "default" if index % 2 else "shop") for index in range(12)))
    settings: dict[str, Any] = {"reports": ReportingConfig(interval=0.05), "from_cluster": True}
    with running(fake, tmp_path, write_policies(tmp_path / "none"), events="aggregated", **settings):

        def folded() -> list[tuple[str, str, str, int]]:
            found = [e for ns in ("default", "shop") for e in fake.store.list("events", ns)]
            return sorted(
                (e["metadata"]["namespace"], e["involvedObject"]["kind"], e["reason"], e["count"]) for e in found
            )

        eventually(lambda: folded() == [("default", "MutatingPolicy", "PolicyViolation", 6)] * 2)
        messages = sorted(e["message"] for e in fake.store.list("events", "default"))
        assert all(m.startswith("(combined from similar events): ConfigMap ") for m in messages)
        assert [m.split("ConfigMap ")[1].split("/")[0] for m in messages] == ["default", "shop"]


@pytest.mark.fakekube(garbage_collection=True)
def test_omit_events_policy_violation_posts_none(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """Kyverno's ``--omitEvents=PolicyViolation``: the scan still reports the fail, and posts no Event."""
    fake = fake_apiserver
    _cluster(fake, configmap("cm"))
    settings: dict[str, Any] = {"reports": ReportingConfig(interval=0.05), "from_cluster": True}
    omitted = frozenset({"PolicyViolation"})
    with running(fake, tmp_path, write_policies(tmp_path / "none"), omit_events=omitted, **settings) as controller:
        eventually(lambda: results(fake, "cm") == [("add-foo", "fail", "mutation is not applied")])
        assert controller.events is not None
        eventually(lambda: controller.events.pending() == 0)  # type: ignore[union-attr]
        assert violations(fake) == []
