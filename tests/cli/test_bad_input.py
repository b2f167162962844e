"""Bad input on every subcommand: exit 2 and one clear ``error:`` line naming what is wrong, never a
Python traceback (issue 15, item 2). Each row names the input and the fragment the message must hold.

The offline commands run in-process through ``celmut.main.main`` (the console script calls exactly
that); ``serve``, ``controller`` and ``playground`` run as processes, as users start them."""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from celmut.main import COMMANDS, build_parser, execute, main

ROOT = Path(__file__).resolve().parents[2]
POD = str(ROOT / "examples/resources/pod.yaml")
POLICIES = str(ROOT / "policies/examples")
PRESET = str(ROOT / "presets/gpu-slicing.yaml")
SUITE = str(ROOT / "tests/data/kyverno-tests/no-namespace")
CLASSIC = "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: classic}\nspec: {rules: []}\n"
LABEL_POLICY = """apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: label}
spec:
  matchConstraints: {resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}
  mutations: [{patchType: JSONPatch, jsonPatch: {expression: '[JSONPatch{op: "add", path: "/metadata/labels/x", value: "y"}]'}}]
"""
FILES = {
    "configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n",
    "scalar.yaml": "just a string\n",
    "list.yaml": "- a\n- b\n",
    "typo.yaml": LABEL_POLICY.replace("kind: MutatingPolicy", "kind: MutatingPolicies"),
    "old-group.yaml": LABEL_POLICY.replace("policies.kyverno.io/v1", "kyverno.io/v1"),
    "classic.yaml": CLASSIC,
    "no-kind.yaml": "apiVersion: v1\nmetadata: {name: web}\n",
    "broken.yaml": "kind: Pod\nmetadata: {name: [unclosed\n",
    "garbage.pem": "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n",
    "values-policies-scalar.yaml": "apiVersion: cli.kyverno.io/v1alpha1\nkind: Values\npolicies: 5\n",
    "suite-missing/kyverno-test.yaml": "name: t\npolicies: [missing-policy.yaml]\nresources: [missing.yaml]\nresults: []\n",
    "suite-scalar/kyverno-test.yaml": "just a string\n",
    "suite-bad-policy/kyverno-test.yaml": "name: t\npolicies: [../typo.yaml]\nresources: [../pod.yaml]\nresults: []\n",
    "pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec: {containers: []}\n",
    "empty-dir/.keep": "",
    "empty.yaml": "",
    "only-separators.yaml": "# nothing here\n---\n---\n",
    "context-images-scalar.yaml": "apiVersion: cli.kyverno.io/v1alpha1\nkind: Context\nspec: {images: 5}\n",
    "userinfo-scalar.yaml": "apiVersion: cli.kyverno.io/v1alpha1\nkind: UserInfo\nuserInfo: 7\n",
    "wrapper-scalar.yaml": "apiVersion: cli.kyverno.io/v1alpha1\nkind: ClusterResource\nspec: {resources: 5}\n",
    "suite-bad-context/kyverno-test.yaml": "name: t\npolicies: [../pod.yaml]\nresources: [../pod.yaml]\n"
    "context: ../context-images-scalar.yaml\nresults: []\n",
    "suite-bad-gctx/kyverno-test.yaml": "name: t\npolicies: [../pod.yaml]\nresources: [../pod.yaml]\nresults: []\n"
    "globalContextEntries: [{name: x, data: [], projections: [{name: p, path: '[*.a'}]}]\n",
    "suite-bad-wrapper/kyverno-test.yaml": "name: t\npolicies: [../pod.yaml]\nresources: [../pod.yaml]\n"
    "clusterResources: [../wrapper-scalar.yaml]\nresults: []\n",
    "not-json.json": '{"a": 1,\n',
    "json-policy.yaml": "apiVersion: policies.kyverno.io/v1\nkind: MutatingPolicy\nmetadata: {name: j}\n"
    "spec: {evaluation: {mode: JSON}, mutations: []}\n",
    "suite-bad-json/kyverno-test.yaml": "name: t\npolicies: [../json-policy.yaml]\njsonPayloads: [../not-json.json]\nresults: []\n",
    "suite-missing-json/kyverno-test.yaml": "name: t\npolicies: [../json-policy.yaml]\njsonPayload: nowhere.json\nresults: []\n",
    "suite-json-scalar/kyverno-test.yaml": "name: t\npolicies: [../json-policy.yaml]\njsonPayloads: 5\nresults: []\n",
    "values-unknown-field.yaml": "apiVersion: cli.kyverno.io/v1alpha1\nkind: Values\n"
    "policies: [{name: p, resources: [{name: r, valeus: {a: b}}]}]\n",
    "values-spec.yaml": "apiVersion: cli.kyverno.io/v1alpha1\nkind: Values\nspec: {globalValues: {a: b}}\n",
    "context-unknown-field.yaml": "apiVersion: cli.kyverno.io/v1alpha1\nkind: Context\n"
    "spec: {globalContext: [{name: regions, vaule: eu-west-1}]}\n",
    "suite-values-unknown/kyverno-test.yaml": "name: t\npolicies: [../pod.yaml]\nresources: [../pod.yaml]\n"
    "variables: ../values-unknown-field.yaml\nresults: []\n",
    "suite-inline-values-unknown/kyverno-test.yaml": "name: t\npolicies: [../pod.yaml]\nresources: [../pod.yaml]\n"
    "values: {kind: Values, globalValues: {a: b}}\nresults: []\n",
    "suite-context-unknown/kyverno-test.yaml": "name: t\npolicies: [../pod.yaml]\nresources: [../pod.yaml]\n"
    "context: ../context-unknown-field.yaml\nresults: []\n",
    "lookup.yaml": LABEL_POLICY.replace('value: "y"', 'value: resource.Get("v1", "configmaps", "a", "b").metadata.name'),
}


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bad-input")
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@dataclass(frozen=True)
class Case:
    name: str  # what the row proves
    argv: tuple[str, ...]  # {bad} is the fixture directory
    message: str  # a fragment of the error the user sees


OFFLINE = [
    Case("eval: a missing --object file", ("eval", "object", "--object", "{bad}/nope.yaml"), "nope.yaml: no such file"),
    Case("eval: --object that is not a map", ("eval", "object", "--object", "{bad}/scalar.yaml"), "must hold a map"),
    Case("eval: --var that is not JSON", ("eval", "variables.x", "--var", "x={"), "--var x: invalid JSON"),
    Case("eval: reads object but no --object given", ("eval", "object.metadata.name"), "no --object given"),
    Case("eval: a CEL syntax error", ("eval", "1 +"), "Syntax error"),
    Case("apply: a missing policy path", ("apply", "{bad}/nope", "-r", POD), "nope: no such file or directory"),
    Case("apply: a missing resource file", ("apply", POLICIES, "-r", "{bad}/nope.yaml"), "nope.yaml: no such file"),
    Case("apply: no -r and no --target-resources", ("apply", POLICIES), "nothing to apply the policies to"),
    Case("apply: --values file holding a scalar", ("apply", POLICIES, "-r", POD, "--values", "{bad}/scalar.yaml"),
         "scalar.yaml: the values document: must be a map, not a string"),
    Case("apply: --values with policies: 5", ("apply", POLICIES, "-r", POD, "--values", "{bad}/values-policies-scalar.yaml"),
         "policies: must be a list, not a number"),
    # Kyverno: utils/common LoadYAML → UnmarshalStrict, `json: unknown field "valeus"` (values/load.go).
    Case("apply: --values with a misspelt nested field",
         ("apply", POLICIES, "-r", POD, "--values", "{bad}/values-unknown-field.yaml"),
         'values-unknown-field.yaml: policies[0].resources[0].valeus: unknown field "valeus"'),
    Case("apply: --values wrapping its fields in spec: (ValuesSpec is inlined)",
         ("apply", POLICIES, "-r", POD, "--values", "{bad}/values-spec.yaml"), 'values-spec.yaml: spec: unknown field "spec"'),
    Case("apply: a resource without kind", ("apply", POLICIES, "-r", "{bad}/no-kind.yaml"), "kind not set"),
    # kubectl apply -f of an empty file: "error: no objects passed to apply"; nothing done in silence, exit 2
    Case("apply: an empty resource file", ("apply", POLICIES, "-r", "{bad}/empty.yaml"),
         "-r {bad}/empty.yaml: no resource in it"),
    Case("apply: a resource file of only '---' and comments", ("apply", POLICIES, "-r", "{bad}/only-separators.yaml"),
         "only-separators.yaml: no resource in it (empty, or only '---' and comments)"),
    Case("apply: a resource folder without YAML", ("apply", POLICIES, "-r", "{bad}/empty-dir"), "empty-dir: no resource in it"),
    Case("apply: an empty --target-resources file", ("apply", POLICIES, "--target-resources", "{bad}/empty.yaml"),
         "--target-resources {bad}/empty.yaml: no resource in it"),
    Case("apply: a resource that is a scalar", ("apply", POLICIES, "-r", "{bad}/scalar.yaml"), "not a Kubernetes object: a string"),
    Case("apply: a scalar among cluster resources", ("apply", POLICIES, "-r", POD, "--cluster-resources", "{bad}/list.yaml"),
         "list.yaml: not a Kubernetes object: a list"),
    Case("apply: invalid YAML", ("apply", POLICIES, "-r", "{bad}/broken.yaml"), "broken.yaml: invalid YAML at line 3"),
    Case("apply: a ConfigMap as a policy", ("apply", "{bad}/configmap.yaml", "-r", POD),
         "configmap.yaml: ConfigMap (v1) settings: not a policy"),
    Case("apply: a scalar as a policy", ("apply", "{bad}/scalar.yaml", "-r", POD), "scalar.yaml: a string: not a Kubernetes object"),
    Case("apply: a typo'd kind", ("apply", "{bad}/typo.yaml", "-r", POD), "did you mean MutatingPolicy (policies.kyverno.io)?"),
    Case("apply: MutatingPolicy under kyverno.io/v1", ("apply", "{bad}/old-group.yaml", "-r", POD),
         "a MutatingPolicy has apiVersion policies.kyverno.io/…, not kyverno.io/v1"),
    Case("apply: a classic ClusterPolicy", ("apply", "{bad}/classic.yaml", "-r", POD), "Write the rule as a MutatingPolicy"),
    Case("apply: a policy directory without policies", ("apply", "{bad}/empty-dir", "-r", POD), "no policies found in"),
    Case("apply: stdin for the policies and the resources", ("apply", "-", "-r", "-"), "can be read once"),
    Case("apply: --set and --values-file together", ("apply", POLICIES, "-r", POD, "--set", "a=b", "-f", "{bad}/pod.yaml"),
         "either with --set or with --values-file"),
    Case("apply: --set without a value", ("apply", POLICIES, "-r", POD, "--set", "request.operation"),
         "--set 'request.operation': expected KEY=VALUE"),
    Case("apply: a missing -e exception file", ("apply", POLICIES, "-r", POD, "-e", "{bad}/nope.yaml"), "nope.yaml: no such file"),
    Case("apply: a ConfigMap given with -e", ("apply", POLICIES, "-r", POD, "-e", "{bad}/configmap.yaml"),
         "configmap.yaml: ConfigMap settings: not a PolicyException (given with --exception)"),
    Case("apply: a scalar given with --exception", ("apply", POLICIES, "-r", POD, "--exception", "{bad}/scalar.yaml"),
         "scalar.yaml: a string: not a PolicyException"),
    Case("apply: a missing --userinfo file", ("apply", POLICIES, "-r", POD, "-u", "{bad}/nope.yaml"), "nope.yaml: no such file"),
    Case("apply: --userinfo whose userInfo is a number", ("apply", POLICIES, "-r", POD, "-u", "{bad}/userinfo-scalar.yaml"),
         "userInfo: must be a map, not a number"),
    Case("apply: a missing --context-file", ("apply", POLICIES, "-r", POD, "--context-file", "{bad}/nope.yaml"),
         "nope.yaml: no such file"),
    Case("apply: --context-file whose spec.images is a number",
         ("apply", POLICIES, "-r", POD, "--context-file", "{bad}/context-images-scalar.yaml"),
         "spec.images: must be a list, not a number"),
    # Kyverno: context/load.go → LoadYAML → UnmarshalStrict, `json: unknown field "vaule"`.
    Case("apply: --context-file with a misspelt globalContext field",
         ("apply", POLICIES, "-r", POD, "--context-file", "{bad}/context-unknown-field.yaml"),
         'context-unknown-field.yaml: spec.globalContext[0].vaule: unknown field "vaule"'),
    Case("apply: a ClusterResource whose spec.resources is a number",
         ("apply", POLICIES, "-r", POD, "--cluster-resources", "{bad}/wrapper-scalar.yaml"),
         "wrapper-scalar.yaml: spec.resources: must be a list, not a number"),
    Case("apply: --output-file in a missing directory", ("apply", POLICIES, "-r", POD, "--output-file", "{bad}/no/x.yaml"),
         "--output-file {bad}/no/x.yaml: no such directory"),
    Case("apply: --output-file that is a directory", ("apply", POLICIES, "-r", POD, "--output-file", "{bad}/empty-dir"),
         "is a directory (use --output-dir"),
    Case("apply: --output-dir that is a file", ("apply", POLICIES, "-r", POD, "--output-dir", "{bad}/pod.yaml"),
         "pod.yaml: not a directory"),
    Case("apply: --namespace without --cluster (it would select nothing)", ("apply", POLICIES, "-r", POD, "-n", "shop"),
         "--namespace is read with --cluster only"),
    Case("apply: --context without --cluster", ("apply", POLICIES, "-r", POD, "--context", "prod"),
         "--context is read with --cluster only"),
    Case("apply: --cluster with a kubeconfig that is not a map",
         ("apply", POLICIES, "--cluster", "--kubeconfig", "{bad}/scalar.yaml"), "no usable cluster configuration"),
    Case("apply: --cluster with a missing kubeconfig",
         ("apply", POLICIES, "--cluster", "--kubeconfig", "{bad}/nope.yaml"), "no usable cluster configuration"),
    Case("explain: a missing object file", ("explain", "-f", "{bad}/nope.yaml", POLICIES), "nope.yaml: no such file"),
    Case("explain: no policies for -f", ("explain", "-f", POD), "give the policies to explain it with"),
    Case("explain: a field that is not a JSON pointer", ("explain", "-f", POD, POLICIES, "--field", "metadata"),
         "expected a JSON pointer"),
    Case("explain: invalid YAML", ("explain", "-f", "{bad}/broken.yaml", POLICIES), "broken.yaml: invalid YAML at line 3"),
    Case("explain: a ConfigMap as a policy", ("explain", "-f", POD, "{bad}/configmap.yaml"), "not a policy"),
    Case("test: a path that does not exist", ("test", "{bad}/nope"), "nope: no such file or directory"),
    Case("test: a suite naming missing files", ("test", "{bad}/suite-missing"), "missing-policy.yaml: no such file"),
    Case("test: a suite that is a scalar", ("test", "{bad}/suite-scalar"), "a Test must be a map, not a string"),
    Case("test: a suite whose policy is unsupported", ("test", "{bad}/suite-bad-policy"), "did you mean MutatingPolicy"),
    Case("test: a suite whose context file is malformed", ("test", "{bad}/suite-bad-context"),
         "spec.images: must be a list, not a number"),
    Case("test: a suite whose values file has an unknown field", ("test", "{bad}/suite-values-unknown"),
         'policies[0].resources[0].valeus: unknown field "valeus"'),
    Case("test: a suite whose inline values (a ValuesSpec) carry kind", ("test", "{bad}/suite-inline-values-unknown"),
         'values: kind: unknown field "kind"'),
    Case("test: a suite whose context file has an unknown field", ("test", "{bad}/suite-context-unknown"),
         'spec.globalContext[0].vaule: unknown field "vaule"'),
    Case("test: a suite with an invalid JMESPath projection", ("test", "{bad}/suite-bad-gctx"),
         "globalContextEntries[0].projections[0].path: invalid JMESPath"),
    Case("test: a suite whose ClusterResource is malformed", ("test", "{bad}/suite-bad-wrapper"),
         "spec.resources: must be a list, not a number"),
    Case("test: a JSON payload that is not JSON names the file and position", ("test", "{bad}/suite-bad-json"),
         "not-json.json: not a JSON document: Expecting property name enclosed in double quotes at line 2"),
    Case("test: a JSON payload that does not exist names it", ("test", "{bad}/suite-missing-json"),
         "failed to load JSON payload: {bad}/suite-missing-json/nowhere.json: no such file"),
    Case("test: jsonPayloads that is not a list of files", ("test", "{bad}/suite-json-scalar"),
         "jsonPayloads: must be a file name or a list of file names"),
    Case("test: a --test-case-selector with an unknown key", ("test", "{bad}/suite-scalar", "-t", "polcy=x"),
         "expected policy=GLOB"),
    Case("test: --junit in a missing directory", ("test", SUITE, "--junit", "{bad}/no/j.xml"), "--junit {bad}/no/j.xml: no such directory"),
    Case("compile: a missing file", ("compile", "{bad}/nope.yaml"), "nope.yaml: no such file"),
    Case("compile: a ConfigMap", ("compile", "{bad}/configmap.yaml"), "ConfigMap (v1) settings: not a policy"),
    Case("compile: policies but no preset", ("compile", POLICIES), "no preset documents found"),
    Case("compile --to-map: a policy using a Kyverno-only library", ("compile", "--to-map", "{bad}/lookup.yaml"),
         "MutatingPolicy label cannot run as a MutatingAdmissionPolicy: spec.mutations[0].jsonPatch: resource.Get"),
    Case("compile --to-map: a ConfigMap", ("compile", "--to-map", "{bad}/configmap.yaml"), "not a policy"),
    Case("webhook-config: a missing CA bundle",
         ("webhook-config", "--url", "https://x", "--ca-bundle", "{bad}/nope.pem", "--policies", POLICIES), "nope.pem"),
    Case("webhook-config: a CA bundle that is not PEM certificates (the API server refuses it)",
         ("webhook-config", "--url", "https://x", "--ca-bundle", "{bad}/garbage.pem", "--policies", POLICIES),
         "garbage.pem: not PEM certificates"),
    Case("webhook-config: a URL the API server refuses (http)",
         ("webhook-config", "--url", "http://x", "--policies", POLICIES), "'https' is the only allowed URL scheme"),
    Case("webhook-config: a missing policy path",
         ("webhook-config", "--url", "https://x", "--policies", "{bad}/nope"), "nope"),
    Case("webhook-config: a ConfigMap as a policy",
         ("webhook-config", "--url", "https://x", "--policies", "{bad}/configmap.yaml"), "not a policy"),
    Case("webhook-config: both --service and --url",
         ("webhook-config", "--service", "a", "--url", "https://x", "--policies", POLICIES), "not both"),
    Case("webhook-config: nothing to register", ("webhook-config",), "nothing to register"),
    Case("version: --kubeconfig without --from-cluster", ("version", "--kubeconfig", "{bad}/scalar.yaml"),
         "--kubeconfig is read with --from-cluster only"),
    Case("version: --from-cluster with a kubeconfig that is not a map",
         ("version", "--from-cluster", "--kubeconfig", "{bad}/scalar.yaml"), "no usable cluster configuration"),
    Case("manifests: a namespace that is not a DNS label", ("manifests", "--namespace", "Bad_NS"), "RFC 1123 label"),
    Case("manifests: a timeout over 30 s", ("manifests", "--timeout", "31"), "must be 1-30 seconds"),
]  # fmt: skip

PROCESSES = [
    Case("serve: --tls-cert that does not exist",
         ("serve", "--policies", POLICIES, "--tls-cert", "/nonexistent.crt", "--tls-key", "/nonexistent.key"),
         "/nonexistent.crt: no such file"),
    Case("serve: a garbage PEM certificate",
         ("serve", "--policies", POLICIES, "--tls-cert", "{bad}/garbage.pem", "--tls-key", "{bad}/garbage.pem"),
         "garbage.pem: not a PEM certificate"),
    Case("serve: no TLS at all", ("serve", "--policies", POLICIES), "TLS is required"),
    Case("serve: a ConfigMap as a policy", ("serve", "--policies", "{bad}/configmap.yaml", "--self-signed",
                                            "--cert-dir", "{bad}/tls", "--port", "0"), "not a policy"),
    Case("serve: a kubeconfig that is not a map", ("serve", "--from-cluster", "--kubeconfig", "{bad}/scalar.yaml",
                                                   "--self-signed", "--cert-dir", "{bad}/tls", "--port", "0"),
         "no usable cluster configuration"),
    Case("controller: a kubeconfig that is not a map", ("controller", "--from-cluster", "--kubeconfig", "{bad}/scalar.yaml"),
         "no usable cluster configuration"),
    Case("controller: a missing policy path", ("controller", "--policies", "{bad}/nope", "--dry-run"), "nope: no such file"),
    Case("controller: a ConfigMap as a policy", ("controller", "--policies", "{bad}/configmap.yaml", "--dry-run"),
         "not a policy"),
    Case("controller: neither --policies nor --from-cluster", ("controller", "--dry-run"), "give --policies PATH"),
    Case("playground: a non-loopback --host without TLS", ("playground", "--host", "0.0.0.0", "--port", "0"),
         "serves the playground beyond this machine: give --tls-cert and --tls-key, or --self-signed"),
    Case("playground: a garbage PEM certificate",
         ("playground", "--tls-cert", "{bad}/garbage.pem", "--tls-key", "{bad}/garbage.pem", "--port", "0"),
         "garbage.pem: not a PEM certificate"),
    Case("playground: --tls-key without --tls-cert", ("playground", "--tls-key", "{bad}/garbage.pem"),
         "give --tls-cert and --tls-key together"),
    Case("controller: a --webhook-url with a query (Kubernetes' ValidateWebhookURL)",
         ("controller", "--policies", POLICIES, "--manage-webhook-configuration", "celmut",
          "--webhook-url", "https://10.0.0.5:8443/?x=1"), "query parameters are not permitted"),
]  # fmt: skip


def argv(case: Case, bad: Path) -> list[str]:
    return [arg.replace("{bad}", str(bad)) for arg in case.argv]


@pytest.mark.parametrize("case", OFFLINE, ids=[c.name for c in OFFLINE])
def test_offline_commands_reject_bad_input_with_one_clear_error(
    case: Case, bad: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(argv(case, bad))
    out, err = capsys.readouterr()
    assert code == 2, err
    # `test` reports a test that cannot run in its table (stdout), then ends with an error line
    message = case.message.replace("{bad}", str(bad))
    assert message in (out + err if case.argv[0] == "test" else err), out + err
    assert err.startswith("error: ") or "\nerror: " in err, err
    assert "Traceback" not in out + err and "internal error" not in err


@pytest.mark.parametrize("case", PROCESSES, ids=[c.name for c in PROCESSES])
def test_serve_and_controller_fail_fast_at_start_on_bad_input(case: Case, bad: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "celmut", *argv(case, bad)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert case.message in result.stderr, result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_every_subcommand_has_bad_input_rows() -> None:
    """The tables above cover every command main registers (a new command needs its rows)."""
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    covered = {case.argv[0] for case in OFFLINE + PROCESSES + REJECTED_BY_THE_PARSER}
    assert covered == set(subparsers.choices) and len(COMMANDS) == len(covered)


REJECTED_BY_THE_PARSER = [
    Case("apply: a path given to -o (kyverno's -o PATH is --output-file)", ("apply", POLICIES, "-r", POD, "-o", "out/x.yaml"),
         "is not an output format (yaml, json, name, patch): celmut's -o is the format; to write the mutated resources "
         "to a file as kyverno apply -o does, use --output-file out/x.yaml"),
    Case("apply: a -o that is no format", ("apply", POLICIES, "-r", POD, "-o", "wide"), "invalid choice: 'wide'"),
    Case("apply: --warn-exit-code that is no number", ("apply", POLICIES, "-r", POD, "--warn-exit-code", "x"),
         "argument --warn-exit-code: invalid int value: 'x'"),
    Case("apply: --table with --diff", ("apply", POLICIES, "-r", POD, "--table", "--diff"), "not allowed with argument"),
    Case("apply: --output-file with --output-dir", ("apply", POLICIES, "-r", POD, "--output-file", "a", "--output-dir", "b"),
         "not allowed with argument"),
    Case("test: an unknown -o format", ("test", SUITE, "-o", "html"), "invalid choice: 'html'"),
    # allow_abbrev=False: an abbreviation is an unknown flag, never the long flag it starts (issue 29)
    Case("apply: an abbreviated long flag is not accepted", ("apply", POLICIES, "-r", POD, "--cluster-res", POD),
         "unrecognized arguments: --cluster-res"),
    Case("apply: --warn-no-pass takes no value", ("apply", POLICIES, "-r", POD, "--warn-no-pass=1"),
         "argument --warn-no-pass: ignored explicit argument '1'"),
    Case("version: --from-cluster takes no value", ("version", "--from-cluster=yes"), "ignored explicit argument"),
    Case("completion: a shell celmut does not complete", ("completion", "powershell"), "invalid choice: 'powershell'"),
    Case("completion: no shell", ("completion",), "the following arguments are required: shell"),
]  # fmt: skip


@pytest.mark.parametrize("case", REJECTED_BY_THE_PARSER, ids=[c.name for c in REJECTED_BY_THE_PARSER])
def test_flags_the_parser_rejects_exit_2_with_the_usage(case: Case, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(list(case.argv))
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err.startswith(f"usage: celmut {case.argv[0]} ") and case.message in err, err


VALID = {  # enough arguments that only the unknown flag is wrong
    "eval": ["eval", "1"],
    "apply": ["apply", "policies"],
    "test": ["test", "tests"],
    "compile": ["compile", "presets"],
    "explain": ["explain", "-f", "pod.yaml", "policies"],
    "webhook-config": ["webhook-config", "--ca-bundle", "ca.crt"],
}


@pytest.mark.parametrize(
    "command",
    ["eval", "apply", "explain", "test", "compile", "serve", "webhook-config", "controller", "manifests", "version"],
)
def test_an_unknown_flag_prints_the_usage_of_its_subcommand(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*VALID.get(command, [command]), "--no-such-flag"])
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err.startswith(f"usage: celmut {command} ") and "unrecognized arguments: --no-such-flag" in err


def _boom(args: argparse.Namespace) -> int:
    raise RuntimeError("something celmut did not expect")


def test_an_unexpected_error_is_one_line_naming_debug_and_exit_70(capsys: pytest.CaptureFixture[str]) -> None:
    code = execute(argparse.Namespace(run=_boom, debug=False))
    err = capsys.readouterr().err
    assert code == 70
    assert err.splitlines() == [
        "internal error: RuntimeError: something celmut did not expect",
        "this is a bug in celmut: run again with --debug for the traceback",
    ]


def test_debug_prints_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    code = execute(argparse.Namespace(run=_boom, debug=True))
    err = capsys.readouterr().err
    assert code == 70 and "Traceback (most recent call last)" in err and "in _boom" in err


def test_debug_is_accepted_before_and_after_the_command(bad: Path) -> None:
    parser = build_parser()
    assert parser.parse_args(["--debug", "manifests"]).debug is True
    assert parser.parse_args(["manifests", "--debug"]).debug is True
    assert parser.parse_args(["manifests"]).debug is False
