"""The MutatingWebhookConfiguration the controller's leader keeps in line with the loaded policies.

Modelled on Kyverno's webhook controller (kyverno/kyverno ``pkg/controllers/webhook``: ``controller.go``
builds the configurations from the policies, ``validatingpolicy.go``/``utils.go`` group them):

* policies are grouped per failurePolicy — one webhook serving the ``Fail`` policies, one the ``Ignore``
  policies, as Kyverno's ``<name>-fail``/``<name>-ignore`` — and a policy with its own
  ``spec.webhookConfiguration.timeoutSeconds`` goes to a webhook of its own timeout, as Kyverno's
  "fine-grained" webhooks (one per timeout here rather than one per policy: a bounded set);
* the rules are each policy's ``matchConstraints.resourceRules`` — operations, resources with ``*`` and
  subresources (``pods/ephemeralcontainers``), scope — plus its autogen variants' (never ReplicaSets:
  :mod:`celmut.runtime.ownership`), de-duplicated and sorted, so the same policies always give the same
  object (no flapping, no write when nothing changed);
* ``matchPolicy: Equivalent`` (a rule for ``apps/v1`` deployments also gets a request made at another
  version); a policy with ``matchPolicy: Exact`` gets ``Exact`` webhooks of its own, as Kyverno's
  fine-grained ones;
* ``namespaceSelector``/``objectSelector``: the chart's exclusions always (celmut's namespace,
  ``failExcludedNamespaces`` for the webhook whose call fails closed, the opt-out label), ANDed with a
  policy's selector only when every policy of the group has that same selector (Kyverno puts its
  configured selectors on every webhook and leaves the policies' to the engine);
* the call failure policy: ``Ignore`` for the webhooks serving Ignore policies; the chart's
  ``webhook.failurePolicy`` (default ``Ignore``) for those serving Fail policies;
* a rule naming a resource the API server does not serve is left out (registering it would send
  nothing), and the policy is reported (:class:`Unregistered`) so its status and an Event say why.

Each webhook calls ``/mutate/<fail|ignore>/<default|timeout-N>``, which runs only the policies of its
group (:func:`celmut.runtime.candidates.in_group`): a request two webhooks match is never mutated twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from celmut.install.webhook_config import Obj, WebhookSettings, admission_policies, policy_rules

if TYPE_CHECKING:
    from celmut.compile.compiled import CompiledPolicy

#: On every object the controller writes: what tells it its own configuration from anyone else's.
MANAGED_LABEL = ("webhook.celmut.io/managed-by", "celmut-controller")
#: served(group, version, resource) -> whether the API server serves it (None: cannot tell, keep the rule).
Served = Callable[[str, str, str], "bool | None"]


@dataclass(frozen=True)
class GroupKey:
    """What one webhook serves: a failurePolicy, a timeout (None: the chart's) and a matchPolicy."""

    failure_policy: str
    timeout_seconds: int | None = None
    match_policy: str = "Equivalent"

    @property
    def name(self) -> str:
        parts = [self.failure_policy.lower()]
        if self.timeout_seconds is not None:
            parts.append(f"timeout-{self.timeout_seconds}")
        if self.match_policy == "Exact":
            parts.append("exact")
        return "-".join(parts) + ".mutate.celmut.io"

    @property
    def path(self) -> str:
        timeout = f"timeout-{self.timeout_seconds}" if self.timeout_seconds is not None else "default"
        return f"/mutate/{self.failure_policy.lower()}/{timeout}"

    @property
    def sort_key(self) -> tuple[int, int, int]:
        return (self.failure_policy != "Fail", self.timeout_seconds or 0, self.match_policy == "Exact")


@dataclass(frozen=True)
class Unregistered:
    """A policy some of whose rules name a resource the API server does not serve."""

    kind: str
    namespace: str
    name: str
    resources: tuple[str, ...]  # "group/version/resource"

    @property
    def message(self) -> str:
        return (
            "not registered with the API server: "
            + ", ".join(self.resources)
            + " not served (a CRD not installed yet?); registered once it is"
        )


@dataclass
class Plan:
    """The configuration to write, and the policies whose rules could not all be registered."""

    configuration: Obj  # no policy at admission: the two default webhooks with no rules
    unregistered: list[Unregistered] = field(default_factory=list)


def group_of(policy: CompiledPolicy) -> GroupKey:
    """The webhook a policy is served by."""
    match_policy = "Exact" if policy.match.match_policy == "Exact" else "Equivalent"
    return GroupKey(policy.failure_policy, policy.timeout_seconds, match_policy)


def _rule_key(rule: Obj) -> str:
    return json.dumps(rule, sort_keys=True)


def _split_served(rule: Obj, served: Served | None) -> tuple[Obj | None, list[str]]:
    """The rule with only the served resources (None when none is), and the unserved ones named."""
    if served is None:
        return rule, []
    groups, versions = rule.get("apiGroups") or [], rule.get("apiVersions") or []
    if "*" in groups or "*" in versions:
        return rule, []
    kept, missing = [], []
    for resource in rule.get("resources") or []:
        base = resource.partition("/")[0]
        if base == "*" or resource.endswith("/*"):
            kept.append(resource)
            continue
        answers = [served(g, v, resource) for g in groups for v in versions]
        if any(a is None or a for a in answers):
            kept.append(resource)
        else:
            missing += [f"{g}/{v}/{resource}".lstrip("/") for g in groups for v in versions]
    if not kept:
        return None, missing
    return {**rule, "resources": kept}, missing


def _shared_selector(policies: Sequence[CompiledPolicy], attribute: str) -> Obj:
    """The selector every policy of a group has (``{}`` when they differ or have none)."""
    selectors = [getattr(p.match, attribute) for p in policies]
    if not selectors:
        return {}
    first = selectors[0]
    if first.is_empty or any(s != first for s in selectors[1:]):
        return {}
    selector: Obj = first.to_dict()
    return selector


def _and(base: Obj, extra: Obj) -> Obj:
    """Two label selectors ANDed (matchLabels merged: a key both give differently keeps both as In)."""
    labels = dict(base.get("matchLabels") or {})
    expressions = [dict(e) for e in base.get("matchExpressions") or []]
    for key, value in (extra.get("matchLabels") or {}).items():
        if key in labels and labels[key] != value:
            expressions.append({"key": key, "operator": "In", "values": [value]})
        else:
            labels[key] = value
    expressions += [dict(e) for e in extra.get("matchExpressions") or []]
    out: Obj = {}
    if labels:
        out["matchLabels"] = labels
    out["matchExpressions"] = expressions
    return out


def _webhook(key: GroupKey, policies: Sequence[CompiledPolicy], rules: list[Obj], settings: WebhookSettings) -> Obj:
    exclusions = {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": settings.excluded(key.failure_policy)}
        ]
    }
    namespace_selector = _and(
        _and(exclusions, dict(settings.namespace_selector)), _shared_selector(policies, "namespace_selector")
    )
    opt_out = {"matchExpressions": [{"key": settings.opt_out_label, "operator": "DoesNotExist"}]}
    object_selector = _and(opt_out, _shared_selector(policies, "object_selector"))
    if_needed = settings.reinvocation_policy == "IfNeeded" or any(p.reinvocation_policy == "IfNeeded" for p in policies)
    client = settings.client_config(key.failure_policy)
    if "service" in client:
        client["service"]["path"] = key.path
    else:
        client["url"] = client["url"].removesuffix(f"/mutate/{key.failure_policy.lower()}") + key.path
    return {
        "name": key.name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": client,
        "failurePolicy": settings.failure_policy if key.failure_policy == "Fail" else "Ignore",
        "matchPolicy": key.match_policy,
        "reinvocationPolicy": "IfNeeded" if if_needed else "Never",
        "sideEffects": "NoneOnDryRun",
        "timeoutSeconds": min(key.timeout_seconds or settings.timeout_seconds, 30),
        "rules": rules,
        "namespaceSelector": namespace_selector,
        "objectSelector": object_selector,
    }


def plan(
    policies: Iterable[CompiledPolicy],
    settings: WebhookSettings,
    *,
    name: str = "celmut",
    served: Served | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Plan:
    """The configuration serving ``policies`` (those that run at admission), in a stable order."""
    # Both default webhooks always, with no rules when no policy needs one (they then match nothing): the
    # MutatingAdmissionPolicy generator copies their selectors (celmut.controller.generator), and the
    # object keeps its shape as policies come and go.
    groups: dict[GroupKey, list[CompiledPolicy]] = {GroupKey("Fail"): [], GroupKey("Ignore"): []}
    for policy in admission_policies(policies):
        groups.setdefault(group_of(policy), []).append(policy)
    unregistered: dict[tuple[str, str, str], set[str]] = {}
    webhooks = []
    for key in sorted(groups, key=lambda k: k.sort_key):
        members = groups[key]
        rules: dict[str, Obj] = {}
        for policy in members:
            for rule in policy_rules([policy]):
                kept, missing = _split_served(rule, served)
                if missing:
                    unregistered.setdefault((policy.kind, policy.namespace, policy.name), set()).update(missing)
                if kept is not None:  # scope as the API server defaults it: the stored object compares equal
                    kept = {**kept, "scope": kept.get("scope", "*")}
                    rules.setdefault(_rule_key(kept), kept)
        if rules or (key.timeout_seconds is None and key.match_policy == "Equivalent"):
            webhooks.append(_webhook(key, members, [rules[k] for k in sorted(rules)], settings))
    reports = [Unregistered(k, ns, n, tuple(sorted(r))) for (k, ns, n), r in sorted(unregistered.items())]
    meta: Obj = {"name": name, **dict(metadata or {})}
    meta["labels"] = {**dict(meta.get("labels") or {}), MANAGED_LABEL[0]: MANAGED_LABEL[1]}
    configuration = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": meta,
        "webhooks": webhooks,
    }
    return Plan(configuration, reports)
