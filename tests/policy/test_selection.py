"""Which engine serves a policy (celmut.policy.selection): the --policy-selector syntax and semantics
of k8s.io/apimachinery/pkg/labels/selector.go, Kyverno's detection, and the decision per object."""

from __future__ import annotations

import re
from typing import Any

import pytest

from celmut.policy.selection import (
    AUTO,
    KyvernoPresence,
    PolicySelection,
    PolicySelectorError,
    kyverno_presence,
    parse_selector,
)

Obj = dict[str, Any]

# (selector, labels, selected) — what `kubectl get -l` selects (labels/selector.go Requirement.Matches)
MATCHES = [
    ("celmut.io/owner=celmut", {"celmut.io/owner": "celmut"}, True),
    ("celmut.io/owner=celmut", {"celmut.io/owner": "kyverno"}, False),
    ("celmut.io/owner=celmut", {}, False),
    ("celmut.io/owner==celmut", {"celmut.io/owner": "celmut"}, True),
    ("team!=a", {}, True),  # != selects objects without the key too
    ("team!=a", {"team": "a"}, False),
    ("team in (a, b)", {"team": "b"}, True),
    ("team in (a,b)", {}, False),
    ("team notin (a,b)", {}, True),
    ("team notin (a,b)", {"team": "a"}, False),
    ("owned", {"owned": ""}, True),
    ("!owned", {"owned": ""}, False),
    ("!owned", {}, True),
    ("k=", {"k": ""}, True),
    ("tier>2", {"tier": "3"}, True),
    ("tier>2", {"tier": "x"}, False),
    ("tier<2", {"tier": "1"}, True),
    ("a=1,b=2", {"a": "1", "b": "2"}, True),
    ("a=1,b=2", {"a": "1"}, False),
    ("", {"anything": "x"}, True),  # the empty selector selects everything
]


@pytest.mark.parametrize(("text", "labels", "selected"), MATCHES, ids=[f"{m[0]!r}-{m[1]}" for m in MATCHES])
def test_selectors_select_as_kubectl_does(text: str, labels: dict[str, str], selected: bool) -> None:
    assert parse_selector(text).matches(labels) is selected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a b", "after 'a' expected"),
        ("a in b", "expected '(' after in"),
        ("a in (b", "expected ')'"),
        ("a,", "a requirement must follow ','"),
        ("!a=b", "expected ','"),
        ("=b", "expected a label key"),
        ("-a=b", "'-a' is not a label key"),
        ("a=b c", "expected ','"),
        ("a=" + "v" * 64, "is not a label value"),
        ("Example.com/a=b", "is not a label key"),
        ("x>y", "needs an integer"),
    ],
    ids=[
        "two words",
        "in without a set",
        "unclosed set",
        "trailing comma",
        "negated equality",
        "no key",
        "key not a name",
        "value then a word",
        "value too long",
        "prefix not a DNS subdomain",
        "gt not a number",
    ],
)
def test_a_bad_selector_is_refused_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(PolicySelectorError, match=re.escape(message)) as raised:
        PolicySelection(text)
    assert repr(text) in str(raised.value)


def test_a_selector_prints_back_in_kubectl_syntax() -> None:
    assert str(parse_selector("a = 1, team in (x, y), !b")) == "a=1,team in (x,y),!b"


def crd(name: str, **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": labels}}


def webhook_configuration(name: str, path: str, managed_by: str | None = "kyverno") -> Obj:
    labels = {"webhook.kyverno.io/managed-by": managed_by} if managed_by else {}
    return {
        "metadata": {"name": name, "labels": labels},
        "webhooks": [{"name": "w.kyverno.svc", "clientConfig": {"service": {"name": "kyverno-svc", "path": path}}}],
    }


# (what, crds, webhook configurations, detected)
PRESENCE = [
    ("nothing", [], [], False),
    (
        "celmut's own CRDs",
        [crd("mutatingpolicies.policies.kyverno.io", **{"app.kubernetes.io/part-of": "celmut"})],
        [],
        False,
    ),
    (
        "Kyverno's chart's CRD (kyverno.crds.labels)",
        [crd("mutatingpolicies.policies.kyverno.io", **{"app.kubernetes.io/part-of": "kyverno"})],
        [],
        True,
    ),
    (
        "a CRD without celmut's label (kubectl apply of Kyverno's install.yaml)",
        [crd("namespacedmutatingpolicies.policies.kyverno.io")],
        [],
        True,
    ),
    ("Kyverno's other CRDs only", [crd("validatingpolicies.policies.kyverno.io")], [], False),
    (
        "Kyverno serving MutatingPolicies (/mpol)",
        [],
        [webhook_configuration("kyverno-resource-mutating-webhook-cfg", "/mpol/p")],
        True,
    ),
    (
        "Kyverno serving NamespacedMutatingPolicies (/nmpol)",
        [],
        [webhook_configuration("kyverno-resource-mutating-webhook-cfg", "/nmpol/ns/p")],
        True,
    ),
    (
        "Kyverno's webhooks without MutatingPolicies",
        [],
        [webhook_configuration("kyverno-resource-mutating-webhook-cfg", "/mutate/fail")],
        False,
    ),
    ("a webhook not managed by Kyverno", [], [webhook_configuration("other", "/mpol/p", managed_by=None)], False),
]


@pytest.mark.parametrize(("what", "crds", "configurations", "detected"), PRESENCE, ids=[p[0] for p in PRESENCE])
def test_kyverno_is_detected_by_its_crds_or_its_mutating_policy_webhooks(
    what: str, crds: list[Obj], configurations: list[Obj], detected: bool
) -> None:
    presence = kyverno_presence(crds, configurations)
    assert presence.detected is detected, what
    if detected:
        name = (crds or configurations)[0]["metadata"]["name"]
        assert name in presence.evidence


def policy(kind: str = "MutatingPolicy", **labels: str) -> Obj:
    return {"kind": kind, "metadata": {"name": "p", "labels": labels}}


KYVERNO = KyvernoPresence("CustomResourceDefinition mutatingpolicies.policies.kyverno.io is not celmut's")

# (what, setting, Kyverno present, kind, labels, served by celmut)
DECISIONS = [
    ("auto, alone: every policy", AUTO, False, "MutatingPolicy", {}, True),
    ("auto, next to Kyverno: an unlabelled policy is Kyverno's", AUTO, True, "MutatingPolicy", {}, False),
    (
        "auto, next to Kyverno: a labelled policy is celmut's",
        AUTO,
        True,
        "MutatingPolicy",
        {"celmut.io/owner": "celmut"},
        True,
    ),
    ("auto, next to Kyverno: namespaced policies too", AUTO, True, "NamespacedMutatingPolicy", {}, False),
    ("auto, next to Kyverno: other kinds are celmut's", AUTO, True, "PodMutation", {}, True),
    ("auto, next to Kyverno: exceptions are shared", AUTO, True, "PolicyException", {}, True),
    ("an explicit selector applies without Kyverno", "team=a", False, "MutatingPolicy", {"team": "b"}, False),
    ("an explicit selector applies with Kyverno", "team=a", True, "MutatingPolicy", {"team": "a"}, True),
    ("'' is every policy, always", "", True, "MutatingPolicy", {}, True),
    (
        "an exception made for Kyverno is never celmut's",
        "",
        False,
        "PolicyException",
        {"celmut.io/kyverno-only": "true"},
        False,
    ),
]


@pytest.mark.parametrize(
    ("what", "setting", "kyverno", "kind", "labels", "served"), DECISIONS, ids=[d[0] for d in DECISIONS]
)
def test_one_owner_per_policy(
    what: str, setting: str, kyverno: bool, kind: str, labels: dict[str, str], served: bool
) -> None:
    ownership = PolicySelection(setting).resolve(KYVERNO if kyverno else KyvernoPresence())
    reason = ownership.declines(kind, policy(kind, **labels))
    assert (reason == "") is served, reason


def test_the_reason_names_the_selector_and_why_it_is_in_force() -> None:
    ownership = PolicySelection().resolve(KYVERNO)
    assert ownership.declines("MutatingPolicy", policy()) == (
        "not selected by the policy selector celmut.io/owner=celmut (Kyverno detected: "
        "CustomResourceDefinition mutatingpolicies.policies.kyverno.io is not celmut's)"
    )
    assert ownership.describe().startswith("celmut serves MutatingPolicies matching celmut.io/owner=celmut")
    assert (
        PolicySelection().resolve(KyvernoPresence()).describe()
        == "celmut serves every MutatingPolicy: Kyverno not detected"
    )
