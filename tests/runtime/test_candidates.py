"""Issue 16 §3: policies that cannot match cost nothing, and the index never changes an answer.

The engine visits only the policies whose resource rules name the request's group, version,
resource, subresource and operation (``celmut.runtime.candidates``). Differential tests (hypothesis)
compare, on random rule sets (wildcards, ``*/*``, ``pods/*``, ``*/status``, scopes, names, exclusions,
selectors, both kinds of MutatingPolicy) and random requests, the indexed engine with one visiting
every policy: same answer, and every policy left out is one the matcher skips
(``staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules/rules.go`` is the rule
semantics both follow).
"""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from celmut.compile.compiled import CompiledPolicySet
from celmut.controller.triggers import trigger_policies
from celmut.runtime import AdmissionEngine, AdmissionInput, AdmissionOptions
from celmut.runtime.candidates import PolicyIndex, may_select, request_key
from celmut.runtime.matching import NO_RULE_MATCHES, decided_by_kind, match_reason, namespace_labels
from celmut.runtime.results import PolicyOutcome
from tests.runtime.helpers import compile_text

GROUPS = st.sampled_from(["", "apps", "batch", "*"])
VERSIONS = st.sampled_from(["v1", "v1beta1", "*"])
RESOURCES = st.sampled_from(
    [
        "pods",
        "deployments",
        "jobs",
        "configmaps",
        "namespaces",
        "replicasets",
        "pods/status",
        "pods/*",
        "*",
        "*/*",
        "*/status",
    ]
)
OPERATIONS = st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT", "*"])


@st.composite
def rules(draw: st.DrawFn) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "apiGroups": draw(st.lists(GROUPS, min_size=1, max_size=2, unique=True)),
        "apiVersions": draw(st.lists(VERSIONS, min_size=1, max_size=2, unique=True)),
        "resources": draw(st.lists(RESOURCES, min_size=1, max_size=2, unique=True)),
        "operations": draw(st.lists(OPERATIONS, min_size=1, max_size=2, unique=True)),
    }
    scope = draw(st.sampled_from([None, "*", "Namespaced", "Cluster"]))
    if scope:
        rule["scope"] = scope
    if draw(st.booleans()) and draw(st.booleans()):
        rule["resourceNames"] = [draw(st.sampled_from(["web", "other", "we"]))]
    return rule


@st.composite
def policies(draw: st.DrawFn, index: int) -> dict[str, Any]:
    name = f"p{index}"
    patch = (
        f'has(object.metadata.annotations) ? [JSONPatch{{op: "add", path: "/metadata/annotations/seen-{name}", '
        f'value: "1"}}] : [JSONPatch{{op: "add", path: "/metadata/annotations", value: {{"seen-{name}": "1"}}}}]'
    )
    match: dict[str, Any] = {"resourceRules": draw(st.lists(rules(), min_size=1, max_size=2))}
    if draw(st.booleans()) and draw(st.booleans()):
        match["excludeResourceRules"] = [draw(rules())]
    if draw(st.booleans()) and draw(st.booleans()):
        match["namespaceSelector"] = {"matchLabels": {"env": draw(st.sampled_from(["prod", "dev"]))}}
    if draw(st.booleans()) and draw(st.booleans()):
        match["objectSelector"] = {"matchLabels": {"app": draw(st.sampled_from(["web", "db"]))}}
    namespaced = draw(st.booleans()) and draw(st.booleans())
    spec: dict[str, Any] = {
        "failurePolicy": draw(st.sampled_from(["Fail", "Ignore"])),
        "autogen": {"podControllers": {"controllers": []}},
        "matchConstraints": match,
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": patch}}],
    }
    if draw(st.booleans()):
        spec["evaluation"] = {"mutateExisting": {"enabled": True}}
    metadata: dict[str, Any] = {"name": name}
    if namespaced:
        metadata["namespace"] = draw(st.sampled_from(["default", "prod"]))
    kind = "NamespacedMutatingPolicy" if namespaced else "MutatingPolicy"
    return {"apiVersion": "policies.kyverno.io/v1", "kind": kind, "metadata": metadata, "spec": spec}


OBJECTS: dict[str, dict[str, Any]] = {
    "pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"}},
    "generated pod": {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "web-", "namespace": "prod", "labels": {"app": "web"}},
    },
    "deployment": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"}},
    "job": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "other", "namespace": "default"}},
    "configmap": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web", "namespace": "default"}},
    "namespace": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod", "labels": {"env": "prod"}}},
    # Kyverno's policies leave a ReplicaSet its Deployment controls alone, before looking at its kind
    "controlled replicaset": {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "web-1",
            "namespace": "default",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "controller": True}],
        },
    },
}


BACKGROUND_USER = "system:serviceaccount:celmut:celmut-controller"


@st.composite
def requests(draw: st.DrawFn) -> AdmissionInput:
    obj = OBJECTS[draw(st.sampled_from(sorted(OBJECTS)))]
    operation = draw(st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT"]))
    user = {"username": draw(st.sampled_from(["alice", BACKGROUND_USER]))}
    if operation == "DELETE":
        request = AdmissionInput.from_object(None, operation, old_object=obj, user_info=user)
    elif operation == "UPDATE":
        request = AdmissionInput.from_object(obj, operation, old_object=obj, user_info=user)
    else:
        request = AdmissionInput.from_object(obj, operation, user_info=user)
    request.sub_resource = draw(st.sampled_from(["", "", "status", "scale"]))
    return request


def compiled(documents: list[dict[str, Any]]) -> CompiledPolicySet:
    return compile_text(yaml.safe_dump_all(documents))


def visible(outcome: PolicyOutcome) -> tuple[Any, ...]:
    """Everything an outcome reports but its timing."""
    return (outcome.policy, outcome.status, outcome.reason, outcome.cause, outcome.cause_name, outcome.path,
            outcome.binding, outcome.patch, outcome.audit_annotations)  # fmt: skip


SLOW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SLOW
@given(data=st.data())
def test_the_indexed_engine_answers_as_one_visiting_every_policy(data: st.DataObject) -> None:
    documents = [data.draw(policies(i)) for i in range(data.draw(st.integers(1, 5)))]
    policy_set = compiled(documents)
    background = frozenset({BACKGROUND_USER})  # skipBackgroundRequests (true by default) skips its requests
    every = AdmissionEngine(
        policy_set,
        options=AdmissionOptions(timeout_seconds=None, report_unselected=True, background_usernames=background),
    )
    indexed = AdmissionEngine(
        policy_set,
        options=AdmissionOptions(timeout_seconds=None, report_unselected=False, background_usernames=background),
    )
    visiting = AdmissionEngine(
        policy_set,
        options=AdmissionOptions(timeout_seconds=None, report_unselected=True, background_usernames=background),
    )
    visiting._unselected_by_kind = {}  # every policy through the evaluator's prechecks
    for request in data.draw(st.lists(requests(), min_size=1, max_size=4)):
        for failure_policy in (None, "Fail", "Ignore"):
            full = every.admit(request, failure_policy=failure_policy)
            fast = indexed.admit(request, failure_policy=failure_policy)
            reference = visiting.admit(request, failure_policy=failure_policy)
            # issue 36: the outcomes made without a visit are the ones the visit gives
            assert [visible(o) for o in full.outcomes] == [visible(o) for o in reference.outcomes]
            assert (fast.allowed, fast.object, fast.patch, fast.message, fast.warnings, fast.audit_annotations) == (
                full.allowed, full.object, full.patch, full.message, full.warnings, full.audit_annotations
            )  # fmt: skip
            chosen = {p.display_name for p in indexed.index.candidates(request_key(request), failure_policy)}
            assert [visible(o) for o in fast.outcomes] == [visible(o) for o in full.outcomes if o.policy in chosen]
            for left_out in (o for o in full.outcomes if o.policy not in chosen):
                assert left_out.status == "skipped", left_out
                assert left_out.cause in ("namespace", "controlledReplicaSet", "backgroundRequest", "matchConstraints")


@SLOW
@given(data=st.data())
def test_no_policy_the_matcher_selects_is_left_out_of_the_index(data: st.DataObject) -> None:
    """The property the engine and the controller's triggers rely on, on the rules alone."""
    policy_set = compiled([data.draw(policies(i)) for i in range(4)])
    index = PolicyIndex(policy_set.policies)
    triggers = PolicyIndex(trigger_policies(policy_set.policies))
    for request in data.draw(st.lists(requests(), min_size=1, max_size=6)):
        labels = namespace_labels(request, {"metadata": {"labels": {"env": "prod"}}} if request.namespace else None)
        candidates = index.candidates(request_key(request))
        for policy in policy_set.policies:
            if not match_reason(policy.match, request, labels):
                assert policy in candidates, (policy.name, request_key(request))
                if policy in trigger_policies([policy]):
                    assert policy in triggers.candidates(request_key(request))


def test_a_request_visits_only_the_policies_that_name_its_kind() -> None:
    documents = [
        {
            "apiVersion": "policies.kyverno.io/v1",
            "kind": "MutatingPolicy",
            "metadata": {"name": name},
            "spec": {
                "autogen": {"podControllers": {"controllers": []}},
                "matchConstraints": {"resourceRules": [rule]},
                "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}],
            },
        }
        for name, rule in {
            "pods": {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]},
            "everything": {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*/*"]},
            "statuses": {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*/status"]},
            "deployments": {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["*"], "resources": ["*"]},
        }.items()
    ]
    engine = AdmissionEngine(compiled(documents), options=AdmissionOptions(report_unselected=False))
    pod = AdmissionInput.from_object(OBJECTS["pod"], "CREATE")
    assert [o.policy for o in engine.admit(pod).outcomes] == ["everything", "pods"]
    pod.sub_resource = "status"
    assert [p.name for p in engine.index.candidates(request_key(pod))] == ["everything", "statuses"]
    deployment = AdmissionInput.from_object(OBJECTS["deployment"], "UPDATE", old_object=OBJECTS["deployment"])
    assert [o.policy for o in engine.admit(deployment).outcomes] == ["deployments", "everything"]


@SLOW
@given(data=st.data())
def test_a_match_decided_by_kind_holds_for_every_request_the_index_lets_through(data: st.DataObject) -> None:
    """The engine's shortcut (runtime/evaluate.py ``_precheck``): for a match without selectors,
    exclusions, scope or resourceNames, being a candidate is matching, whatever the object says, and
    not being one is the matcher's "no resourceRule matches" (what report_unselected reports)."""
    policy_set = compiled([data.draw(policies(i)) for i in range(4)])
    shortcut = [p for p in policy_set.policies if decided_by_kind(p.match)]
    for request in data.draw(st.lists(requests(), min_size=1, max_size=6)):
        labels = namespace_labels(request, {"metadata": {"labels": {"env": "prod"}}} if request.namespace else None)
        for policy in shortcut:
            if may_select(policy.match, request_key(request)):
                assert match_reason(policy.match, request, labels) == "", (policy.name, request_key(request))
            else:
                assert match_reason(policy.match, request, labels) == NO_RULE_MATCHES, policy.name


def test_only_a_match_the_request_kind_decides_takes_the_shortcut() -> None:
    plain = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["*"]}]}
    constrained = {
        "namespaceSelector": {"namespaceSelector": {"matchLabels": {"env": "prod"}}},
        "objectSelector": {"objectSelector": {"matchLabels": {"app": "web"}}},
        "excludeResourceRules": {"excludeResourceRules": plain["resourceRules"]},
        "scope": {"resourceRules": [{**plain["resourceRules"][0], "scope": "Namespaced"}]},
        "resourceNames": {"resourceRules": [{**plain["resourceRules"][0], "resourceNames": ["web"]}]},
    }
    documents = [
        {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": name},
         "spec": {"matchConstraints": {**plain, **extra}, "autogen": {"podControllers": {"controllers": []}},
                  "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}]}}
        for name, extra in [("plain", {}), *constrained.items()]
    ]  # fmt: skip
    decided = {p.name: decided_by_kind(p.match) for p in compiled(documents).policies}
    assert decided == {"plain": True, **dict.fromkeys(constrained, False)}
