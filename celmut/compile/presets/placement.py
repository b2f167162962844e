"""CEL building blocks shared by the presets: workload identity, spot/on-demand placement, and an
exact percentage split across a workload's pods.

Everything here returns CEL source (and policy variable definitions) that the preset compilers
paste into ordinary MutatingPolicies, so a user can read, test and hand-edit the result.

**Spot changes** (the CAST AI conventions): every spot pod gets the toleration
``scheduling.cast.ai/spot Exists NoSchedule``; ``only-spot`` adds the node selector
``scheduling.cast.ai/spot: "true"``; ``preferred-spot`` adds a preferred node affinity for that label;
``optional-spot`` adds the toleration only. A pod placed **on-demand** gets a required node affinity
``scheduling.cast.ai/spot DoesNotExist`` in every node selector term. All patches are idempotent: an
already-mutated pod is left as it is.

**Exact split**: the decision is recorded in the pod annotation ``celmut.io/placement`` (or
``celmut.io/distribution-group``). With a cluster lookup, a new pod counts the decisions already
recorded on the other pods of the same owner: a pod goes to spot while the spot count is below
``floor(n × percent / 100)`` for the new total ``n`` — so the ratio holds within one pod at every
size and one pod below 100 % goes on-demand. Without a lookup, a deterministic hash of the pod name
(or, for a pod named by ``generateName``, of the admission request uid) picks a bucket 0–9999.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from celmut import jsonutil

SPOT_LABEL = "scheduling.cast.ai/spot"
PLACEMENT_ANNOTATION = "celmut.io/placement"
GROUP_ANNOTATION = "celmut.io/distribution-group"
SPOT_MODES = ("optional-spot", "only-spot", "preferred-spot")

_TOLERATION = f'{{"key": "{SPOT_LABEL}", "operator": "Exists", "effect": "NoSchedule"}}'
_NOT_SPOT = f'{{"key": "{SPOT_LABEL}", "operator": "DoesNotExist"}}'
_PREFER_SPOT = (
    '{"weight": dyn(100), "preference": '
    f'dyn({{"matchExpressions": [{{"key": "{SPOT_LABEL}", "operator": "Exists"}}]}})}}'
)


def variable(name: str, expression: str) -> dict[str, str]:
    return {"name": name, "expression": expression.strip()}


def workload_variables() -> list[dict[str, str]]:
    """``variables.workloadKind`` / ``variables.workloadName`` (plus the owner helpers they use).

    The pod's controller owner is followed one level further with ``resource.Get`` (ReplicaSet →
    Deployment, Job → CronJob) when a cluster lookup is available; without one (or when the owner is
    not found) the parent is derived from names: a ReplicaSet named ``<deployment>-<pod-template-hash>``
    is a Deployment's, a Job named ``<cronjob>-<8+ digits>`` a CronJob's. A pod without a controller
    owner is kind ``Pod``.

    Nothing here hides an error: Kyverno's ``orValue`` is strict (``pkg/cel/compiler/env.go``
    ``OrValueCompatEnvOptions``). ``resource.Get`` answers ``null`` for an owner that is not found
    (Kyverno too: kyverno/sdk ``extensions/cel/libs/resource/impl.go``) and in an engine without a
    cluster (``celmut.service.assembly.without_cluster``); a failing lookup (forbidden) fails the policy.
    """
    return [
        variable(
            "controllerRef",
            "object.metadata.?ownerReferences.orValue([]).filter(r, r.?controller.orValue(false))",
        ),
        variable("ownerKind", 'size(variables.controllerRef) == 0 ? "Pod" : variables.controllerRef[0].kind'),
        variable(
            "ownerName",
            'size(variables.controllerRef) == 0 ? object.metadata.?name.orValue("") : variables.controllerRef[0].name',
        ),
        variable(
            "ownerObject",
            """
// workload filters need the pod's workload
variables.ownerKind == "ReplicaSet" ?
  dyn(resource.Get("apps/v1", "replicasets", request.namespace, variables.ownerName)) :
variables.ownerKind == "Job" ?
  dyn(resource.Get("batch/v1", "jobs", request.namespace, variables.ownerName)) :
null
""",
        ),
        variable(
            "parentRef",
            """
variables.ownerObject == null ? [] :
  variables.ownerObject.metadata.?ownerReferences.orValue([]).filter(r, r.?controller.orValue(false))
""",
        ),
        variable("templateHash", 'object.metadata.?labels[?"pod-template-hash"].orValue("")'),
        variable(
            "derivedParent",
            """
variables.ownerKind == "ReplicaSet" && variables.templateHash != "" &&
    variables.ownerName.endsWith("-" + variables.templateHash) ?
  ["Deployment", variables.ownerName.substring(0, size(variables.ownerName) - size(variables.templateHash) - 1)] :
variables.ownerKind == "Job" && variables.ownerName.matches("-[0-9]{8,}$") ?
  ["CronJob", regex.replace(variables.ownerName, "-[0-9]{8,}$", "")] :
[]
""",
        ),
        variable(
            "workloadKind",
            """
size(variables.parentRef) > 0 ? variables.parentRef[0].kind :
variables.ownerObject != null ? variables.ownerKind :
size(variables.derivedParent) > 0 ? variables.derivedParent[0] :
variables.ownerKind
""",
        ),
        variable(
            "workloadName",
            """
size(variables.parentRef) > 0 ? variables.parentRef[0].name :
variables.ownerObject != null ? variables.ownerName :
size(variables.derivedParent) > 0 ? variables.derivedParent[1] :
variables.ownerName
""",
        ),
    ]


JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"  # on every pod of a Job (pkg/controller/job)


def siblings_variable(purpose: str = "spot percentages need pod counts") -> dict[str, str]:
    """``variables.siblings``: the other **live** pods of the same controller owner, or null without a
    cluster (``resource.List`` answers null in an engine without one; in a cluster it is a list, maybe
    empty). The one place every split (spot percentages, PodMutation distributions) counts from.

    Live is what the workload controllers count as a replica (``pkg/controller/controller_utils.go``
    ``IsPodActive``): no ``deletionTimestamp`` (a pod Terminating for its grace period is being replaced
    already), not Failed or Succeeded. A pod is never its own sibling: a StatefulSet's replacement has
    its predecessor's name, which a watch that is behind may still show. The pods are listed by
    ``pod-template-hash`` (a ReplicaSet's) or the Job's uid label, else the namespace's.

    ``purpose`` opens it as a comment: why the policy lists pods, which ``celmut compile --to-map`` names
    when it refuses to make a MutatingAdmissionPolicy of it (the API server's CEL has no lookups)."""
    return variable(
        "siblings",
        f"// {purpose}\n"
        + f"""
variables.ownerKind == "Pod" ? [] :
cel.bind(listed,
  variables.templateHash != "" ?
    dyn(resource.List("v1", "pods", request.namespace, {{"pod-template-hash": variables.templateHash}})) :
  variables.ownerKind == "Job" && variables.controllerRef[0].?uid.orValue("") != "" ?
    dyn(resource.List("v1", "pods", request.namespace, {{"{JOB_UID_LABEL}": variables.controllerRef[0].uid}})) :
    dyn(resource.List("v1", "pods", request.namespace)),
  listed == null ? dyn(null) :
  listed.items.filter(p,
    // live pods only, as the workload controllers count replicas (IsPodActive)
    !has(p.metadata.deletionTimestamp) && !(p.?status.?phase.orValue("") in ["Failed", "Succeeded"]) &&
    (object.metadata.?name.orValue("") == "" || p.metadata.?name.orValue("") != object.metadata.name) &&
    p.metadata.?ownerReferences.orValue([]).exists(r,
      r.?controller.orValue(false) && r.kind == variables.ownerKind && r.name == variables.ownerName)))
""",
    )


def _hash_bucket() -> str:
    """A deterministic bucket 0–9999 from the pod name (or the request uid for generateName pods)."""
    return (
        'int(sha256(object.metadata.?name.orValue("") != "" ? object.metadata.name : request.uid)'
        '.findAll("[0-9]", 4).join(""))'
    )


def _recorded(annotation: str, subject: str = "object") -> str:
    return f'{subject}.metadata.?annotations[?"{annotation}"].orValue("")'


def spot_split(percent: str) -> str:
    """CEL choosing ``"spot"`` or ``"on-demand"`` so that ``percent`` (a CEL int 0–100) of the owner's
    pods are on spot; a decision already recorded on the pod is kept."""
    return f"""
{_recorded(PLACEMENT_ANNOTATION)} != "" ? {_recorded(PLACEMENT_ANNOTATION)} :
cel.bind(percent, {percent},
  percent >= 100 ? "spot" : percent <= 0 ? "on-demand" :
  variables.siblings != null ?
    (size(variables.siblings.filter(p, {_recorded(PLACEMENT_ANNOTATION, "p")} == "spot")) <
        (size(variables.siblings) + 1) * percent / 100 ? "spot" : "on-demand") :
    ({_hash_bucket()} < percent * 100 ? "spot" : "on-demand"))
""".strip()


def group_split(groups: Sequence[tuple[str, int]], remainder: str) -> str:
    """CEL choosing a group name so that each group gets its percentage of the owner's pods.

    With a lookup: the first group (in order) whose count is below ``floor(n × percent / 100)``,
    else the group (or ``remainder``, which takes the unallocated percentage) with the largest
    fractional deficit — counts never drift more than one pod from their targets. Without one: hash
    buckets over the cumulative percentages. A group already recorded on the pod is kept.
    """
    rest = 100 - sum(p for _, p in groups)
    entries = list(groups) + ([(remainder, rest)] if rest > 0 else [])
    counted = ", ".join(
        f'{{"name": dyn("{name}"), "percent": dyn({pct}), "index": dyn({index}), '
        f'"count": dyn(size(variables.siblings.filter(p, {_recorded(GROUP_ANNOTATION, "p")} == "{name}")))}}'
        for index, (name, pct) in enumerate(entries)
    )
    buckets = []
    cumulative = 0
    for name, pct in entries:
        cumulative += pct
        buckets.append(f'bucket < {cumulative * 100} ? "{name}" :')
    return f"""
{_recorded(GROUP_ANNOTATION)} != "" ? {_recorded(GROUP_ANNOTATION)} :
variables.siblings != null ?
  cel.bind(n, size(variables.siblings) + 1,
    [{counted}].sortBy(g,
      g.count < n * g.percent / 100 ? double(g.index) :
      1000.0 - (double(n * g.percent) / 100.0 - double(g.count)))[0].name) :
  cel.bind(bucket, {_hash_bucket()},
    {" ".join(buckets)} "{remainder}")
""".strip()


def annotate(annotation: str, value: str) -> str:
    """JSONPatch list recording ``value`` (a CEL string) in a pod annotation."""
    return f"""
(has(object.metadata.annotations) ?
  [JSONPatch{{op: "add", path: "/metadata/annotations/{jsonutil.escape_pointer(annotation)}", value: {value}}}] :
  [JSONPatch{{op: "add", path: "/metadata/annotations", value: {{"{annotation}": {value}}}}}])
""".strip()


def spot_patches(mode: str, spec: str = "object.spec", path: str = "/spec") -> str:
    """JSONPatch list putting the pod on spot in ``mode`` (optional-spot, only-spot, preferred-spot).

    ``spec``/``path``: where the pod spec is (CEL, JSON Pointer); a pod template's for ``optional-spot``
    (the toleration), e.g. ``object.spec.template.spec`` and ``/spec/template/spec``."""
    if mode not in SPOT_MODES:
        raise ValueError(f"unknown spot mode {mode!r}")
    if mode != "optional-spot" and spec != "object.spec":
        raise ValueError("a pod template gets the spot toleration only (optional-spot)")
    parts = [
        f"""
({spec}.?tolerations.orValue([]).exists(t, t.?key.orValue("") == "{SPOT_LABEL}") ? [] :
  has({spec}.tolerations) ?
    [JSONPatch{{op: "add", path: "{path}/tolerations/-", value: {_TOLERATION}}}] :
    [JSONPatch{{op: "add", path: "{path}/tolerations", value: [{_TOLERATION}]}}])
"""
    ]
    if mode == "only-spot":
        parts.append(
            f"""
(object.spec.?nodeSelector[?"{SPOT_LABEL}"].orValue("") == "true" ? [] :
  has(object.spec.nodeSelector) ?
    [JSONPatch{{op: "add", path: "/spec/nodeSelector/{jsonutil.escape_pointer(SPOT_LABEL)}", value: "true"}}] :
    [JSONPatch{{op: "add", path: "/spec/nodeSelector", value: {{"{SPOT_LABEL}": "true"}}}}])
"""
        )
    if mode == "preferred-spot":
        base = "/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution"
        parts.append(
            f"""
(object.spec.?affinity.?nodeAffinity.?preferredDuringSchedulingIgnoredDuringExecution.orValue([]).exists(t,
    t.?preference.?matchExpressions.orValue([]).exists(e, e.key == "{SPOT_LABEL}")) ? [] :
  !has(object.spec.affinity) ?
    [JSONPatch{{op: "add", path: "/spec/affinity",
      value: {{"nodeAffinity": {{"preferredDuringSchedulingIgnoredDuringExecution": [{_PREFER_SPOT}]}}}}}}] :
  !has(object.spec.affinity.nodeAffinity) ?
    [JSONPatch{{op: "add", path: "/spec/affinity/nodeAffinity",
      value: {{"preferredDuringSchedulingIgnoredDuringExecution": [{_PREFER_SPOT}]}}}}] :
  !has(object.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution) ?
    [JSONPatch{{op: "add", path: "{base}", value: [{_PREFER_SPOT}]}}] :
    [JSONPatch{{op: "add", path: "{base}/-", value: {_PREFER_SPOT}}}])
"""
        )
    return " +\n".join(p.strip() for p in parts)


def on_demand_patches() -> str:
    """JSONPatch list keeping the pod off spot: ``scheduling.cast.ai/spot DoesNotExist`` is added to
    every required node selector term (terms are ORed), or a required term is created."""
    required = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"
    term = f'{{"matchExpressions": [{_NOT_SPOT}]}}'
    required_value = f'{{"requiredDuringSchedulingIgnoredDuringExecution": {{"nodeSelectorTerms": [{term}]}}}}'
    return f"""
cel.bind(terms,
  object.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([]),
  size(terms) > 0 ?
    terms.transformList(i, t,
      !t.?matchExpressions.orValue([]).exists(e, e.key == "{SPOT_LABEL}" && e.operator == "DoesNotExist"),
      has(t.matchExpressions) ?
        JSONPatch{{op: "add", path: "{required}/nodeSelectorTerms/" + string(i) + "/matchExpressions/-",
          value: {_NOT_SPOT}}} :
        JSONPatch{{op: "add", path: "{required}/nodeSelectorTerms/" + string(i) + "/matchExpressions",
          value: [{_NOT_SPOT}]}}) :
  !has(object.spec.affinity) ?
    [JSONPatch{{op: "add", path: "/spec/affinity", value: {{"nodeAffinity": {required_value}}}}}] :
  !has(object.spec.affinity.nodeAffinity) ?
    [JSONPatch{{op: "add", path: "/spec/affinity/nodeAffinity", value: {required_value}}}] :
    [JSONPatch{{op: "add", path: "{required}", value: {{"nodeSelectorTerms": [{term}]}}}}])
""".strip()


POD_CREATE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}


def mutating_policy(
    name: str,
    *,
    variables: Sequence[dict[str, str]],
    match_conditions: Sequence[dict[str, str]],
    patches: str,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    failure_policy: str = "Ignore",
    resource_rule: dict[str, Any] = POD_CREATE,
    mutate_existing: bool = False,
) -> dict[str, Any]:
    """A MutatingPolicy for pod CREATE (or ``resource_rule``) with one JSONPatch mutation (so nothing is
    ever applied half). ``mutate_existing``: also applied by the controller to what already exists, the
    match conditions then checked on each target (``targetMatchConditions``: a mutateExisting target is
    not checked against ``matchConditions``)."""
    spec: dict[str, Any] = {"failurePolicy": failure_policy}
    if mutate_existing:
        spec["evaluation"] = {"mutateExisting": {"enabled": True}}
    spec |= {
        "autogen": {"podControllers": {"controllers": []}},
        "matchConstraints": {"resourceRules": [dict(resource_rule)]},
        "matchConditions": list(match_conditions),
    }
    if mutate_existing:
        spec["targetMatchConditions"] = list(match_conditions)
    spec |= {
        "variables": list(variables),
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": patches}}],
    }
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": name, "annotations": dict(annotations or {}), "labels": dict(labels or {})},
        "spec": spec,
    }


def prune_variables(variables: Sequence[dict[str, str]], *expressions: str) -> list[dict[str, str]]:
    """The variables ``expressions`` use, directly or through other variables, in their original order."""
    by_name = {v["name"]: v for v in variables}
    needed: set[str] = set()
    pending = [name for e in expressions for name in _VARIABLE_REF.findall(e)]
    while pending:
        name = pending.pop()
        if name in by_name and name not in needed:
            needed.add(name)
            pending += _VARIABLE_REF.findall(by_name[name]["expression"])
    return [v for v in variables if v["name"] in needed]


_VARIABLE_REF = re.compile(r"\bvariables\.([A-Za-z_][A-Za-z0-9_]*)")


def metadata_lookups() -> frozenset[str]:
    """The presets' lookup expressions (owners, siblings): each reads only apiVersion, kind and
    metadata of what it looks up, so a webhook may cache those resources metadata-only."""
    return frozenset(
        v["expression"] for v in [*workload_variables(), siblings_variable()] if "resource." in v["expression"]
    )
