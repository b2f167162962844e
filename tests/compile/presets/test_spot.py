"""Spot webhook values → MutatingPolicy: every preset, every custom rule and workload override of the
CAST AI webhook (and the supplement's custom example), the ignored pods, DaemonSet toleration-only,
the documented precedence, exact partial splits at 1, 10 and 100 pods, reinvocation idempotence of
the shipped policies, validation errors with field paths, and the shipped files staying equal to what
``celmut compile`` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from celmut.compile.pipeline import Compilation, compile_documents
from celmut.main import main
from celmut.runtime import AdmissionInput, AdmissionResult
from celmut.runtime.mutate_existing import mutate_existing
from celmut.sources.documents import Document, load_documents
from tests.offline import offline_cluster

ROOT = Path(__file__).resolve().parents[3]
SPOT = "scheduling.cast.ai/spot"
TOLERATION = {"key": SPOT, "operator": "Exists", "effect": "NoSchedule"}
NOT_SPOT = {"key": SPOT, "operator": "DoesNotExist"}

ALL = {"staticConfig": {"preset": "allSpot"}}
EXCEPT_KUBE_SYSTEM = {"staticConfig": {"preset": "allSpotExceptKubeSystem"}}
PARTIAL = {"staticConfig": {"preset": "partialSpot"}}
SUPPLEMENT = yaml.safe_load((ROOT / "examples/spot-custom-values.yaml").read_text())


def custom(**static: Any) -> dict[str, Any]:
    return {"staticConfig": static}


def web(name: str) -> dict[str, Any]:
    """A PodAffinityTerm matching app=<name>."""
    return {"labelSelector": {"matchLabels": {"app": name}}}


def compile_values(*values: dict[str, Any]) -> Compilation:
    compilation = compile_documents([Document("values.yaml", i, v) for i, v in enumerate(values)])
    assert not compilation.errors, compilation.errors
    return compilation


def pod(
    name: str = "web-5d8f7c-0",
    *,
    namespace: str = "shop",
    owner: tuple[str, str] | None = ("ReplicaSet", "web-5d8f7c"),
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": {"app": "web", "pod-template-hash": "5d8f7c"} if labels is None else labels,
    }
    if annotations is not None:
        metadata["annotations"] = annotations
    if owner:
        metadata["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": "u1", "controller": True}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}], **spec},
    }


INVALID_REASON_SUFFIXES = ("-is-spot-or-on-demand' is false", "-is-1-to-99' is false")


def placement(result: AdmissionResult) -> str:
    """What the policy did, read from the concrete pod changes (and checked against the annotation)."""
    assert not result.errored, result.outcomes
    if not result.patch:
        invalid = [o.reason for o in result.outcomes if o.reason.endswith(INVALID_REASON_SUFFIXES)]
        return "invalid" if invalid else "unchanged"
    obj = result.object
    assert obj is not None
    recorded = obj["metadata"].get("annotations", {}).get("celmut.io/placement")
    tolerations = obj["spec"].get("tolerations", [])
    selector = obj["spec"].get("nodeSelector", {})
    terms = (
        obj["spec"]
        .get("affinity", {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", {})
        .get("nodeSelectorTerms", [])
    )
    if recorded == "spot":
        assert TOLERATION in tolerations and selector.get(SPOT) == "true" and not terms
        return "spot"
    if recorded == "on-demand":
        assert terms and all(NOT_SPOT in t["matchExpressions"] for t in terms) and TOLERATION not in tolerations
        return "on-demand"
    assert recorded is None and TOLERATION in tolerations and SPOT not in selector and not terms
    return "toleration-only"


def admit(values: dict[str, Any] | list[dict[str, Any]], *pods: dict[str, Any]) -> list[AdmissionResult]:
    offline = offline_cluster(values if isinstance(values, list) else [values])
    return [run.result for run in offline.admit(list(pods))]


# --- one pod, one decision ----------------------------------------------------------------------------

DAEMONSET = ("DaemonSet", "node-exporter")
LIFECYCLE = "scheduling.cast.ai/lifecycle"
PERCENTAGE = "scheduling.cast.ai/spot-percentage"
SPREAD = [{"maxSkew": 1, "topologyKey": SPOT, "whenUnsatisfiable": "DoNotSchedule"}]
ZONE_SPREAD = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}]

CASES: dict[str, tuple[Any, dict[str, Any], str]] = {
    # presets
    "allSpot puts a workload pod on spot": (ALL, pod(), "spot"),
    "allSpot puts kube-system pods on spot too": (ALL, pod(namespace="kube-system"), "spot"),
    "allSpotExceptKubeSystem puts other namespaces on spot": (EXCEPT_KUBE_SYSTEM, pod(), "spot"),
    "allSpotExceptKubeSystem forces kube-system on-demand": (
        EXCEPT_KUBE_SYSTEM,
        pod(namespace="kube-system"),
        "on-demand",
    ),
    "partialSpot puts a lone pod on-demand (40 % of 1 rounds down)": (PARTIAL, pod(), "on-demand"),
    "Job pods are workload pods": (ALL, pod(owner=("Job", "backup")), "spot"),
    "StatefulSet pods are workload pods": (ALL, pod("db-0", owner=("StatefulSet", "db")), "spot"),
    # ignored pods
    "bare pods are ignored": (ALL, pod(owner=None), "unchanged"),
    "an owner that is not the controller leaves the pod bare": (
        ALL,
        pod(owner=None)
        | {"metadata": {"name": "p", "namespace": "shop", "ownerReferences": [{"kind": "X", "name": "x"}]}},
        "unchanged",
    ),
    "pods in the celmut namespace are ignored": (ALL, pod(namespace="celmut"), "unchanged"),
    "celmutNamespace names the namespace to ignore": (
        ALL | {"celmutNamespace": "platform"},
        pod(namespace="platform"),
        "unchanged",
    ),
    "with celmutNamespace set, the celmut namespace is an ordinary one": (
        ALL | {"celmutNamespace": "platform"},
        pod(namespace="celmut"),
        "spot",
    ),
    "a topology spread over the spot label is ignored": (ALL, pod(topologySpreadConstraints=SPREAD), "unchanged"),
    "a topology spread over zones is not": (ALL, pod(topologySpreadConstraints=ZONE_SPREAD), "spot"),
    "ignorePods matchLabels": (custom(ignorePods=[web("web")]), pod(), "unchanged"),
    "ignorePods beats every other rule and override": (
        custom(ignorePods=[web("web")], forcePodsToSpot=[web("web")]),
        pod(annotations={LIFECYCLE: "spot"}),
        "unchanged",
    ),
    # DaemonSets
    "DaemonSet pods get the spot toleration only": (ALL, pod(owner=DAEMONSET), "toleration-only"),
    "kube-system DaemonSet pods are not forced on-demand": (
        EXCEPT_KUBE_SYSTEM,
        pod(namespace="kube-system", owner=DAEMONSET),
        "toleration-only",
    ),
    "DaemonSet pods get the toleration with defaultToSpot false too": (
        custom(defaultToSpot=False),
        pod(owner=DAEMONSET),
        "toleration-only",
    ),
    "DaemonSet pods ignore the lifecycle override": (
        ALL,
        pod(owner=DAEMONSET, annotations={LIFECYCLE: "on-demand"}),
        "toleration-only",
    ),
    "ignorePods applies to DaemonSet pods": (custom(ignorePods=[web("web")]), pod(owner=DAEMONSET), "unchanged"),
    # custom rules
    "defaultToSpot defaults to true": (custom(), pod(), "spot"),
    "defaultToSpot false leaves unmatched pods as they are": (custom(defaultToSpot=False), pod(), "unchanged"),
    "forcePodsToSpot overrides defaultToSpot false": (
        custom(defaultToSpot=False, forcePodsToSpot=[web("web")]),
        pod(),
        "spot",
    ),
    "forcePodsToSpot does not match other labels": (
        custom(defaultToSpot=False, forcePodsToSpot=[web("api")]),
        pod(),
        "unchanged",
    ),
    "forcePodsToOnDemand by namespace": (custom(forcePodsToOnDemand=[{"namespaces": ["shop"]}]), pod(), "on-demand"),
    "forcePodsToOnDemand beats forcePodsToSpot": (
        custom(forcePodsToSpot=[web("web")], forcePodsToOnDemand=[web("web")]),
        pod(),
        "on-demand",
    ),
    "forcePodsToSpot beats the percentage": (
        custom(spotPercentageOfReplicaSet=50, forcePodsToSpot=[web("web")]),
        pod(),
        "spot",
    ),
    "a term needs its labelSelector and its namespaces to match": (
        custom(forcePodsToOnDemand=[web("web") | {"namespaces": ["payments"]}]),
        pod(),
        "spot",
    ),
    "a term with both matching forces the pod": (
        custom(forcePodsToOnDemand=[web("web") | {"namespaces": ["payments", "shop"]}]),
        pod(),
        "on-demand",
    ),
    "the second term of a list can match": (
        custom(forcePodsToOnDemand=[web("api"), {"namespaces": ["shop"]}]),
        pod(),
        "on-demand",
    ),
    "topologyKey in a term is ignored": (
        custom(forcePodsToOnDemand=[web("web") | {"topologyKey": "kubernetes.io/hostname"}]),
        pod(),
        "on-demand",
    ),
    "matchExpressions In": (
        custom(
            ignorePods=[
                {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["api", "web"]}]}}
            ]
        ),
        pod(),
        "unchanged",
    ),
    "matchExpressions NotIn matches a pod without the label": (
        custom(
            ignorePods=[
                {"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}}
            ]
        ),
        pod(),
        "unchanged",
    ),
    "matchExpressions NotIn does not match a listed value": (
        custom(
            ignorePods=[
                {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}}
            ]
        ),
        pod(),
        "spot",
    ),
    "matchExpressions Exists": (
        custom(ignorePods=[{"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}]),
        pod(),
        "unchanged",
    ),
    "matchExpressions DoesNotExist": (
        custom(ignorePods=[{"labelSelector": {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}}]),
        pod(),
        "spot",
    ),
    "matchLabels and matchExpressions must all hold": (
        custom(
            ignorePods=[
                {
                    "labelSelector": {
                        "matchLabels": {"app": "web"},
                        "matchExpressions": [{"key": "tier", "operator": "Exists"}],
                    }
                }
            ]
        ),
        pod(),
        "spot",
    ),
    # workload overrides
    "lifecycle on-demand beats allSpot": (ALL, pod(annotations={LIFECYCLE: "on-demand"}), "on-demand"),
    "lifecycle spot beats forcePodsToOnDemand": (
        EXCEPT_KUBE_SYSTEM,
        pod(namespace="kube-system", annotations={LIFECYCLE: "spot"}),
        "spot",
    ),
    "lifecycle on-demand beats forcePodsToSpot": (
        custom(forcePodsToSpot=[web("web")]),
        pod(annotations={LIFECYCLE: "on-demand"}),
        "on-demand",
    ),
    "lifecycle spot beats defaultToSpot false and the percentage": (
        PARTIAL,
        pod(annotations={LIFECYCLE: "spot"}),
        "spot",
    ),
    "an empty lifecycle annotation counts as absent": (ALL, pod(annotations={LIFECYCLE: ""}), "spot"),
    "an invalid lifecycle skips the pod, naming the annotation": (ALL, pod(annotations={LIFECYCLE: "Spot"}), "invalid"),
    "spot-percentage 99 of a lone pod is on-demand (rounds down)": (
        ALL,
        pod(annotations={PERCENTAGE: "99"}),
        "on-demand",
    ),
    "spot-percentage 0 is invalid": (ALL, pod(annotations={PERCENTAGE: "0"}), "invalid"),
    "spot-percentage 100 is invalid": (ALL, pod(annotations={PERCENTAGE: "100"}), "invalid"),
    "a non-numeric spot-percentage is invalid": (PARTIAL, pod(annotations={PERCENTAGE: "half"}), "invalid"),
    "a fractional spot-percentage is invalid": (PARTIAL, pod(annotations={PERCENTAGE: "12.5"}), "invalid"),
    "an invalid spot-percentage skips the pod even when lifecycle would decide": (
        PARTIAL,
        pod(annotations={LIFECYCLE: "spot", PERCENTAGE: "half"}),
        "invalid",
    ),
    "spot-percentage 05 is 5": (ALL, pod(annotations={PERCENTAGE: "05"}), "on-demand"),
    "DaemonSet pods ignore an invalid lifecycle": (
        ALL,
        pod(owner=DAEMONSET, annotations={LIFECYCLE: "x"}),
        "toleration-only",
    ),
    "a recorded placement is kept": (ALL, pod(annotations={"celmut.io/placement": "on-demand"}), "on-demand"),
    "an invalid recorded placement is invalid": (ALL, pod(annotations={"celmut.io/placement": "maybe"}), "invalid"),
    # the supplement's custom example
    "example: ignored-pod is left alone": (
        SUPPLEMENT,
        pod(labels={"app.kubernetes.io/name": "ignored-pod"}),
        "unchanged",
    ),
    "example: spot-pod-1 is forced to spot": (SUPPLEMENT, pod(labels={"app.kubernetes.io/name": "spot-pod-1"}), "spot"),
    "example: spot-pod-2 is forced to spot": (SUPPLEMENT, pod(labels={"app.kubernetes.io/name": "spot-pod-2"}), "spot"),
    "example: kube-system is forced on-demand": (SUPPLEMENT, pod(namespace="kube-system"), "on-demand"),
    "example: kube-system beats forcePodsToSpot": (
        SUPPLEMENT,
        pod(namespace="kube-system", labels={"app.kubernetes.io/name": "spot-pod-1"}),
        "on-demand",
    ),
    "example: other pods default to spot": (SUPPLEMENT, pod(), "spot"),
}


@pytest.mark.parametrize(("values", "obj", "expected"), CASES.values(), ids=CASES.keys())
def test_decision(values: Any, obj: dict[str, Any], expected: str) -> None:
    (result,) = admit(values, obj)
    assert placement(result) == expected
    if expected == "invalid":  # the pod is left unchanged; the reason names the annotation
        reason = result.outcomes[0].reason
        assert any(f"matchCondition '{name}-is-" in reason for name in (LIFECYCLE, PERCENTAGE, "celmut.io/placement"))


def test_ignored_pods_are_skipped_by_named_conditions() -> None:
    results = admit(
        custom(ignorePods=[web("web")]),
        pod(owner=None),
        pod(namespace="celmut"),
        pod(topologySpreadConstraints=SPREAD),
        pod(),
    )
    reasons = [r.outcomes[0].reason for r in results]
    assert reasons == [
        "matchCondition 'controlled-by-a-workload' is false",
        "matchCondition 'outside-the-celmut-namespace' is false",
        "matchCondition 'no-topology-spread-over-spot' is false",
        "matchCondition 'not-in-ignore-pods' is false",
    ]


def test_spot_keeps_existing_tolerations_and_selectors() -> None:
    existing = {"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}
    (result,) = admit(ALL, pod(tolerations=[existing], nodeSelector={"disk": "ssd"}))
    assert result.object is not None
    assert result.object["spec"]["tolerations"] == [existing, TOLERATION]
    assert result.object["spec"]["nodeSelector"] == {"disk": "ssd", SPOT: "true"}


def test_on_demand_joins_every_existing_required_term() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                ]
            }
        }
    }
    (result,) = admit(EXCEPT_KUBE_SYSTEM, pod(namespace="kube-system", affinity=affinity))
    assert placement(result) == "on-demand"


def test_with_several_spot_policies_the_first_by_name_decides() -> None:
    # spot-all runs before spot-all-except-kube-system; the second keeps the recorded decision
    # instead of adding a contradicting on-demand affinity.
    (result,) = admit([EXCEPT_KUBE_SYSTEM, ALL], pod(namespace="kube-system"))
    assert placement(result) == "spot"
    assert [(o.policy, o.status) for o in result.outcomes if not o.policy.endswith("-daemonsets")] == [
        ("spot-all", "applied"),
        ("spot-all-except-kube-system", "unchanged"),
    ]


# --- DaemonSets: the template the DaemonSet controller reads (issue 38) ------------------------------------


def daemonset(
    name: str = "node-exporter", *, namespace: str = "monitoring", labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": labels or {"app": name}},
                "spec": {"containers": [{"name": "exporter", "image": "prom/node-exporter"}], **spec},
            },
        },
    }


def template_tolerations(result: AdmissionResult) -> list[dict[str, Any]]:
    assert not result.errored, result.outcomes
    obj = result.object
    assert obj is not None
    tolerations: list[dict[str, Any]] = obj["spec"]["template"]["spec"].get("tolerations", [])
    return tolerations


@pytest.mark.parametrize(
    "values", [ALL, EXCEPT_KUBE_SYSTEM, PARTIAL, SUPPLEMENT], ids=["all", "except", "partial", "custom"]
)
def test_every_daemonset_template_tolerates_spot_so_the_controller_covers_spot_nodes(values: Any) -> None:
    """pkg/controller/daemon/daemon_controller.go NodeShouldRunDaemonPod checks the template's tolerations
    against each node's taints: the toleration must be on the template, not only on the pods."""
    existing = {"key": "dedicated", "operator": "Exists"}
    results = admit(values, daemonset(), daemonset("kube-proxy", namespace="kube-system", tolerations=[existing]))
    assert [template_tolerations(r) for r in results] == [[TOLERATION], [existing, TOLERATION]]


def test_a_daemonset_template_is_changed_once_and_ignored_ones_are_left_alone() -> None:
    values = custom(ignorePods=[web("ignored")])
    tolerating = daemonset(tolerations=[TOLERATION])
    results = admit(
        values,
        tolerating,
        daemonset(namespace="celmut"),
        daemonset(labels={"app": "ignored"}),
        daemonset(topologySpreadConstraints=SPREAD),
    )
    assert [r.patch for r in results] == [[], [], [], []]
    assert [o.reason for r in results[1:] for o in r.outcomes if o.policy == "spot-custom-daemonsets"] == [
        "matchCondition 'outside-the-celmut-namespace' is false",
        "matchCondition 'not-in-ignore-pods' is false",
        "matchCondition 'no-topology-spread-over-spot' is false",
    ]


def test_existing_daemonsets_get_the_toleration_from_the_controller() -> None:
    """mutateExisting: DaemonSets created before the preset are changed too (targetMatchConditions apply)."""
    offline = offline_cluster(
        [ALL], [daemonset(), daemonset("agent", namespace="celmut"), daemonset("x", tolerations=[TOLERATION])]
    )
    policies = [p for p in offline.engine.policies if p.name == "spot-all-daemonsets"]
    assert len(policies) == 1 and policies[0].mutate_existing
    changed = {t.target["metadata"]["name"]: t.patch for t in mutate_existing(offline.engine, policies=policies)}
    assert changed == {
        "node-exporter": [{"op": "add", "path": "/spec/template/spec/tolerations", "value": [TOLERATION]}],
        "agent": [],
        "x": [],
    }


# --- exact splits per ReplicaSet ------------------------------------------------------------------------


def replicas(count: int, owner: str = "web-5d8f7c", annotations: dict[str, str] | None = None) -> list[dict[str, Any]]:
    template_hash = owner.rsplit("-", 1)[1]
    return [
        pod(
            f"{owner}-{i}",
            owner=("ReplicaSet", owner),
            labels={"app": "web", "pod-template-hash": template_hash},
            annotations=annotations,
        )
        for i in range(count)
    ]


SPLITS = {
    "partialSpot, 1 pod: none on spot": (PARTIAL, 1, None, 0),
    "partialSpot, 10 pods: exactly 4 on spot": (PARTIAL, 10, None, 4),
    "partialSpot, 100 pods: exactly 40 on spot": (PARTIAL, 100, None, 40),
    "custom 70 % with defaultToSpot false, 10 pods: 7": (
        custom(defaultToSpot=False, spotPercentageOfReplicaSet=70),
        10,
        None,
        7,
    ),
    "custom 70 %, 20 pods: 14": (custom(defaultToSpot=False, spotPercentageOfReplicaSet=70), 20, None, 14),
    "spot-percentage 65 overrides allSpot, 10 pods: 6": (ALL, 10, {PERCENTAGE: "65"}, 6),
    "spot-percentage 65 overrides partialSpot's 40, 20 pods: 13": (PARTIAL, 20, {PERCENTAGE: "65"}, 13),
    "spot-percentage 50 with defaultToSpot false, 10 pods: 5": (custom(defaultToSpot=False), 10, {PERCENTAGE: "50"}, 5),
}


@pytest.mark.parametrize(("values", "count", "annotations", "spot"), SPLITS.values(), ids=SPLITS.keys())
def test_percentage_split_is_exact(values: Any, count: int, annotations: Any, spot: int) -> None:
    placements = [placement(r) for r in admit(values, *replicas(count, annotations=annotations))]
    assert placements.count("spot") == spot and placements.count("on-demand") == count - spot
    percent = spot / count if count > 1 else 0.4
    for n in range(1, count + 1):  # the ratio holds within one pod after every admission
        assert abs(placements[:n].count("spot") - n * percent) < 1 + 1e-9


def test_percentage_is_counted_per_replica_set() -> None:
    web_pods, api_pods = replicas(10, "web-5d8f7c"), replicas(10, "api-77c9d1")
    interleaved = [p for pair in zip(web_pods, api_pods, strict=True) for p in pair]
    placements = [placement(r) for r in admit(PARTIAL, *interleaved)]
    assert placements[0::2].count("spot") == 4 and placements[1::2].count("spot") == 4


def placed_replicas(spot: int, on_demand: int, **meta: Any) -> list[dict[str, Any]]:
    """Existing pods of web-5d8f7c with their decisions recorded (``meta`` added to each pod's metadata)."""
    pods = replicas(spot + on_demand)
    for index, existing in enumerate(pods):
        existing["metadata"]["annotations"] = {"celmut.io/placement": "spot" if index < spot else "on-demand"}
        existing["metadata"].update(meta)
    return pods


def terminated(existing: dict[str, Any], phase: str) -> dict[str, Any]:
    return {**existing, "status": {"phase": phase}}


LIVE = {
    # pkg/controller/controller_utils.go IsPodActive: what the ReplicaSet controller counts as a replica
    "all 10 live (4 spot): the 11th goes on-demand": ([], "on-demand"),
    "2 spot pods Terminating: 2 of 8 live on spot, the 9th goes to spot": (
        [{"deletionTimestamp": "2026-01-01T00:00:30Z", "deletionGracePeriodSeconds": 30}] * 2,
        "spot",
    ),
    "2 spot pods Failed: the same": (["Failed"] * 2, "spot"),
    "2 spot pods Succeeded: the same": (["Succeeded"] * 2, "spot"),
}


@pytest.mark.parametrize(("gone", "expected"), LIVE.values(), ids=LIVE.keys())
def test_only_live_pods_count_toward_the_share(gone: list[Any], expected: str) -> None:
    existing = placed_replicas(4, 6)
    for index, how in enumerate(gone):
        if isinstance(how, str):
            existing[index] = terminated(existing[index], how)
        else:
            existing[index]["metadata"].update(how)
    offline = offline_cluster([PARTIAL], existing)
    (run,) = offline.admit([pod("web-5d8f7c-new", owner=("ReplicaSet", "web-5d8f7c"))])
    assert placement(run.result) == expected


def test_a_pod_is_not_its_own_sibling() -> None:
    """A StatefulSet's replacement has its predecessor's name, which a watch that is behind still shows."""
    predecessors = [
        pod(f"db-{i}", owner=("StatefulSet", "db"), labels={"app": "db"}, annotations={"celmut.io/placement": p})
        for i, p in enumerate(["on-demand", "spot", "spot", "on-demand", "on-demand"])
    ]
    offline = offline_cluster([PARTIAL], predecessors)
    # db-2 (spot) is being recreated: 4 siblings, 1 on spot, so db-2 goes to spot again (floor(5 * 0.4) = 2);
    # counting its predecessor too, 2 of 6 would already be on spot
    (run,) = offline.admit([pod("db-2", owner=("StatefulSet", "db"), labels={"app": "db"})])
    assert placement(run.result) == "spot"


# --- shipped presets ----------------------------------------------------------------------------------

SHIPPED = ["spot-all", "spot-all-except-kube-system", "spot-partial"]


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_policy_equals_what_celmut_compile_prints(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(ROOT / "presets" / f"{name}.yaml")]) == 0
    printed = list(yaml.safe_load_all(capsys.readouterr().out))
    shipped = list(yaml.safe_load_all((ROOT / "examples/spot-presets" / f"{name}.yaml").read_text()))
    assert shipped == printed, f"regenerate: celmut compile presets/{name}.yaml > examples/spot-presets/{name}.yaml"


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_policy_is_idempotent_on_reinvocation(name: str) -> None:
    offline = offline_cluster(load_documents(str(ROOT / "examples/spot-presets" / f"{name}.yaml")))
    pods = [
        *replicas(5),
        pod("coredns-1", namespace="kube-system"),
        pod("exporter-1", owner=DAEMONSET),
        pod("pinned-1", annotations={LIFECYCLE: "on-demand"}),
    ]
    results = [run.result for run in offline.admit(pods)]
    assert all(r.patch for r in results)
    for result in results:
        assert result.object is not None
        again = offline.engine.admit(AdmissionInput.from_object(result.object))
        assert again.patch == [] and not again.errored


def test_celmut_compile_prints_the_custom_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(ROOT / "examples/spot-custom-values.yaml")]) == 0
    policy, daemonsets = list(yaml.safe_load_all(capsys.readouterr().out))
    assert policy["metadata"]["name"] == "spot-custom"
    assert daemonsets["metadata"]["name"] == "spot-custom-daemonsets"
    names = [v["name"] for v in policy["spec"]["variables"]]
    for step in ("isDaemonSetPod", "alreadyPlaced", "lifecycleOverride", "forcedToOnDemand", "forcedToSpot"):
        assert step in names
    assert names.index("forcedToOnDemand") < names.index("forcedToSpot") < names.index("placement")
    assert [c["name"] for c in policy["spec"]["matchConditions"]] == [
        "controlled-by-a-workload",
        "outside-the-celmut-namespace",
        "no-topology-spread-over-spot",
        "not-in-ignore-pods",
        "celmut.io/placement-is-spot-or-on-demand",
        "scheduling.cast.ai/lifecycle-is-spot-or-on-demand",
        "scheduling.cast.ai/spot-percentage-is-1-to-99",
    ]


def test_celmut_compile_reports_invalid_values_with_the_field_path(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("staticConfig:\n  spotPercentageOfReplicaSet: 100\n")
    assert main(["compile", str(values)]) == 2
    assert "staticConfig.spotPercentageOfReplicaSet: Invalid value: 100: must be at most 99" in capsys.readouterr().err


# --- validation ---------------------------------------------------------------------------------------

INVALID = {
    "unknown preset": (
        {"staticConfig": {"preset": "mostlySpot"}},
        "staticConfig.preset: Unsupported value: 'mostlySpot'",
    ),
    "percentage over 99": (
        custom(spotPercentageOfReplicaSet=100),
        "staticConfig.spotPercentageOfReplicaSet: Invalid value: 100",
    ),
    "negative percentage": (custom(spotPercentageOfReplicaSet=-1), "must be at least 0"),
    "percentage as a string": (
        custom(spotPercentageOfReplicaSet="40"),
        "spotPercentageOfReplicaSet: must be an integer",
    ),
    "defaultToSpot not a boolean": (custom(defaultToSpot="yes"), "staticConfig.defaultToSpot: must be a boolean"),
    "staticConfig not a mapping": ({"staticConfig": ["allSpot"]}, "staticConfig: must be an object"),
    "unknown staticConfig key": (
        custom(forcePodsToSpotInstances=[]),
        "staticConfig.forcePodsToSpotInstances: unknown field",
    ),
    "namespaceSelector is rejected": (
        custom(forcePodsToOnDemand=[{"namespaceSelector": {"matchLabels": {"tier": "system"}}}]),
        "staticConfig.forcePodsToOnDemand[0]: Forbidden: not supported",
    ),
    "an empty term": (
        custom(ignorePods=[{"topologyKey": "x"}]),
        "staticConfig.ignorePods[0]: Required value: labelSelector or namespaces",
    ),
    "a term that is not a mapping": (custom(ignorePods=["web"]), "staticConfig.ignorePods[0]: must be an object"),
    "unknown term field": (
        custom(ignorePods=[{"matchNamespaces": ["a"]}]),
        "staticConfig.ignorePods[0].matchNamespaces: unknown field",
    ),
    "invalid namespace": (
        custom(ignorePods=[{"namespaces": ["Kube_System"]}]),
        "staticConfig.ignorePods[0].namespaces[0]: Invalid value",
    ),
    "unknown operator": (
        custom(
            forcePodsToSpot=[{"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}}]
        ),
        "staticConfig.forcePodsToSpot[0].labelSelector.matchExpressions[0].operator: Unsupported value: 'Gt'",
    ),
    "In without values": (
        custom(forcePodsToSpot=[{"labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}]),
        "matchExpressions[0].values: Required value",
    ),
    "Exists with values": (
        custom(
            forcePodsToSpot=[
                {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}}
            ]
        ),
        "matchExpressions[0].values: Forbidden",
    ),
    "a matchLabels value that is not a string": (
        custom(ignorePods=[{"labelSelector": {"matchLabels": {"enabled": True}}}]),
        "staticConfig.ignorePods[0].labelSelector.matchLabels.enabled: must be a string",
    ),
    "an invalid label key": (
        custom(ignorePods=[{"labelSelector": {"matchLabels": {"-bad": "x"}}}]),
        "labelSelector.matchLabels.-bad: Invalid value: '-bad': must be a label key",
    ),
    "a preset with a custom rule": (
        {"staticConfig": {"preset": "allSpot", "forcePodsToOnDemand": [{"namespaces": ["a"]}]}},
        "staticConfig.forcePodsToOnDemand: Forbidden: cannot be combined with staticConfig.preset (allSpot)",
    ),
    "a preset with a non-default percentage": (
        {"staticConfig": {"preset": "partialSpot", "spotPercentageOfReplicaSet": 70}},
        "staticConfig.spotPercentageOfReplicaSet: Forbidden",
    ),
    "an invalid celmutNamespace": (ALL | {"celmutNamespace": "Celmut"}, "celmutNamespace: Invalid value: 'Celmut'"),
}


@pytest.mark.parametrize(("values", "message"), INVALID.values(), ids=INVALID.keys())
def test_invalid_values_are_reported_with_the_field_path(values: dict[str, Any], message: str) -> None:
    errors = compile_documents([Document("values.yaml", 0, values)]).errors
    assert len(errors) == 1 and message in str(errors[0])
    assert str(errors[0]).startswith("values.yaml: spot webhook values #0:")


def test_a_preset_may_keep_the_charts_defaults() -> None:
    chart_defaults = {
        "preset": "partialSpot",
        "defaultToSpot": True,
        "spotPercentageOfReplicaSet": 0,
        "ignorePods": None,
        "forcePodsToSpot": None,
        "forcePodsToOnDemand": None,
        "presets": {"partialSpot": "defaultToSpot: true\n"},
        "stringTemplate": "defaultToSpot: {{ .Values.staticConfig.defaultToSpot }}\n",
    }
    compilation = compile_values({"staticConfig": chart_defaults, "replicaCount": 3})
    assert [p.name for p in compilation.compiled.policies] == ["spot-partial", "spot-partial-daemonsets"]


def test_two_values_documents_for_the_same_policy_are_rejected() -> None:
    errors = compile_documents([Document("a.yaml", 0, ALL), Document("b.yaml", 0, ALL)]).errors
    assert len(errors) == 1 and "policy spot-all is already generated from a.yaml" in str(errors[0])


def test_documents_with_a_kind_are_not_claimed() -> None:
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "staticConfig": {}}
    compilation = compile_documents([Document("cm.yaml", 0, configmap)])
    assert not compilation.compiled.policies
    assert [str(e) for e in compilation.errors] == ["cm.yaml: ConfigMap (v1) x: not a policy"]  # and not skipped


DEMO = {
    "spot-all": {"checkout": ["spot", "spot", "spot"], "coredns": "spot", "db": "spot", "train": "spot"},
    "spot-all-except-kube-system": {
        "checkout": ["spot", "spot", "spot"],
        "coredns": "on-demand",
        "db": "spot",
        "train": "spot",
    },
    "spot-partial": {
        "checkout": ["on-demand", "on-demand", "spot"],  # 40 % of 3 is 1
        "coredns": "on-demand",
        "db": "on-demand",
        "train": "on-demand",
    },
}


@pytest.mark.parametrize("name", SHIPPED)
def test_the_demo_pods_with_each_spot_preset(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    # what `make demo SPOT_PRESET=<name>` shows for the preset policies (one spot preset at a time)
    policies = [ROOT / "examples/spot-presets" / f"{name}.yaml", ROOT / "policies/presets/gpu-slicing.yaml"]
    argv = ["apply", *map(str, policies), str(ROOT / "examples/pinning-plan.yaml")]
    assert main([*argv, "-r", str(ROOT / "examples/preset-pods")]) == 0
    pods = {p["metadata"]["name"]: p for p in yaml.safe_load_all(capsys.readouterr().out)}

    def placed(prefix: str) -> list[str]:
        found = [p for n, p in pods.items() if n.startswith(prefix)]
        return [p["metadata"].get("annotations", {}).get("celmut.io/placement", "-") for p in found]

    expected = DEMO[name]
    assert placed("checkout-") == expected["checkout"]
    assert placed("coredns-") == [expected["coredns"]]
    assert placed("payments-") == ["on-demand"]  # scheduling.cast.ai/lifecycle: on-demand
    assert placed("orders-db-0") == [expected["db"]]
    assert placed("train-") == [expected["train"]]
    exporter = pods["node-exporter-q1r2s"]
    assert placed("node-exporter-") == ["-"] and exporter["spec"]["tolerations"] == [TOLERATION]
    trainer = pods["train-resnet-x7k2p"]["spec"]
    assert trainer["initContainers"][0]["resources"] == {"limits": {"nvidia.com/gpu-shared": "4"}}
    assert trainer["containers"][0]["resources"]["requests"]["nvidia.com/gpu-shared"] == "4"
    assert pods["render-8h3j1"]["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    terms = pods["orders-db-1"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    hostname = {"key": "kubernetes.io/hostname", "operator": "In", "values": ["ip-10-0-2-41.ec2.internal"]}
    assert all(hostname in t["matchExpressions"] for t in terms["nodeSelectorTerms"])
