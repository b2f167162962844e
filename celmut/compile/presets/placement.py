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

import json
import re
from collections.abc import Sequence
from typing import Any, TypeVar, overload

import yaml

from celmut.policy.fields import Reader
from celmut.policy.match import LabelSelector, Requirement

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


def escape_key(key: str) -> str:
    """A map key as a JSON Pointer segment, escaped at compile time."""
    return key.replace("~", "~0").replace("/", "~1")


def workload_variables() -> list[dict[str, str]]:
    """``variables.workloadKind`` / ``variables.workloadName`` (plus the owner helpers they use).

    The pod's controller owner is followed one level further with ``resource.Get`` (ReplicaSet →
    Deployment, Job → CronJob) when a cluster lookup is available; without one (or when the owner is
    not found) the parent is derived from names: a ReplicaSet named ``<deployment>-<pod-template-hash>``
    is a Deployment's, a Job named ``<cronjob>-<8+ digits>`` a CronJob's. A pod without a controller
    owner is kind ``Pod``.
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
  dyn(resource.Get("apps/v1", "replicasets", request.namespace, variables.ownerName)).orValue(null) :
variables.ownerKind == "Job" ?
  dyn(resource.Get("batch/v1", "jobs", request.namespace, variables.ownerName)).orValue(null) :
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


def siblings_variable(purpose: str = "spot percentages need pod counts") -> dict[str, str]:
    """``variables.siblings``: the other pods of the same controller owner, or null without a lookup.

    ``purpose`` opens it as a comment: why the policy lists pods, which ``celmut compile --to-map`` names
    when it refuses to make a MutatingAdmissionPolicy of it (the API server's CEL has no lookups)."""
    return variable(
        "siblings",
        f"// {purpose}\n"
        + """
variables.ownerKind == "Pod" ? [] :
cel.bind(listed,
  variables.templateHash != "" ?
    dyn(resource.List("v1", "pods", request.namespace, {"pod-template-hash": variables.templateHash})).orValue(null) :
    dyn(resource.List("v1", "pods", request.namespace)).orValue(null),
  listed == null ? dyn(null) :
  listed.items.filter(p, p.metadata.?ownerReferences.orValue([]).exists(r,
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
  [JSONPatch{{op: "add", path: "/metadata/annotations/{escape_key(annotation)}", value: {value}}}] :
  [JSONPatch{{op: "add", path: "/metadata/annotations", value: {{"{annotation}": {value}}}}}])
""".strip()


def spot_patches(mode: str) -> str:
    """JSONPatch list putting the pod on spot in ``mode`` (optional-spot, only-spot, preferred-spot)."""
    if mode not in SPOT_MODES:
        raise ValueError(f"unknown spot mode {mode!r}")
    parts = [
        f"""
(object.spec.?tolerations.orValue([]).exists(t, t.?key.orValue("") == "{SPOT_LABEL}") ? [] :
  has(object.spec.tolerations) ?
    [JSONPatch{{op: "add", path: "/spec/tolerations/-", value: {_TOLERATION}}}] :
    [JSONPatch{{op: "add", path: "/spec/tolerations", value: [{_TOLERATION}]}}])
"""
    ]
    if mode == "only-spot":
        parts.append(
            f"""
(object.spec.?nodeSelector[?"{SPOT_LABEL}"].orValue("") == "true" ? [] :
  has(object.spec.nodeSelector) ?
    [JSONPatch{{op: "add", path: "/spec/nodeSelector/{escape_key(SPOT_LABEL)}", value: "true"}}] :
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


def mutating_policy(
    name: str,
    *,
    variables: Sequence[dict[str, str]],
    match_conditions: Sequence[dict[str, str]],
    patches: str,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    failure_policy: str = "Ignore",
) -> dict[str, Any]:
    """A MutatingPolicy for pod CREATE with one JSONPatch mutation (so nothing is ever applied half)."""
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": name, "annotations": dict(annotations or {}), "labels": dict(labels or {})},
        "spec": {
            "failurePolicy": failure_policy,
            "autogen": {"podControllers": {"controllers": []}},
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
                ]
            },
            "matchConditions": list(match_conditions),
            "variables": list(variables),
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": patches}}],
        },
    }


# --- Helpers shared by the spot, GPU slicing and pod pinning presets ---------------------------------

LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_LABEL_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_RE = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
_DNS_LABEL_RE = re.compile(rf"^{_DNS_LABEL}$")
_LABEL_VALUE_RE = re.compile(rf"^({_LABEL_NAME})?$")
_LABEL_NAME_RE = re.compile(rf"^{_LABEL_NAME}$")


def cel_string(text: str) -> str:
    """A CEL string literal (JSON escapes are valid CEL escapes)."""
    return json.dumps(text, ensure_ascii=False)


def cel_strings(texts: Sequence[str]) -> str:
    """A CEL list literal of strings."""
    return "[" + ", ".join(cel_string(t) for t in texts) + "]"


def is_dns_label(name: str) -> bool:
    """A namespace name: RFC 1123 label, at most 63 characters."""
    return len(name) <= 63 and bool(_DNS_LABEL_RE.match(name))


def is_dns_subdomain(name: str) -> bool:
    """An object name (node, policy): RFC 1123 subdomain, at most 253 characters."""
    return len(name) <= 253 and bool(_DNS_SUBDOMAIN_RE.match(name))


def is_qualified_name(key: str) -> bool:
    """A label key or resource name: ``[prefix/]name`` with a DNS subdomain prefix and a 63-character name."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not (prefix and is_dns_subdomain(prefix)):
        return False
    return len(name) <= 63 and bool(_LABEL_NAME_RE.match(name))


def parse_label_selector(reader: Reader) -> LabelSelector:
    """A ``metav1.LabelSelector`` validated as the API server does (keys, values, operators), with
    every problem recorded on ``reader`` at its field path; unknown fields are rejected."""
    reader.unknown_fields(["matchLabels", "matchExpressions"])
    labels = reader.string_map("matchLabels")
    for key, value in labels.items():
        if not is_qualified_name(key):
            reader.fail(f"Invalid value: {key!r}: must be a label key ([prefix/]name)", f"matchLabels.{key}")
        if len(value) > 63 or not _LABEL_VALUE_RE.match(value):
            reader.fail(f"Invalid value: {value!r}: must be a label value", f"matchLabels.{key}")
    requirements = []
    for item in reader.items("matchExpressions"):
        item.unknown_fields(["key", "operator", "values"])
        key = item.string("key", required=True)
        if key and not is_qualified_name(key):
            item.fail(f"Invalid value: {key!r}: must be a label key ([prefix/]name)", "key")
        operator = item.string("operator", required=True, enum=LABEL_SELECTOR_OPERATORS)
        values = tuple(item.string_list("values") or ())
        if operator in ("In", "NotIn") and not values:
            item.fail(f"Required value: must be specified when operator is {operator}", "values")
        if operator in ("Exists", "DoesNotExist") and values:
            item.fail(f"Forbidden: may not be specified when operator is {operator}", "values")
        for index, value in enumerate(values):
            if len(value) > 63 or not _LABEL_VALUE_RE.match(value):
                item.fail(f"Invalid value: {value!r}: must be a label value", f"values[{index}]")
        requirements.append(Requirement(key, operator, values))
    return LabelSelector(tuple(labels.items()), tuple(requirements))


def label_selector(selector: LabelSelector, labels: str = "variables.podLabels") -> str:
    """CEL testing a (validated) label selector against ``labels`` (a CEL map); ``true`` when empty."""
    terms = [
        f"{cel_string(k)} in {labels} && {labels}[{cel_string(k)}] == {cel_string(v)}" for k, v in selector.match_labels
    ]
    for r in selector.match_expressions:
        key = cel_string(r.key)
        if r.operator == "In":
            terms.append(f"{key} in {labels} && {labels}[{key}] in {cel_strings(r.values)}")
        elif r.operator == "NotIn":
            terms.append(f"!({key} in {labels} && {labels}[{key}] in {cel_strings(r.values)})")
        elif r.operator == "Exists":
            terms.append(f"{key} in {labels}")
        else:
            terms.append(f"!({key} in {labels})")
    if not terms:
        return "true"
    return terms[0] if len(terms) == 1 else " && ".join(f"({t})" for t in terms)


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


class BlockStr(str):
    """A multi-line string that YAML dumps as a literal block (``|``), so a generated expression prints
    as written instead of as one quoted line of ``\\n`` escapes. Equal to (and hashes like) the plain
    string; only the YAML representation differs."""


def _represent_block(dumper: yaml.representer.BaseRepresenter, data: BlockStr) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(data), style="|")


yaml.SafeDumper.add_representer(BlockStr, _represent_block)
yaml.Dumper.add_representer(BlockStr, _represent_block)


_T = TypeVar("_T")


# The copy has the shape (and type) of ``value``; only its multi-line strings change class.
@overload
def readable(value: dict[str, Any]) -> dict[str, Any]: ...
@overload
def readable(value: _T) -> _T: ...
def readable(value: Any) -> Any:
    """A copy of ``value`` (a generated policy) whose multi-line strings dump as YAML literal blocks:
    lines lose their trailing blanks (which would force the quoted style) and become a BlockStr."""
    if isinstance(value, dict):
        return {k: readable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [readable(v) for v in value]
    if isinstance(value, str) and "\n" in value:
        return BlockStr("\n".join(line.rstrip() for line in value.splitlines()))
    return value


def metadata_lookups() -> frozenset[str]:
    """The presets' lookup expressions (owners, siblings): each reads only apiVersion, kind and
    metadata of what it looks up, so a webhook may cache those resources metadata-only."""
    return frozenset(
        v["expression"] for v in [*workload_variables(), siblings_variable()] if "resource." in v["expression"]
    )
