"""The leader keeps the ValidatingWebhookConfiguration that refuses invalid policies at ``kubectl apply``.

What it registers is :mod:`celmut.install.policy_validation` (Kyverno's controller registers its own policy
webhook the same way, ``pkg/controllers/webhook/controller.go``). It is the controller's to write because
it follows the cluster: while Kyverno is detected (the policy source's ownership,
:func:`celmut.policy.selection.kyverno_presence`), the ``policies.kyverno.io`` kinds are left to Kyverno's
webhooks, and they come back when Kyverno leaves — one owner per kind, whatever the order of installs.

The object is owned as :mod:`celmut.controller.managed_configuration` says, by the chart's
``<name>-policy-validation`` ClusterRole, the one that grants the controller this object: a values change
(``policyValidation.enabled: false``), a rollback to a chart without it or an uninstall deletes the
ClusterRole, and the garbage collector deletes the configuration — a failurePolicy-Fail webhook never
outlives what serves it. The CA bundle is the one the mutating configuration carries (self-managed TLS
or cert-manager keep it there), so the webhook is callable from its first write; the TLS upkeep also
writes it here at each rotation.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from celmut.controller.managed_configuration import ManagedWriter, ca_bundle_of
from celmut.install import policy_validation
from celmut.install.webhook_config import WebhookSettings
from celmut.kube.client import Cluster, NotFound

if TYPE_CHECKING:
    from celmut.kube.policy_source import ClusterPolicySource

log = logging.getLogger("celmut.controller")

CONFIGURATIONS = ("admissionregistration.k8s.io/v1", "validatingwebhookconfigurations")
MUTATING = ("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations")


@dataclass
class PolicyValidationConfig:
    """What the controller needs to write the configuration."""

    settings: WebhookSettings
    name: str = "celmut-policy-validation"
    owner_cluster_role: str = ""  # the chart's ClusterRole granting this object: deleting it deletes the object
    ca_from: str = ""  # the MutatingWebhookConfiguration whose caBundle it carries ('' none)
    annotations: Mapping[str, str] = field(default_factory=dict)  # e.g. cert-manager's inject-ca-from
    resync_seconds: float = 5.0


class PolicyValidationWriter(ManagedWriter):
    """Writes the policy ValidatingWebhookConfiguration (leader only)."""

    def __init__(self, cluster: Cluster, config: PolicyValidationConfig) -> None:
        super().__init__(cluster, CONFIGURATIONS, config.name, config.owner_cluster_role, config.resync_seconds)
        self.config = config
        self._kyverno: bool | None = None  # what was last registered for (a change is logged)

    def _ca_bundle(self) -> str | None:
        """The bundle of the mutating configuration: the same webhook, the same certificate."""
        if self.config.settings.ca_bundle is not None or not self.config.ca_from:
            return None
        try:
            return ca_bundle_of(self.cluster.get(*MUTATING, "", self.config.ca_from))
        except NotFound:
            return None

    def wanted(self, *, kyverno: bool) -> dict[str, object]:
        metadata = {"annotations": dict(self.config.annotations)} if self.config.annotations else {}
        desired = policy_validation.configuration(
            self.config.settings, name=self.config.name, kyverno=kyverno, metadata=metadata
        )
        bundle = self._ca_bundle()
        if bundle is not None:
            for webhook in desired["webhooks"]:
                webhook["clientConfig"]["caBundle"] = bundle
        return desired

    def sync(self, source: ClusterPolicySource) -> bool:
        """Bring the stored configuration to what the cluster needs now; True when something was written.
        Nothing is written before the cluster's policy kinds are listed (Kyverno's presence is known then)."""
        ownership = source.ownership
        if ownership is None or not source.synced():
            return False
        kyverno = ownership.kyverno.detected
        written = self.write(lambda: self.wanted(kyverno=kyverno))
        if kyverno != self._kyverno:
            left = "the policies.kyverno.io kinds left to Kyverno's webhooks" if kyverno else "every policy kind"
            log.info(
                "policy validating webhook: validating " + left,
                extra={"configuration": self.config.name, "kyverno": ownership.kyverno.evidence},
            )
            self._kyverno = kyverno
        return written
