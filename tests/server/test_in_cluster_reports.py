"""Issue 28, admission reports: celmut's real webhook in the fake API server's admission chain and its
controller's leader writing the reports, as Kyverno's webhook (``pkg/webhooks/resource/mpol/handler.go``
``createReports``) and its reports controller (``pkg/controllers/report/aggregate/controller.go``) do:

* an applied mutation is a ``pass``, a PolicyException a ``skip``, and an error the webhook let through
  under ``failurePolicy: Ignore`` an ``error`` — all ``process: admission review``, in the one report of
  the resource (chainsaw ``mutating-policies/reporting/admission``);
* the error is the webhook's decision: the controller's own re-evaluation of the stored object would not
  fail here (the policy fails only for the requesting user), and does not overwrite it;
* N failing admissions of one resource are one Event write from the webhook (coalesced) and one report
  write from the controller;
* a CREATE a ``Fail`` policy denied has no resource, and no report (Kyverno drops an ephemeral report it
  cannot adopt: ``isTooOld``).

The controller's reporting thread runs with a long interval: the test drives its passes
(``pass_once``) and the webhook's flushes, so the numbers of writes are exact, whatever the machine's load.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes.client
import pytest

from celmut.controller.report_loop import ReportingConfig
from celmut.install.manifests import InstallOptions, webhook_configuration
from tests.controller.support import RULE_CONFIGMAPS, add_label, configmap, policy, running, write_policies
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually
from tests.kube.crds import policy_crds, report_crds

from .in_cluster import celmut_in_cluster, wait_for_policies

Obj = dict[str, Any]
# fails for a real user (the API server's requests), not for the controller's re-evaluation (no user):
# so only the webhook's decision can put this error in the report
FAILS_FOR_USERS = add_label("owner", cel_value='request.userInfo.username == "" ? "none" : object.data.missing')


def admission_policy(name: str, expression: str, *, failure_policy: str = "Ignore") -> Obj:
    """A MutatingPolicy on ConfigMap CREATE/UPDATE, admission only (background off: reported from admissions)."""
    document = policy(name, expression, rule=RULE_CONFIGMAPS, admission=True, mutate_existing=False)
    document["spec"]["evaluation"]["background"] = {"enabled": False}
    document["spec"]["failurePolicy"] = failure_policy
    return document


EXCEPTION = {
    "apiVersion": "policies.kyverno.io/v1",
    "kind": "PolicyException",
    "metadata": {"name": "spare-all", "namespace": "default"},
    "spec": {
        "policyRefs": [{"name": "excepted", "kind": "MutatingPolicy"}],
        "matchConditions": [{"name": "all", "expression": "true"}],
    },
}


def results(fake: FakeApiServer, name: str) -> dict[str, tuple[str, str, str]]:
    """policy -> (result, process, message) in the report of ConfigMap ``name``."""
    uid = fake.store.get("configmaps", name, "default")["metadata"]["uid"]
    if not fake.store.exists("policyreports", uid, "default"):
        return {}
    report = fake.store.get("policyreports", uid, "default")
    return {r["policy"]: (r["result"], r["properties"]["process"], r["message"]) for r in report["results"]}


def writes(fake: FakeApiServer, fragment: str) -> int:
    return sum(len(fake.requests_matching(method, fragment)) for method in ("POST", "PUT"))


@pytest.mark.fakekube(webhooks=True)
def test_admissions_are_reported_as_the_webhook_decided_them_in_one_report(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake = fake_apiserver
    for crd in [*policy_crds(), *report_crds()]:
        fake.store.create(crd)
    documents = [
        admission_policy("adds-label", add_label("foo", "bar")),
        admission_policy("fails-open", FAILS_FOR_USERS),
        admission_policy("excepted", add_label("spared")),
        EXCEPTION,
    ]
    for document in documents:
        fake.store.create(document)
    policies = write_policies(tmp_path / "p", *documents)
    configuration = webhook_configuration(InstallOptions(rules=[RULE_CONFIGMAPS]))
    with (
        celmut_in_cluster(fake, tmp_path, configuration=configuration) as servers,
        running(fake, tmp_path, policies, reports=ReportingConfig(interval=3600)) as controller,
    ):
        wait_for_policies(servers, "adds-label", "fails-open", "excepted")
        connection = servers[0].cluster
        assert connection is not None and connection.admission_errors is not None and controller.reports
        recorder, reports = connection.admission_errors, controller.reports
        recorder.stop()  # the test flushes
        core = kubernetes.client.CoreV1Api(fake.api_client())

        core.create_namespaced_config_map("default", configmap("cm"))
        stored = fake.store.get("configmaps", "cm", "default")
        assert stored["metadata"]["labels"] == {"foo": "bar"}  # applied; fails-open let it through unchanged
        assert recorder.flush() == 1
        eventually(lambda: reports._error_events is None or reports._error_events.items(), what="the error Event")

        def report_complete() -> bool:
            reports.pass_once()
            return len(results(fake, "cm")) == 3

        eventually(report_complete, what="the report of cm")
        assert results(fake, "cm") == {
            "adds-label": ("pass", "admission review", "success"),
            "excepted": ("skip", "admission review", "rule is skipped due to policy exception: default/spare-all"),
            "fails-open": ("error", "admission review", results(fake, "cm")["fails-open"][2]),
        }
        assert results(fake, "cm")["fails-open"][2].startswith("failed to evaluate policy: ")
        assert "no such key" in results(fake, "cm")["fails-open"][2]

        # N failing admissions of one resource: one Event write, one report write
        fake.clear_requests()
        n = 20
        for i in range(n):
            core.patch_namespaced_config_map("cm", "default", {"data": {"i": str(i)}})
        last = fake.store.get("configmaps", "cm", "default")["metadata"]["resourceVersion"]
        assert recorder.flush() == 1
        assert writes(fake, "/events") == 1
        metrics = servers[0].metrics.render().decode()
        assert 'celmut_report_error_events_total{action="created"} 1.0' in metrics
        assert 'celmut_report_error_events_total{action="updated"} 1.0' in metrics

        def settled() -> bool:
            cache = reports.scanner.caches.cache("v1", "configmaps", wait=False)
            seen = cache is not None and (cache.get("default", "cm") or {}).get("metadata", {}).get("resourceVersion")
            events = reports._error_events.items() if reports._error_events is not None else []
            return seen == last and any(e.get("count", 0) > 1 for e in events)

        eventually(settled, what="the last change and the updated Event in the controller's watches")
        before = writes(fake, "wgpolicyk8s")
        reports.pass_once()
        reports.pass_once()
        report_writes = writes(fake, "wgpolicyk8s") - before
        print(f"{n} failing admissions: {writes(fake, '/events')} Event write(s), {report_writes} report write(s)")
        assert report_writes <= 1  # pass then error again within one pass: at most one write, never n
        assert results(fake, "cm")["fails-open"][0] == "error"
        assert results(fake, "cm")["adds-label"][0] == "pass"
        assert len(fake.store.list("policyreports", "default")) == 1


@pytest.mark.fakekube(webhooks=True)
def test_a_creation_denied_by_a_fail_policy_has_no_report(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    fake = fake_apiserver
    for crd in [*policy_crds(), *report_crds()]:
        fake.store.create(crd)
    denying = admission_policy("fails-closed", FAILS_FOR_USERS, failure_policy="Fail")
    fake.store.create(denying)
    policies = write_policies(tmp_path / "p", denying)
    configuration = webhook_configuration(InstallOptions(rules=[RULE_CONFIGMAPS]))
    with (
        celmut_in_cluster(fake, tmp_path, configuration=configuration) as servers,
        running(fake, tmp_path, policies, reports=ReportingConfig(interval=3600)) as controller,
    ):
        wait_for_policies(servers, "fails-closed")
        connection = servers[0].cluster
        assert connection is not None and connection.admission_errors is not None and controller.reports
        connection.admission_errors.stop()
        core = kubernetes.client.CoreV1Api(fake.api_client())
        with pytest.raises(kubernetes.client.ApiException):
            core.create_namespaced_config_map("default", configmap("denied"))
        assert connection.admission_errors.flush() == 1  # the Event says so (kubectl describe / get events)
        [event] = fake.store.list("events", "default")
        assert event["reason"] == "PolicyError" and event["involvedObject"]["name"] == "denied"
        controller.reports.pass_once()
        controller.reports.pass_once()
    assert not fake.store.exists("configmaps", "denied", "default")
    assert fake.store.list("policyreports", "default") == []


@pytest.mark.fakekube(webhooks=True)
def test_a_new_leader_does_not_put_an_old_error_on_a_later_state(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """The error Event outlives the admission (event TTL): a controller started after the resource changed
    again must not report it on a state that admission did not decide (a background-off policy reports
    only the changes it sees, as Kyverno's admission reports do: none here)."""
    fake = fake_apiserver
    for crd in [*policy_crds(), *report_crds()]:
        fake.store.create(crd)
    failing = admission_policy("fails-open", FAILS_FOR_USERS)
    fake.store.create(failing)
    policies = write_policies(tmp_path / "p", failing)
    configuration = webhook_configuration(InstallOptions(rules=[RULE_CONFIGMAPS]))
    with celmut_in_cluster(fake, tmp_path, configuration=configuration) as servers:
        wait_for_policies(servers, "fails-open")
        connection = servers[0].cluster
        assert connection is not None and connection.admission_errors is not None
        connection.admission_errors.stop()
        kubernetes.client.CoreV1Api(fake.api_client()).create_namespaced_config_map("default", configmap("cm"))
        assert connection.admission_errors.flush() == 1
    changed = fake.store.get("configmaps", "cm", "default")
    changed["data"] = {"later": "change"}  # a later state, not decided by that admission
    fake.store.update(changed)
    with running(fake, tmp_path, policies, reports=ReportingConfig(interval=3600)) as controller:
        assert controller.reports is not None
        reports = controller.reports

        def event_seen() -> bool:
            reports.pass_once()
            return bool(reports._error_events is not None and reports._error_events.items())

        eventually(event_seen, what="the error Event in the controller's watch")
        reports.pass_once()
    assert results(fake, "cm") == {}
