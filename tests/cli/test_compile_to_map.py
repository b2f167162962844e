"""Issue 19, offline: ``celmut compile --to-map FILE…`` prints the native MutatingAdmissionPolicy and
binding of each MutatingPolicy and preset (kyverno pkg/controllers/admissionpolicygenerator
generate-map.go, pkg/admissionpolicy/builder.go), or exits 2 naming the first construct that cannot
move into the API server; and the differential: ``celmut apply`` gives the same objects for every
shipped policy and preset that converts as for its generated MAP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from celmut.main import main

ROOT = Path(__file__).resolve().parents[2]
RESOURCES = [ROOT / "examples/resources", ROOT / "examples/preset-pods"]
CLUSTER = [ROOT / "examples/cluster.yaml", ROOT / "examples/preset-cluster.yaml"]

# A PodMutation that converts (namespace filter, label patch), and one whose distribution groups count pods.
PODMUTATION = """apiVersion: pod-mutations.cast.ai/v1
kind: PodMutation
metadata: {name: team-labels}
spec:
  filter: {workload: {namespaces: [shop]}}
  patches: [{op: add, path: /metadata/labels/team, value: shop}]
"""
GROUPS = """apiVersion: pod-mutations.cast.ai/v1
kind: PodMutation
metadata: {name: grouped}
spec:
  distributionGroups:
  - {name: a, percentage: 50, configuration: {patches: [{op: add, path: /metadata/labels/g, value: a}]}}
  - {name: b, percentage: 50, configuration: {patches: [{op: add, path: /metadata/labels/g, value: b}]}}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def written(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_mutating_policy_prints_its_map_and_binding(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "compile", "--to-map", str(ROOT / "policies/examples/add-managed-by-label.yaml"))
    assert code == 0, err
    documents = list(yaml.safe_load_all(out))
    pairs = [(d["kind"], d["metadata"]["name"]) for d in documents]
    assert pairs[:2] == [
        ("MutatingAdmissionPolicy", "mpol-add-team-label"),
        ("MutatingAdmissionPolicyBinding", "mpol-add-team-label-binding"),
    ]
    assert {d["apiVersion"] for d in documents} == {"admissionregistration.k8s.io/v1"}
    assert documents[1]["spec"] == {"policyName": "mpol-add-team-label"}


def test_map_api_version_picks_the_version_written(capsys: pytest.CaptureFixture[str]) -> None:
    policy = str(ROOT / "policies/examples/add-managed-by-label.yaml")
    code, out, _ = run(capsys, "compile", "--to-map", "--map-api-version", "v1beta1", policy)
    assert code == 0
    assert {d["apiVersion"] for d in yaml.safe_load_all(out)} == {"admissionregistration.k8s.io/v1beta1"}


def test_a_podmutation_and_gpu_slicing_convert(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    podmutation = written(tmp_path, "pm.yaml", PODMUTATION)
    code, out, err = run(capsys, "compile", "--to-map", str(podmutation), str(ROOT / "presets/gpu-slicing.yaml"))
    assert code == 0, err
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(out) if d["kind"] == "MutatingAdmissionPolicy"]
    assert names[0] == "mpol-podmutation-team-labels" and len(names) >= 2


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("groups", "MutatingPolicy podmutation-grouped cannot run as a MutatingAdmissionPolicy: "
                   "distribution groups need pod counts: resource.List"),
        ("presets/spot-partial.yaml", "spot percentages need pod counts: resource.List"),
        ("presets/spot-all.yaml", "spot percentages need pod counts: resource.List"),
        ("examples/pinning-plan.yaml", "spec.matchConstraints.namespaceSelector"),
    ],
)  # fmt: skip
def test_what_cannot_move_into_the_api_server_exits_2_naming_it_and_prints_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, source: str, says: str
) -> None:
    path = written(tmp_path, "groups.yaml", GROUPS) if source == "groups" else ROOT / source
    # A convertible policy first: nothing of it is printed either (half a set must not be applied).
    code, out, err = run(
        capsys, "compile", "--to-map", str(ROOT / "policies/examples/add-managed-by-label.yaml"), str(path)
    )
    assert code == 2 and out == ""
    assert says in err and "Traceback" not in err


FAIL_POLICY = """apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: strict}
spec:
  matchConstraints: {resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}
  mutations: [{patchType: JSONPatch, jsonPatch: {expression: '[JSONPatch{op: "add", path: "/metadata/labels/x", value: "y"}]'}}]
"""


def test_the_maps_keep_the_webhooks_selectors_as_the_controller_copies_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """install/webhook_config.py: the Fail webhook is never sent celmut's namespace nor kube-system, the
    Ignore webhook never celmut's namespace; both skip objects with the opt-out label."""
    strict = str(written(tmp_path, "strict.yaml", FAIL_POLICY))  # failurePolicy Fail (the default)
    ignore = str(ROOT / "policies/examples/default-security-context.yaml")  # failurePolicy Ignore
    policies = (strict, ignore)
    code, out, err = run(capsys, "compile", "--to-map", "--namespace", "ops", "--exclude-namespace", "lab", *policies)
    assert code == 0, err
    selectors = {
        d["metadata"]["name"]: d["spec"]["matchConstraints"]
        for d in yaml.safe_load_all(out)
        if d["kind"] == "MutatingAdmissionPolicy"
    }
    excluded = {n: m["namespaceSelector"]["matchExpressions"][0]["values"] for n, m in selectors.items()}
    assert excluded["mpol-strict"] == ["ops", "lab", "kube-system"]
    assert excluded["mpol-default-security-context"] == ["ops", "lab"]
    assert {str(m["objectSelector"]) for m in selectors.values()} == {
        str({"matchExpressions": [{"key": "celmut.io/ignore", "operator": "DoesNotExist"}]})
    }
    code, out, _ = run(capsys, "compile", "--to-map", "--unscoped", *policies)
    assert code == 0
    for document in yaml.safe_load_all(out):
        assert "namespaceSelector" not in document["spec"].get("matchConstraints", {})


# --- the differential --------------------------------------------------------------------------------


def shipped() -> list[Path]:
    """Every shipped policy and preset: policies/, presets/, the compiled spot presets and the example pinning plan."""
    found = sorted(
        [*(ROOT / "policies").rglob("*.yaml"), *(ROOT / "presets").glob("*.yaml"), *(ROOT / "examples/spot-presets").glob("*.yaml")]
    )
    return [*found, ROOT / "examples/pinning-plan.yaml"]


# The shipped sources that convert; every other one must be refused by name (the spot presets list pods,
# the pinning plan selects namespaces). A source moving between the two fails the test.
CONVERTS = {"policies/examples/add-managed-by-label.yaml", "policies/examples/default-security-context.yaml",
            "policies/presets/gpu-slicing.yaml", "presets/gpu-slicing.yaml"}  # fmt: skip


def applied(capsys: pytest.CaptureFixture[str], *policies: Path) -> list[dict[str, object]]:
    argv = ["apply", *map(str, policies), "-o", "json"]
    for resources in RESOURCES:
        argv += ["-r", str(resources)]
    for cluster in CLUSTER:
        argv += ["--cluster-resources", str(cluster)]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    found = json.loads(out)
    return list(found["items"]) if found.get("kind") == "List" else [found]


@pytest.mark.parametrize("source", shipped(), ids=lambda p: str(p.relative_to(ROOT)))
def test_apply_gives_the_same_objects_for_a_policy_and_for_its_generated_map(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, source: Path
) -> None:
    code, out, err = run(capsys, "compile", "--to-map", "--unscoped", str(source))
    if str(source.relative_to(ROOT)) not in CONVERTS:  # said so, by name (the rows above pin the messages)
        assert code == 2 and "cannot run as a MutatingAdmissionPolicy" in err, err
        return
    assert code == 0, err
    native = written(tmp_path, "native.yaml", out)
    by_policy, by_map = applied(capsys, source), applied(capsys, native)
    assert by_map == by_policy
    originals = applied(capsys, written(tmp_path, "none.yaml", _NOOP))
    assert by_policy != originals, "the policy changes nothing here: the comparison would prove nothing"


def test_the_differential_covers_a_podmutation(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = written(tmp_path, "pm.yaml", PODMUTATION)
    code, out, err = run(capsys, "compile", "--to-map", "--unscoped", str(source))
    assert code == 0, err
    by_policy, by_map = applied(capsys, source), applied(capsys, written(tmp_path, "native.yaml", out))
    assert by_map == by_policy
    assert any((o.get("metadata") or {}).get("labels", {}).get("team") == "shop" for o in by_policy)  # type: ignore[union-attr]


# A policy that matches nothing: the objects as they were.
_NOOP = """apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: noop}
spec:
  matchConstraints: {resourceRules: [{apiGroups: [nothing.example], apiVersions: [v1], operations: [CREATE], resources: [nothing]}]}
  mutations: [{patchType: JSONPatch, jsonPatch: {expression: '[]'}}]
"""


def test_maps_and_bindings_among_the_files_are_printed_unchanged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "compile", "--to-map", str(ROOT / "policies/examples"))
    assert code == 0 and out.count("kind: MutatingAdmissionPolicyBinding") > 1  # pairs stay in order
    native = written(tmp_path, "native.yaml", out)
    code, again, err = run(capsys, "compile", "--to-map", str(native))
    assert code == 0, err
    assert list(yaml.safe_load_all(again)) == list(yaml.safe_load_all(out))


def _workload(kind: str, name: str, template: dict[str, object], **meta: object) -> dict[str, object]:
    group = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    spec: dict[str, object] = {"template": template}
    if kind == "CronJob":
        spec = {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}}
    return {"apiVersion": group, "kind": kind, "metadata": {"name": name, "namespace": "shop", **meta}, "spec": spec}


def test_the_differential_covers_every_autogen_variant(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The pod-controller variants (kyverno generate-map.go desiredMAPVariants: mpol-<name>-defaults and
    -cronjobs) mutate each controller kind as the policy's autogen does; a ReplicaSet with a controller is
    left alone by both (celmut's ReplicaSet filter, carried into the MAP as a match condition)."""
    template = {"spec": {"containers": [{"name": "app", "image": "nginx"}]}}
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u", "controller": True}
    workloads = [
        _workload(kind, kind.lower(), template) for kind in ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")
    ] + [_workload("ReplicaSet", "free", template), _workload("ReplicaSet", "owned", template, ownerReferences=[owner])]
    resources = written(tmp_path, "workloads.yaml", yaml.safe_dump_all(workloads))
    source = ROOT / "policies/examples/default-security-context.yaml"
    code, out, err = run(capsys, "compile", "--to-map", "--unscoped", str(source))
    assert code == 0, err
    assert {"mpol-default-security-context-defaults", "mpol-default-security-context-cronjobs"} <= {
        d["metadata"]["name"] for d in yaml.safe_load_all(out)
    }
    native = written(tmp_path, "native.yaml", out)

    def apply(policy: Path) -> list[dict[str, object]]:
        code, printed, err = run(capsys, "apply", str(policy), "-r", str(resources), "-o", "json")
        assert code == 0, err
        return list(json.loads(printed)["items"])

    by_policy, by_map = apply(source), apply(native)
    assert by_map == by_policy
    changed = {str(o["metadata"]["name"]) for o, w in zip(by_policy, workloads, strict=True) if o != w}  # type: ignore[index]
    assert changed == {"deployment", "statefulset", "daemonset", "job", "cronjob", "free"}


EXCEPTIONS = """apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata: {name: both-conditions, namespace: shop}
spec:
  policyRefs: [{name: strict, kind: MutatingPolicy}]
  matchConditions:
  - {name: in-shop, expression: 'request.namespace == "shop"'}
  - {name: marked, expression: '"skip" in object.metadata.?labels.orValue({})'}
---
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata: {name: expired, namespace: shop}
spec:
  policyRefs: [{name: strict, kind: MutatingPolicy}]
  expiresAt: "2020-01-01T00:00:00Z"
  matchConditions: [{name: everything, expression: "true"}]
---
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata: {name: another-policy, namespace: shop}
spec:
  policyRefs: [{name: other, kind: MutatingPolicy}]
  matchConditions: [{name: all, expression: "true"}]
"""


def test_the_differential_covers_folded_exceptions(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """builder.go negateExceptionMatchConditions folds the exceptions in; celmut's engine skips a policy
    only when all conditions of one exception hold, and ignores expired ones (kyverno/api IsExpired) and
    those naming another policy — the MAP must skip exactly the same objects."""
    policy = written(tmp_path, "strict.yaml", FAIL_POLICY)
    exceptions = written(tmp_path, "exceptions.yaml", EXCEPTIONS)
    pods = [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        for name, ns, labels in [("skipped", "shop", {"skip": "1"}), ("unmarked", "shop", {"app": "a"}),
                                 ("elsewhere", "lab", {"skip": "1"})]
    ]  # fmt: skip
    resources = written(tmp_path, "pods.yaml", yaml.safe_dump_all(pods))
    code, out, err = run(capsys, "compile", "--to-map", "--unscoped", str(policy), str(exceptions))
    assert code == 0, err
    native = written(tmp_path, "native.yaml", out)

    def labelled(*paths: Path) -> dict[str, bool]:
        code, printed, err = run(capsys, "apply", *map(str, paths), "-r", str(resources), "-o", "json")
        assert code == 0, err
        return {o["metadata"]["name"]: "x" in o["metadata"]["labels"] for o in json.loads(printed)["items"]}

    expected = {"skipped": False, "unmarked": True, "elsewhere": True}
    assert labelled(policy, exceptions) == expected
    assert labelled(native) == expected


ADD_LABEL = """apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: add-label}
spec:
  autogen: {mutatingAdmissionPolicy: {enabled: true}}
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"a": "b"}}}'
"""


def test_autogen_variants_rename_object_metadata_in_the_generated_maps(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 25 item 1 (kyverno/kyverno#17438): the variant MAPs name Object.spec.template.metadata
    (Object.spec.jobTemplate.spec.template.metadata for CronJobs), so they label the pod template —
    exactly what celmut apply does with the MutatingPolicy itself."""
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}
    workloads = [_workload(kind, kind.lower(), template) for kind in ("Deployment", "CronJob")]
    resources = written(tmp_path, "workloads.yaml", yaml.safe_dump_all(workloads))
    source = written(tmp_path, "add-label.yaml", ADD_LABEL)
    code, out, err = run(capsys, "compile", "--to-map", "--unscoped", str(source))
    assert code == 0, err
    expressions = {
        d["metadata"]["name"]: d["spec"]["mutations"][0]["applyConfiguration"]["expression"]
        for d in yaml.safe_load_all(out)
        if d["kind"] == "MutatingAdmissionPolicy"
    }
    assert "metadata: Object.spec.template.metadata{" in expressions["mpol-add-label-defaults"]
    assert "metadata: Object.spec.jobTemplate.spec.template.metadata{" in expressions["mpol-add-label-cronjobs"]
    native = written(tmp_path, "native.yaml", out)

    def apply(policy: Path) -> list[dict[str, object]]:
        code, printed, err = run(capsys, "apply", str(policy), "-r", str(resources), "-o", "json")
        assert code == 0, err
        return list(json.loads(printed)["items"])

    by_policy, by_map = apply(source), apply(native)
    assert by_map == by_policy
    deployment, cronjob = by_policy
    assert deployment["spec"]["template"]["metadata"]["labels"] == {"app": "web", "a": "b"}  # type: ignore[index]
    job_template = cronjob["spec"]["jobTemplate"]["spec"]["template"]  # type: ignore[index]
    assert job_template["metadata"]["labels"] == {"app": "web", "a": "b"}
