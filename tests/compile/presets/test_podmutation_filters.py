"""PodMutation filters: every filterV2 and legacy filter example of the CAST AI reference, evaluated by
admitting pods (with owners and labels) and checking which ones the PodMutation mutated."""

from __future__ import annotations

from typing import Any

import pytest

from celmut.compile.presets.podmutation.filters import matches_cel
from celmut.compile.presets.podmutation.model import Filter, LabelGroup, LabelMatcher, Matcher
from celmut.runtime import AdmissionInput
from tests.compile.presets.test_podmutation_support import LABEL_PATCH, admit, cluster, mutated_by, pod, podmutation


def exact(*values: str) -> list[dict[str, str]]:
    return [{"type": "exact", "value": v} for v in values]


def regex(*values: str) -> list[dict[str, str]]:
    return [{"type": "regex", "value": v} for v in values]


def label(key: str, value: str, key_type: str = "exact", value_type: str = "exact") -> dict[str, Any]:
    return {"keyMatcher": {"type": key_type, "value": key}, "valueMatcher": {"type": value_type, "value": value}}


COMPLETE_V2 = {
    "workload": {
        "namespaces": exact("production"),
        "names": regex("^frontend-.*$"),
        "kinds": exact("Deployment", "StatefulSet"),
        "excludeNames": exact("frontend-canary"),
    },
    "pod": {
        "labels": {"matchers": [label("tier", "web")], "operator": "and"},
        "excludeLabels": {"matchers": [label("skip-mutation", "true")], "operator": "or"},
    },
}

LEGACY = {
    "workload": {
        "namespaces": ["production", "staging"],
        "names": ["frontend", "backend"],
        "kinds": ["Deployment"],
        "excludeNamespaces": ["kube-system"],
        "excludeNames": ["canary"],
        "excludeKinds": ["DaemonSet"],
    },
    "pod": {
        "labelsFilter": [{"key": "environment", "value": "production"}, {"key": "tier", "value": "frontend"}],
        "labelsOperator": "and",
        "excludeLabelsFilter": [{"key": "skip-mutation", "value": "true"}],
        "excludeLabelsOperator": "or",
    },
}
LEGACY_LABELS = {"environment": "production", "tier": "frontend"}

# (filter spec, [(pod, mutated?)]) — pods are built by tests.compile.presets.test_podmutation_support.pod
CASES: dict[str, tuple[dict[str, Any], list[tuple[dict[str, Any], bool]]]] = {
    "exact namespaces": (
        {"filterV2": {"workload": {"namespaces": exact("production", "staging")}}},
        [(pod(namespace="production"), True), (pod(namespace="staging"), True), (pod(namespace="dev"), False)],
    ),
    "regex namespaces are full matches": (
        {"filterV2": {"workload": {"namespaces": regex("^team-.*$", "^env-prod-.*$")}}},
        [
            (pod(namespace="team-a"), True),
            (pod(namespace="env-prod-1"), True),
            (pod(namespace="my-team-a"), False),
            (pod(namespace="env-dev-1"), False),
        ],
    ),
    "unanchored regex is anchored": (
        {"filterV2": {"workload": {"namespaces": regex("team-.*")}}},
        [(pod(namespace="team-a"), True), (pod(namespace="my-team-a"), False)],
    ),
    "all namespaces but excluded ones": (
        {
            "filterV2": {
                "workload": {"namespaces": regex(".*"), "excludeNamespaces": exact("kube-system", "castai-agent")}
            }
        },
        [
            (pod(namespace="default"), True),
            (pod(namespace="kube-system"), False),
            (pod(namespace="castai-agent"), False),
        ],
    ),
    "workload names exact or regex": (
        {"filterV2": {"workload": {"names": [*exact("frontend"), *regex("^backend-.*$")]}}},
        [
            (pod("frontend"), True),
            (pod("backend-api"), True),
            (pod("frontend-v2"), False),
            (pod("my-backend-x"), False),
        ],
    ),
    "workload kinds": (
        {"filterV2": {"workload": {"kinds": exact("Deployment", "StatefulSet")}}},
        [
            (pod("web", "Deployment"), True),
            (pod("db", "StatefulSet"), True),
            (pod("agent", "DaemonSet"), False),
            (pod("batch", "Job"), False),
            (pod("nightly", "CronJob"), False),
            (pod("bare", "Pod"), False),
        ],
    ),
    "every supported kind is recognised": (
        {"filterV2": {"workload": {"kinds": exact("DaemonSet", "Job", "CronJob", "Pod", "ReplicaSet")}}},
        [
            (pod("agent", "DaemonSet"), True),
            (pod("batch", "Job"), True),
            (pod("nightly", "CronJob"), True),
            (pod("bare", "Pod"), True),
            (pod("plain", "ReplicaSet"), True),
            (pod("web", "Deployment"), False),
        ],
    ),
    "excluded kinds and names": (
        {"filterV2": {"workload": {"excludeKinds": regex("Daemon.*"), "excludeNames": regex("canary-.*")}}},
        [(pod("web"), True), (pod("agent", "DaemonSet"), False), (pod("canary-web"), False)],
    ),
    "pod labels with and": (
        {
            "filterV2": {
                "pod": {
                    "labels": {
                        "matchers": [label("environment", "production"), label("tier", "frontend")],
                        "operator": "and",
                    }
                }
            }
        },
        [
            (pod(labels={"environment": "production", "tier": "frontend"}), True),
            (pod(labels={"environment": "production"}), False),
            (pod(labels={"tier": "frontend"}), False),
        ],
    ),
    "pod labels with or": (
        {
            "filterV2": {
                "pod": {
                    "labels": {
                        "matchers": [label("environment", "production"), label("tier", "frontend")],
                        "operator": "or",
                    }
                }
            }
        },
        [
            (pod(labels={"tier": "frontend"}), True),
            (pod(labels={"tier": "backend"}), False),
            (pod("bare", "Pod"), False),
        ],
    ),
    "operator defaults to and": (
        {"filterV2": {"pod": {"labels": {"matchers": [label("a", "1"), label("b", "2")]}}}},
        [(pod(labels={"a": "1", "b": "2"}), True), (pod(labels={"a": "1"}), False)],
    ),
    "regex key and value matchers need the same label": (
        {
            "filterV2": {
                "pod": {"labels": {"matchers": [label(r"app\.kubernetes\.io/.*", "web|api", "regex", "regex")]}}
            }
        },
        [
            (pod(labels={"app.kubernetes.io/name": "web"}), True),
            (pod(labels={"app.kubernetes.io/component": "api"}), True),
            (pod(labels={"app.kubernetes.io/name": "db", "other": "web"}), False),
            (pod(labels={"app.kubernetes.io/name": "webx"}), False),
        ],
    ),
    "exclude labels": (
        {"filterV2": {"pod": {"excludeLabels": {"matchers": [label("skip-mutation", "true")], "operator": "or"}}}},
        [(pod(labels={"skip-mutation": "true"}), False), (pod(labels={"skip-mutation": "false"}), True), (pod(), True)],
    ),
    "exclude labels with and excludes only when all match": (
        {"filterV2": {"pod": {"excludeLabels": {"matchers": [label("a", "1"), label("b", "2")], "operator": "and"}}}},
        [(pod(labels={"a": "1", "b": "2"}), False), (pod(labels={"a": "1"}), True)],
    ),
    "complete filterV2 example": (
        {"filterV2": COMPLETE_V2},
        [
            (pod("frontend-web", namespace="production", labels={"tier": "web"}), True),
            (pod("frontend-db", "StatefulSet", namespace="production", labels={"tier": "web"}), True),
            (pod("frontend-canary", namespace="production", labels={"tier": "web"}), False),
            (pod("frontend-web", namespace="staging", labels={"tier": "web"}), False),
            (pod("frontend-agent", "DaemonSet", namespace="production", labels={"tier": "web"}), False),
            (pod("frontend-web", namespace="production", labels={"tier": "api"}), False),
            (pod("frontend-web", namespace="production", labels={"tier": "web", "skip-mutation": "true"}), False),
            (pod("backend", namespace="production", labels={"tier": "web"}), False),
        ],
    ),
    "legacy filter example": (
        {"filter": LEGACY},
        [
            (pod("frontend", namespace="production", labels=LEGACY_LABELS), True),
            (pod("backend", namespace="staging", labels=LEGACY_LABELS), True),
            (pod("frontend-v2", namespace="production", labels=LEGACY_LABELS), False),  # legacy strings are exact
            (pod("canary", namespace="production", labels=LEGACY_LABELS), False),
            (pod("frontend", "StatefulSet", namespace="production", labels=LEGACY_LABELS), False),
            (pod("frontend", "DaemonSet", namespace="production", labels=LEGACY_LABELS), False),
            (pod("frontend", namespace="kube-system", labels=LEGACY_LABELS), False),
            (pod("frontend", namespace="production", labels={"tier": "frontend"}), False),
            (pod("frontend", namespace="production", labels={**LEGACY_LABELS, "skip-mutation": "true"}), False),
        ],
    ),
    "legacy strings are not regexes": (
        {"filter": {"workload": {"names": ["^frontend-.*$"]}}},
        [(pod("frontend-web"), False), (pod("^frontend-.*$", "Pod"), True)],
    ),
    "legacy labels with or": (
        {
            "filter": {
                "pod": {
                    "labelsFilter": [{"key": "a", "value": "1"}, {"key": "b", "value": "2"}],
                    "labelsOperator": "or",
                }
            }
        },
        [(pod(labels={"b": "2"}), True), (pod(labels={"b": "1"}), False)],
    ),
    "legacy exclude labels with and": (
        {
            "filter": {
                "pod": {
                    "excludeLabelsFilter": [{"key": "a", "value": "1"}, {"key": "b", "value": "2"}],
                    "excludeLabelsOperator": "and",
                }
            }
        },
        [(pod(labels={"a": "1", "b": "2"}), False), (pod(labels={"a": "1"}), True)],
    ),
    "filterV2 and filter are ANDed": (
        {"filterV2": {"workload": {"namespaces": exact("production")}}, "filter": {"workload": {"names": ["web"]}}},
        [(pod("web", namespace="production"), True), (pod("api", namespace="production"), False), (pod("web"), False)],
    ),
    "no filters match every pod": (
        {},
        [(pod("bare", "Pod", namespace="anything"), True), (pod("agent", "DaemonSet", namespace="kube-system"), True)],
    ),
    "empty filter sections match every pod": (
        {"filterV2": {"workload": {"namespaces": []}, "pod": {"labels": {"matchers": []}}}, "filter": {}},
        [(pod("bare", "Pod"), True)],
    ),
}


@pytest.mark.parametrize(("spec", "expectations"), list(CASES.values()), ids=list(CASES))
def test_filter(spec: dict[str, Any], expectations: list[tuple[dict[str, Any], bool]]) -> None:
    offline = cluster(podmutation("m", {**spec, **LABEL_PATCH}))
    for index, (subject, expected) in enumerate(expectations):
        result = offline.engine.admit(AdmissionInput.from_object(subject))
        assert result.allowed and not result.errored, result.warnings
        got = mutated_by(result) == "m"
        assert got is expected, f"pod {index} {subject['metadata']}: mutated={got}, want {expected}"
        if expected:
            assert result.object is not None and result.object["metadata"]["labels"]["mutated"] == "yes"


def test_workload_identity_is_looked_up_before_it_is_derived() -> None:
    """The ReplicaSet's owner (found through resource.Get) names the workload, even when the
    ReplicaSet's name does not follow the <deployment>-<hash> pattern."""
    replica_set = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "legacy-rs",
            "namespace": "default",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api", "uid": "d", "controller": True}
            ],
        },
    }
    mutation = podmutation(
        "m", {"filterV2": {"workload": {"names": exact("api"), "kinds": exact("Deployment")}}, **LABEL_PATCH}
    )
    subject = pod("legacy-rs", "ReplicaSet")
    (looked_up,) = admit(cluster(mutation, objects=(replica_set,)), subject)
    (without_lookup,) = admit(cluster(mutation), pod("legacy-rs", "ReplicaSet"))
    assert mutated_by(looked_up) == "m"
    assert mutated_by(without_lookup) is None  # derived identity: ReplicaSet/legacy-rs


def test_pods_labelled_ignore_are_skipped() -> None:
    offline = cluster(podmutation("m", LABEL_PATCH))
    (ignored, normal) = admit(offline, pod("a", labels={"pod-mutator.cast.ai/ignore": "true"}), pod("b"))
    assert mutated_by(ignored) is None and not ignored.changed
    assert ignored.outcomes[0].reason == "matchCondition 'not-ignored' is false"
    assert mutated_by(normal) == "m"


def test_filters_compile_to_readable_cel() -> None:
    assert matches_cel([]) == "true"
    assert matches_cel([Filter()]) == "true"
    section = Filter(
        namespaces=(Matcher("exact", "a"), Matcher("exact", "b"), Matcher("regex", "team-.*")),
        exclude_names=(Matcher("exact", "canary"),),
        labels=LabelGroup((LabelMatcher(Matcher("exact", "tier"), Matcher("exact", "web")),)),
    )
    assert matches_cel([section]).split(" &&\n") == [
        '(request.namespace in ["a", "b"] || request.namespace.matches("^(?:team-.*)$"))',
        '!(variables.workloadName == "canary")',
        '("tier" in variables.podLabels && variables.podLabels["tier"] == "web")',
    ]
