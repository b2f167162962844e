"""The leader keeps celmut's MutatingWebhookConfiguration in line with the loaded policies.

What it registers is :mod:`celmut.install.managed_webhooks` (Kyverno's ``pkg/controllers/webhook``,
``controller.go``: the webhook controller builds the configuration from the policies and writes it).

Ownership: the controller owns the whole object (:mod:`celmut.controller.managed_configuration`: the
managed-by label, an ownerReference to the chart's controller ClusterRole so ``helm uninstall`` lets the
garbage collector delete it — no Fail webhook is left behind —, one guarded write at a time, the CA
bundle carried over). Helm never renders it (``webhook.managedRules: true``), so ``helm upgrade`` has
nothing to diff and no field is written by both; the chart's static object of that name, during an
upgrade to managed rules, is left alone until Helm has removed it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from celmut.controller.managed_configuration import ManagedWriter
from celmut.controller.policy_conditions import PolicyConditions
from celmut.install import managed_webhooks
from celmut.install.webhook_config import WebhookSettings
from celmut.kube.client import Cluster, ClusterError, NotFound

if TYPE_CHECKING:
    from celmut.compile.compiled import CompiledPolicy
    from celmut.kube.policy_source import ClusterPolicySource

log = logging.getLogger("celmut.controller")

Obj = dict[str, Any]
CONFIGURATIONS = ("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations")
CONDITION_TYPE = "celmut.io/WebhookRegistered"


@dataclass
class WebhookRulesConfig:
    """What the controller needs to write the configuration."""

    settings: WebhookSettings
    name: str = "celmut"
    owner_cluster_role: str = ""  # the chart's ClusterRole: uninstalling it garbage-collects the configuration
    annotations: Mapping[str, str] = field(default_factory=dict)  # e.g. cert-manager's inject-ca-from
    resync_seconds: float = 5.0  # look again unprompted (a CRD installed, someone else's object removed)


class WebhookRulesWriter(ManagedWriter):
    """Writes the MutatingWebhookConfiguration the loaded policies need (leader only)."""

    def __init__(self, cluster: Cluster, config: WebhookRulesConfig) -> None:
        super().__init__(cluster, CONFIGURATIONS, config.name, config.owner_cluster_role, config.resync_seconds)
        self.config = config
        self._conditions = PolicyConditions(cluster, CONDITION_TYPE, "ResourceNotServed", "WebhookNotRegistered")

    # --- what the API server serves ----------------------------------------------------------------

    def _discovery(self) -> managed_webhooks.Served:
        known: dict[tuple[str, str], set[str] | None] = {}

        def served(group: str, version: str, resource: str) -> bool | None:
            if (group, version) not in known:
                path = f"/apis/{group}/{version}" if group else f"/api/{version}"
                try:
                    listed = self.cluster.request("GET", path) or {}
                    known[(group, version)] = {str(r.get("name")) for r in listed.get("resources") or []}
                except NotFound:
                    known[(group, version)] = set()
                except ClusterError as ex:  # cannot tell: keep the rule rather than drop it
                    log.warning("discovery failed", extra={"group_version": path, "error": str(ex)})
                    known[(group, version)] = None
            names = known[(group, version)]
            return None if names is None else resource in names

        return served

    # --- syncing ------------------------------------------------------------------------------------

    def wanted(self, policies: Sequence[CompiledPolicy]) -> managed_webhooks.Plan:
        """What the controller would write (no owner: :meth:`sync` adds it)."""
        metadata: Obj = {"annotations": dict(self.config.annotations)} if self.config.annotations else {}
        return managed_webhooks.plan(
            policies, self.config.settings, name=self.config.name, served=self._discovery(), metadata=metadata
        )

    def sync(self, policies: Sequence[CompiledPolicy], source: ClusterPolicySource | None = None) -> bool:
        """Bring the stored configuration to what ``policies`` need; True when something was written."""

        def configuration() -> Obj:
            plan = self.wanted(policies)
            self._report(plan.unregistered, source)
            return plan.configuration

        return self.write(configuration)

    def _report(self, unregistered: list[managed_webhooks.Unregistered], source: ClusterPolicySource | None) -> None:
        """A condition on each cluster policy whose rules are not all registered, and a Warning Event once
        per change; the condition goes once they are."""
        self._conditions.report({(u.kind, u.namespace, u.name): u.message for u in unregistered}, source)
