"""The CEL building blocks every preset uses: workload identity (with and without a cluster lookup),
exact spot/group splits at 1, 10 and 100 pods, the hash fallback, and idempotent placement patches."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from celmut import names
from celmut.cel.lookups import LookupFailed, Services
from celmut.compile import cel_literals as lit
from celmut.compile.presets import label_selectors as ls
from celmut.compile.presets import placement as pl
from celmut.compile.presets import yaml_format
from celmut.runtime import AdmissionInput
from celmut.service.assembly import EngineSettings, assemble_engine
from celmut.service.offline import OfflineCluster
from celmut.service.static_resources import StaticResources
from tests.offline import offline_cluster


def policy(variables: list[dict[str, str]], patches: str, cluster: list[dict[str, Any]] | None = None) -> OfflineCluster:
    """An offline cluster with one MutatingPolicy built from the placement helpers."""
    document = pl.mutating_policy("p", variables=variables, match_conditions=[], patches=patches)
    return offline_cluster([document], cluster or [])


def pod(
    i: int, owner: tuple[str, str] | None = ("ReplicaSet", "web-5d8f7c"), labels: dict[str, str] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": f"web-{i}",
        "namespace": "shop",
        "labels": labels or {"pod-template-hash": "5d8f7c"},
    }
    if owner:
        metadata["ownerReferences"] = [
            {"apiVersion": "v1", "kind": owner[0], "name": owner[1], "uid": "u", "controller": True}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


IDENTITY = pl.annotate("workload", 'variables.workloadKind + "/" + variables.workloadName')


@pytest.mark.parametrize(
    ("owner", "labels", "cluster", "expected"),
    [
        (None, None, [], "Pod/web-0"),
        (("ReplicaSet", "web-5d8f7c"), None, [], "Deployment/web"),
        (("ReplicaSet", "plain-rs"), {}, [], "ReplicaSet/plain-rs"),
        (("Job", "backup-28375020"), {}, [], "CronJob/backup"),
        (("Job", "one-off"), {}, [], "Job/one-off"),
        (("StatefulSet", "db"), {}, [], "StatefulSet/db"),
        (
            ("ReplicaSet", "api-abc"),
            {},
            [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {
                        "name": "api-abc",
                        "namespace": "shop",
                        "ownerReferences": [
                            {
                                "apiVersion": "apps/v1",
                                "kind": "Deployment",
                                "name": "api",
                                "uid": "d",
                                "controller": True,
                            }
                        ],
                    },
                }
            ],
            "Deployment/api",
        ),
    ],
    ids=[
        "bare pod",
        "derived from pod-template-hash",
        "standalone ReplicaSet",
        "CronJob from job name",
        "plain Job",
        "StatefulSet",
        "looked up",
    ],
)
def test_workload_identity(owner: Any, labels: Any, cluster: list[dict[str, Any]], expected: str) -> None:
    offline = policy(pl.workload_variables(), IDENTITY, cluster)
    result = offline.admit([pod(0, owner, labels)])[0].result
    assert result.object["metadata"]["annotations"]["workload"] == expected


SPOT_60 = [*pl.workload_variables(), pl.siblings_variable(), pl.variable("placement", pl.spot_split("60"))]
PLACE = f"""{pl.annotate(pl.PLACEMENT_ANNOTATION, "variables.placement")} +
(variables.placement == "spot" ? {pl.spot_patches("only-spot")} : {pl.on_demand_patches()})"""


@pytest.mark.parametrize(("pods", "spot"), [(1, 0), (10, 6), (100, 60)])
def test_spot_split_is_exact_at_every_size(pods: int, spot: int) -> None:
    offline = policy(SPOT_60, PLACE)
    placements = [
        r.result.object["metadata"]["annotations"][pl.PLACEMENT_ANNOTATION]
        for r in offline.admit([pod(i) for i in range(pods)])
    ]
    assert placements.count("spot") == spot
    for n in range(1, pods + 1):  # every prefix stays within one pod of the ratio
        assert abs(placements[:n].count("spot") - n * 0.6) < 1


def test_placements_become_concrete_pod_changes_and_are_idempotent() -> None:
    offline = policy(SPOT_60, PLACE)
    on_demand, spot = (r.result.object for r in offline.admit([pod(0), pod(1)]))
    assert spot["spec"]["tolerations"] == [
        {"key": "scheduling.cast.ai/spot", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert spot["spec"]["nodeSelector"] == {"scheduling.cast.ai/spot": "true"}
    terms = on_demand["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [{"matchExpressions": [{"key": "scheduling.cast.ai/spot", "operator": "DoesNotExist"}]}]
    for mutated in (on_demand, spot):  # a second invocation changes nothing
        assert offline.engine.admit(AdmissionInput.from_object(mutated)).patch == []


def test_on_demand_is_added_to_every_existing_required_term() -> None:
    engine = policy([], pl.on_demand_patches()).engine
    obj = pod(0)
    obj["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                    {"matchFields": []},
                ]
            }
        }
    }
    result = engine.admit(AdmissionInput.from_object(obj))
    terms = result.object["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert all({"key": "scheduling.cast.ai/spot", "operator": "DoesNotExist"} in t["matchExpressions"] for t in terms)


def test_preferred_spot_appends_to_existing_preferences() -> None:
    engine = policy([], pl.spot_patches("preferred-spot")).engine
    obj = pod(0)
    obj["spec"]["affinity"] = {
        "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]}
    }
    result = engine.admit(AdmissionInput.from_object(obj))
    preferred = result.object["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert len(preferred) == 2 and preferred[1]["preference"]["matchExpressions"][0]["key"] == "scheduling.cast.ai/spot"


def test_without_a_lookup_a_hash_of_the_name_decides_deterministically() -> None:
    engine = assemble_engine(policy(SPOT_60, PLACE).compilation, EngineSettings())  # no resource lookup
    first = [
        engine.admit(AdmissionInput.from_object(pod(i))).object["metadata"]["annotations"][pl.PLACEMENT_ANNOTATION]
        for i in range(200)
    ]
    second = [
        engine.admit(AdmissionInput.from_object(pod(i))).object["metadata"]["annotations"][pl.PLACEMENT_ANNOTATION]
        for i in range(200)
    ]
    assert first == second
    assert 90 <= first.count("spot") <= 150  # roughly 60 % of 200


@pytest.mark.parametrize(
    ("owner", "labels", "expected"),
    [
        (None, None, "Pod/web-0"),
        (("ReplicaSet", "web-5d8f7c"), None, "Deployment/web"),
        (("ReplicaSet", "plain-rs"), {}, "ReplicaSet/plain-rs"),
        (("Job", "backup-28375020"), {}, "CronJob/backup"),
        (("StatefulSet", "db"), {}, "StatefulSet/db"),
    ],
    ids=["bare pod", "derived from pod-template-hash", "standalone ReplicaSet", "CronJob from job name", "StatefulSet"],
)
def test_without_a_cluster_the_workload_is_derived_from_names(owner: Any, labels: Any, expected: str) -> None:
    """No cluster at all: resource.Get answers null (assembly.without_cluster), so Kyverno's strict
    orValue has no error to hide and the names decide, as with a cluster that lacks the owner."""
    engine = assemble_engine(policy(pl.workload_variables(), IDENTITY).compilation, EngineSettings())
    result = engine.admit(AdmissionInput.from_object(pod(0, owner, labels)))
    assert result.object is not None and result.object["metadata"]["annotations"]["workload"] == expected


class Forbidden(LookupFailed):
    reason = "Forbidden"


class ForbiddenLookups(StaticResources):
    """A cluster whose RBAC refuses every read (the API server's 403)."""

    def get(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise Forbidden('replicasets.apps is forbidden: User "celmut" cannot get resource')

    def list(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise Forbidden('pods is forbidden: User "celmut" cannot list resource')

    list_values = list  # resource.List's read (SharedListLookup)


@pytest.mark.parametrize(
    ("variables", "patches"),
    [(pl.workload_variables(), IDENTITY), (SPOT_60, PLACE)],
    ids=["owner lookup", "sibling count"],
)
def test_a_failing_lookup_fails_the_preset_as_in_kyverno(variables: list[dict[str, str]], patches: str) -> None:
    """Kyverno's orValue is strict (pkg/cel/compiler/env.go OrValueCompatEnvOptions): a lookup that
    fails is the policy's error, and the presets' failurePolicy Ignore admits the pod unchanged."""
    compilation = policy(variables, patches).compilation
    engine = assemble_engine(compilation, EngineSettings(services=Services(resources=ForbiddenLookups())))
    result = engine.admit(AdmissionInput.from_object(pod(0, ("ReplicaSet", "web-5d8f7c"))))
    assert result.allowed and result.patch == []
    assert any("failed to get resource" in w or "failed to list resource" in w for w in result.warnings), result.warnings


@pytest.mark.parametrize(
    ("pods", "expected"),
    [(1, {"a": 1}), (10, {"a": 3, "b": 3, "c": 2, "base": 2}), (100, {"a": 30, "b": 30, "c": 20, "base": 20})],
)
def test_group_split_is_exact(pods: int, expected: dict[str, int]) -> None:
    variables = [
        *pl.workload_variables(),
        pl.siblings_variable(),
        pl.variable("group", pl.group_split([("a", 30), ("b", 30), ("c", 20)], "base")),
    ]
    offline = policy(variables, pl.annotate(pl.GROUP_ANNOTATION, "variables.group"))
    groups = Counter(
        r.result.object["metadata"]["annotations"][pl.GROUP_ANNOTATION]
        for r in offline.admit([pod(i) for i in range(pods)])
    )
    assert dict(groups) == expected


# --- helpers for the spot, GPU slicing and pinning presets ----------------------------------------------

LABELS = [{}, {"app": "web"}, {"app": "api", "tier": "db"}, {"tier": ""}, {"app.kubernetes.io/name": "x"}]
SELECTORS = [
    {},
    {"matchLabels": {"app": "web"}},
    {"matchLabels": {"tier": ""}},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]},
    {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]},
    {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
    {"matchLabels": {"app": "api"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["db"]}]},
    {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": ["x"]}]},
]


@pytest.mark.parametrize("selector", SELECTORS, ids=[str(s) for s in SELECTORS])
def test_label_selector_cel_agrees_with_the_runtime_matcher(selector: dict[str, Any]) -> None:
    from celmut.cel import Activation, Environment, types
    from celmut.policy.errors import FieldError
    from celmut.policy.fields import Reader
    from celmut.runtime.selectors import matches

    errors: list[FieldError] = []
    parsed = ls.parse_label_selector(Reader(selector, "labelSelector", errors))
    assert not errors
    program = Environment("kyverno", variables={"labels": types.DYN}).compile(
        ls.label_selector(parsed, "variables.labels")
    )
    for labels in LABELS:
        assert program.evaluate(Activation(variable_values={"labels": labels})) is matches(parsed, labels), labels


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ({"matchLabels": {"a": 1}}, "labelSelector.matchLabels.a: must be a string"),
        (
            {"matchLabels": {"a/b/c": "x"}},
            "labelSelector.matchLabels.a/b/c: Invalid value: 'a/b/c': must be a label key",
        ),
        ({"matchLabels": {"a": "-x-"}}, "labelSelector.matchLabels.a: Invalid value: '-x-': must be a label value"),
        (
            {"matchExpressions": [{"key": "a", "operator": "Gt"}]},
            "labelSelector.matchExpressions[0].operator: Unsupported",
        ),
        ({"matchExpressions": [{"operator": "Exists"}]}, "labelSelector.matchExpressions[0].key: Required value"),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}, "matchExpressions[0].values: Required"),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            "matchExpressions[0].values: Forbidden",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x y"]}]},
            "matchExpressions[0].values[0]: Invalid",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "value": "x"}]},
            "matchExpressions[0].value: unknown field",
        ),
        ({"matchLabel": {"a": "b"}}, "labelSelector.matchLabel: unknown field"),
    ],
    ids=[
        "non-string value",
        "two slashes in a key",
        "value not starting alphanumeric",
        "unknown operator",
        "missing key",
        "In without values",
        "Exists with values",
        "blank in a value",
        "unknown expression field",
        "unknown selector field",
    ],
)
def test_label_selector_validation_names_the_field(selector: dict[str, Any], message: str) -> None:
    from celmut.policy.errors import FieldError
    from celmut.policy.fields import Reader

    errors: list[FieldError] = []
    ls.parse_label_selector(Reader(selector, "labelSelector", errors))
    assert len(errors) == 1 and message in str(errors[0])


@pytest.mark.parametrize(
    ("check", "value", "expected"),
    [
        (names.is_dns_label, "kube-system", True),
        (names.is_dns_label, "Kube-System", False),
        (names.is_dns_label, "a.b", False),
        (names.is_dns_label, "a" * 64, False),
        (names.is_dns_subdomain, "ip-10-0-1-17.ec2.internal", True),
        (names.is_dns_subdomain, "node_1", False),
        (names.is_qualified_name, "nvidia.com/gpu-shared", True),
        (names.is_qualified_name, "app", True),
        (names.is_qualified_name, "/app", False),
        (names.is_qualified_name, "Example.com/x", False),
    ],
    ids=lambda v: getattr(v, "__name__", repr(v)),
)
def test_name_checks(check: Any, value: str, expected: bool) -> None:
    assert check(value) is expected


def test_cel_strings_are_escaped() -> None:
    from celmut.cel import Activation, Environment

    text = 'a "quoted" \\ line\nwith ünïcode'
    assert Environment("kyverno").compile(lit.cel_string(text)).evaluate(Activation()) == text
    assert lit.cel_strings(["a", "b"]) == '["a", "b"]'


def test_prune_variables_keeps_what_is_used_in_order() -> None:
    variables = [
        pl.variable("a", "1"),
        pl.variable("b", "variables.a + 1"),
        pl.variable("unused", "variables.b"),
        pl.variable("c", "variables.b * 2"),
    ]
    assert [v["name"] for v in pl.prune_variables(variables, "variables.c > 0")] == ["a", "b", "c"]
    assert pl.prune_variables(variables, "true") == []


def test_readable_policies_dump_expressions_as_yaml_blocks_and_round_trip() -> None:
    import yaml

    policy = pl.mutating_policy("p", variables=SPOT_60, match_conditions=[], patches=PLACE)
    text = yaml.safe_dump(yaml_format.readable(policy), sort_keys=False)
    assert "expression: |" in text and "\\n" not in text
    reloaded = yaml.safe_load(text)
    assert reloaded["spec"]["variables"][0] == policy["spec"]["variables"][0]
    assert reloaded["spec"]["mutations"][0]["jsonPatch"]["expression"] == "\n".join(
        line.rstrip() for line in PLACE.splitlines()
    )
    assert isinstance(yaml_format.readable({"s": "a\nb  \nc"})["s"], yaml_format.BlockStr)
    assert yaml_format.readable({"s": "a\nb  \nc"}) == {"s": "a\nb\nc"}
