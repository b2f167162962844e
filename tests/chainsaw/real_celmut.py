"""celmut in the loop of a real API server, as the chart runs it, scoped to one run on a shared cluster.

:func:`real_celmut` starts, in this process:

* the webhook (``celmut serve --from-cluster``, TLS with the control plane's webhook certificate for
  127.0.0.1, ``tests.server.support.running_server``);
* the controller (``celmut controller --from-cluster``: mutateExisting, reports, Events), which as the
  chart's leader keeps the MutatingWebhookConfiguration of the policies' rules (managed rules) and the
  policy ValidatingWebhookConfiguration, both pointing at that webhook by URL with the control plane's CA,
  each owned by a ClusterRole made for the run (as the chart's ClusterRoles own them).

Both serve only the policies labelled with the run's label (``--policy-selector``). What the controller
registers is what it would register in a cluster of its own, with one addition the harness makes, since the
cluster is shared: the run's label ANDed into each webhook's objectSelector (:class:`ScopedWebhookRules`,
:class:`ScopedPolicyValidation`), so the API server sends celmut nothing of anyone else's — not even a
policy to validate: the policy webhook fails closed, and must never stand between another engineer and
the API server. The names of both configurations and ClusterRoles carry the run's prefix. On exit
everything is stopped and deleted, and waited for.

:class:`RealCelmut` waits on the cluster as :class:`tests.chainsaw.celmut_cluster.CelmutCluster` waits on
the fake: both processes serve the run's stored policies, the controller's caches hold what the API server
stores of the run's objects, no work is queued, no Event is waiting, the configurations are what the
controller wants and have been for a moment (the API server's admission plugins read them through an
informer; no API says when a change has reached them), and a report pass writes nothing.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError

from celmut.controller.policy_validation import PolicyValidationConfig, PolicyValidationWriter
from celmut.controller.report_loop import ReportingConfig
from celmut.controller.run import Controller, ControllerConfig
from celmut.controller.webhook_rules import WebhookRulesConfig, WebhookRulesWriter
from celmut.install import managed_webhooks
from celmut.install.webhook_config import WebhookSettings
from celmut.kube import certs
from celmut.kube.client import Cluster
from celmut.service.settings import ServiceSettings
from tests.chainsaw.celmut_cluster import report_pass
from tests.chainsaw.shared_cluster import POLICY_KINDS, RunScope
from tests.server.support import RunningServer, running_server

if TYPE_CHECKING:
    from celmut.compile.compiled import CompiledPolicy

Obj = dict[str, Any]
MUTATING = ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration")
VALIDATING = ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration")
PROPAGATION_SECONDS = 1.0  # after a configuration changes, before celmut counts as settled


def _scoped_webhooks(configuration: Obj, scope: RunScope) -> Obj:
    for webhook in configuration.get("webhooks") or []:
        webhook["objectSelector"] = scope.scoped(webhook.get("objectSelector"))
    return configuration


class ScopedWebhookRules(WebhookRulesWriter):
    """The controller's writer of the policies' webhook rules, each webhook also scoped to the run."""

    def __init__(self, cluster: Cluster, config: WebhookRulesConfig, scope: RunScope) -> None:
        super().__init__(cluster, config)
        self.scope = scope

    def wanted(self, policies: Sequence[CompiledPolicy]) -> managed_webhooks.Plan:
        plan = super().wanted(policies)
        _scoped_webhooks(plan.configuration, self.scope)
        return plan


class ScopedPolicyValidation(PolicyValidationWriter):
    """The controller's writer of the policy validating webhook, scoped to the run."""

    def __init__(self, cluster: Cluster, config: PolicyValidationConfig, scope: RunScope) -> None:
        super().__init__(cluster, config)
        self.scope = scope

    def wanted(self, *, kyverno: bool) -> dict[str, object]:
        return _scoped_webhooks(super().wanted(kyverno=kyverno), self.scope)


@dataclass
class RealCelmut:
    """The API server and celmut's two processes, waited on as :class:`CelmutCluster` waits on the fake."""

    client: DynamicClient
    webhook: RunningServer
    controller: Controller
    scope: RunScope
    configurations: tuple[str, str]  # the mutating and the validating configuration's names
    _seen: tuple[str, ...] = ()  # the configurations' resourceVersions last seen
    _changed_at: float = 0.0

    def _stored_policies(self) -> set[str]:
        names: set[str] = set()
        for kind in POLICY_KINDS:
            resource = self.client.resources.get(api_version="policies.kyverno.io/v1", kind=kind)
            names |= {item.metadata.name for item in resource.get(label_selector=self.scope.selector).items}
        return names

    def _served(self) -> tuple[set[str], set[str]]:
        self.webhook.store.reload()
        engine = self.webhook.store.engine
        served = {p.name for p in engine.policies} if engine is not None else set()
        loaded = self.controller.policies.loaded
        controlled = {p.name for p in loaded.all.policies} if loaded is not None else set()
        return served, controlled

    def _caches_current(self) -> str:
        """'' when the controller's caches of the reported resources hold what the API server stores of the
        run's objects, else which differs."""
        reports = self.controller.reports
        assert reports is not None
        for api_version, resource in sorted(reports.scanner._watched):
            cache = self.controller.caches.cache(api_version, resource, wait=False)
            if cache is None:
                return f"{resource}: no cache"
            listed = self.controller.cluster.list_all(api_version, resource, label_selector=self.scope.selector)
            stored = {
                (o["metadata"].get("namespace") or "", o["metadata"]["name"]): o["metadata"]["resourceVersion"]
                for o in listed.get("items") or []
            }
            cached = {
                (o["metadata"].get("namespace") or "", o["metadata"]["name"]): o["metadata"].get("resourceVersion")
                for o in cache.items()
                if self.scope.is_ours(o)
            }
            if stored != cached:
                return f"{resource}: cache {sorted(cached.items())} != stored {sorted(stored.items())}"
        return ""

    def _configurations_current(self) -> str:
        """'' when both configurations are what the controller wants and have been for
        :data:`PROPAGATION_SECONDS`, else why not."""
        rules, validation = self.controller.webhook_rules, self.controller.policy_validation
        assert rules is not None and validation is not None
        loaded = self.controller.policies.loaded
        engine = self.controller.policies.store.engine
        if loaded is None or engine is None:
            return "no policies loaded"
        stored = [rules.managed.stored(), validation.managed.stored()]
        if stored[0] is None or stored[1] is None:
            return "a configuration is not written yet"
        wanted = rules.wanted(engine.policies).configuration["webhooks"]
        stored_rules = [w.get("rules") or [] for w in stored[0]["webhooks"]]  # the API server omits an empty list
        wanted_rules = [w.get("rules") or [] for w in wanted]
        if stored_rules != wanted_rules:
            return f"the webhook rules are not what the policies need yet: {stored_rules} != {wanted_rules}"
        versions = tuple(str(s["metadata"]["resourceVersion"]) for s in stored)
        now = time.monotonic()
        if versions != self._seen:
            self._seen, self._changed_at = versions, now
        if now - self._changed_at < PROPAGATION_SECONDS:
            return "a configuration changed a moment ago"
        return ""

    def report_pass(self) -> int:
        return report_pass(self.webhook, self.controller)

    def settle(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        quiet = 0
        why = ""
        while quiet < 2:
            assert time.monotonic() < deadline, f"celmut did not settle: {why}"
            events = self.controller.events
            pending = events.pending() if events is not None else 0
            stored = self._stored_policies()
            served, controlled = self._served()
            why = (
                f"idle={self.controller.idle()} events pending={pending} stored={sorted(stored)} "
                f"webhook serves={sorted(served)} controller serves={sorted(controlled)}"
            )
            if not self.controller.idle() or pending or not stored <= served or not stored <= controlled:
                quiet = 0
                time.sleep(0.1)
                continue
            why = self._caches_current() or self._configurations_current()
            if why:
                quiet = 0
                time.sleep(0.1)
                continue
            quiet = quiet + 1 if self.report_pass() == 0 else 0
            time.sleep(0.2)  # a real API server's watches deliver a little later


@dataclass(frozen=True)
class Pki:
    """The control plane's webhook serving certificate (for 127.0.0.1) and the CA the API server trusts."""

    cert_file: Path
    key_file: Path
    ca_file: Path

    @classmethod
    def of(cls, directory: Path) -> Pki:
        return cls(directory / "webhook.crt", directory / "webhook.key", directory / "ca.crt")


def _owner_roles(client: DynamicClient, scope: RunScope, names: Sequence[str]) -> None:
    """The ClusterRoles owning the configurations (no rules: only their deletion matters)."""
    roles = client.resources.get(api_version="rbac.authorization.k8s.io/v1", kind="ClusterRole")
    for name in names:
        roles.create(body={"metadata": {"name": name, "labels": {scope.key: scope.value}}})


def _delete_and_wait(client: DynamicClient, api_version: str, kind: str, names: Sequence[str]) -> None:
    resource = client.resources.get(api_version=api_version, kind=kind)
    for name in names:
        with contextlib.suppress(NotFoundError):
            resource.delete(name=name)
    deadline = time.monotonic() + 60
    for name in names:
        while True:
            try:
                resource.get(name=name)
            except NotFoundError:
                break
            assert time.monotonic() < deadline, f"{kind} {name} still there"
            time.sleep(0.2)


def _wait_registered(client: DynamicClient, names: tuple[str, str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    for (api_version, kind), name in zip((MUTATING, VALIDATING), names, strict=True):
        resource = client.resources.get(api_version=api_version, kind=kind)
        while True:
            try:
                resource.get(name=name)
                break
            except NotFoundError:
                assert time.monotonic() < deadline, f"the controller did not register {kind} {name}"
                time.sleep(0.1)


@contextlib.contextmanager
def real_celmut(client: DynamicClient, kubeconfig: Path, pki: Pki, scope: RunScope) -> Iterator[RealCelmut]:
    """celmut's webhook and controller against the API server of ``kubeconfig``, scoped to ``scope``."""
    mutating, validating = scope.prefix, f"{scope.prefix}-policy-validation"
    _owner_roles(client, scope, (mutating, validating))
    material = certs.ServingCertificate(pki.cert_file, pki.key_file, pki.ca_file)
    try:
        with contextlib.ExitStack() as stack:
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="celmut-chainsaw-")))
            server = stack.enter_context(
                running_server(
                    scratch,
                    [],
                    material=material,
                    from_cluster=True,
                    kubeconfig=str(kubeconfig),
                    policy_selector=scope.selector,
                )
            )
            settings = WebhookSettings(service=None, url=server.url, ca_bundle=pki.ca_file.read_bytes())
            rules = WebhookRulesConfig(settings, name=mutating, owner_cluster_role=mutating, resync_seconds=0.5)
            validation = PolicyValidationConfig(
                settings, name=validating, owner_cluster_role=validating, resync_seconds=0.5
            )
            cluster = Cluster.connect(str(kubeconfig), timeout=30)
            stack.callback(cluster.close)
            config = ControllerConfig(
                ServiceSettings(from_cluster=True, kubeconfig=str(kubeconfig), policy_selector=scope.selector),
                reports=ReportingConfig(interval=3600),  # passes driven by RealCelmut.report_pass
                reload_interval=0.2,
                scan_interval=0,
                webhook_rules=rules,
                policy_validation=validation,
            )
            controller = Controller(config, cluster)
            controller.policies.webhook_rules = ScopedWebhookRules(cluster, rules, scope)
            controller.policies.policy_validation = ScopedPolicyValidation(cluster, validation, scope)
            # no MutatingAdmissionPolicy generator: the run's policies all have an objectSelector (none would be
            # generated), and it deletes every celmut-generated MAP whose policy it does not serve — another
            # celmut's, on a shared cluster
            controller.policies.generator = None
            stack.enter_context(_started(controller))
            _wait_registered(client, (mutating, validating))
            yield RealCelmut(client, server, controller, scope, (mutating, validating))
    finally:
        _delete_and_wait(client, *MUTATING, [mutating])
        _delete_and_wait(client, *VALIDATING, [validating])
        _delete_and_wait(client, "rbac.authorization.k8s.io/v1", "ClusterRole", [mutating, validating])


@contextlib.contextmanager
def _started(controller: Controller) -> Iterator[Controller]:
    controller.start()
    try:
        yield controller
    finally:
        controller.stop()
