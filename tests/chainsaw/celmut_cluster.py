"""The cluster a chainsaw test runs against: the fake API server (admission chain with native
MutatingAdmissionPolicies, garbage collector) serving the policy and report CRDs, with celmut in the
loop as the chart installs it — the real webhook (``serve --from-cluster``) behind its Service, and the
controller (``--from-cluster``) keeping the webhook's rules in line with the policies, running
mutateExisting and writing the PolicyReports.

Chainsaw waits for Kyverno with wall-clock ``sleep`` steps; here the runner waits on conditions instead
(:meth:`CelmutCluster.settle`): both celmut processes serve the stored policies, the controller's watch
caches hold what the API server stores, its work queue is empty, and a report pass writes nothing more.
The controller's reporting thread is parked (long interval) and its passes driven from here, so what a
test sees never depends on the machine's speed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes.client
from kubernetes.dynamic import DynamicClient

from celmut.controller.policy_validation import PolicyValidationConfig
from celmut.controller.report_loop import ReportingConfig
from celmut.controller.run import Controller
from celmut.controller.webhook_rules import WebhookRulesConfig
from celmut.install.webhook_config import WebhookSettings
from tests.controller.support import running
from tests.fakekube import FakeApiServer
from tests.kube.crds import policy_crds, report_crds
from tests.server.in_cluster import celmut_in_cluster
from tests.server.support import RunningServer

OWNER = "celmut-controller"  # the chart's controller ClusterRole owns the webhook configuration
VALIDATION = "celmut-policy-validation"  # the chart's ClusterRole owning the policy validating webhook, and its name
POLICY_RESOURCES = (
    "policies.kyverno.io/v1/mutatingpolicies",
    "admissionregistration.k8s.io/v1/mutatingadmissionpolicies",
)


def report_pass(webhook: RunningServer, controller: Controller) -> int:
    """One reporting pass of the controller (the webhook's pending admission errors first); the number of
    report writes it made."""
    cluster = webhook.cluster
    if cluster is not None and cluster.admission_errors is not None:
        cluster.admission_errors.flush()
    reports = controller.reports
    assert reports is not None
    return reports.pass_once().writes


@dataclass
class CelmutCluster:
    fake: FakeApiServer
    webhook: RunningServer
    controller: Controller
    client: DynamicClient

    # --- waiting on conditions -----------------------------------------------------------------

    def _policies_in_service(self) -> bool:
        """Both processes serve every stored policy (a MutatingAdmissionPolicy once it has a binding)."""
        wanted = {p["metadata"]["name"] for p in self.fake.store.list(POLICY_RESOURCES[0])}
        bound = {b["spec"].get("policyName") for b in self.fake.store.list("mutatingadmissionpolicybindings")}
        wanted |= {p["metadata"]["name"] for p in self.fake.store.list(POLICY_RESOURCES[1])} & bound
        self.webhook.store.reload()
        engine = self.webhook.store.engine
        served = {p.name for p in engine.policies} if engine is not None else set()
        loaded = self.controller.policies.loaded
        controlled = {p.name for p in loaded.all.policies} if loaded is not None else set()
        return wanted <= served and wanted <= controlled

    def _caches_current(self) -> bool:
        """The controller's watch caches of the reported resources hold what the API server stores."""
        reports = self.controller.reports
        assert reports is not None
        for api_version, resource in sorted(reports.scanner._watched):
            cache = self.controller.caches.cache(api_version, resource, wait=False)
            if cache is None:
                return False
            stored = {
                (o["metadata"].get("namespace") or "", o["metadata"]["name"]): o["metadata"]["resourceVersion"]
                for o in self.fake.store.list(f"{api_version}/{resource}" if "/" in api_version else resource)
            }
            cached = {
                (o["metadata"].get("namespace") or "", o["metadata"]["name"]): o["metadata"].get("resourceVersion")
                for o in cache.items()
            }
            if stored != cached:
                return False
        return True

    def report_pass(self) -> int:
        return report_pass(self.webhook, self.controller)

    def settle(self, timeout: float = 30.0) -> None:
        """Until celmut has done all it will do with what is stored: policies served, caches current,
        no queued mutateExisting work, no Event waiting to be written, and a report pass that writes nothing."""
        deadline = time.monotonic() + timeout
        quiet = 0
        while quiet < 2:
            assert time.monotonic() < deadline, "celmut did not settle"
            events = self.controller.events
            busy = not self.controller.idle() or (events is not None and events.pending() > 0)
            if busy or not self._policies_in_service() or not self._caches_current():
                quiet = 0
                time.sleep(0.05)
                continue
            quiet = quiet + 1 if self.report_pass() == 0 else 0


def _install_crds(fake: FakeApiServer) -> None:
    for definition in [*policy_crds(), *report_crds()]:
        if not fake.store.exists("customresourcedefinitions", definition["metadata"]["name"]):
            fake.store.create(definition)


@contextmanager
def celmut_cluster(fake: FakeApiServer, tmp_path: Path, **controller_settings: Any) -> Iterator[CelmutCluster]:
    """celmut's webhook and controller in ``fake``, as the chart installs them (no policy file: the
    cluster's policies only)."""
    fake.store.garbage_collection = True
    _install_crds(fake)
    for role in (OWNER, VALIDATION):
        if not fake.store.exists("rbac.authorization.k8s.io/v1/clusterroles", role):
            fake.store.create(
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role}}
            )
    (tmp_path / "no-files").mkdir(exist_ok=True)
    with ExitStack() as stack:
        [server] = stack.enter_context(celmut_in_cluster(fake, tmp_path, create_configuration=False))
        webhook = WebhookSettings(ca_bundle=server.ca_file.read_bytes())
        controller = stack.enter_context(
            running(
                fake,
                tmp_path,
                tmp_path / "no-files",
                from_cluster=True,
                webhook_rules=WebhookRulesConfig(webhook, owner_cluster_role=OWNER, resync_seconds=0.2),
                # invalid policies refused at creation (reject-all-modes-disabled), as the chart registers it
                policy_validation=PolicyValidationConfig(
                    webhook, name=VALIDATION, owner_cluster_role=VALIDATION, ca_from="celmut", resync_seconds=0.2
                ),
                reports=ReportingConfig(interval=3600),  # passes driven by CelmutCluster.report_pass
                **controller_settings,
            )
        )
        api = kubernetes.client.ApiClient(fake.client_configuration())
        stack.callback(api.close)
        yield CelmutCluster(fake, server, controller, DynamicClient(api))
