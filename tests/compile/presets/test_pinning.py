"""Pod pinning plans → MutatingPolicies: pinning by StatefulSet ordinal, by workload and by label,
the first matching pin winning, pods absent from the plan (or in other namespaces, already bound or
already pinned) untouched, the hostname requirement joining every required term, the ConfigMap form,
reinvocation idempotence, plans of 1000 pins, validation errors with field paths, and ``celmut
compile`` on the example plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from celmut.compile.pipeline import Compilation, compile_documents
from celmut.main import main
from celmut.runtime import AdmissionInput, AdmissionResult
from celmut.sources.documents import Document
from tests.offline import offline_cluster

ROOT = Path(__file__).resolve().parents[3]
HOSTNAME = "kubernetes.io/hostname"


def plan(*pins: dict[str, Any], name: str = "rebalance", namespace: str = "shop") -> dict[str, Any]:
    return {
        "apiVersion": "pinning.celmut.io/v1alpha1",
        "kind": "PodPinningPlan",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"pins": list(pins)},
    }


def configmap(*pins: dict[str, Any], name: str = "rebalance", namespace: str = "shop") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"celmut.io/pinning-plan": "true"}},
        "data": {"plan.yaml": yaml.safe_dump({"pins": list(pins)})},
    }


def compile_plans(*documents: dict[str, Any]) -> Compilation:
    compilation = compile_documents([Document("plan.yaml", i, d) for i, d in enumerate(documents)])
    assert not compilation.errors, compilation.errors
    return compilation


def pod(
    name: str,
    owner: tuple[str, str] | None,
    *,
    namespace: str = "shop",
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner:
        metadata["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": "u", "controller": True}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


def db(ordinal: int, **kwargs: Any) -> dict[str, Any]:
    return pod(f"db-{ordinal}", ("StatefulSet", "db"), labels={"app": "db"}, **kwargs)


def web(suffix: str, **kwargs: Any) -> dict[str, Any]:
    return pod(
        f"web-5d8f7c-{suffix}",
        ("ReplicaSet", "web-5d8f7c"),
        labels={"app": "web", "pod-template-hash": "5d8f7c"},
        **kwargs,
    )


def required_terms(result: AdmissionResult) -> list[dict[str, Any]]:
    assert result.object is not None
    affinity = result.object["spec"].get("affinity", {}).get("nodeAffinity", {})
    return affinity.get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])


def pinned_node(result: AdmissionResult) -> str | None:
    """The node the pod was pinned to (checking every required term carries it), or None if unchanged."""
    assert not result.errored, result.outcomes
    if not result.patch:
        return None
    assert result.object is not None and "nodeName" not in result.object["spec"]
    nodes = set()
    for term in required_terms(result):
        (requirement,) = [e for e in term["matchExpressions"] if e["key"] == HOSTNAME]
        assert requirement["operator"] == "In" and len(requirement["values"]) == 1
        nodes.add(requirement["values"][0])
    (node,) = nodes
    return str(node)


def admit(documents: list[dict[str, Any]], *pods: dict[str, Any]) -> list[AdmissionResult]:
    offline = offline_cluster(documents)
    return [run.result for run in offline.admit(list(pods))]


STATEFULSET = {"workload": {"kind": "StatefulSet", "name": "db"}}
DB0 = STATEFULSET | {"ordinal": 0, "node": "node-a"}
DB1 = STATEFULSET | {"ordinal": 1, "node": "node-b"}
WEB = {"workload": {"kind": "Deployment", "name": "web"}, "node": "node-w"}
CACHE = {"labelSelector": {"matchLabels": {"app": "cache"}}, "node": "node-c"}
ZONE_TERM = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}

CASES: dict[str, tuple[list[dict[str, Any]], dict[str, Any], str | None]] = {
    "ordinal 0 pins db-0": ([plan(DB0, DB1)], db(0), "node-a"),
    "ordinal 1 pins db-1": ([plan(DB0, DB1)], db(1), "node-b"),
    "an ordinal absent from the plan is untouched": ([plan(DB0, DB1)], db(2), None),
    "a StatefulSet pin without ordinal pins every replica": ([plan(STATEFULSET | {"node": "node-s"})], db(7), "node-s"),
    "a Deployment pin (found through the ReplicaSet name)": ([plan(WEB)], web("x1"), "node-w"),
    "a Deployment of another name is untouched": (
        [plan(WEB | {"workload": {"kind": "Deployment", "name": "api"}})],
        web("x1"),
        None,
    ),
    "the kind must match too": ([plan(WEB | {"workload": {"kind": "StatefulSet", "name": "web"}})], web("x1"), None),
    "a Job pin": (
        [plan({"workload": {"kind": "Job", "name": "backup"}, "node": "node-j"})],
        pod("backup-q", ("Job", "backup")),
        "node-j",
    ),
    "a bare Pod pin by name": (
        [plan({"workload": {"kind": "Pod", "name": "debug"}, "node": "node-p"})],
        pod("debug", None),
        "node-p",
    ),
    "a label pin": ([plan(CACHE)], pod("cache-1", None, labels={"app": "cache"}), "node-c"),
    "a label pin with matchExpressions": (
        [
            plan(
                {
                    "labelSelector": {
                        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["db", "cache"]}]
                    },
                    "node": "node-t",
                }
            )
        ],
        pod("x", None, labels={"tier": "cache"}),
        "node-t",
    ),
    "a pod without the labels is untouched": ([plan(CACHE)], pod("cache-1", None, labels={"app": "web"}), None),
    "the first matching pin wins": (
        [plan({"labelSelector": {"matchLabels": {"app": "db"}}, "node": "node-l"}, DB0)],
        db(0),
        "node-l",
    ),
    "a later pin matches when the first does not": ([plan(CACHE, DB0)], db(0), "node-a"),
    "pods of other namespaces are untouched": ([plan(DB0)], db(0, namespace="other"), None),
    "a plan per namespace": (
        [plan(DB0), plan(DB1 | {"ordinal": 0}, namespace="other")],
        db(0, namespace="other"),
        "node-b",
    ),
    "a pod already bound to a node is untouched": ([plan(DB0)], db(0, nodeName="node-z"), None),
    "a pod already pinned by its author is untouched": (
        [plan(DB0)],
        db(
            0,
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["node-z"]}]}
                        ]
                    }
                }
            },
        ),
        None,
    ),
    "with two plans pinning the same pod the first by name wins": (
        [plan(DB1 | {"ordinal": 0}, name="b"), plan(DB0, name="a")],
        db(0),
        "node-a",
    ),
    "the ConfigMap form pins the same way": ([configmap(DB0, CACHE)], db(0), "node-a"),
    "the ConfigMap form by label": ([configmap(DB0, CACHE)], pod("c", None, labels={"app": "cache"}), "node-c"),
}


@pytest.mark.parametrize(("documents", "obj", "node"), CASES.values(), ids=CASES.keys())
def test_pinning(documents: list[dict[str, Any]], obj: dict[str, Any], node: str | None) -> None:
    (result,) = admit(documents, obj)
    assert pinned_node(result) == node


def test_pods_absent_from_the_plan_are_skipped_by_a_named_condition() -> None:
    results = admit([plan(DB0)], db(2), db(0, nodeName="n"), db(0, namespace="other"))
    assert [r.outcomes[0].reason for r in results] == [
        "matchCondition 'in-the-plan' is false",
        "matchCondition 'not-bound-to-a-node' is false",
        "namespaceSelector does not match",
    ]


AFFINITIES: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {
    "no affinity: a new required term": (
        {},
        [{"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["node-a"]}]}],
    ),
    "pod affinity only: nodeAffinity is added": (
        {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
        [{"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["node-a"]}]}],
    ),
    "preferred node affinity only: a required term next to it": (
        {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": ZONE_TERM}]}},
        [{"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["node-a"]}]}],
    ),
    "existing required terms: the requirement joins each": (
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        ZONE_TERM,
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a", "node-b"]}]},
                    ]
                }
            }
        },
        [
            {
                "matchExpressions": [
                    *ZONE_TERM["matchExpressions"],
                    {"key": HOSTNAME, "operator": "In", "values": ["node-a"]},
                ]
            },
            {
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a", "node-b"]}],
                "matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["node-a"]}],
            },
        ],
    ),
}


@pytest.mark.parametrize(("affinity", "terms"), AFFINITIES.values(), ids=AFFINITIES.keys())
def test_the_requirement_joins_the_existing_affinity(affinity: dict[str, Any], terms: list[dict[str, Any]]) -> None:
    (result,) = admit([plan(DB0)], db(0, affinity=affinity) if affinity else db(0))
    assert required_terms(result) == terms
    assert result.object is not None
    for key in ("podAntiAffinity",):
        if key in affinity:
            assert result.object["spec"]["affinity"][key] == affinity[key]
    preferred = affinity.get("nodeAffinity", {}).get("preferredDuringSchedulingIgnoredDuringExecution")
    if preferred is not None:
        assert (
            result.object["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
            == preferred
        )


@pytest.mark.parametrize(
    "affinity",
    [{}, AFFINITIES["existing required terms: the requirement joins each"][0]],
    ids=["new term", "existing terms"],
)
def test_reinvocation_is_idempotent(affinity: dict[str, Any]) -> None:
    offline = offline_cluster([plan(DB0, WEB)])
    for obj in (db(0, affinity=affinity) if affinity else db(0), web("r1")):
        (run,) = offline.admit([obj])
        assert run.result.patch and run.result.object is not None
        again = offline.engine.admit(AdmissionInput.from_object(run.result.object))
        assert again.patch == [] and again.outcomes[0].reason == "matchCondition 'not-already-pinned' is false"


def test_a_plan_of_1000_pins_compiles_and_pins_the_last() -> None:
    pins = [STATEFULSET | {"ordinal": i, "node": f"node-{i}"} for i in range(1000)]
    (result,) = admit([plan(*pins)], db(999))
    assert pinned_node(result) == "node-999"


def test_a_large_plan_is_split_into_expressions_cel_go_accepts() -> None:
    """cel-go refuses expressions over 100,000 code points (parser.go expressionSizeCodePointLimit):
    1,000 pins (185,000 code points) become chunks tried in order, and the first match wins."""
    pins = [STATEFULSET | {"ordinal": i, "node": f"node-{i}"} for i in range(999)]
    pins.append(STATEFULSET | {"ordinal": 0, "node": "never"})  # a later pin for the same pod
    compilation = compile_documents([Document("plan.yaml", 0, plan(*pins))])
    assert not compilation.errors
    (policy,) = compilation.policies.mutating_policies
    expressions = [v.expression for v in policy.variables]
    assert max(len(e) for e in expressions) < 100_000
    assert sum(1 for v in policy.variables if v.name.startswith("plannedNode")) > 2
    (result,) = admit([plan(*pins)], db(0))
    assert pinned_node(result) == "node-0"


def test_a_configmap_without_the_label_is_not_a_plan() -> None:
    unlabelled = configmap(DB0)
    unlabelled["metadata"]["labels"] = {}
    compilation = compile_documents([Document("cm.yaml", 0, unlabelled)])
    assert not compilation.compiled.policies
    assert [d.content["kind"] for d in compilation.other] == ["ConfigMap"]
    # not skipped silently: among the policies, a ConfigMap that is not a plan is an error
    assert [str(e) for e in compilation.errors] == ["cm.yaml: ConfigMap (v1) rebalance: not a policy"]


def test_celmut_compile_prints_the_example_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(ROOT / "examples/pinning-plan.yaml")]) == 0
    (policy,) = list(yaml.safe_load_all(capsys.readouterr().out))
    assert policy["metadata"]["name"] == "pod-pinning-shop-rebalance-42"
    assert policy["spec"]["matchConstraints"]["namespaceSelector"] == {
        "matchLabels": {"kubernetes.io/metadata.name": "shop"}
    }
    assert [c["name"] for c in policy["spec"]["matchConditions"]] == [
        "not-bound-to-a-node",
        "not-already-pinned",
        "in-the-plan",
    ]
    planned = next(v["expression"] for v in policy["spec"]["variables"] if v["name"] == "plannedNode")
    assert "// spec.pins[1]: StatefulSet orders-db, ordinal 1" in planned


def raw(pins: Any, **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "pinning.celmut.io/v1alpha1",
        "kind": "PodPinningPlan",
        "metadata": {"name": "p", "namespace": "shop"} | metadata,
        "spec": {"pins": pins},
    }


INVALID = {
    "no namespace": (raw([DB0], namespace=None), "PodPinningPlan /p: metadata.namespace: Required value"),
    "an invalid namespace": (raw([DB0], namespace="Shop"), "metadata.namespace: Invalid value: 'Shop'"),
    "no pins": (raw([]), "spec.pins: Required value: at least one pin"),
    "pins not a list": (raw({"db": "node-a"}), "spec.pins: must be a list"),
    "too many pins": (raw([DB0] * 1001), "spec.pins: Too many: 1001"),
    "a pin without node": (raw([STATEFULSET]), "spec.pins[0].node: Required value"),
    "an invalid node name": (raw([DB0 | {"node": "Node_A"}]), "spec.pins[0].node: Invalid value: 'Node_A'"),
    "workload and labelSelector together": (
        raw([DB0 | {"labelSelector": {"matchLabels": {"a": "b"}}}]),
        "spec.pins[0]: Invalid value: exactly one of workload or labelSelector",
    ),
    "neither workload nor labelSelector": (raw([{"node": "n"}]), "spec.pins[0]: Invalid value: exactly one of"),
    "an unsupported workload kind": (
        raw([{"workload": {"kind": "DaemonSet", "name": "x"}, "node": "n"}]),
        "spec.pins[0].workload.kind: Unsupported value: 'DaemonSet'",
    ),
    "a workload without name": (
        raw([{"workload": {"kind": "Deployment"}, "node": "n"}]),
        "spec.pins[0].workload.name: Required value",
    ),
    "an ordinal for a Deployment": (
        raw([WEB | {"ordinal": 0}]),
        "spec.pins[0].ordinal: Forbidden: only for a workload of kind StatefulSet",
    ),
    "a negative ordinal": (raw([DB0 | {"ordinal": -1}]), "spec.pins[0].ordinal: Invalid value: -1: must be at least 0"),
    "an ordinal as a string": (raw([DB0 | {"ordinal": "0"}]), "spec.pins[0].ordinal: must be an integer"),
    "an empty label selector": (
        raw([{"labelSelector": {}, "node": "n"}]),
        "spec.pins[0].labelSelector: Required value",
    ),
    "a bad selector operator": (
        raw([{"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, "node": "n"}]),
        "spec.pins[0].labelSelector.matchExpressions[0].operator: Unsupported value",
    ),
    "an unknown pin field": (raw([DB0 | {"nodes": ["a"]}]), "spec.pins[0].nodes: unknown field"),
    "an unknown spec field": (raw([DB0]) | {"spec": {"pins": [DB0], "ttl": 5}}, "spec.ttl: unknown field"),
    "a wrong apiVersion": (raw([DB0]) | {"apiVersion": "pinning.celmut.io/v1"}, "apiVersion: Unsupported value"),
}


@pytest.mark.parametrize(("document", "message"), INVALID.values(), ids=INVALID.keys())
def test_invalid_plans_are_reported_with_the_field_path(document: dict[str, Any], message: str) -> None:
    errors = compile_documents([Document("plan.yaml", 0, document)]).errors
    assert len(errors) == 1 and message in str(errors[0])


CONFIGMAP_INVALID = {
    "no plan.yaml": ({}, "ConfigMap shop/rebalance: data.plan.yaml: Required value"),
    "plan.yaml is not YAML": ({"plan.yaml": "pins: [\n"}, "data[plan.yaml]: Invalid value: invalid YAML at line 2"),
    "plan.yaml holds two documents": ({"plan.yaml": "pins: []\n---\npins: []\n"}, "must hold one YAML document"),
    "an invalid pin in plan.yaml": (
        {"plan.yaml": "pins:\n  - {node: n}\n"},
        "data[plan.yaml].pins[0]: Invalid value: exactly one of",
    ),
}


@pytest.mark.parametrize(("data", "message"), CONFIGMAP_INVALID.values(), ids=CONFIGMAP_INVALID.keys())
def test_invalid_plan_configmaps_are_reported_with_the_field_path(data: dict[str, str], message: str) -> None:
    document = configmap(DB0) | {"data": data}
    errors = compile_documents([Document("cm.yaml", 0, document)]).errors
    assert len(errors) == 1 and message in str(errors[0])


def test_a_plan_and_a_configmap_of_the_same_name_collide() -> None:
    errors = compile_documents([Document("a.yaml", 0, plan(DB0)), Document("b.yaml", 0, configmap(DB1))]).errors
    assert len(errors) == 1 and "policy pod-pinning-shop-rebalance is already generated from PodPinningPlan" in str(
        errors[0]
    )
