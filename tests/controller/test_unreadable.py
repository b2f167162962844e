"""Issue 38, item 5: a resource the controller may not list (RBAC: ``403 Forbidden … cannot list
resource``) affects only the policies that name it. Before, the report watch waited for its first list
(``CacheSet.cache(wait=True)``, the 60 s sync timeout) inside the reload, so a policy created right after
it was registered a minute later, and the controller never became ready."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from celmut.controller.report_loop import ReportingConfig
from celmut.controller.unreadable import CONDITION_TYPE
from tests.controller.support import add_label, configmap, labels_of, policy, running
from tests.fakekube import FakeApiServer
from tests.fakekube.crd_builders import open_crd
from tests.kube.conftest import eventually
from tests.kube.crds import policy_crds, report_crds

MPOL = "mutatingpolicies.policies.kyverno.io"
WIDGETS = {"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["widgets"]}
DENIED = 'widgets.example.com is forbidden: User "system:serviceaccount:celmut:celmut-controller" cannot list resource "widgets" in API group "example.com" at the cluster scope'


def condition(fake: FakeApiServer, name: str) -> dict[str, Any] | None:
    status = fake.store.get(MPOL, name).get("status") or {}
    found = [c for c in (status.get("conditionStatus") or {}).get("conditions") or [] if c["type"] == CONDITION_TYPE]
    return found[0] if found else None


def test_a_forbidden_resource_delays_no_other_policy_and_its_policy_says_why(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake = fake_apiserver
    for crd in [*policy_crds(), *report_crds(), open_crd("example.com", "widgets", "Widget")]:
        fake.store.create(crd)
    fake.fail_next("GET", r"/apis/example.com/v1/widgets", 403, times=None, reason="Forbidden", message=DENIED)
    fake.store.create(policy("widgets", add_label("seen"), rule=WIDGETS, admission=True, mutate_existing=False))
    fake.store.create(configmap("one"))
    (tmp_path / "none").mkdir()
    settings = {"from_cluster": True, "reports": ReportingConfig(interval=0.05), "sync_timeout": 600.0}
    with running(fake, tmp_path, tmp_path / "none", **settings) as controller:
        # the policy created after it is loaded and reconciled on the next reloads, not after 600 s
        fake.store.create(policy("configmaps", add_label("scanned")))
        eventually(lambda: labels_of(fake, "one").get("scanned") == "true", timeout=60, what="the other policy")
        assert controller.not_ready() == ""  # the forbidden watch holds up no one's readiness

        eventually(lambda: condition(fake, "widgets") is not None, timeout=60, what="the condition")
        found = condition(fake, "widgets")
        assert found is not None and (found["status"], found["reason"]) == ("False", "Forbidden")
        assert "may not list and watch widgets.example.com" in found["message"]
        assert "cannot list resource" in found["message"] and "controller.extraRules" in found["message"]
        assert condition(fake, "configmaps") is None
        events = [e for e in fake.store.list("events") if e["reason"] == "ResourceNotReadable"]
        assert [e["involvedObject"]["name"] for e in events] == ["widgets"] and events[0]["type"] == "Warning"

        fake.clear_faults()  # the role is granted: the watch lists with backoff and the condition goes
        eventually(lambda: condition(fake, "widgets") is None, timeout=60, what="the condition gone")
