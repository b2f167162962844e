"""`celmut webhook-config`: one webhook per failurePolicy, rules from policies and autogen, dry-run
safety, timeouts, reinvocation, own-namespace exclusion and the opt-out label."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from celmut.main import main

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


def render(capsys: pytest.CaptureFixture[str], tmp_path: Path, *extra: str) -> dict:
    (tmp_path / "p.yaml").write_text(POLICIES)
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    code = main(
        ["webhook-config", "--policies", str(tmp_path / "p.yaml"), "--ca-bundle", str(tmp_path / "ca.pem"), *extra]
    )
    out = capsys.readouterr().out
    assert code == 0
    return yaml.safe_load(out)


def test_one_webhook_per_failure_policy_with_rules_from_the_policies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = render(capsys, tmp_path, "--service", "celmut", "--namespace", "celmut-system")
    webhooks = {w["failurePolicy"]: w for w in config["webhooks"]}
    fail, ignore = webhooks["Fail"], webhooks["Ignore"]
    assert fail["clientConfig"]["service"] == {
        "name": "celmut",
        "namespace": "celmut-system",
        "path": "/mutate/fail",
        "port": 443,
    }
    assert ignore["clientConfig"]["service"]["path"] == "/mutate/ignore"
    assert {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]} in fail["rules"]
    assert any("deployments" in r["resources"] for r in fail["rules"])  # autogen variants are registered too
    assert ignore["rules"] == [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}
    ]
    assert fail["timeoutSeconds"] == 15 and ignore["timeoutSeconds"] == 10
    for webhook in config["webhooks"]:
        assert webhook["sideEffects"] == "NoneOnDryRun" and webhook["admissionReviewVersions"] == ["v1"]
        assert webhook["namespaceSelector"]["matchExpressions"][0]["values"] == ["celmut-system"]
        assert webhook["objectSelector"] == {
            "matchExpressions": [{"key": "celmut.io/ignore", "operator": "DoesNotExist"}]
        }


def test_a_url_client_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = render(capsys, tmp_path, "--url", "https://celmut.example:8443/")
    assert {w["clientConfig"]["url"] for w in config["webhooks"]} == {
        "https://celmut.example:8443/mutate/fail",
        "https://celmut.example:8443/mutate/ignore",
    }


def test_service_and_url_are_exclusive(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("x")
    assert main(["webhook-config", "--ca-bundle", str(tmp_path / "ca.pem")]) == 2
    assert "give --service" in capsys.readouterr().err
