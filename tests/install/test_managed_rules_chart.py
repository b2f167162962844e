"""Issue 27: with ``webhook.managedRules`` (the default) Helm renders no MutatingWebhookConfiguration; the
controller is told everything the static template would have used, and may write exactly that object."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from celmut.controller.webhook_flags import rules_config
from celmut.install.webhook_config import WebhookSettings

from . import helm as helm_tool
from .test_chart import allows, container, one, parsed_args

Obj = dict[str, Any]


def managed_settings(objects: list[Obj], name: str = "celmut") -> tuple[Any, Obj]:
    args = parsed_args(container(objects, f"{name}-controller")["args"])
    config = rules_config(args)
    assert config is not None, "the controller is not told to manage the webhook configuration"
    return config, one(objects, "ClusterRole", f"{name}-controller")


def test_the_default_chart_leaves_the_configuration_to_the_controller(rendered: dict[str, list[Obj]]) -> None:
    default = rendered["default"]
    assert not [o for o in default if o["kind"] == "MutatingWebhookConfiguration"]  # Helm never diffs it
    config, role = managed_settings(default)
    assert (config.name, config.owner_cluster_role) == ("celmut", "celmut-controller")  # helm uninstall deletes it
    assert config.settings == WebhookSettings(service=("celmut", "celmut"), own_namespace="celmut")
    rules = role["rules"]
    assert allows(rules, "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "create")
    assert allows(rules, "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "update", "celmut")
    assert not allows(rules, "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "update", "kyverno")
    assert allows(rules, "rbac.authorization.k8s.io", "clusterroles", "get", "celmut-controller")


def test_every_webhook_value_reaches_the_controller(helm: Path) -> None:
    values = ["--set", "webhook.failurePolicy=Fail", "--set", "webhook.reinvocationPolicy=IfNeeded"]
    values += ["--set", "webhook.timeoutSeconds=5", "--set", "webhook.excludedNamespaces={team-x,team-y}"]
    values += ["--set", "webhook.failExcludedNamespaces={kube-system,infra}", "--set", "webhook.optOutLabel=skip-me"]
    values += ["--set-string", "webhook.namespaceSelector.matchLabels.celmut\\.io/enabled=true"]
    objects = helm_tool.template(helm, None, *values, release="tools", namespace="platform")
    config, _ = managed_settings(objects, "tools-celmut")
    assert config.settings == WebhookSettings(
        service=("tools-celmut", "platform"),
        own_namespace="platform",
        failure_policy="Fail",
        reinvocation_policy="IfNeeded",
        timeout_seconds=5,
        excluded_namespaces=("team-x", "team-y"),
        fail_excluded_namespaces=("kube-system", "infra"),
        namespace_selector={"matchLabels": {"celmut.io/enabled": "true"}},
        opt_out_label="skip-me",
    )
    assert config.owner_cluster_role == "tools-celmut-controller"
    for deployment in ("tools-celmut-webhook", "tools-celmut-controller"):  # item 4: the presets follow it too
        assert parsed_args(container(objects, deployment)["args"]).preset_failure_policy == "Fail"
    none = helm_tool.template(helm, None, "--set-json", "webhook.failExcludedNamespaces=[]")
    assert managed_settings(none)[0].settings.fail_excluded_namespaces == ()
    outside = helm_tool.template(helm, None, "--set", "webhook.url=https://10.0.0.5:8443")
    settings = managed_settings(outside)[0].settings
    assert (settings.url, settings.service) == ("https://10.0.0.5:8443", None)  # issue 38, item 4
