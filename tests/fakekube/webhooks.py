"""``MutatingAdmissionWebhook``: the registered mutating webhooks, called over HTTPS as kube-apiserver calls them.

Modelled on ``staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/mutating/dispatcher.go`` and
its predicates:

* configurations in name order, webhooks in list order (``mutating_webhook_manager.go`` sorts them);
* ``rules`` (operations CREATE/UPDATE/DELETE/CONNECT, apiGroups, apiVersions, resources with ``*``,
  ``pods/*``, ``*/status``, ``pods/ephemeralcontainers``, scope; ``predicates/rules/rules.go``), and with
  ``matchPolicy: Equivalent`` (the v1 default) a rule naming another served version of the same resource
  (``generic/webhook.go`` ``ShouldCallHook``: the request is sent as that version, ``requestKind`` naming
  the one asked for; the object's apiVersion is converted there and back, as a CRD with conversion None), ``namespaceSelector`` (the labels of the object's namespace; a
  Namespace uses its own; other cluster-scoped objects always match; ``predicates/namespace``),
  ``objectSelector`` (the new or the old object's labels; ``predicates/object``). ``matchConditions``
  are not modelled: a webhook with them is always called;
* the call: an ``admission.k8s.io/v1`` AdmissionReview over HTTPS verified with ``clientConfig.caBundle``,
  to ``clientConfig.url`` or to a Service — its endpoints are registered by the test with
  :meth:`MutatingWebhooks.register_service` and used in turn, as kube-proxy spreads connections —
  with ``timeoutSeconds`` (default 10);
* ``failurePolicy``: a call that fails (connection, timeout, HTTP error, bad review) is skipped with
  ``Ignore`` and rejects with ``Fail`` (``failed calling webhook``, 500); a denial rejects whatever the
  policy (``admission webhook "x" denied the request``, code ≥ 400); a dry run reaching a webhook whose
  ``sideEffects`` are not ``None``/``NoneOnDryRun`` is rejected;
* the JSON patch of the response is applied (a patch that does not apply is a 500);
* ``reinvocationPolicy: IfNeeded``: a webhook that changed the object marks every webhook invoked before
  it for re-invocation and asks the chain for a second pass; at that pass webhooks run again only if
  marked (or if another plugin changed the object since the webhooks' last output);
* ``auditAnnotations`` of a response (allowed or not) are added to the request's as ``<webhook>/<key>``;
  a key that is not then a qualified name with exactly one ``/``, or that would overwrite a different
  value (a reinvoked webhook answering otherwise), is only logged and dropped (``attributes.go``
  ``AddAnnotation``/``checkKeyFormat``): the call records what was kept and what was dropped.

Every call is recorded in :attr:`MutatingWebhooks.calls` for tests to inspect.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import ssl
import threading
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonpatch

from . import errors
from .admission import Attributes
from .resources import ResourceType, version_priority
from .selectors import label_selector_matches as selector_matches

if TYPE_CHECKING:
    from .store import Store

Obj = dict[str, Any]
NAME = "MutatingAdmissionWebhook"


@dataclass(frozen=True)
class WebhookCall:
    """One call of one webhook: what it was asked and what came of it."""

    webhook: str
    url: str
    operation: str
    kind: str
    namespace: str
    reinvoke: bool
    outcome: str  # patched | unchanged | denied | failed-ignored | failed
    message: str = ""
    audit_annotations: tuple[tuple[str, str], ...] = ()  # added to the request, as "<webhook>/<key>"
    audit_dropped: tuple[str, ...] = ()  # keys the API server logged and dropped


_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def audit_key_error(key: str) -> str:
    """Why kube-apiserver refuses an audit annotation key ('' when it accepts it): ``checkKeyFormat``
    (exactly one ``/``) and apimachinery's ``IsQualifiedName`` (a DNS subdomain prefix of at most 253
    characters, a name of at most 63)."""
    parts = key.split("/")
    if len(parts) != 2:
        return "annotation key has invalid format, the right format is a DNS subdomain prefix and '/' and key name"
    prefix, name = parts
    if not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix):
        return f"prefix part {prefix!r} must be a DNS-1123 subdomain"
    if not name or len(name) > 63 or not _QUALIFIED_NAME_PART.fullmatch(name):
        return f"name part {name!r} must be a qualified name of at most 63 characters"
    return ""


def _rule_matches(rule: Obj, attrs: Attributes, rtype: ResourceType | None = None) -> bool:
    rtype = rtype or attrs.rtype

    def listed(values: list[str] | None, value: str) -> bool:
        return "*" in (values or []) or value in (values or [])

    if not listed(rule.get("operations"), attrs.operation):
        return False
    if not listed(rule.get("apiGroups"), rtype.group) or not listed(rule.get("apiVersions"), rtype.version):
        return False
    scope = rule.get("scope") or "*"
    if (scope == "Cluster" and rtype.namespaced) or (scope == "Namespaced" and not rtype.namespaced):
        return False
    for resource in rule.get("resources") or []:
        base, _, sub = resource.partition("/")
        if base not in ("*", rtype.plural):
            continue
        if (sub or "") == attrs.subresource or sub == "*":
            return True
    return False


#: ``rules.IsExemptAdmissionConfigurationResource`` (staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/
#: predicates/rules/rules.go): the admission configuration kinds are never sent to a webhook, whatever its rules,
#: so that no webhook can lock the cluster out of fixing its own configuration.
EXEMPT_KINDS = frozenset(
    {
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
    }
)


def exempt(rtype: ResourceType) -> bool:
    return rtype.group == "admissionregistration.k8s.io" and rtype.kind in EXEMPT_KINDS


def _labels(obj: Obj | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


class MutatingWebhooks:
    """The ``MutatingAdmissionWebhook`` plugin over the MutatingWebhookConfigurations in a store."""

    name = NAME

    def __init__(self, store: Store) -> None:
        self.store = store
        self.calls: list[WebhookCall] = []
        self.warnings: list[str] = []  # the responses' warnings, which the API server passes to the client
        self._services: dict[tuple[str, str], list[str]] = {}
        self._turns: dict[tuple[str, str, str], int] = {}
        self._lock = threading.Lock()

    # -- test-side control ---------------------------------------------------------------------------
    def register_service(self, namespace: str, name: str, *base_urls: str) -> None:
        """Where a ``clientConfig.service`` is served: one ``https://host:port`` per endpoint. Each webhook
        calls the endpoints in turn (the API server keeps a client per webhook, kube-proxy spreads its
        connections over the endpoints)."""
        with self._lock:
            self._services[(namespace, name)] = [u.rstrip("/") for u in base_urls]

    def calls_to(self, webhook: str | None = None, kind: str | None = None) -> list[WebhookCall]:
        """The recorded calls (of one webhook and/or for one kind)."""
        with self._lock:
            calls = list(self.calls)
        return [c for c in calls if (webhook is None or c.webhook == webhook) and (kind is None or c.kind == kind)]

    # -- the plugin ------------------------------------------------------------------------------------
    def _webhooks(self) -> list[Obj]:
        configurations = self.store.list("admissionregistration.k8s.io/v1/mutatingwebhookconfigurations")
        configurations.sort(key=lambda c: c["metadata"]["name"])
        return [w for c in configurations for w in c.get("webhooks") or []]

    def _namespace_labels(self, attrs: Attributes) -> dict[str, str] | None:
        """The labels the namespaceSelector is matched against; None when every selector matches."""
        if attrs.rtype.kind == "Namespace" and attrs.rtype.group == "":
            return _labels(attrs.obj)
        if not attrs.rtype.namespaced:
            return None
        try:
            return _labels(self.store.get("namespaces", attrs.namespace))
        except errors.ApiError:
            return {}  # the real server fails the call as an error; no namespace means no labels here

    def _equivalents(self, rtype: ResourceType) -> list[ResourceType]:
        """The other served versions of the same resource, preferred first (``EquivalentResourcesFor``)."""
        others = [
            t
            for t in self.store.registry.types()
            if t.group == rtype.group and t.plural == rtype.plural and t.version != rtype.version
        ]
        return sorted(others, key=lambda t: version_priority(t.version))

    def _matched_resource(self, webhook: Obj, attrs: Attributes) -> ResourceType | None:
        """The resource a webhook's rules match the request as (the request's own first; with
        ``matchPolicy: Equivalent`` an equivalent one); None when they do not match."""
        rules = webhook.get("rules") or []
        if any(_rule_matches(rule, attrs) for rule in rules):
            return attrs.rtype
        if webhook.get("matchPolicy", "Equivalent") != "Equivalent":
            return None
        for equivalent in self._equivalents(attrs.rtype):
            if any(_rule_matches(rule, attrs, equivalent) for rule in rules):
                return equivalent
        return None

    def _matches(self, webhook: Obj, attrs: Attributes) -> ResourceType | None:
        if exempt(attrs.rtype):
            return None
        matched = self._matched_resource(webhook, attrs)
        if matched is None:
            return None
        labels = self._namespace_labels(attrs)
        if labels is not None and not selector_matches(webhook.get("namespaceSelector") or {}, labels):
            return None
        selector = webhook.get("objectSelector") or {}
        if selector_matches(selector, _labels(attrs.obj if attrs.operation != "CONNECT" else None)) or (
            attrs.old is not None and selector_matches(selector, _labels(attrs.old))
        ):
            return matched
        return None

    def admit(self, attrs: Attributes, state: dict[str, Any]) -> None:
        invoked: set[str] = state.setdefault("invoked", set())  # IfNeeded webhooks invoked so far
        marked: set[str] = state.setdefault("marked", set())  # to run again at the second pass
        if attrs.is_reinvoke and state.get("last_output") != attrs.obj:
            marked |= invoked  # another plugin changed the object after the webhooks ran
        for webhook in self._webhooks():
            name = str(webhook.get("name"))
            matched = self._matches(webhook, attrs)
            if matched is None:
                continue
            if attrs.is_reinvoke and name not in marked:
                continue
            if_needed = webhook.get("reinvocationPolicy") == "IfNeeded"
            if attrs.dry_run and webhook.get("sideEffects") not in ("None", "NoneOnDryRun"):
                raise errors.bad_request(f'admission webhook "{name}" does not support dry run')
            changed = self._call(webhook, attrs, matched)
            if changed:
                marked |= invoked  # RequireReinvokingPreviouslyInvokedPlugins
                attrs.should_reinvoke = True
            if if_needed and not attrs.is_reinvoke:
                invoked.add(name)
        state["last_output"] = copy_of(attrs.obj)

    # -- one call --------------------------------------------------------------------------------------
    def _url(self, webhook: Obj) -> str:
        client = webhook.get("clientConfig") or {}
        if client.get("url"):
            return str(client["url"])
        service = client.get("service") or {}
        key = (str(service.get("namespace", "")), str(service.get("name", "")))
        with self._lock:
            endpoints = self._services.get(key)
            if not endpoints:
                raise OSError(f'no endpoints registered for service "{key[0]}/{key[1]}"')
            turn = self._turns.get((str(webhook.get("name")), *key), 0)
            self._turns[(str(webhook.get("name")), *key)] = turn + 1
            base = endpoints[turn % len(endpoints)]
        return base + (service.get("path") or "")

    def _record(
        self,
        webhook: str,
        url: str,
        attrs: Attributes,
        outcome: str,
        message: str = "",
        audit: tuple[tuple[tuple[str, str], ...], tuple[str, ...]] = ((), ()),
    ) -> None:
        call = WebhookCall(
            webhook,
            url,
            attrs.operation,
            attrs.rtype.kind,
            attrs.namespace,
            attrs.is_reinvoke,
            outcome,
            message,
            *audit,
        )
        with self._lock:
            self.calls.append(call)

    def _review(
        self, webhook: Obj, attrs: Attributes, matched: ResourceType | None
    ) -> tuple[Obj, str, tuple[tuple[tuple[str, str], ...], tuple[str, ...]]] | None:
        """Call one webhook: its allowing response, the URL called and the audit annotations kept and
        dropped; None when the call failed under ``failurePolicy: Ignore``. A denial, or a failed call under
        ``Fail``, raises the API server's error (``webhookerrors.ToStatusErr``: ``admission webhook "x"
        denied the request: …``, at least 400; ``failed calling webhook``, 500)."""
        name = str(webhook.get("name"))
        converted = matched is not None and matched != attrs.rtype
        request = attrs.admission_request(matched if converted else None)
        if converted and matched is not None:
            for key in ("object", "oldObject"):
                if isinstance(request.get(key), dict):
                    request[key] = {**request[key], "apiVersion": matched.api_version}
        url = ""
        try:
            url = self._url(webhook)
            review = _post_review(url, webhook, request)
            response = review.get("response")
            if not isinstance(response, dict) or response.get("uid") != request["uid"]:
                raise ValueError(f"expected response.uid={request['uid']!r}")
        except (OSError, ValueError, http.client.HTTPException, ssl.SSLError) as ex:
            message = f'failed calling webhook "{name}": failed to call webhook: {ex}'
            if webhook.get("failurePolicy", "Fail") == "Ignore":
                self._record(name, url, attrs, "failed-ignored", message)
                return None
            self._record(name, url, attrs, "failed", message)
            raise errors.ApiError(500, f"Internal error occurred: {message}", "InternalError") from None
        audit = _add_audit_annotations(name, response, attrs)
        if not response.get("allowed"):
            status = response.get("status") or {}
            message = f'admission webhook "{name}" denied the request'
            if status.get("message"):
                message += f": {status['message']}"
            self._record(name, url, attrs, "denied", message, audit)
            raise errors.ApiError(max(int(status.get("code") or 0), 400), message, status.get("reason") or None)
        warnings = response.get("warnings") or []
        with self._lock:
            self.warnings += [str(w) for w in warnings]
        return response, url, audit

    def _call(self, webhook: Obj, attrs: Attributes, matched: ResourceType | None = None) -> bool:
        """Call one webhook and apply its patch; True when the object changed."""
        name = str(webhook.get("name"))
        converted = matched is not None and matched != attrs.rtype
        reviewed = self._review(webhook, attrs, matched)
        if reviewed is None:
            return False
        response, url, audit = reviewed
        patch = response.get("patch")
        if (patch and attrs.obj is None) or attrs.operation == "CONNECT":  # nothing a patch could apply to
            patch = None
        if not patch:
            self._record(name, url, attrs, "unchanged", audit=audit)
            return False
        try:
            operations = json.loads(base64.b64decode(patch))
            original = copy_of(attrs.obj)
            if converted and matched is not None:
                original["apiVersion"] = matched.api_version
            patched = jsonpatch.JsonPatch(operations).apply(original)
            if converted:
                patched["apiVersion"] = attrs.rtype.api_version
        except (ValueError, jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as ex:
            self._record(name, url, attrs, "failed", str(ex), audit)
            raise errors.ApiError(500, f"Internal error occurred: {ex}", "InternalError") from None
        changed = patched != attrs.obj
        attrs.obj = patched
        self._record(name, url, attrs, "patched" if changed else "unchanged", audit=audit)
        return bool(changed)


def _add_audit_annotations(
    webhook: str, response: Obj, attrs: Attributes
) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """``for k, v := range result.AuditAnnotations { AddAnnotation(h.Name + "/" + k, v) }``: (kept, dropped)."""
    kept: list[tuple[str, str]] = []
    dropped: list[str] = []
    for key, value in (response.get("auditAnnotations") or {}).items():
        full = f"{webhook}/{key}"
        previous = attrs.audit_annotations.get(full)
        if audit_key_error(full) or (previous is not None and previous != value):
            dropped.append(full)
            continue
        attrs.audit_annotations[full] = str(value)
        kept.append((full, str(value)))
    return tuple(kept), tuple(dropped)


def copy_of(obj: Obj) -> Obj:
    copied: Obj = json.loads(json.dumps(obj))
    return copied


def _post_review(url: str, webhook: Obj, request: Obj) -> Obj:
    """POST an AdmissionReview and return the answer (raises OSError/ValueError/HTTPException on failure)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError(f"webhook URL must be https: {url}")
    client = webhook.get("clientConfig") or {}
    ca = client.get("caBundle")
    context = ssl.create_default_context(cadata=base64.b64decode(ca).decode() if ca else None)
    versions = webhook.get("admissionReviewVersions") or ["v1"]
    api_version = "admission.k8s.io/v1" if "v1" in versions else "admission.k8s.io/v1beta1"
    body = json.dumps({"apiVersion": api_version, "kind": "AdmissionReview", "request": request}).encode()
    connection = http.client.HTTPSConnection(
        parts.hostname, parts.port or 443, timeout=float(webhook.get("timeoutSeconds") or 10), context=context
    )
    try:
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        connection.request("POST", path or "/", body, {"Content-Type": "application/json"})
        answer = connection.getresponse()
        data = answer.read()
    finally:
        connection.close()
    if answer.status != 200:
        raise ValueError(f"the server responded with HTTP {answer.status}: {data[:200]!r}")
    review = json.loads(data)
    if not isinstance(review, dict):
        raise ValueError("the response is not an AdmissionReview")
    return review
