"""The policy validating webhook through Helm: the chart tells the controller to keep it (policyValidation,
on by default), grants that with a ClusterRole of its own which owns the webhook, and so real Helm's
install / upgrade with the feature off / rollback / uninstall (helm/helm pkg/action/upgrade.go deletes
what a new revision no longer renders; uninstall.go the release's resources) take the webhook with them
through the garbage collector: a failurePolicy-Fail webhook never outlives what serves it. The controller
is played by its own writer, configured from the arguments Helm stored on its Deployment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from celmut.controller.policy_validation import PolicyValidationWriter
from celmut.controller.webhook_flags import policy_validation_config
from celmut.install.policy_validation import PATH, WEBHOOK_NAME
from celmut.kube.client import Cluster as Client
from celmut.kube.policy_source import ClusterPolicySource
from tests.fakekube import FakeApiServer

from . import helm as helm_tool
from .kyverno_chart import write_kyverno_chart
from .lifecycle import Cluster
from .test_chart import allows, container, one, parsed_args

Obj = dict[str, Any]
VWC = "validatingwebhookconfigurations"
NAME = "celmut-policy-validation"


def test_the_default_chart_has_the_controller_keep_the_webhook(rendered: dict[str, list[Obj]]) -> None:
    default = rendered["default"]
    assert not [o for o in default if o["kind"] == "ValidatingWebhookConfiguration"]  # Helm never diffs it
    config = policy_validation_config(parsed_args(container(default, "celmut-controller")["args"]))
    assert config is not None and (config.name, config.owner_cluster_role, config.ca_from) == (NAME, NAME, "celmut")
    assert config.settings.service == ("celmut", "celmut") and config.settings.timeout_seconds == 10
    role = one(default, "ClusterRole", NAME)["rules"]
    assert allows(role, "admissionregistration.k8s.io", VWC, "create")
    assert allows(role, "admissionregistration.k8s.io", VWC, "update", NAME)
    assert not allows(role, "admissionregistration.k8s.io", VWC, "update", "kyverno-policy-validating-webhook-cfg")
    binding = one(default, "ClusterRoleBinding", NAME)
    assert binding["subjects"][0]["name"] == "celmut-controller"
    env = {e["name"]: e.get("value") for e in container(default, "celmut-controller")["env"]}
    assert env["CELMUT_TLS_VALIDATING_WEBHOOK_CONFIGURATION"] == NAME  # its CA bundle is kept with the other's


def test_static_rules_still_tell_the_controller_where_the_webhook_is(helm: Path) -> None:
    objects = helm_tool.template(helm, None, "--set", "webhook.managedRules=false", "--set", "webhook.timeoutSeconds=7")
    config = policy_validation_config(parsed_args(container(objects, "celmut-controller")["args"]))
    assert config is not None and config.settings.service == ("celmut", "celmut")
    assert config.settings.timeout_seconds == 7


def test_the_feature_off_renders_nothing_of_it(helm: Path) -> None:
    objects = helm_tool.template(helm, None, "--set", "policyValidation.enabled=false")
    assert policy_validation_config(parsed_args(container(objects, "celmut-controller")["args"])) is None
    assert not [o for o in objects if o["metadata"]["name"] == NAME]


def _keep(fake: FakeApiServer, tmp_path: Path) -> None:
    """One pass of the controller's leader, configured as Helm left its Deployment."""
    deployment = fake.store.get("apps/v1/deployments", "celmut-controller", "celmut")
    config = policy_validation_config(parsed_args(deployment["spec"]["template"]["spec"]["containers"][0]["args"]))
    if config is None:
        return
    client = Client.connect(str(fake.kubeconfig(tmp_path / "controller-kubeconfig")))
    source = ClusterPolicySource(client, report=False).start()
    try:
        assert source.wait_synced(10)
        source.documents()  # the ownership (Kyverno's presence) as of now
        PolicyValidationWriter(client, config).sync(source)
    finally:
        source.stop()
        client.close()


def _webhook(fake: FakeApiServer) -> Obj | None:
    store = fake.store
    return store.get(f"admissionregistration.k8s.io/v1/{VWC}", NAME) if store.exists(VWC, NAME) else None


@pytest.fixture
def cluster(helm: Path, tmp_path: Path) -> Any:
    with FakeApiServer(garbage_collection=True) as fake:
        yield Cluster(fake, helm, fake.kubeconfig(tmp_path / "kubeconfig"), write_kyverno_chart(tmp_path))


def test_install_upgrade_rollback_and_uninstall_take_the_webhook_with_them(cluster: Cluster, tmp_path: Path) -> None:
    fake = cluster.fake
    cluster.run(("install", "celmut", "@celmut", "-n", "celmut", "--create-namespace"))
    _keep(fake, tmp_path)
    webhook = _webhook(fake)
    assert webhook is not None and webhook["webhooks"][0]["name"] == WEBHOOK_NAME
    assert webhook["webhooks"][0]["clientConfig"]["service"] == {
        "name": "celmut", "namespace": "celmut", "path": PATH, "port": 443
    }  # fmt: skip
    assert [r["name"] for r in webhook["metadata"]["ownerReferences"]] == [NAME]
    cluster.run(("upgrade", "celmut", "@celmut", "-n", "celmut", "--set", "policyValidation.enabled=false"))
    _keep(fake, tmp_path)
    assert _webhook(fake) is None  # its ClusterRole went with the upgrade, and the collector took it
    cluster.run(("rollback", "celmut", "1", "-n", "celmut"))
    _keep(fake, tmp_path)
    assert _webhook(fake) is not None
    cluster.run(("uninstall", "celmut", "-n", "celmut"))
    assert _webhook(fake) is None
