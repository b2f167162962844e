"""`celmut webhook-config`: what the Helm chart registers, for the same settings (compared with `helm
template`), a --from-cluster mode, one webhook per failurePolicy from policy files, the chart's defaults,
and exit 2 rather than an empty configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from celmut.kube import certs
from celmut.main import main

from . import helm as helm_tool

POLICIES = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: strict}
spec:
  webhookConfiguration: {timeoutSeconds: 15}
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  mutations: [{patchType: JSONPatch, jsonPatch: {expression: '[JSONPatch{op: "add", path: "/a", value: 1}]'}}]
---
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: lenient}
spec:
  failurePolicy: Ignore
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}]
  mutations: [{patchType: JSONPatch, jsonPatch: {expression: '[JSONPatch{op: "add", path: "/a", value: 1}]'}}]
"""
Obj = dict[str, Any]


def render(capsys: pytest.CaptureFixture[str], *argv: str) -> Obj:
    code = main(["webhook-config", *argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return yaml.safe_load(captured.out)


def with_policies(tmp_path: Path, text: str = POLICIES) -> list[str]:
    (tmp_path / "p.yaml").write_text(text)
    (tmp_path / "ca.pem").write_bytes(certs.new_ca("test-ca").cert_pem)
    return ["--policies", str(tmp_path / "p.yaml"), "--ca-bundle", str(tmp_path / "ca.pem")]


def by_name(config: Obj) -> dict[str, Obj]:
    """The webhooks that match something (the controller's two default ones stay, empty, when unused)."""
    return {w["name"]: w for w in config["webhooks"] if w["rules"]}


def chart_webhooks(helm: Path, *values: str, release: str = "celmut", namespace: str = "celmut") -> list[Obj]:
    objects = helm_tool.template(
        helm, None, "--set", "webhook.managedRules=false", *values, release=release, namespace=namespace
    )
    (config,) = [o for o in objects if o["kind"] == "MutatingWebhookConfiguration"]
    return list(config["webhooks"])


@pytest.mark.parametrize(
    ("chart_values", "flags"),
    [
        pytest.param([], [], id="the-defaults"),
        pytest.param(
            [
                *("--set", "webhook.failurePolicy=Fail"),
                *("--set", "webhook.reinvocationPolicy=IfNeeded"),
                *("--set", "webhook.timeoutSeconds=5"),
            ],
            ["--failure-policy", "Fail", "--reinvocation-policy", "IfNeeded", "--timeout", "5"],
            id="failure-reinvocation-timeout",
        ),
        pytest.param(
            [
                *("--set", "webhook.excludedNamespaces={team-x,team-y}"),
                *("--set", "webhook.failExcludedNamespaces={kube-system,infra}"),
            ],
            [
                *("--exclude-namespace", "team-x", "--exclude-namespace", "team-y"),
                *("--fail-exclude-namespace", "kube-system", "--fail-exclude-namespace", "infra"),
            ],
            id="excluded-namespaces",
        ),
        pytest.param(
            [
                *("--set-string", "webhook.namespaceSelector.matchLabels.celmut\\.io/enabled=true"),
                *("--set", "webhook.optOutLabel=example.com/skip"),
            ],
            [
                "--namespace-selector",
                "{matchLabels: {celmut.io/enabled: 'true'}}",
                "--opt-out-label",
                "example.com/skip",
            ],
            id="namespace-selector-and-opt-out-label",
        ),
        pytest.param(
            ["--set-json", "webhook.failExcludedNamespaces=[]"],
            ["--fail-exclude-namespace", ""],
            id="no-fail-exclusions",
        ),
    ],
)
def test_from_cluster_prints_exactly_the_charts_webhooks(
    helm: Path, capsys: pytest.CaptureFixture[str], chart_values: list[str], flags: list[str]
) -> None:
    chart = chart_webhooks(helm, *chart_values, release="celmut-tools", namespace="tools")
    printed = render(capsys, "--from-cluster", "--service", "celmut-tools", "--namespace", "tools", *flags)
    assert printed["webhooks"] == chart
    assert printed["metadata"]["name"] == "celmut"


def test_the_defaults_are_the_charts(helm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`celmut webhook-config --from-cluster` with nothing else is the chart's default install."""
    printed = by_name(render(capsys, "--from-cluster"))
    assert list(printed) == ["fail.mutate.celmut.io", "ignore.mutate.celmut.io"]
    assert printed["fail.mutate.celmut.io"]["failurePolicy"] == "Ignore"  # an outage never blocks the cluster
    assert printed["fail.mutate.celmut.io"]["namespaceSelector"]["matchExpressions"][0]["values"] == [
        "celmut",
        "kube-system",
    ]
    assert printed["ignore.mutate.celmut.io"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["celmut"]
    assert list(printed.values()) == chart_webhooks(helm)
    assert all("replicasets" not in r["resources"] for w in printed.values() for r in w["rules"])


def test_from_cluster_adds_the_rules_of_policy_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cluster PodMutation (failurePolicy Ignore) must be reachable even when the files hold only Fail
    policies: --from-cluster registers both webhooks, each with the chart's rules and the files' rules."""
    printed = by_name(render(capsys, "--from-cluster", *with_policies(tmp_path)))
    for webhook in printed.values():
        assert {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]} in webhook[
            "rules"
        ]
        assert any(r["resources"] == ["configmaps"] for r in webhook["rules"])
        assert webhook["clientConfig"]["caBundle"]


def test_one_webhook_per_failure_policy_with_rules_from_the_policies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """What the controller writes (webhook.managedRules): the strict policy has its own timeoutSeconds, so it
    gets a webhook of that timeout, as Kyverno's fine-grained webhooks (pkg/controllers/webhook)."""
    config = render(capsys, *with_policies(tmp_path), "--service", "celmut", "--namespace", "celmut-system")
    webhooks = by_name(config)
    assert list(webhooks) == ["fail-timeout-15.mutate.celmut.io", "ignore.mutate.celmut.io"]
    fail, ignore = webhooks["fail-timeout-15.mutate.celmut.io"], webhooks["ignore.mutate.celmut.io"]
    assert fail["clientConfig"]["service"] == {
        "name": "celmut",
        "namespace": "celmut-system",
        "path": "/mutate/fail/timeout-15",
        "port": 443,
    }
    assert ignore["clientConfig"]["service"]["path"] == "/mutate/ignore/default"
    pods = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"], "scope": "*"}
    assert pods in fail["rules"]
    assert any("deployments" in r["resources"] for r in fail["rules"])  # autogen variants are registered too
    assert all("replicasets" not in r["resources"] for r in fail["rules"])  # … but never ReplicaSets
    assert ignore["rules"] == [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["configmaps"],
            "scope": "*",
        }
    ]
    assert config["metadata"]["labels"] == {"webhook.celmut.io/managed-by": "celmut-controller"}
    assert fail["timeoutSeconds"] == 15 and ignore["timeoutSeconds"] == 10
    assert fail["failurePolicy"] == ignore["failurePolicy"] == "Ignore"  # the chart's default
    assert fail["namespaceSelector"]["matchExpressions"][0]["values"] == ["celmut-system", "kube-system"]
    assert ignore["namespaceSelector"]["matchExpressions"][0]["values"] == ["celmut-system"]
    for webhook in config["webhooks"]:
        assert webhook["sideEffects"] == "NoneOnDryRun" and webhook["admissionReviewVersions"] == ["v1"]
        assert webhook["objectSelector"] == {
            "matchExpressions": [{"key": "celmut.io/ignore", "operator": "DoesNotExist"}]
        }


def test_only_the_failure_policies_present_are_registered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    strict_only = POLICIES.split("---")[0]
    config = render(capsys, *with_policies(tmp_path, strict_only), "--failure-policy", "Fail")
    with_rules = [(w["name"], w["failurePolicy"]) for w in config["webhooks"] if w["rules"]]
    assert with_rules == [("fail-timeout-15.mutate.celmut.io", "Fail")]


def test_a_url_client_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = render(capsys, *with_policies(tmp_path), "--url", "https://celmut.example:8443/")
    assert {w["clientConfig"]["url"] for w in config["webhooks"] if w["rules"]} == {
        "https://celmut.example:8443/mutate/fail/timeout-15",
        "https://celmut.example:8443/mutate/ignore/default",
    }


NOT_AT_ADMISSION = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: background-only}
spec:
  evaluation: {admission: {enabled: false}, mutateExisting: {enabled: true}}
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  mutations: [{patchType: JSONPatch, jsonPatch: {expression: '[JSONPatch{op: "add", path: "/a", value: 1}]'}}]
"""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param([], "nothing to register: give --from-cluster", id="no-policies-no-cluster"),
        pytest.param(["--from-cluster", "--url", "https://x", "--service", "s"], "not both", id="service-and-url"),
        pytest.param(["--from-cluster", "--timeout", "31"], "--timeout 31: must be 1-30", id="timeout"),
        pytest.param(
            ["--from-cluster", "--namespace-selector", "{matchExpressions: [{key: a, operator: Is}]}"],
            "--namespace-selector: matchExpressions[0].operator must be one of",
            id="bad-selector",
        ),
        pytest.param(["--from-cluster", "--ca-bundle", "/nonexistent/ca.pem"], "/nonexistent/ca.pem", id="no-ca-file"),
        pytest.param(["--from-cluster", "--ca-bundle", "/etc/hostname"], "not PEM certificates", id="not-a-ca-file"),
        # Kubernetes' ValidateWebhookURL (k8s.io/apiserver/pkg/util/webhook/validation.go), https forced
        pytest.param(
            ["--from-cluster", "--url", "http://celmut.example"], "'https' is the only allowed URL scheme", id="http"
        ),
        pytest.param(["--from-cluster", "--url", "https:///mutate"], "host must be specified", id="no-host"),
        pytest.param(
            ["--from-cluster", "--url", "https://u:p@celmut.example"], "user information is not permitted", id="user"
        ),
        pytest.param(
            ["--from-cluster", "--url", "https://celmut.example/#x"], "fragments are not permitted", id="frag"
        ),
        pytest.param(
            ["--from-cluster", "--url", "https://celmut.example/?a=1"], "query parameters are not permitted", id="query"
        ),
        pytest.param(["--from-cluster", "--url", "https://celmut.example:port"], "must be a valid URL", id="port"),
        pytest.param(
            ["--from-cluster", "--policy-selector", "a b"],
            "--policy-selector: policy selector",
            id="bad-policy-selector",
        ),
    ],
)
def test_bad_input_exits_2_naming_it(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(["webhook-config", *argv]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""


def test_an_empty_configuration_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["webhook-config", *with_policies(tmp_path, NOT_AT_ADMISSION)]) == 2
    captured = capsys.readouterr()
    assert "refusing to print an empty configuration" in captured.err and captured.out == ""


def test_only_the_policies_celmut_owns_are_registered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Next to Kyverno, the policies Kyverno serves must not be sent to celmut (issue 20): the strict
    policy is labelled for celmut, the lenient one is Kyverno's."""
    labelled = POLICIES.replace(
        "metadata: {name: strict}", "metadata: {name: strict, labels: {celmut.io/owner: celmut}}"
    )
    config = render(capsys, *with_policies(tmp_path, labelled), "--policy-selector", "celmut.io/owner=celmut")
    webhooks = by_name(config)
    assert list(webhooks) == ["fail-timeout-15.mutate.celmut.io"]  # the lenient (Ignore) policy is not celmut's
    assert not any("configmaps" in r["resources"] for r in webhooks["fail-timeout-15.mutate.celmut.io"]["rules"])
    everything = by_name(render(capsys, *with_policies(tmp_path, labelled)))
    assert list(everything) == ["fail-timeout-15.mutate.celmut.io", "ignore.mutate.celmut.io"]
