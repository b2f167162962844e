"""The plain install manifests ``celmut manifests`` prints: the Helm chart's default install, for
clusters without Helm.

The objects equal what ``helm template`` renders from ``charts/celmut`` with the same settings (a test
compares them), apart from Helm's own labels and the Namespace, which Helm creates outside the
release (``--create-namespace``). The Namespace and the CRDs are printed apart (:func:`crd_manifests`,
``celmut manifests --crds``): they hold the user's objects, so the workload's ``kubectl delete -f -`` or
``kubectl apply --prune`` never takes them (issue 24; :mod:`celmut.install.shared_crds`). TLS is
self-managed: the controller's leader issues the webhook's certificate and writes the CA bundle
(:mod:`celmut.kube.tls_manager`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from celmut import __version__
from celmut.install import rbac
from celmut.install.crds import all_crds
from celmut.install.shared_crds import SHARED_CRDS, shared_crd
from celmut.install.webhook_config import DEFAULT_RULES, WebhookSettings, chart_buckets
from celmut.install.webhook_config import webhook_configuration as render_webhook_configuration
from celmut.policy.selection import AUTO
from celmut.runtime.ownership import DEFAULT_OPT_OUT_LABEL

Obj = dict[str, Any]

# The controller sized for 100,000 pods (the chart's controller.sizing defaults: 512Mi, docs/operations/sizing.md).
RESOURCES = {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "512Mi"}}
# One webhook worker (the chart's webhook.workers: 1 and webhook.perWorker defaults).
WEBHOOK_RESOURCES = {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}}
RUN_AS = 10001  # the image's non-root user (Dockerfile)


@dataclass(frozen=True)
class InstallOptions:
    """The chart values ``celmut manifests`` can change; the defaults are the chart's."""

    namespace: str = "celmut"
    name: str = "celmut"  # of every object, like the chart's fullname
    image: str = f"celmut:{__version__}"
    replicas: int = 2
    controller_replicas: int = 1
    cel_engine: str = "compiled"
    failure_policy: str = "Ignore"
    reinvocation_policy: str = "Never"
    timeout_seconds: int = 10
    fail_excluded_namespaces: tuple[str, ...] = ("kube-system",)
    excluded_namespaces: tuple[str, ...] = ()
    namespace_selector: dict[str, Any] = field(default_factory=dict)
    #: The shared CRDs (:data:`SHARED_CRDS`) to print with ``--crds``: those celmut may write.
    kyverno_crds: tuple[str, ...] = field(default_factory=lambda: tuple(row.name for row in SHARED_CRDS))
    log_level: str = "INFO"
    opt_out_label: str = DEFAULT_OPT_OUT_LABEL
    policy_selector: str = AUTO
    kyverno_exceptions: bool = True
    kyverno_exceptions_namespace: str = ""  # "": celmut's namespace
    rules: list[Obj] = field(default_factory=lambda: [dict(r) for r in DEFAULT_RULES])
    managed_rules: bool = True  # webhook.managedRules: the controller writes the webhook configuration
    policy_validation: bool = True  # policyValidation.enabled: invalid policies refused at kubectl apply

    @property
    def exceptions_namespace(self) -> str:
        return self.kyverno_exceptions_namespace or self.namespace

    @property
    def controller_account(self) -> str:
        return f"{self.name}-controller"

    @property
    def webhook_account(self) -> str:
        return f"{self.name}-webhook"


def _labels(o: InstallOptions, component: str | None = None) -> dict[str, str]:
    labels = {
        "app.kubernetes.io/name": "celmut",
        "app.kubernetes.io/instance": o.name,
        "app.kubernetes.io/part-of": "celmut",
        "app.kubernetes.io/version": __version__,
        "app.kubernetes.io/managed-by": "celmut-manifests",
    }
    if component:
        labels["app.kubernetes.io/component"] = component
    return labels


def _selector(o: InstallOptions, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "celmut",
        "app.kubernetes.io/instance": o.name,
        "app.kubernetes.io/component": component,
    }


def _meta(o: InstallOptions, name: str, component: str | None = None, *, namespaced: bool = True) -> Obj:
    meta: Obj = {"name": name, "labels": _labels(o, component)}
    if namespaced:
        meta["namespace"] = o.namespace
    return meta


def _obj(api_version: str, kind: str, metadata: Obj, **body: Any) -> Obj:
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **body}


def _pod_security() -> Obj:
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS,
        "runAsGroup": RUN_AS,
        "fsGroup": RUN_AS,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _container_security() -> Obj:
    return {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}


def _probes(port: str, readiness_period: int) -> Obj:
    def probe(path: str) -> Obj:
        return {"path": path, "port": port, "scheme": "HTTPS"}

    return {
        "readinessProbe": {"httpGet": probe("/readyz"), "periodSeconds": readiness_period},
        "livenessProbe": {"httpGet": probe("/healthz"), "periodSeconds": 10, "failureThreshold": 6},
    }


def _deployment(o: InstallOptions, component: str, replicas: int, account: str, pod: Obj) -> Obj:
    template = {"metadata": {"labels": _labels(o, component)}, "spec": {"serviceAccountName": account, **pod}}
    spec = {"replicas": replicas, "selector": {"matchLabels": _selector(o, component)}, "template": template}
    return _obj("apps/v1", "Deployment", _meta(o, f"{o.name}-{component}", component), spec=spec)


def webhook_deployment(o: InstallOptions) -> Obj:
    args = ["serve", "--from-cluster", "--host", "0.0.0.0", "--port", "8443"]
    args += ["--tls-cert", "/tls/tls.crt", "--tls-key", "/tls/tls.key"]
    args += ["--background-user", f"system:serviceaccount:{o.namespace}:{o.controller_account}"]
    args += ["--timeout", str(o.timeout_seconds), "--opt-out-label", o.opt_out_label]
    args += ["--policy-selector", o.policy_selector]
    if o.failure_policy == "Fail":  # the presets follow webhook.failurePolicy
        args += ["--preset-failure-policy", "Fail"]
    args += ["--cel-engine", o.cel_engine, "--log-level", o.log_level]
    container = {
        "name": "webhook",
        "image": o.image,
        "imagePullPolicy": "IfNotPresent",
        "args": args,
        "ports": [{"name": "https", "containerPort": 8443}],
        "env": [  # the decision ledger: exact splits across replicas (celmut.kube.decision_ledger)
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "CELMUT_DECISION_LEDGER", "value": f"{o.name}-decisions"},
        ],
        **_probes("https", 5),
        "resources": WEBHOOK_RESOURCES,
        "securityContext": _container_security(),
        "volumeMounts": [
            {"name": "tls", "mountPath": "/tls", "readOnly": True},
            {"name": "policies", "mountPath": "/etc/celmut/policies", "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    pod = {
        "securityContext": _pod_security(),
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": _selector(o, "webhook")},
            }
        ],
        "containers": [container],
        "volumes": [
            {"name": "tls", "secret": {"secretName": f"{o.name}-tls"}},
            {"name": "policies", "configMap": {"name": f"{o.name}-policies"}},
            {"name": "tmp", "emptyDir": {}},
        ],
    }
    return _deployment(o, "webhook", o.replicas, o.webhook_account, pod)


def controller_deployment(o: InstallOptions) -> Obj:
    args = ["controller", "--from-cluster", "--leader-elect", "--lease-namespace", o.namespace]
    args += ["--lease-name", f"{o.name}-controller", "--rate", "100", "--events", "per-object"]
    args += ["--omitEvents=PolicyApplied,PolicySkipped", "--maxQueuedEvents=1000", "--scan-interval", "1h"]
    args += ["--evictions-per-minute", "60", "--metrics-port", "8444", "--metrics-host", "0.0.0.0"]
    args += ["--opt-out-label", o.opt_out_label, "--policy-selector", o.policy_selector]
    if o.kyverno_exceptions:
        args += ["--kyverno-exceptions-namespace", o.exceptions_namespace]
    if o.failure_policy == "Fail":
        args += ["--preset-failure-policy", "Fail"]
    if o.managed_rules:
        args += managed_rules_args(o)
    if o.policy_validation:
        args += policy_validation_args(o)
    args += ["--report-interval", "2s", "--report-max-results", "1000"]  # the chart's reports.* defaults
    args += ["--cel-engine", o.cel_engine, "--log-level", o.log_level]
    env = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "CELMUT_TLS_SECRET", "value": f"{o.name}-tls"},
        {"name": "CELMUT_TLS_CA_SECRET", "value": f"{o.name}-ca"},
        {"name": "CELMUT_TLS_SERVICE", "value": o.name},
        {"name": "CELMUT_TLS_WEBHOOK_CONFIGURATION", "value": o.name},
        *(
            [{"name": "CELMUT_TLS_VALIDATING_WEBHOOK_CONFIGURATION", "value": f"{o.name}-policy-validation"}]
            if o.policy_validation
            else []
        ),
        {"name": "CELMUT_TLS_CERTIFICATE_DAYS", "value": "365"},
        {"name": "CELMUT_TLS_CA_DAYS", "value": "3650"},
    ]
    container = {
        "name": "controller",
        "image": o.image,
        "imagePullPolicy": "IfNotPresent",
        "args": args,
        "env": env,
        "ports": [{"name": "status", "containerPort": 8444}],
        **_probes("status", 10),
        "resources": RESOURCES,
        "securityContext": _container_security(),
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }
    pod = {
        "securityContext": _pod_security(),
        "containers": [container],
        "volumes": [{"name": "tmp", "emptyDir": {}}],
    }
    return _deployment(o, "controller", o.controller_replicas, o.controller_account, pod)


def _webhook_location_args(o: InstallOptions) -> list[str]:
    """Where the webhook is, for the configurations the controller writes."""
    return [
        "--webhook-service",
        o.name,
        "--webhook-namespace",
        o.namespace,
        "--webhook-timeout",
        str(o.timeout_seconds),
    ]


def policy_validation_args(o: InstallOptions) -> list[str]:
    """The controller's flags for the policy validating webhook, as the chart's controller.yaml."""
    name = f"{o.name}-policy-validation"
    args = ["--manage-policy-validation", name, "--policy-validation-owner-clusterrole", name]
    args += ["--policy-validation-ca-from", o.name]
    return args if o.managed_rules else [*args, *_webhook_location_args(o)]


def managed_rules_args(o: InstallOptions) -> list[str]:
    """The controller's flags for the managed webhook configuration, as the chart's controller.yaml."""
    args = ["--manage-webhook-configuration", o.name, *_webhook_location_args(o)]
    args += ["--webhook-owner-clusterrole", f"{o.name}-controller", "--webhook-failure-policy", o.failure_policy]
    args += ["--webhook-reinvocation-policy", o.reinvocation_policy]
    for namespace in o.excluded_namespaces:
        args += ["--webhook-exclude-namespace", namespace]
    args += ["--webhook-fail-exclude-namespace", ",".join(o.fail_excluded_namespaces)]
    if o.namespace_selector:
        args += [
            "--webhook-namespace-selector",
            json.dumps(o.namespace_selector, sort_keys=True, separators=(",", ":")),
        ]
    return args


def webhook_settings(o: InstallOptions) -> WebhookSettings:
    """The chart's ``webhook`` values for these options (no caBundle: the controller writes it)."""
    return WebhookSettings(
        service=(o.name, o.namespace),
        own_namespace=o.namespace,
        failure_policy=o.failure_policy,
        reinvocation_policy=o.reinvocation_policy,
        timeout_seconds=o.timeout_seconds,
        excluded_namespaces=o.excluded_namespaces,
        fail_excluded_namespaces=o.fail_excluded_namespaces,
        namespace_selector=o.namespace_selector,
        opt_out_label=o.opt_out_label,
    )


def webhook_configuration(o: InstallOptions) -> Obj:
    """Both webhooks with the chart's rules, rendered as the chart and `celmut webhook-config` render them."""
    settings = webhook_settings(o)
    meta = _meta(o, o.name, "webhook", namespaced=False)
    return render_webhook_configuration(chart_buckets(settings, o.rules), settings, name=o.name, metadata=meta)


def _rbac(o: InstallOptions) -> list[Obj]:
    group = "rbac.authorization.k8s.io"
    objects: list[Obj] = []
    roles = [
        ("webhook", "webhook", o.webhook_account, rbac.shared_rules()),
        (
            "controller",
            "controller",
            o.controller_account,
            rbac.controller_cluster_rules(o.name, self_managed_tls=True, managed_rules=o.managed_rules),
        ),
    ]
    if o.policy_validation:  # its own ClusterRole: the owner of the configuration it grants
        validation = f"{o.name}-policy-validation"
        roles.append(
            ("policy-validation", "controller", o.controller_account, rbac.policy_validation_rules(validation))
        )
    for suffix, component, account, rules in roles:
        name = f"{o.name}-{suffix}"
        subject = {"kind": "ServiceAccount", "name": account, "namespace": o.namespace}
        objects += [
            _obj(f"{group}/v1", "ClusterRole", _meta(o, name, component, namespaced=False), rules=rules),
            _obj(
                f"{group}/v1",
                "ClusterRoleBinding",
                _meta(o, name, component, namespaced=False),
                roleRef={"apiGroup": group, "kind": "ClusterRole", "name": name},
                subjects=[subject],
            ),
        ]
    ledger_rules = rbac.webhook_namespace_rules(f"{o.name}-decisions")
    objects += _role(o, f"{o.name}-webhook", "webhook", o.webhook_account, ledger_rules)
    secrets = [f"{o.name}-ca", f"{o.name}-tls"]
    controller_rules = rbac.controller_namespace_rules(f"{o.name}-controller", secrets, self_managed_tls=True)
    objects += _role(o, f"{o.name}-controller", "controller", o.controller_account, controller_rules)
    if o.kyverno_exceptions:
        objects += _role(
            o,
            f"{o.name}-kyverno-exceptions",
            "controller",
            o.controller_account,
            rbac.kyverno_exception_rules(),
            namespace=o.exceptions_namespace,
        )
    return objects


def _role(
    o: InstallOptions, name: str, component: str, account: str, rules: list[Obj], namespace: str | None = None
) -> list[Obj]:
    """A Role and its RoleBinding to ``account``, in ``namespace`` (default: celmut's)."""
    group = "rbac.authorization.k8s.io"
    meta = {**_meta(o, name, component), "namespace": namespace or o.namespace}
    subject = {"kind": "ServiceAccount", "name": account, "namespace": o.namespace}
    return [
        _obj(f"{group}/v1", "Role", meta, rules=rules),
        _obj(
            f"{group}/v1",
            "RoleBinding",
            dict(meta),
            roleRef={"apiGroup": group, "kind": "Role", "name": name},
            subjects=[subject],
        ),
    ]


def crd_manifests(o: InstallOptions) -> list[Obj]:
    """What holds the user's objects, applied first and never deleted by the uninstall: the Namespace, and
    the CRDs — celmut's own, and each shared one celmut may write (``o.kyverno_crds``)."""
    objects: list[Obj] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": o.namespace}}]
    objects += [crd.to_dict() for crd in all_crds() if shared_crd(crd.name) is None or crd.name in o.kyverno_crds]
    return objects


def manifests(o: InstallOptions) -> list[Obj]:
    """Every object of the workload (not the Namespace nor the CRDs), in an order ``kubectl apply`` accepts."""
    objects: list[Obj] = []
    objects += [
        _obj("v1", "ServiceAccount", _meta(o, o.webhook_account, "webhook")),
        _obj("v1", "ServiceAccount", _meta(o, o.controller_account, "controller")),
    ]
    objects += _rbac(o)
    objects += [
        _obj("v1", "ConfigMap", _meta(o, f"{o.name}-policies", "webhook")),
        _obj(
            "v1",
            "Service",
            _meta(o, o.name, "webhook"),
            spec={
                "selector": _selector(o, "webhook"),
                "ports": [{"name": "https", "port": 443, "targetPort": "https"}],
            },
        ),
        webhook_deployment(o),
        _obj(
            "policy/v1",
            "PodDisruptionBudget",
            _meta(o, f"{o.name}-webhook", "webhook"),
            spec={"maxUnavailable": 1, "selector": {"matchLabels": _selector(o, "webhook")}},
        ),
        controller_deployment(o),
    ]
    if not o.managed_rules:  # else the controller writes it (celmut/controller/webhook_rules.py)
        objects.append(webhook_configuration(o))
    return objects
