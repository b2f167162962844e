"""`celmut manifests`: the plain install YAML is the Helm chart's install, object for object.

Normalised away: Helm's own labels (``helm.sh/chart``, ``app.kubernetes.io/managed-by``), the hook and
ownership annotations the chart's shared CRDs carry as Helm hooks (celmut/install/shared_crds.py), and the
Namespace, which `celmut manifests` creates and Helm leaves to ``--create-namespace``. `celmut manifests`
prints the CRDs apart (``--crds``): the chart's install is both parts together.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from celmut.install.manifests import InstallOptions, manifests
from celmut.main import main

from . import helm as helm_tool

Obj = dict[str, Any]
HELM_ONLY_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by")
HOOK_ANNOTATIONS = ("helm.sh/hook", "helm.sh/hook-weight", "meta.helm.sh/release-name", "meta.helm.sh/release-namespace")


def normalised(obj: Obj) -> Obj:
    """The object without the labels only one of the two tools sets."""
    if isinstance(obj, dict):
        out = {k: normalised(v) for k, v in obj.items()}
        labels = out.get("labels")
        if isinstance(labels, dict):
            out["labels"] = {k: v for k, v in labels.items() if k not in HELM_ONLY_LABELS}
        annotations = out.get("annotations")
        if isinstance(annotations, dict):
            out["annotations"] = {k: v for k, v in annotations.items() if k not in HOOK_ANNOTATIONS}
        return out
    if isinstance(obj, list):
        return [normalised(v) for v in obj]
    return obj


def key(obj: Obj) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace", "")


def by_key(objects: list[Obj]) -> dict[tuple[str, str, str], Obj]:
    return {key(o): normalised(o) for o in objects if o["kind"] != "Namespace"}


def printed(capsys: pytest.CaptureFixture[str], *argv: str) -> list[Obj]:
    """`celmut manifests` and `celmut manifests --crds` with ``argv``: the whole install."""
    out = []
    for part in ((), ("--crds",)):
        assert main(["manifests", *part, *argv]) == 0
        out += [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    return out


def test_the_crds_are_printed_apart_so_the_uninstall_never_deletes_them(capsys: pytest.CaptureFixture[str]) -> None:
    """`celmut manifests | kubectl delete -f -` removes the workload, never a CRD (and the policies in it)."""
    assert main(["manifests"]) == 0
    workload = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert main(["manifests", "--crds"]) == 0
    crds = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert workload and not [o for o in workload if o["kind"] == "CustomResourceDefinition"]
    assert crds and {o["kind"] for o in crds} == {"Namespace", "CustomResourceDefinition"}
    assert not [o for o in workload if o["kind"] == "Namespace"]


def test_manifests_equal_the_charts_default_install(
    rendered: dict[str, list[Obj]], capsys: pytest.CaptureFixture[str]
) -> None:
    chart, plain = by_key(rendered["default"]), by_key(printed(capsys))
    assert sorted(chart) == sorted(plain)
    for object_key, obj in chart.items():
        assert plain[object_key] == obj, object_key


def test_the_options_map_to_the_chart_values(helm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values = [
        "--set",
        "replicas=3",
        "--set",
        "webhook.failurePolicy=Fail",
        "--set",
        "webhook.reinvocationPolicy=IfNeeded",
    ]
    values += ["--set", "webhook.timeoutSeconds=5", "--set", "celEngine=interpreted", "--set", "kyvernoCrds.enabled=false"]
    values += ["--set", "image.repository=registry.example/celmut", "--set", "image.tag=1.2.3"]
    values += ["--set", "webhook.excludedNamespaces={team-x}", "--set-json", "webhook.failExcludedNamespaces=[]"]
    values += ["--set-string", "webhook.namespaceSelector.matchLabels.celmut\\.io/enabled=true"]
    values += ["--set-string", "policySelector=team in (a\\,b)", "--set", "kyvernoExceptions.namespace=kyverno"]
    chart = helm_tool.template(helm, None, *values, release="celmut-tools", namespace="tools")
    argv = ["--namespace", "tools", "--name", "celmut-tools", "--replicas", "3", "--failure-policy", "Fail"]
    argv += ["--reinvocation-policy", "IfNeeded", "--timeout", "5", "--cel-engine", "interpreted", "--skip-kyverno-crds"]
    argv += ["--image", "registry.example/celmut:1.2.3", "--exclude-namespace", "team-x", "--fail-exclude-namespace", ""]
    argv += ["--namespace-selector", '{"matchLabels": {"celmut.io/enabled": "true"}}']
    argv += ["--policy-selector", "team in (a,b)", "--kyverno-exceptions-namespace", "kyverno"]
    plain = by_key(printed(capsys, *argv))
    assert by_key(chart) == plain


def test_kyverno_exceptions_off_maps_to_the_chart_value(helm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = helm_tool.template(helm, None, "--set", "kyvernoExceptions.enabled=false")
    plain = printed(capsys, "--kyverno-exceptions-namespace", "")
    assert by_key(chart) == by_key(plain)
    assert not [o for o in plain if o["metadata"]["name"].endswith("-kyverno-exceptions")]
    controller = next(o for o in plain if o["kind"] == "Deployment" and o["metadata"]["name"] == "celmut-controller")
    assert "--kyverno-exceptions-namespace" not in controller["spec"]["template"]["spec"]["containers"][0]["args"]


def test_the_namespace_comes_first_and_the_webhook_configuration_last(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifests", "--crds", "--namespace", "tools"]) == 0
    first = next(d for d in yaml.safe_load_all(capsys.readouterr().out) if d)
    assert (first["kind"], first["metadata"]["name"]) == ("Namespace", "tools")
    assert "MutatingWebhookConfiguration" not in [o["kind"] for o in printed(capsys)]  # the controller writes it
    assert main(["manifests", "--namespace", "tools", "--static-rules"]) == 0
    objects = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    kinds = [o["kind"] for o in objects]
    assert kinds.index("Deployment") < kinds.index("MutatingWebhookConfiguration") == len(kinds) - 1
    assert all(o["metadata"].get("namespace", "tools") == "tools" for o in objects)


def test_static_rules_map_to_the_chart_value(helm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chart = helm_tool.template(helm, None, "--set", "webhook.managedRules=false")
    assert by_key(chart) == by_key(printed(capsys, "--static-rules"))


def test_every_built_in_object_is_valid_for_kubernetes() -> None:
    for obj in [*manifests(InstallOptions()), *manifests(InstallOptions(managed_rules=False))]:
        if obj["kind"] != "CustomResourceDefinition":
            kubernetes_validate.validate(obj, "1.27", strict=True)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--namespace", "Bad_Namespace"], "--namespace"),
        (["--name", "x" * 51], "--name"),
        (["--timeout", "31"], "1-30"),
        (["--replicas", "-1"], "negative"),
    ],
    ids=["namespace not a DNS label", "name too long for derived names", "timeout above 30 s", "negative replicas"],
)
def test_bad_options_exit_2_naming_the_option(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["manifests", *argv]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""
