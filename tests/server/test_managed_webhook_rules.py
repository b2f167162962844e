"""Issue 27, item 1: the controller's leader keeps the MutatingWebhookConfiguration's rules in line with the
loaded policies (Kyverno's pkg/controllers/webhook controller.go), so a policy on any resource is called
with no chart value touched. End to end in the fake API server: the real webhook processes behind the
Service, the real controller writing the configuration, requests routed by the fake's copy of
kube-apiserver's matcher (DELETE, subresources, matchPolicy Equivalent)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from celmut.controller.policy_validation import PolicyValidationConfig
from celmut.controller.run import Controller
from celmut.controller.webhook_rules import CONDITION_TYPE, WebhookRulesConfig
from celmut.install.webhook_config import WebhookSettings
from celmut.kube.client import Cluster, resource_path
from tests.controller.support import connect, running
from tests.fakekube import FakeApiServer
from tests.fakekube.crd_builders import open_crd
from tests.kube.conftest import eventually
from tests.kube.crds import policy_crds

from .in_cluster import celmut_in_cluster, wait_for_policies
from .support import RunningServer

Obj = dict[str, Any]
MWC = "admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
MPOL = "mutatingpolicies.policies.kyverno.io"
OWNER = "celmut-controller"


def mutating_policy(name: str, rule: Obj, expression: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": {"resourceRules": [rule]},
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}],
            **spec,
        },
    }


def rule(group: str, version: str, resource: str, *operations: str) -> Obj:
    return {"apiGroups": [group], "apiVersions": [version], "resources": [resource], "operations": list(operations)}


def add_label(key: str) -> str:
    return (
        f'has(object.metadata.labels) ? [JSONPatch{{op: "add", path: "/metadata/labels/{key}", value: "yes"}}]'
        f' : [JSONPatch{{op: "add", path: "/metadata/labels", value: {{"{key}": "yes"}}}}]'
    )


WIDGETS_CRD: Obj = open_crd("example.com", "widgets", "Widget")


def with_policy_crds(fake: FakeApiServer) -> FakeApiServer:
    for definition in policy_crds():
        fake.store.create(definition)
    return fake


def configuration(fake: FakeApiServer) -> Obj | None:
    found = [c for c in fake.store.list(MWC) if c["metadata"]["name"] == "celmut"]
    return found[0] if found else None


def registered(fake: FakeApiServer) -> set[tuple[str, str, str]]:
    """(webhook, resource, operation) of every rule of the stored configuration."""
    config = configuration(fake) or {}
    return {
        (w["name"], resource, operation)
        for w in config.get("webhooks") or []
        for r in w["rules"]
        for resource in r["resources"]
        for operation in r["operations"]
    }


@contextmanager
def managed(
    fake: FakeApiServer,
    tmp_path: Path,
    *,
    controllers: int = 1,
    webhooks: int = 1,
    outside: bool = False,
    policy_validation: PolicyValidationConfig | None = None,
    **settings: Any,
) -> Iterator[tuple[list[RunningServer], list[Controller]]]:
    """celmut's webhook (one replica) behind its Service, and ``controllers`` controllers managing the
    configuration, owned by the chart's controller ClusterRole; no configuration is installed by hand.
    ``policy_validation``: they keep the policy validating webhook too, owned by its own ClusterRole."""
    fake.store.garbage_collection = True
    for role in (OWNER, *([policy_validation.owner_cluster_role] if policy_validation else [])):
        if not fake.store.exists("rbac.authorization.k8s.io/v1/clusterroles", role):
            fake.store.create(
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role}}
            )
    (tmp_path / "none").mkdir(exist_ok=True)
    with ExitStack() as stack:
        servers = stack.enter_context(celmut_in_cluster(fake, tmp_path, replicas=webhooks, create_configuration=False))
        if outside:  # served outside the cluster: --webhook-url, no Service
            settings.update(service=None, url=servers[0].url)
        webhook = WebhookSettings(ca_bundle=servers[0].ca_file.read_bytes(), **settings)
        rules = WebhookRulesConfig(webhook, owner_cluster_role=OWNER, resync_seconds=0.2)
        running_controllers = [
            stack.enter_context(
                running(
                    fake,
                    tmp_path,
                    tmp_path / "none",
                    from_cluster=True,
                    webhook_rules=rules,
                    policy_validation=policy_validation,
                    identity=f"controller-{index}",
                    **(
                        {"leader_elect": True, "lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}
                        if controllers > 1
                        else {}
                    ),
                )
            )
            for index in range(controllers)
        ]
        yield servers, running_controllers


def client(fake: FakeApiServer, tmp_path: Path) -> Cluster:
    return connect(fake, tmp_path, "user")


def test_policies_on_configmap_update_a_crd_ephemeralcontainers_and_service_delete_are_applied(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """No chart value touched: each policy's matchConstraints become the configuration's rules (DELETE and
    subresources included), and the API server then sends celmut exactly those requests."""
    fake = with_policy_crds(fake_apiserver)
    fake.store.create(WIDGETS_CRD)
    policies = [
        mutating_policy("cm-update", rule("", "v1", "configmaps", "UPDATE"), add_label("updated")),
        mutating_policy("widgets", rule("example.com", "v1", "widgets", "CREATE"), add_label("widget")),
        mutating_policy(
            "debug-env",
            rule("", "v1", "pods/ephemeralcontainers", "UPDATE"),
            '[JSONPatch{op: "add", path: "/spec/ephemeralContainers/0/env", value: [{"name": "DEBUG", "value": "1"}]}]',
            matchConditions=[{"name": "has-debug", "expression": "has(object.spec.ephemeralContainers)"}],
        ),
        mutating_policy(
            "svc-delete",
            rule("", "v1", "services", "DELETE"),
            "[]",
        ),
    ]
    for policy in policies:
        fake.store.create(policy)
    with managed(fake, tmp_path) as (servers, _):
        wait_for_policies(servers, *(p["metadata"]["name"] for p in policies))
        wanted = {
            ("fail.mutate.celmut.io", "configmaps", "UPDATE"),
            ("fail.mutate.celmut.io", "widgets", "CREATE"),
            ("fail.mutate.celmut.io", "pods/ephemeralcontainers", "UPDATE"),
            ("fail.mutate.celmut.io", "services", "DELETE"),
        }
        eventually(lambda: registered(fake) == wanted, what="the policies' rules registered")
        config = configuration(fake)
        assert config is not None
        webhook = config["webhooks"][0]
        assert webhook["matchPolicy"] == "Equivalent"
        assert webhook["clientConfig"]["service"]["path"] == "/mutate/fail/default"
        assert config["metadata"]["ownerReferences"][0]["name"] == OWNER
        hooks = fake.enable_webhooks()
        cluster = client(fake, tmp_path)
        try:
            # ConfigMap: CREATE is not asked for; UPDATE is.
            cluster.create("v1", "configmaps", "default", {"metadata": {"name": "c"}, "data": {"a": "1"}})
            assert "labels" not in fake.store.get("configmaps", "c", "default")["metadata"]
            stored = fake.store.get("configmaps", "c", "default")
            stored["data"] = {"a": "2"}
            updated = cluster.replace("v1", "configmaps", "default", "c", stored)
            assert updated["metadata"]["labels"] == {"updated": "yes"}
            # A custom resource, also when created at another served version (matchPolicy Equivalent).
            made = cluster.create("example.com/v1", "widgets", "default", {"kind": "Widget", "metadata": {"name": "w"}})
            assert made["metadata"]["labels"] == {"widget": "yes"}
            other = cluster.create(
                "example.com/v2", "widgets", "default", {"kind": "Widget", "metadata": {"name": "w2"}}
            )
            assert other["apiVersion"] == "example.com/v2" and other["metadata"]["labels"] == {"widget": "yes"}
            # pods/ephemeralcontainers: the subresource request, not the pod's own UPDATE.
            pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
            pod = cluster.create("v1", "pods", "default", pod)
            pod["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox"}]
            path = resource_path("v1", "pods", "default", "p", "ephemeralcontainers")
            answered = cluster.request("PUT", path, body=pod)
            assert answered["spec"]["ephemeralContainers"][0]["env"] == [{"name": "DEBUG", "value": "1"}]
            # Service DELETE: the request reaches celmut and the policy is evaluated; a DELETE has no object
            # to mutate, which celmut reports in its audit annotation (the object is deleted, unchanged).
            cluster.create("v1", "services", "default", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
            cluster.delete("v1", "services", "default", "s")
            deletes = [c for c in hooks.calls_to(kind="Service") if c.operation == "DELETE"]
            assert [(c.webhook, c.outcome) for c in deletes] == [("fail.mutate.celmut.io", "unchanged")]
            assert deletes[0].audit_annotations == (
                (
                    "fail.mutate.celmut.io/skipped",
                    '{"svc-delete":"noObject: DELETE requests carry no object to mutate"}',
                ),
            )
            assert not fake.store.exists("services", "s", "default")
            assert not [c for c in hooks.calls_to(kind="Service") if c.operation == "CREATE"]
        finally:
            cluster.close()


def test_removing_a_policy_removes_its_rules_and_the_last_leaves_none(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake = with_policy_crds(fake_apiserver)
    fake.store.create(mutating_policy("cm", rule("", "v1", "configmaps", "CREATE"), add_label("a")))
    fake.store.create(
        mutating_policy("svc", rule("", "v1", "services", "CREATE"), add_label("b"), failurePolicy="Ignore")
    )
    with managed(fake, tmp_path):
        both = {("fail.mutate.celmut.io", "configmaps", "CREATE"), ("ignore.mutate.celmut.io", "services", "CREATE")}
        eventually(lambda: registered(fake) == both, what="both rules")
        fake.store.delete(MPOL, "cm")
        eventually(
            lambda: registered(fake) == {("ignore.mutate.celmut.io", "services", "CREATE")},
            what="the ConfigMap rule gone",
        )
        fake.store.delete(MPOL, "svc")
        eventually(
            lambda: [w["rules"] for w in (configuration(fake) or {}).get("webhooks") or []] == [[], []],
            what="no rule left (the two default webhooks stay, matching nothing)",
        )


def test_a_burst_of_100_policy_changes_gives_a_bounded_number_of_writes(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """100 policies created and then edited as fast as the API takes them: the configuration is written
    only when the rules change (here: from none to ConfigMaps, then to ConfigMaps and Secrets), however
    the reloads fall, and never again once in line."""
    fake = with_policy_crds(fake_apiserver)
    with managed(fake, tmp_path) as (_, [controller]):
        eventually(lambda: configuration(fake) is not None, what="the configuration")
        writer = controller.webhook_rules
        assert writer is not None
        for index in range(50):
            fake.store.create(mutating_policy(f"p{index}", rule("", "v1", "configmaps", "CREATE"), add_label("x")))
        for index in range(50):
            policy = fake.store.get(MPOL, f"p{index}")
            policy["spec"]["matchConstraints"]["resourceRules"].append(rule("", "v1", "secrets", "CREATE"))
            fake.store.update(policy)
        wanted = {("fail.mutate.celmut.io", "configmaps", "CREATE"), ("fail.mutate.celmut.io", "secrets", "CREATE")}
        eventually(lambda: registered(fake) == wanted, what="the burst's rules")
        eventually(lambda: controller.store.engine is not None and len(controller.store.engine.policies) == 50)
        settled = writer.writes
        print(f"\n[managed webhook rules] {settled} writes for 100 policy changes")
        assert settled <= 3, f"{settled} writes for 100 changes: the create, then one per distinct rule set"
        stored = configuration(fake)
        assert stored is not None and stored["webhooks"][1]["rules"] == []
        del stored["webhooks"][1]["rules"]  # as kube-apiserver returns an empty omitempty field: absent
        fake.store.update(stored)
        version = configuration(fake)["metadata"]["resourceVersion"]  # type: ignore[index]
        for _ in range(5):
            controller.sync_webhook_rules()
        assert writer.writes == settled and configuration(fake)["metadata"]["resourceVersion"] == version  # type: ignore[index]


def test_two_controllers_and_a_leader_change_converge_on_one_configuration(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake = with_policy_crds(fake_apiserver)
    fake.store.create(mutating_policy("cm", rule("", "v1", "configmaps", "CREATE"), add_label("a")))
    with managed(fake, tmp_path, controllers=2, webhooks=2) as (servers, controllers):
        eventually(
            lambda: registered(fake) == {("fail.mutate.celmut.io", "configmaps", "CREATE")},
            what="the first leader's configuration",
        )
        leader = next(c for c in controllers if c.is_leader())
        standby = next(c for c in controllers if c is not leader)
        assert standby.webhook_rules is not None and standby.webhook_rules.writes == 0  # only the leader writes
        leader.stop()
        fake.store.create(mutating_policy("svc", rule("", "v1", "services", "DELETE"), "[]"))
        eventually(standby.is_leader, what="the standby to take over")
        wanted = {("fail.mutate.celmut.io", "configmaps", "CREATE"), ("fail.mutate.celmut.io", "services", "DELETE")}
        eventually(lambda: registered(fake) == wanted, what="the new leader's configuration")
        wait_for_policies(servers, "cm")
        cluster = client(fake, tmp_path)
        try:  # both webhook replicas behind the Service serve what the configuration sends
            made = [cluster.create("v1", "configmaps", "default", {"metadata": {"name": f"c{i}"}}) for i in range(2)]
        finally:
            cluster.close()
        assert [m["metadata"]["labels"] for m in made] == [{"a": "yes"}, {"a": "yes"}]
    configurations = [c for c in fake.store.list(MWC)]
    assert len(configurations) == 1
    assert [w["name"] for w in configurations[0]["webhooks"]] == ["fail.mutate.celmut.io", "ignore.mutate.celmut.io"]


def test_a_resource_not_served_is_reported_then_registered_once_its_crd_exists(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake = with_policy_crds(fake_apiserver)
    fake.store.create(mutating_policy("widgets", rule("example.com", "v1", "widgets", "CREATE"), add_label("w")))

    def condition() -> Obj | None:
        status = fake.store.get(MPOL, "widgets").get("status") or {}
        found = [
            c for c in (status.get("conditionStatus") or {}).get("conditions") or [] if c["type"] == CONDITION_TYPE
        ]
        return found[0] if found else None

    with managed(fake, tmp_path):
        eventually(lambda: condition() is not None, what="the policy's condition")
        found = condition()
        assert found is not None and found["status"] == "False" and found["reason"] == "ResourceNotServed"
        assert "example.com/v1/widgets not served" in found["message"]
        assert registered(fake) == set()  # never widened, never a rule for what does not exist
        events = [e for e in fake.store.list("events") if e["reason"] == "WebhookNotRegistered"]
        assert len(events) == 1 and events[0]["involvedObject"]["name"] == "widgets"
        fake.store.create(WIDGETS_CRD)
        eventually(
            lambda: registered(fake) == {("fail.mutate.celmut.io", "widgets", "CREATE")},
            what="the rule once the CRD is served",
        )
        eventually(lambda: condition() is None, what="the condition gone")


def test_uninstall_deleting_the_owner_cluster_role_garbage_collects_the_configuration(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """helm uninstall deletes the chart's ClusterRole; the configuration's ownerReference lets the garbage
    collector delete it, so no Fail webhook is left calling a webhook that is gone."""
    fake = with_policy_crds(fake_apiserver)
    fake.store.create(mutating_policy("cm", rule("", "v1", "configmaps", "CREATE"), add_label("a")))
    with managed(fake, tmp_path):
        eventually(lambda: registered(fake) != set(), what="the configuration")
    fake.store.delete("rbac.authorization.k8s.io/v1/clusterroles", OWNER)
    eventually(lambda: configuration(fake) is None, what="the configuration collected")


def test_a_configuration_of_that_name_that_is_not_the_controllers_is_left_alone(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """The chart's static configuration during an upgrade to managed rules: Helm's, not overwritten."""
    fake = with_policy_crds(fake_apiserver)
    static = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "celmut", "labels": {"app.kubernetes.io/managed-by": "Helm"}},
        "webhooks": [],
    }
    fake.store.create(static)
    fake.store.create(mutating_policy("cm", rule("", "v1", "configmaps", "CREATE"), add_label("a")))
    with managed(fake, tmp_path) as (_, [controller]):
        wait_for_policies([], "cm")
        eventually(lambda: controller.store.engine is not None and controller.store.engine.policies)
        controller.sync_webhook_rules()
        assert configuration(fake)["webhooks"] == []  # type: ignore[index]
        fake.store.delete(MWC, "celmut")  # Helm removes it after the upgrade
        eventually(lambda: registered(fake) != set(), what="the controller's own configuration")


def test_a_configuration_of_that_name_another_install_manages_is_left_alone(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Two celmut installs given one configuration name: the one owned by the other install's ClusterRole
    (labelled as the controller's) is never rewritten."""
    fake = with_policy_crds(fake_apiserver)
    fake.store.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "b"}})
    role = fake.store.get("rbac.authorization.k8s.io/v1/clusterroles", "b")["metadata"]["uid"]
    others = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {
            "name": "celmut",
            "labels": {"webhook.celmut.io/managed-by": "celmut-controller"},
            "ownerReferences": [
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "b", "uid": role}
            ],
        },
        "webhooks": [],
    }
    fake.store.create(others)
    fake.store.create(mutating_policy("cm", rule("", "v1", "configmaps", "CREATE"), add_label("a")))
    with managed(fake, tmp_path) as (_, [controller]):
        eventually(lambda: controller.store.engine is not None and controller.store.engine.policies)
        controller.sync_webhook_rules()
        assert configuration(fake)["webhooks"] == []  # type: ignore[index]
        assert not [
            r for r in fake.requests if r.method in ("PUT", "POST") and "/mutatingwebhookconfigurations" in r.path
        ]


def append(key: str, suffix: str) -> str:
    """Appends ``suffix`` to annotation ``key``: applied twice, the value shows it."""
    return (
        f'!has(object.metadata.annotations) ? [JSONPatch{{op: "add", path: "/metadata/annotations", value: {{"{key}": "{suffix}"}}}}] : '
        f'[JSONPatch{{op: "add", path: "/metadata/annotations/{key}", '
        f'value: ("{key}" in object.metadata.annotations ? object.metadata.annotations["{key}"] : "") + "{suffix}"}}]'
    )


def test_a_request_two_webhooks_match_is_mutated_once_by_each_policy(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """A policy with its own webhookConfiguration.timeoutSeconds gets a webhook of that timeout (Kyverno's
    fine-grained webhooks); both webhooks match a ConfigMap CREATE, and each runs only its own policy."""
    fake = with_policy_crds(fake_apiserver)
    configmaps = rule("", "v1", "configmaps", "CREATE")
    fake.store.create(mutating_policy("plain", configmaps, append("trail", "p")))
    fake.store.create(
        mutating_policy("timed", configmaps, append("trail", "t"), webhookConfiguration={"timeoutSeconds": 4})
    )
    with managed(fake, tmp_path) as (servers, _):
        wait_for_policies(servers, "plain", "timed")
        wanted = {
            ("fail.mutate.celmut.io", "configmaps", "CREATE"),
            ("fail-timeout-4.mutate.celmut.io", "configmaps", "CREATE"),
        }
        eventually(lambda: registered(fake) == wanted, what="two webhooks")
        timed = next(w for w in configuration(fake)["webhooks"] if w["name"].startswith("fail-timeout-4"))  # type: ignore[index]
        assert timed["timeoutSeconds"] == 4 and timed["clientConfig"]["service"]["path"] == "/mutate/fail/timeout-4"
        cluster = client(fake, tmp_path)
        try:
            made = cluster.create("v1", "configmaps", "default", {"metadata": {"name": "c"}})
        finally:
            cluster.close()
    assert made["metadata"]["annotations"]["trail"] == "pt"  # each policy once, in webhook order


def test_a_webhook_served_outside_the_cluster_is_wired_at_its_url(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Issue 38, item 4: ``controller --webhook-url`` (chart ``webhook.url``, Kyverno's --serverIP): the
    managed configuration calls the URL with its CA bundle; everything else about the rules is unchanged."""
    fake = with_policy_crds(fake_apiserver)
    fake.store.create(mutating_policy("cm", rule("", "v1", "configmaps", "CREATE"), add_label("outside")))
    with managed(fake, tmp_path, outside=True) as (servers, _):
        wait_for_policies(servers, "cm")
        wanted = {("fail.mutate.celmut.io", "configmaps", "CREATE")}
        eventually(lambda: registered(fake) == wanted, what="the rule registered")
        config = configuration(fake)
        assert config is not None
        client_config = config["webhooks"][0]["clientConfig"]
        assert client_config["url"] == servers[0].url + "/mutate/fail/default" and "service" not in client_config
        assert base64.b64decode(client_config["caBundle"]) == servers[0].ca_file.read_bytes()
        fake.enable_webhooks()
        made = client(fake, tmp_path).create("v1", "configmaps", "default", {"metadata": {"name": "c"}})
        assert made["metadata"]["labels"] == {"outside": "yes"}
