"""The ValidatingWebhookConfiguration that refuses an invalid celmut policy before it is stored.

Kyverno registers its policy webhook (``kyverno-policy-validating-webhook-cfg``, kyverno/kyverno
``pkg/controllers/webhook/controller.go`` ``buildPolicyValidatingWebhookConfiguration``; the CEL
PolicyException one in ``cmd/kyverno/main.go``) from its controller, not its chart, and so does celmut:
the controller's leader keeps this object (:mod:`celmut.controller.policy_validation`), because what it
registers depends on the cluster. Its shape follows Kyverno's:

* **rules**: CREATE and UPDATE of celmut's policy kinds only (:data:`VALIDATED`) — never a status
  subresource, never a DELETE — so no other write is ever sent to it;
* **failurePolicy: Fail**, as Kyverno's (hard-coded there; its chart has no value for it, and its
  ``forceFailurePolicyIgnore`` does not apply to it): while celmut's webhook cannot be reached, writing
  one of these kinds is refused (``failed calling webhook``) rather than an unchecked policy stored;
  every other write goes on, as none is sent. A DELETE is never refused, and the configuration goes with
  the release (its owner is the chart's ClusterRole that grants it);
* ``sideEffects: None``, ``matchPolicy: Equivalent`` (every served version of a kind), ``timeoutSeconds``
  the chart's webhook timeout, no namespace or object selector (a policy is a policy wherever it is);
* **one owner**: while Kyverno is detected (:func:`celmut.policy.selection.kyverno_presence`), the
  ``policies.kyverno.io`` kinds are Kyverno's — its own webhooks validate them — and left out here, so
  a MutatingPolicy is never validated by both (nor refused by celmut while Kyverno, which serves it,
  would take it).

A MutatingAdmissionPolicy or its binding is never listed: kube-apiserver sends no admission
configuration object to any webhook (``rules.IsExemptAdmissionConfigurationResource``); it validates
those itself, compiling their CEL with its own messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from celmut.install.webhook_config import WebhookSettings

Obj = dict[str, Any]
#: Where celmut's webhook serves the policy validation (``celmut serve``).
PATH = "/validate/policies"
WEBHOOK_NAME = "policies.validate.celmut.io"
OPERATIONS = ("CREATE", "UPDATE")


@dataclass(frozen=True)
class ValidatedKind:
    """A kind the webhook validates, and the product that validates it instead when present ('' none)."""

    group: str
    resource: str
    versions: tuple[str, ...]
    owner_next_to: str = ""


VALIDATED: tuple[ValidatedKind, ...] = (
    ValidatedKind("policies.kyverno.io", "mutatingpolicies", ("v1", "v1beta1", "v1alpha1"), "Kyverno"),
    ValidatedKind("policies.kyverno.io", "namespacedmutatingpolicies", ("v1", "v1beta1", "v1alpha1"), "Kyverno"),
    ValidatedKind("policies.kyverno.io", "policyexceptions", ("v1", "v1beta1", "v1alpha1"), "Kyverno"),
    ValidatedKind("pod-mutations.cast.ai", "podmutations", ("v1",)),
    ValidatedKind("presets.celmut.io", "gpuslicings", ("v1alpha1",)),
    ValidatedKind("pinning.celmut.io", "podpinningplans", ("v1alpha1",)),
)


def rules(*, kyverno: bool) -> list[Obj]:
    """One rule per kind celmut validates; with ``kyverno``, none for the kinds Kyverno validates."""
    return [
        {
            "apiGroups": [kind.group],
            "apiVersions": list(kind.versions),
            "operations": list(OPERATIONS),
            "resources": [kind.resource],
            "scope": "*",
        }
        for kind in VALIDATED
        if not (kyverno and kind.owner_next_to == "Kyverno")
    ]


def client_config(settings: WebhookSettings) -> Obj:
    """The webhook's Service (or URL) at :data:`PATH`, with the settings' CA bundle if it has one."""
    client = settings.client_config("Fail")
    if "service" in client:
        client["service"]["path"] = PATH
    else:
        client["url"] = settings.url.rstrip("/") + PATH if settings.url else client["url"]
    return client


def configuration(
    settings: WebhookSettings, *, name: str, kyverno: bool, metadata: Mapping[str, Any] | None = None
) -> Obj:
    """The ``admissionregistration.k8s.io/v1`` ValidatingWebhookConfiguration ``name``."""
    webhook: Obj = {
        "name": WEBHOOK_NAME,
        "admissionReviewVersions": ["v1"],
        "clientConfig": client_config(settings),
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": settings.timeout_seconds,
        "rules": rules(kyverno=kyverno),
        "namespaceSelector": {},
        "objectSelector": {},
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name, **dict(metadata or {})},
        "webhooks": [webhook],
    }
