"""The Helm chart (charts/celmut): `helm lint` and `helm template` with each values file of ci/, the
rendered objects valid for Kubernetes, and what an operator relies on in them — a highly available
non-root webhook, a leader-elected controller, a webhook configuration that never blocks celmut's
own pods, TLS that is wired end to end, least-privilege RBAC that still covers every kind celmut
reads, and the presets (spot values, GPU slicing, PodMutations) compiling to the documented policies.
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from celmut import cel_engines
from celmut.cel.backends import select
from celmut.cel.lookups import RegistryPolicy
from celmut.compile.presets import registry as presets
from celmut.install.crds import all_crds
from celmut.install.shared_crds import shared_crd
from celmut.kube.policy_source import POLICY_KINDS
from celmut.kube.tls_manager import TlsConfig
from celmut.main import build_parser
from celmut.sources.documents import Document

from . import helm as helm_tool
from .conftest import VALUES
from .structural import validate

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES = "1.27"  # the chart's kubeVersion floor
CRDS = {(crd.group, crd.kind): crd.to_dict() for crd in all_crds()}
CERT_MANAGER_KINDS = {"Issuer", "Certificate"}
Obj = dict[str, Any]


def objects(rendered: list[Obj], kind: str) -> list[Obj]:
    return [o for o in rendered if o["kind"] == kind]


def one(rendered: list[Obj], kind: str, name: str) -> Obj:
    (found,) = [o for o in rendered if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def container(rendered: list[Obj], deployment: str) -> Obj:
    return one(rendered, "Deployment", deployment)["spec"]["template"]["spec"]["containers"][0]


def parsed_args(args: list[str]) -> argparse.Namespace:
    """The container's command line as `celmut` itself parses it."""
    try:
        return build_parser().parse_args(args)
    except SystemExit:
        pytest.fail(f"celmut does not accept the container's arguments: {args}")


def option(args: list[str], name: str) -> list[str]:
    """The values given to ``name`` in a container's argument list (without parsing the rest)."""
    return [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == name]


def allows(rules: list[Obj], group: str, resource: str, verb: str, name: str = "") -> bool:
    return any(
        group in r["apiGroups"]
        and resource in r["resources"]
        and verb in r["verbs"]
        and (not r.get("resourceNames") or name in r["resourceNames"])
        for r in rules
    )


# --- lint and schema validity --------------------------------------------------------------------------


@pytest.mark.parametrize("values", VALUES, ids=[v.name for v in VALUES])
def test_helm_lint_passes(helm: Path, values: Path) -> None:
    helm_tool.run(helm, "lint", str(helm_tool.CHART), "--strict", "--values", str(values))


@pytest.mark.parametrize(
    "setting",
    ["celEngine=fast", "webhook.failurePolicy=Sometimes", "webhook.timeoutSeconds=31", "staticConfig.preset=allSpots"],
    ids=["unknown CEL engine", "unknown failure policy", "timeout above 30 s", "unknown spot preset"],
)
def test_invalid_values_are_refused_before_anything_is_rendered(helm: Path, setting: str) -> None:
    with pytest.raises(AssertionError, match="values don't meet the specifications of the schema"):
        helm_tool.template(helm, None, "--set", setting)


def test_the_cel_engine_choices_are_celmuts() -> None:
    """Every name ``--cel-engine`` accepts: the current engines, then the former names (the pods log
    their deprecation warning when they start)."""
    schema = json.loads((helm_tool.CHART / "values.schema.json").read_text())
    assert tuple(schema["properties"]["celEngine"]["enum"]) == select.CHOICES


def test_every_values_file_is_rendered(rendered: dict[str, list[Obj]]) -> None:
    assert {"default", "spot-all", "spot-all-except-kube-system", "spot-partial", "spot-custom"} <= set(rendered)
    assert {"cert-manager", "host-network", "full"} <= set(rendered)


def test_every_rendered_object_is_valid(rendered: dict[str, list[Obj]]) -> None:
    """Strict Kubernetes schemas for built-in kinds, celmut's CRDs for PodMutations (each distinct
    object once: most are the same in every values file). The CRDs themselves are tested with crds/."""
    distinct = {json.dumps(o, sort_keys=True): o for objs in rendered.values() for o in objs}
    for obj in distinct.values():
        group = obj["apiVersion"].rpartition("/")[0]
        if obj["kind"] == "CustomResourceDefinition":
            continue
        if (group, obj["kind"]) in CRDS:
            assert validate(CRDS[group, obj["kind"]], obj) == [], obj["metadata"]["name"]
        elif group == "cert-manager.io":
            assert obj["kind"] in CERT_MANAGER_KINDS and obj["apiVersion"] == "cert-manager.io/v1"
        else:
            kubernetes_validate.validate(obj, KUBERNETES, strict=True)


def test_the_chart_installs_exactly_the_crds_of_crds_dir(rendered: dict[str, list[Obj]]) -> None:
    """celmut's own CRDs from the chart's crds/; the shared ones (Kyverno's kinds) as Helm hooks, which no
    release diff, rollback or uninstall deletes (celmut/install/shared_crds.py), stamped with Helm's
    ownership metadata so that `helm install kyverno --take-ownership` can adopt them."""
    crds = {o["metadata"]["name"]: o for o in objects(rendered["default"], "CustomResourceDefinition")}
    assert sorted(crds) == sorted(crd.name for crd in all_crds())
    for crd in all_crds():
        got = copy.deepcopy(crds[crd.name])
        annotations, labels = got["metadata"].get("annotations", {}), got["metadata"].get("labels", {})
        if shared_crd(crd.name) is not None:
            assert annotations.pop("helm.sh/hook") == "pre-install,pre-upgrade"
            assert annotations.pop("helm.sh/hook-weight") == "-10"
            assert annotations.pop("meta.helm.sh/release-name") == "celmut"
            assert annotations.pop("meta.helm.sh/release-namespace") == "celmut"
            assert labels.pop("app.kubernetes.io/managed-by") == "Helm"
        assert got == crd.to_dict(), crd.name


def test_kyverno_crds_can_be_left_to_kyverno(rendered: dict[str, list[Obj]]) -> None:
    groups = {o["spec"]["group"] for o in objects(rendered["full"], "CustomResourceDefinition")}  # kyvernoCrds off
    assert groups == {"pod-mutations.cast.ai", "presets.celmut.io", "pinning.celmut.io"}


# --- the webhook ------------------------------------------------------------------------------------


def test_the_webhook_runs_highly_available_and_unprivileged(rendered: dict[str, list[Obj]]) -> None:
    default = rendered["default"]
    deployment = one(default, "Deployment", "celmut-webhook")
    pod = deployment["spec"]["template"]["spec"]
    assert deployment["spec"]["replicas"] == 2
    pdb = one(default, "PodDisruptionBudget", "celmut-webhook")
    assert pdb["spec"]["maxUnavailable"] == 1
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    (spread,) = pod["topologySpreadConstraints"]
    assert (
        spread["topologyKey"] == "kubernetes.io/hostname"
        and spread["labelSelector"]["matchLabels"].items() <= pod_labels.items()
    )
    assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"] != 0
    webhook = container(default, "celmut-webhook")
    assert (
        webhook["securityContext"]["readOnlyRootFilesystem"]
        and not webhook["securityContext"]["allowPrivilegeEscalation"]
    )
    assert webhook["resources"] == {
        "requests": {"cpu": "250m", "memory": "512Mi"},
        "limits": {"cpu": "1", "memory": "512Mi"},
    }
    assert option(webhook["args"], "--workers") == []  # one worker: celmut's default
    assert (
        rendered["full"][0] is not None
        and one(rendered["full"], "Deployment", "celmut-webhook")["spec"]["replicas"] == 3
    )


def test_webhook_workers_run_as_many_processes_with_resources_to_match(rendered: dict[str, list[Obj]]) -> None:
    """Issue 30: `webhook.workers: 3` → `serve --workers 3`, and the pod asks for three workers' CPU and
    memory (one core each as the limit: a worker is one Python process)."""
    webhook = container(rendered["full"], "celmut-webhook")
    assert parsed_args(webhook["args"]).workers == 3
    assert webhook["resources"] == {
        "requests": {"cpu": "750m", "memory": "1536Mi"},
        "limits": {"cpu": "3", "memory": "1536Mi"},
    }


def test_the_controller_is_sized_for_the_pods_of_the_cluster(rendered: dict[str, list[Obj]]) -> None:
    """Issue 35: the controller's memory follows `controller.sizing` (a documented figure per pod): the
    defaults (100,000 pods) fit the 512Mi it always had; 300,000 pods get more. Its workers and Events
    follow their values."""
    default = container(rendered["default"], "celmut-controller")
    assert default["resources"] == {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "512Mi"}}
    args = parsed_args(default["args"])
    assert (args.rate, args.workers, args.events) == (100.0, 0, "per-object")
    # Kyverno's default Events: none for success (features.omitEvents.eventTypes), 1000 queued at most
    assert (args.omit_events, args.max_queued_events) == (frozenset({"PolicyApplied", "PolicySkipped"}), 1000)
    full = container(rendered["full"], "celmut-controller")
    assert full["resources"]["limits"] == {"memory": f"{160 + 300_000 * 3 // 1024}Mi"}  # base + pods x per pod
    args = parsed_args(full["args"])
    assert (args.workers, args.events, args.omit_events) == (8, "aggregated", frozenset())


def test_the_webhook_serves_the_documented_command_over_tls(rendered: dict[str, list[Obj]]) -> None:
    webhook = container(rendered["default"], "celmut-webhook")
    args = parsed_args(webhook["args"])
    assert (args.command, args.from_cluster, args.host, args.port) == ("serve", True, "0.0.0.0", 8443)
    assert (args.tls_cert, args.tls_key) == ("/tls/tls.crt", "/tls/tls.key")
    assert args.background_user == ["system:serviceaccount:celmut:celmut-controller"]
    assert one(rendered["default"], "ServiceAccount", "celmut-controller")  # the identity it names exists
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        get = webhook[probe]["httpGet"]
        assert (get["path"], get["scheme"], get["port"]) == (path, "HTTPS", "https")
    assert webhook["ports"] == [{"name": "https", "containerPort": 8443}]
    assert {m["mountPath"] for m in webhook["volumeMounts"]} >= {"/tls", "/tmp"}


def test_host_network_moves_the_port_and_keeps_cluster_dns(rendered: dict[str, list[Obj]]) -> None:
    pod = one(rendered["host-network"], "Deployment", "celmut-webhook")["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    webhook = pod["containers"][0]
    assert option(webhook["args"], "--port") == ["9443"] and webhook["ports"][0]["containerPort"] == 9443
    default_pod = one(rendered["default"], "Deployment", "celmut-webhook")["spec"]["template"]["spec"]
    assert "hostNetwork" not in default_pod and "dnsPolicy" not in default_pod


def test_the_cel_engine_value_reaches_both_components(rendered: dict[str, list[Obj]]) -> None:
    for values, engine in (("default", "compiled"), ("full", "interpreted")):
        for deployment in ("celmut-webhook", "celmut-controller"):
            assert parsed_args(container(rendered[values], deployment)["args"]).cel_engine == engine


def test_a_former_cel_engine_name_still_installs_and_runs_its_engine(helm: Path) -> None:
    """A values file from before the engines were renamed keeps working: ``planner`` reaches both
    components, which run the interpreted engine and log the name's deprecation when they start."""
    objects = helm_tool.template(helm, None, "--set", "celEngine=planner")
    for deployment in ("celmut-webhook", "celmut-controller"):
        args = parsed_args(container(objects, deployment)["args"])
        assert args.cel_engine == "planner"
        assert cel_engines.normalize(args.cel_engine, {}) == (
            "interpreted",
            "CEL engine 'planner' is deprecated: it is now called 'interpreted'",
        )


def test_the_policy_selector_reaches_both_components_and_only_the_controller_keeps_kyvernos_exceptions(
    rendered: dict[str, list[Obj]],
) -> None:
    for values, selector, namespace in (("default", "auto", "celmut"), ("full", "celmut.io/owner=celmut", "kyverno")):
        webhook = parsed_args(container(rendered[values], "celmut-webhook")["args"])
        controller = parsed_args(container(rendered[values], "celmut-controller")["args"])
        assert webhook.policy_selector == controller.policy_selector == selector
        assert controller.kyverno_exceptions_namespace == namespace
        role = one(rendered[values], "Role", "celmut-kyverno-exceptions")
        assert role["metadata"]["namespace"] == namespace
        assert allows(role["rules"], "policies.kyverno.io", "policyexceptions", "create")
        binding = one(rendered[values], "RoleBinding", "celmut-kyverno-exceptions")
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "celmut-controller", "namespace": "celmut"}]


def test_the_report_values_reach_the_controller_and_it_may_write_reports(rendered: dict[str, list[Obj]]) -> None:
    for values, background, interval, limit in (("default", True, 2.0, 1000), ("full", False, 10.0, 500)):
        controller = parsed_args(container(rendered[values], "celmut-controller")["args"])
        assert (controller.background_reports, controller.admission_reports) == (background, True)
        assert (controller.report_interval, controller.report_max_results) == (interval, limit)
        role = one(rendered[values], "ClusterRole", "celmut-controller")
        for verb in ("list", "create", "update", "delete"):
            assert allows(role["rules"], "wgpolicyk8s.io", "policyreports", verb)
            assert allows(role["rules"], "wgpolicyk8s.io", "clusterpolicyreports", verb)
        assert not allows(
            one(rendered[values], "ClusterRole", "celmut-webhook")["rules"], "wgpolicyk8s.io", "policyreports", "create"
        )


# --- the webhook configuration -----------------------------------------------------------------------


def test_the_webhook_configuration_follows_celmut_conventions(rendered: dict[str, list[Obj]]) -> None:
    default = rendered["static-rules"]
    configuration = one(default, "MutatingWebhookConfiguration", "celmut")
    service = one(default, "Service", "celmut")
    assert (
        service["spec"]["selector"].items()
        <= one(default, "Deployment", "celmut-webhook")["spec"]["template"]["metadata"]["labels"].items()
    )
    fail, ignore = configuration["webhooks"]
    for webhook, path in ((fail, "/mutate/fail"), (ignore, "/mutate/ignore")):
        assert webhook["clientConfig"]["service"] == {
            "name": "celmut",
            "namespace": "celmut",
            "path": path,
            "port": 443,
        }
        assert (webhook["sideEffects"], webhook["admissionReviewVersions"]) == ("NoneOnDryRun", ["v1"])
        assert (webhook["failurePolicy"], webhook["reinvocationPolicy"], webhook["timeoutSeconds"]) == (
            "Ignore",
            "Never",
            10,
        )
        assert webhook["objectSelector"] == {
            "matchExpressions": [{"key": "celmut.io/ignore", "operator": "DoesNotExist"}]
        }
        assert {"pods"} <= {r for rule in webhook["rules"] for r in rule["resources"]}


def test_celmut_never_sees_its_own_pods_and_failures_never_block_kube_system(rendered: dict[str, list[Obj]]) -> None:
    def excluded(values: str) -> tuple[list[str], list[str]]:
        fail, ignore = one(rendered[values], "MutatingWebhookConfiguration", "celmut")["webhooks"]
        return tuple(w["namespaceSelector"]["matchExpressions"][0]["values"] for w in (fail, ignore))  # type: ignore[return-value]

    assert excluded("static-rules") == (["celmut", "kube-system"], ["celmut"])
    assert excluded("full") == (["celmut", "monitoring", "kube-system"], ["celmut", "monitoring"])


def test_strict_failure_policy_applies_to_the_fail_webhook_only(rendered: dict[str, list[Obj]]) -> None:
    fail, ignore = one(rendered["full"], "MutatingWebhookConfiguration", "celmut")["webhooks"]
    assert (fail["failurePolicy"], ignore["failurePolicy"]) == ("Fail", "Ignore")
    assert {fail["reinvocationPolicy"], fail["timeoutSeconds"]} == {"IfNeeded", 5}
    assert option(container(rendered["full"], "celmut-webhook")["args"], "--timeout") == ["5"]


# --- TLS ---------------------------------------------------------------------------------------------


def _env(container_spec: Obj) -> dict[str, str]:
    env = {e["name"]: e.get("value", "") for e in container_spec.get("env", [])}
    env["POD_NAMESPACE"] = "celmut"  # the downward API's value in the release namespace
    return env


def test_self_managed_tls_is_wired_from_controller_to_webhook(rendered: dict[str, list[Obj]]) -> None:
    default = rendered["default"]
    tls = TlsConfig.from_environment(_env(container(default, "celmut-controller")))
    assert tls is not None
    managed = parsed_args(container(default, "celmut-controller")["args"]).manage_webhook_configuration
    assert tls.webhook_configuration == managed == "celmut"  # the controller writes it, then keeps its CA bundle
    assert f"{one(default, 'Service', 'celmut')['metadata']['name']}.celmut.svc" in tls.hosts
    volumes = one(default, "Deployment", "celmut-webhook")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "tls", "secret": {"secretName": tls.secret}} in volumes
    role = one(default, "Role", "celmut-controller")["rules"]
    cluster_role = one(default, "ClusterRole", "celmut-controller")["rules"]
    for secret in (tls.secret, tls.ca_secret):
        assert allows(role, "", "secrets", "get", secret) and allows(role, "", "secrets", "update", secret)
    assert allows(role, "", "secrets", "create")
    assert not allows(role, "", "secrets", "get", "someone-elses-secret")
    assert allows(
        cluster_role,
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        "patch",
        tls.webhook_configuration,
    )
    assert not allows(cluster_role, "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "patch", "kyverno")


def test_cert_manager_issues_the_certificate_and_injects_the_ca(rendered: dict[str, list[Obj]]) -> None:
    objs = rendered["cert-manager"]
    (annotation,) = parsed_args(container(objs, "celmut-controller")["args"]).webhook_annotation  # managed rules
    key, _, value = annotation.partition("=")
    assert key == "cert-manager.io/inject-ca-from"
    namespace, name = value.split("/")
    certificate = one(objs, "Certificate", name)
    assert namespace == "celmut" and "celmut.celmut.svc" in certificate["spec"]["dnsNames"]
    volumes = one(objs, "Deployment", "celmut-webhook")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "tls", "secret": {"secretName": certificate["spec"]["secretName"]}} in volumes
    issuer = one(objs, "Issuer", certificate["spec"]["issuerRef"]["name"])
    assert one(objs, "Certificate", issuer["spec"]["ca"]["secretName"])["spec"]["isCA"] is True
    assert TlsConfig.from_environment(_env(container(objs, "celmut-controller"))) is None  # the controller keeps out
    assert not allows(one(objs, "Role", "celmut-controller")["rules"], "", "secrets", "create")


# --- the controller and RBAC -------------------------------------------------------------------------


def test_the_controller_is_leader_elected_in_the_release_namespace(rendered: dict[str, list[Obj]]) -> None:
    controller = container(rendered["default"], "celmut-controller")
    args = parsed_args(controller["args"])
    assert (args.command, args.from_cluster, args.leader_elect) == ("controller", True, True)
    assert (args.lease_namespace, args.lease_name, args.metrics_port) == ("celmut", "celmut-controller", 8444)
    role = one(rendered["default"], "Role", "celmut-controller")["rules"]
    assert allows(role, "coordination.k8s.io", "leases", "update", args.lease_name)
    assert controller["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    assert controller["securityContext"]["readOnlyRootFilesystem"]


@pytest.mark.parametrize("component", ["webhook", "controller"])
def test_both_components_may_read_every_kind_celmut_watches_and_report_on_it(
    rendered: dict[str, list[Obj]], component: str
) -> None:
    rules = one(rendered["default"], "ClusterRole", f"celmut-{component}")["rules"]
    for kind in POLICY_KINDS:
        for verb in ("get", "list", "watch"):
            assert allows(rules, kind.group, kind.resource, verb), (kind.resource, verb)
        if kind.conditions_at:
            assert allows(rules, kind.group, f"{kind.resource}/status", "patch"), kind.resource
    for group, resource in (
        ("apps", "replicasets"),
        ("apps", "deployments"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
        ("", "namespaces"),
        ("", "pods"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),  # Kyverno's: is Kyverno there?
    ):
        assert allows(rules, group, resource, "watch"), resource
    assert allows(rules, "", "events", "create")
    assert allows(rules, "authorization.k8s.io", "subjectaccessreviews", "create")  # the CEL authorizer


def test_only_the_controller_writes_workloads(rendered: dict[str, list[Obj]]) -> None:
    webhook = one(rendered["default"], "ClusterRole", "celmut-webhook")["rules"]
    controller = one(rendered["default"], "ClusterRole", "celmut-controller")["rules"]
    assert allows(controller, "", "pods", "patch") and allows(controller, "", "pods/eviction", "create")
    assert allows(controller, "", "pods/resize", "patch")  # targets a policy routes through pods/resize
    assert allows(controller, "", "events", "patch")  # the EventCorrelator's count patches
    writes = {"create", "update", "patch", "delete", "deletecollection", "*"}
    webhook_writes = {(tuple(r["resources"]), v) for r in webhook for v in r["verbs"] if v in writes}
    # a SubjectAccessReview is a question (nothing is stored): the CEL authorizer's checks (issue 25)
    stored = ("events",)
    assert all(
        all(res.endswith("/status") or res in stored or res == "subjectaccessreviews" for res in resources)
        for resources, _ in webhook_writes
    )
    assert not any("*" in r["verbs"] or "*" in r["resources"] for r in webhook + controller)


def test_extra_rules_extend_each_component(rendered: dict[str, list[Obj]]) -> None:
    webhook = one(rendered["full"], "ClusterRole", "celmut-webhook")["rules"]
    controller = one(rendered["full"], "ClusterRole", "celmut-controller")["rules"]
    assert allows(webhook, "", "services", "list") and not allows(controller, "", "services", "list")
    assert allows(controller, "", "configmaps", "patch") and not allows(webhook, "", "configmaps", "patch")


# --- presets ------------------------------------------------------------------------------------------


def _loaded_documents(rendered: list[Obj]) -> dict[str, Obj]:
    """The ConfigMap documents the webhook loads with --policies, by file name."""
    paths = option(container(rendered, "celmut-webhook")["args"], "--policies")
    data = one(rendered, "ConfigMap", "celmut-policies").get("data") or {}
    mount = "/etc/celmut/policies/"
    assert all(p.startswith(mount) for p in paths)
    assert sorted(p.removeprefix(mount) for p in paths) == sorted(data)  # every file, nothing else
    return {name: yaml.safe_load(text) for name, text in data.items()}


def _generated(document: Obj) -> list[Obj]:
    expanded, errors = presets.expand([Document("rendered", 0, document)])
    assert errors == []
    return [d.content for d in expanded if d.path.startswith("<generated")]


SPOT = [
    ("spot-all", "spot-all"),
    ("spot-all-except-kube-system", "spot-all-except-kube-system"),
    ("spot-partial", "spot-partial"),
]


@pytest.mark.parametrize(("values", "policy"), SPOT)
def test_spot_presets_compile_to_the_shipped_policies(rendered: dict[str, list[Obj]], values: str, policy: str) -> None:
    documents = _loaded_documents(rendered[values])
    assert documents["spot.yaml"]["celmutNamespace"] == "celmut"  # celmut's own pods are left alone
    generated = _generated(documents["spot.yaml"])
    shipped = list(yaml.safe_load_all((ROOT / "examples" / "spot-presets" / f"{policy}.yaml").read_text()))
    assert [g["metadata"]["name"] for g in generated] == [policy, f"{policy}-daemonsets"]
    assert [g["spec"] for g in generated] == [s["spec"] for s in shipped]


def test_the_custom_spot_values_file_compiles_like_the_example(rendered: dict[str, list[Obj]]) -> None:
    generated = _generated(_loaded_documents(rendered["spot-custom"])["spot.yaml"])
    example = _generated(yaml.safe_load((ROOT / "examples" / "spot-custom-values.yaml").read_text()))
    assert [g["metadata"]["name"] for g in generated] == ["spot-custom", "spot-custom-daemonsets"]
    assert [g["spec"] for g in generated] == [e["spec"] for e in example]


def test_by_default_no_preset_policy_is_loaded(rendered: dict[str, list[Obj]]) -> None:
    assert _loaded_documents(rendered["default"]) == {}
    assert objects(rendered["default"], "PodMutation") == []


def test_gpu_slicing_and_pod_mutations_become_policies(rendered: dict[str, list[Obj]]) -> None:
    full = rendered["full"]
    (gpu,) = _generated(_loaded_documents(full)["gpu-slicing.yaml"])
    assert gpu["metadata"]["name"] == "gpu-slicing" and '"training": 8' in yaml.safe_dump(gpu)
    mutations = objects(full, "PodMutation")
    assert [m["metadata"]["name"] for m in mutations] == ["spot-web", "label-batch"]
    assert mutations[0]["metadata"]["annotations"] == {"pod-mutations.cast.ai/pod-mutation-source": "cluster"}
    expanded, errors = presets.expand(
        [Document(f"cluster:PodMutation/{m['metadata']['name']}", 0, m) for m in mutations]
    )
    assert errors == []
    assert {d.content["metadata"]["name"] for d in expanded} == {"podmutation-spot-web", "podmutation-label-batch"}


# --- limits, the HTTP allow-list and the NetworkPolicy (issue 17) -----------------------------------------


def test_connection_limits_and_evaluation_threads_reach_the_webhook(rendered: dict[str, list[Obj]]) -> None:
    default = parsed_args(container(rendered["default"], "celmut-webhook")["args"])
    assert (default.max_connections, default.tls_handshake_timeout, default.header_timeout) == (1000, 5.0, 5.0)
    assert (default.body_timeout, default.keep_alive_timeout, default.evaluation_threads) == (10.0, 30.0, 4)
    full = parsed_args(container(rendered["full"], "celmut-webhook")["args"])
    assert (full.max_connections, full.tls_handshake_timeout, full.header_timeout) == (200, 3.0, 2.5)
    assert (full.body_timeout, full.keep_alive_timeout, full.evaluation_threads) == (6.0, 60.0, 2)


def test_the_http_allow_list_reaches_the_webhook_and_the_controller(rendered: dict[str, list[Obj]]) -> None:
    for deployment in ("celmut-webhook", "celmut-controller"):
        default = parsed_args(container(rendered["default"], deployment)["args"])
        assert (default.http_allow, default.http_allow_network, default.http_allow_private_networks) == ([], [], False)
        full = parsed_args(container(rendered["full"], deployment)["args"])
        assert full.http_allow == ["https://teams.example.com/api/", "https://*.corp.example.com/"]
        assert (full.http_allow_network, full.http_timeout) == (["10.96.0.0/12"], 2.0)


def test_image_data_values_reach_both_components_and_secrets_are_read_only_when_opted_in(
    rendered: dict[str, list[Obj]],
) -> None:
    for deployment, role in (("celmut-webhook", "celmut-webhook"), ("celmut-controller", "celmut-controller")):
        default = parsed_args(container(rendered["default"], deployment)["args"])
        assert (default.image_registry_allow, default.image_pull_secrets) == ([], False)
        policy = RegistryPolicy()  # the flags' defaults are the policy's
        assert (default.image_timeout, default.image_cache_seconds, default.image_cache_entries) == (
            policy.timeout_seconds,
            policy.cache_seconds,
            policy.cache_entries,
        )
        assert not allows(one(rendered["default"], "ClusterRole", role)["rules"], "", "secrets", "get")
        full = parsed_args(container(rendered["full"], deployment)["args"])
        assert full.image_registry_allow == ["ghcr.io", "*.gcr.io", "registry.local:5000"]
        assert full.image_registry_insecure == ["registry.local:5000"]
        assert (full.image_timeout, full.image_cache_seconds, full.image_cache_entries) == (2.0, 60.0, 100)
        assert full.image_pull_secrets is True
        assert allows(one(rendered["full"], "ClusterRole", role)["rules"], "", "secrets", "get")


def test_both_components_read_global_context_entries_and_what_they_read(rendered: dict[str, list[Obj]]) -> None:
    for values in ("default", "full"):
        webhook = one(rendered[values], "ClusterRole", "celmut-webhook")["rules"]
        controller = one(rendered[values], "ClusterRole", "celmut-controller")["rules"]
        for rules in (webhook, controller):
            assert allows(rules, "kyverno.io", "globalcontextentries", "watch")
            assert allows(rules, "networking.k8s.io", "ingresses", "list") == (values == "full")  # readRules
        assert allows(controller, "kyverno.io", "globalcontextentries/status", "patch")
        assert not allows(webhook, "kyverno.io", "globalcontextentries/status", "patch")


def test_the_network_policy_lets_only_the_api_server_reach_the_webhook(rendered: dict[str, list[Obj]]) -> None:
    assert objects(rendered["default"], "NetworkPolicy") == []
    policy = one(rendered["full"], "NetworkPolicy", "celmut-webhook")["spec"]
    pod_labels = one(rendered["full"], "Deployment", "celmut-webhook")["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["policyTypes"] == ["Ingress"]
    (rule,) = policy["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 8443}]
    assert rule["from"] == [
        {"ipBlock": {"cidr": "10.0.0.0/28"}},
        {"ipBlock": {"cidr": "192.168.10.5/32"}},
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
    ]


def test_a_network_policy_without_api_server_addresses_is_refused(helm: Path) -> None:
    with pytest.raises(AssertionError, match=r"networkPolicy\.apiServerCIDRs"):
        helm_tool.template(helm, None, "--set", "networkPolicy.enabled=true")
