"""The MutatingWebhookConfiguration that sends the right requests to celmut: one renderer for every surface.

The Helm chart's template (``charts/celmut/templates/mutatingwebhookconfiguration.yaml``), ``celmut
manifests`` and ``celmut webhook-config`` produce the same webhooks for the same settings (the install
tests compare them with ``helm template``):

* one webhook per failurePolicy of the policies it serves — ``fail.mutate.celmut.io`` calls
  ``/mutate/fail``, ``ignore.mutate.celmut.io`` calls ``/mutate/ignore`` — so a policy's failurePolicy
  decides a failed evaluation and the webhook's decides a failed call;
* ``failurePolicy`` (the call failing): always ``Ignore`` for the Ignore webhook; a setting for the Fail
  webhook, ``Ignore`` by default, so an outage of celmut never blocks the cluster (``Fail`` enforces);
* ``namespaceSelector``: never celmut's own namespace nor ``excluded_namespaces``; never
  ``fail_excluded_namespaces`` (kube-system) for the Fail webhook; and any ``namespace_selector`` given;
* ``objectSelector``: objects carrying the opt-out label are never sent (celmut also follows it
  through owners, :mod:`celmut.kube.owners`);
* ``sideEffects: NoneOnDryRun`` (celmut never has side effects on a dry run),
  ``admissionReviewVersions: [v1]``, ``matchPolicy: Equivalent``;
* ``rules``: the chart's defaults (:data:`DEFAULT_RULES`: what the kinds a ``--from-cluster`` webhook
  serves need — pods for the presets, the pod controllers for autogen, never ReplicaSets) and/or those of
  a set of policies (their resource rules and autogen variants, de-duplicated; autogen's ReplicaSets are
  left out: :mod:`celmut.runtime.ownership`).
"""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from celmut.runtime.ownership import DEFAULT_OPT_OUT_LABEL

if TYPE_CHECKING:  # annotations only: `celmut manifests` and --help do not load the compiler
    from celmut.compile.compiled import CompiledPolicy

Obj = dict[str, Any]
PATHS = {"Fail": "/mutate/fail", "Ignore": "/mutate/ignore"}
FAILURE_POLICIES = ("Ignore", "Fail")
REINVOCATION_POLICIES = ("Never", "IfNeeded")

# Pods, and the pod controllers autogen variants mutate — never ReplicaSets: the deployment controller
# creates new ones without end when their template is changed (celmut.runtime.ownership).
DEFAULT_RULES: list[Obj] = [
    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]},
    {
        "apiGroups": ["apps"],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": ["deployments", "statefulsets", "daemonsets"],
    },
    {
        "apiGroups": ["batch"],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": ["jobs", "cronjobs"],
    },
]


SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def parse_label_selector(text: str | None, what: str) -> dict[str, Any]:
    """A ``metav1.LabelSelector`` from JSON or YAML text (``{}`` for none); ValueError naming ``what``."""
    if not text:
        return {}
    try:
        selector = yaml.safe_load(text)
    except yaml.YAMLError as ex:
        raise ValueError(f"{what}: not JSON or YAML: {ex}") from None
    if not isinstance(selector, dict) or set(selector) - {"matchLabels", "matchExpressions"}:
        raise ValueError(f"{what}: a label selector has only matchLabels and matchExpressions")
    labels = selector.get("matchLabels") or {}
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise ValueError(f"{what}: matchLabels must map keys to strings")
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise ValueError(f"{what}: matchExpressions must be a list")
    for index, expression in enumerate(expressions):
        if not isinstance(expression, dict) or not isinstance(expression.get("key"), str):
            raise ValueError(f"{what}: matchExpressions[{index}].key is required")
        if expression.get("operator") not in SELECTOR_OPERATORS:
            raise ValueError(
                f"{what}: matchExpressions[{index}].operator must be one of {', '.join(SELECTOR_OPERATORS)}"
            )
    return selector


def validate_webhook_url(url: str, what: str) -> str:
    """``url`` when the API server would take it as a webhook's ``clientConfig.url``, else ValueError
    naming ``what``: Kubernetes' ``ValidateWebhookURL`` (k8s.io/apiserver/pkg/util/webhook/validation.go,
    https forced): the scheme https, a host, no user information, fragment or query."""
    form = "; desired format: https://host[/path]"
    try:
        parsed = urllib.parse.urlsplit(url)
        parsed.port  # noqa: B018  (a port that is not a number raises here)
    except ValueError as ex:
        raise ValueError(f"{what} {url!r}: url must be a valid URL: {ex}{form}") from None
    problems = []
    if parsed.scheme != "https":
        problems.append(f"'https' is the only allowed URL scheme{form}")
    if not parsed.hostname:
        problems.append(f"host must be specified{form}")
    if parsed.username is not None or parsed.password is not None:
        problems.append("user information is not permitted in the URL")
    if parsed.fragment:
        problems.append("fragments are not permitted in the URL")
    if parsed.query:
        problems.append("query parameters are not permitted in the URL")
    if problems:
        raise ValueError(f"{what} {url!r}: " + "; ".join(problems))
    return url


def read_ca_bundle(path: str, what: str) -> bytes:
    """The PEM certificates of ``path``, for ``clientConfig.caBundle``; ValueError naming ``what`` when the
    file cannot be read or holds no certificate (the API server refuses such a bundle: ValidateCABundle)."""
    try:
        data = Path(path).read_bytes()
    except OSError as ex:
        raise ValueError(f"{what} {path}: {ex.strerror}") from None
    from cryptography import x509  # only here: `celmut --version` and --help load no cryptography

    try:
        x509.load_pem_x509_certificates(data)
    except ValueError:
        raise ValueError(f"{what} {path}: not PEM certificates") from None
    return data


@dataclass(frozen=True)
class WebhookSettings:
    """The chart's ``webhook`` values, and where the webhook is (a Service, or a URL)."""

    service: tuple[str, str] | None = ("celmut", "celmut")  # (name, namespace)
    url: str | None = None
    own_namespace: str = "celmut"  # celmut's namespace: never sent to it
    ca_bundle: bytes | None = None  # None: injected later (celmut's controller, or cert-manager)
    failure_policy: str = "Ignore"  # the Fail webhook's, when the call fails
    reinvocation_policy: str = "Never"
    timeout_seconds: int = 10
    excluded_namespaces: tuple[str, ...] = ()
    fail_excluded_namespaces: tuple[str, ...] = ("kube-system",)
    namespace_selector: Mapping[str, Any] = field(default_factory=dict)  # ANDed with the exclusions
    opt_out_label: str = DEFAULT_OPT_OUT_LABEL

    def client_config(self, bucket: str) -> Obj:
        client: Obj = {}
        if self.url is not None:
            client["url"] = self.url.rstrip("/") + PATHS[bucket]
        elif self.service is not None:
            name, namespace = self.service
            client["service"] = {"name": name, "namespace": namespace, "path": PATHS[bucket], "port": 443}
        else:
            raise ValueError("give a service (name, namespace) or a URL")
        if self.ca_bundle is not None:
            client["caBundle"] = base64.b64encode(self.ca_bundle).decode("ascii")
        return client

    def excluded(self, bucket: str) -> list[str]:
        """The namespaces a webhook never sees, in the chart's order (``prepend``/``concat``/``uniq``)."""
        names = [self.own_namespace, *self.excluded_namespaces]
        if bucket == "Fail":
            names += self.fail_excluded_namespaces
        return list(dict.fromkeys(names))


@dataclass(frozen=True)
class Bucket:
    """One webhook: the policies of one failurePolicy, what they need sent, and how long they may take."""

    failure_policy: str  # Fail | Ignore: which policies its path runs
    rules: list[Obj]
    timeout_seconds: int
    reinvocation_policy: str


def policy_rules(policies: Iterable[CompiledPolicy], base: Iterable[Obj] = ()) -> list[Obj]:
    """``base`` then the resource rules of ``policies`` (autogen variants included), de-duplicated."""
    seen: set[tuple[Any, ...]] = set()
    rules: list[Obj] = []

    def add(rule: Obj) -> None:
        fields = ("apiGroups", "apiVersions", "resources", "operations")
        key = (*(tuple(rule.get(k) or ()) for k in fields), rule.get("scope", "*"))
        if key not in seen:
            seen.add(key)
            rules.append(rule)

    for rule in base:
        add(dict(rule))
    for policy in policies:
        for resource_rule in policy.match.resource_rules:
            resources = resource_rule.resources
            if policy.autogen:  # autogen's replicasets target: never a controller's (runtime/ownership.py)
                resources = tuple(r for r in resources if r.partition("/")[0] != "replicasets")
                if not resources:
                    continue
            entry: Obj = {
                "apiGroups": list(resource_rule.api_groups),
                "apiVersions": list(resource_rule.api_versions),
                "operations": list(resource_rule.operations),
                "resources": list(resources),
            }
            if resource_rule.scope != "*":
                entry["scope"] = resource_rule.scope
            add(entry)
    return rules


def admission_policies(policies: Iterable[CompiledPolicy]) -> list[CompiledPolicy]:
    """The policies a webhook runs (a mutateExisting policy with targets never mutates its trigger)."""
    return [p for p in policies if p.admission and not (p.mutate_existing and p.target is not None)]


def chart_buckets(settings: WebhookSettings, rules: Sequence[Obj] = DEFAULT_RULES) -> list[Bucket]:
    """Both webhooks with the same rules, as the chart registers them (the policies come and go in the cluster)."""
    return [
        Bucket(bucket, [dict(r) for r in rules], settings.timeout_seconds, settings.reinvocation_policy)
        for bucket in ("Fail", "Ignore")
    ]


def webhook_entry(bucket: Bucket, settings: WebhookSettings) -> Obj:
    """The webhook serving the policies of ``bucket.failure_policy``."""
    selector = dict(settings.namespace_selector)
    expressions = [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": settings.excluded(bucket.failure_policy)},
        *[dict(e) for e in selector.get("matchExpressions") or []],
    ]
    namespace_selector: Obj = {"matchExpressions": expressions}
    if selector.get("matchLabels"):
        namespace_selector = {"matchLabels": dict(selector["matchLabels"]), **namespace_selector}
    return {
        "name": f"{bucket.failure_policy.lower()}.mutate.celmut.io",
        "admissionReviewVersions": ["v1"],
        "clientConfig": settings.client_config(bucket.failure_policy),
        "failurePolicy": settings.failure_policy if bucket.failure_policy == "Fail" else "Ignore",
        "matchPolicy": "Equivalent",
        "reinvocationPolicy": bucket.reinvocation_policy,
        "sideEffects": "NoneOnDryRun",
        "timeoutSeconds": bucket.timeout_seconds,
        "rules": bucket.rules,
        "namespaceSelector": namespace_selector,
        "objectSelector": {"matchExpressions": [{"key": settings.opt_out_label, "operator": "DoesNotExist"}]},
    }


def map_scopes(settings: WebhookSettings) -> dict[str, Obj]:
    """failurePolicy -> the namespace and object selectors celmut's webhook for it has with
    ``settings``, which a generated MutatingAdmissionPolicy copies (``compile --to-map``, the
    playground; the controller reads them from the live configuration). An empty ``opt_out_label``
    leaves the object selector out."""
    scopes: dict[str, Obj] = {}
    for failure_policy in ("Fail", "Ignore"):
        entry = webhook_entry(Bucket(failure_policy, [], 10, "Never"), settings)
        scopes[failure_policy] = {
            "namespaceSelector": entry["namespaceSelector"],
            "objectSelector": entry["objectSelector"] if settings.opt_out_label else {},
        }
    return scopes


def webhook_configuration(
    buckets: Sequence[Bucket],
    settings: WebhookSettings,
    *,
    name: str = "celmut",
    metadata: Mapping[str, Any] | None = None,
) -> Obj:
    """An ``admissionregistration.k8s.io/v1`` MutatingWebhookConfiguration; refuses to render none."""
    if not buckets:
        raise ValueError("no webhook to register: none of the policies runs at admission")
    meta: Obj = dict(metadata) if metadata is not None else {"labels": {"app.kubernetes.io/managed-by": "celmut"}}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name, **meta},
        "webhooks": [webhook_entry(bucket, settings) for bucket in buckets],
    }
