"""``ValidatingAdmissionWebhook``: the registered validating webhooks, called after the mutating chain.

Modelled on ``staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/validating/dispatcher.go``: once
the object is final (after every mutating plugin, and reinvocation), each ValidatingWebhookConfiguration
webhook whose rules, namespaceSelector and objectSelector match is called with it — as the mutating ones
are matched and called (:mod:`.webhooks`: ``matchPolicy``, Services, ``caBundle``, ``timeoutSeconds``,
``sideEffects`` on dry runs, the admission configuration kinds exempt). A denial rejects the request with
the webhook's message (``admission webhook "x" denied the request: …``, code at least 400); a failed call
rejects it under ``failurePolicy: Fail`` (500) and is skipped under ``Ignore``. A validating webhook
cannot change the object: a patch in its answer is ignored. The real dispatcher calls the webhooks in
parallel and reports the first error; here they are called one after the other, in name order, so
which denial is reported is deterministic. The answers' ``warnings`` are kept in
:attr:`~.webhooks.MutatingWebhooks.warnings` (the API server hands them to the client).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import errors
from .admission import Attributes
from .webhooks import MutatingWebhooks

if TYPE_CHECKING:
    from .store import Store

Obj = dict[str, Any]
NAME = "ValidatingAdmissionWebhook"


class ValidatingWebhooks(MutatingWebhooks):
    """The ``ValidatingAdmissionWebhook`` plugin; shares the Services (endpoints) of ``mutating``."""

    name = NAME

    def __init__(self, store: Store, mutating: MutatingWebhooks) -> None:
        super().__init__(store)
        self._services = mutating._services  # one Service registry for both plugins, as one kube-proxy
        self._lock = mutating._lock

    def _webhooks(self) -> list[Obj]:
        configurations = self.store.list("admissionregistration.k8s.io/v1/validatingwebhookconfigurations")
        configurations.sort(key=lambda c: c["metadata"]["name"])
        return [w for c in configurations for w in c.get("webhooks") or []]

    def admit(self, attrs: Attributes, state: dict[str, Any]) -> None:  # pragma: no cover - never mutating
        raise AssertionError("validating webhooks run in the validating phase")

    def validate(self, attrs: Attributes) -> None:
        """Call every matching webhook with the final object; the first denial (or Fail-ed call) raises."""
        for webhook in self._webhooks():
            matched = self._matches(webhook, attrs)
            if matched is None:
                continue
            name = str(webhook.get("name"))
            if attrs.dry_run and webhook.get("sideEffects") not in ("None", "NoneOnDryRun"):
                raise errors.bad_request(f'admission webhook "{name}" does not support dry run')
            reviewed = self._review(webhook, attrs, matched)
            if reviewed is not None:
                _, url, audit = reviewed
                self._record(name, url, attrs, "allowed", audit=audit)
