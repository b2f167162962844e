"""Pod pinning plans (in the spirit of CAST AI's Pod Pinner) as MutatingPolicies.

A plan says which node each pod of one namespace should run on. It is a namespaced custom
resource::

    apiVersion: pinning.celmut.io/v1alpha1
    kind: PodPinningPlan
    metadata:
      name: rebalance-42
      namespace: shop              # required: the plan pins pods of this namespace only
    spec:
      pins:                        # 1–1000 entries; the first one matching a pod wins
        - workload: {kind: StatefulSet, name: db}
          ordinal: 0               # StatefulSet only: the pod db-0
          node: node-a
        - workload: {kind: Deployment, name: web}   # every pod of the workload
          node: node-b
        - labelSelector:           # pods whose labels match (matchLabels / matchExpressions)
            matchLabels: {app: cache}
          node: node-c

or the same content (the ``spec``) as ``plan.yaml`` in a ConfigMap labelled
``celmut.io/pinning-plan: "true"``::

    apiVersion: v1
    kind: ConfigMap
    metadata: {name: rebalance-42, namespace: shop, labels: {celmut.io/pinning-plan: "true"}}
    data:
      plan.yaml: |
        pins:
          - {workload: {kind: StatefulSet, name: db}, ordinal: 0, node: node-a}

A pin has ``node`` (a node name) and exactly one of ``workload`` (``kind`` one of Deployment,
ReplicaSet, StatefulSet, Job, CronJob, Pod; ``name``; the workload is found through the pod's
controller owner, as ``placement.workload_variables`` does) or ``labelSelector`` (not empty).

Each plan becomes one MutatingPolicy ``pod-pinning-<namespace>-<name>`` (namespaceSelector on the
plan's namespace). On pod CREATE it finds the first matching pin and adds the requirement
``kubernetes.io/hostname In [<node>]`` to every required node selector term (terms are ORed, so each
must carry it), or creates the required affinity. It never sets ``spec.nodeName``: the scheduler
still checks that the pod fits (resources, taints, other affinities) and the pod stays Pending
rather than failing when it does not. (The ``kubernetes.io/hostname`` label equals the node name on
the usual clusters.)

Left untouched, each by a named matchCondition: pods no pin matches (``in-the-plan``), pods that
already name a node (``spec.nodeName``) and pods already pinned (a required ``kubernetes.io/hostname
In`` expression — their author's, or an earlier plan's: with several plans the first policy by name
wins; this also makes the policy idempotent).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from celmut import names
from celmut.compile import cel_literals as lit
from celmut.compile.presets import label_selectors as ls
from celmut.compile.presets import placement as pl
from celmut.compile.presets import yaml_format
from celmut.compile.presets.base import GENERATED_BY, PresetOutput, compile_each
from celmut.policy.errors import FieldError, PolicyError
from celmut.policy.fields import Reader
from celmut.policy.match import LabelSelector
from celmut.sources.documents import Document, DocumentError, parse_text

API_VERSION = "pinning.celmut.io/v1alpha1"
KIND = "PodPinningPlan"
PLAN_LABEL = "celmut.io/pinning-plan"
PLAN_KEY = "plan.yaml"
HOSTNAME = "kubernetes.io/hostname"
WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "CronJob", "Pod")
MAX_PINS = 1000


@dataclass(frozen=True)
class Pin:
    path: str
    node: str
    kind: str = ""
    name: str = ""
    ordinal: int | None = None
    selector: LabelSelector | None = None


@dataclass(frozen=True)
class Plan:
    kind: str  # PodPinningPlan or ConfigMap
    namespace: str
    name: str
    pins: tuple[Pin, ...]

    @property
    def policy_name(self) -> str:
        return f"pod-pinning-{self.namespace}-{self.name}"


def is_plan_configmap(document: Any) -> bool:
    if not isinstance(document, dict) or document.get("kind") != "ConfigMap" or document.get("apiVersion") != "v1":
        return False
    labels = (document.get("metadata") or {}).get("labels") or {}
    return isinstance(labels, dict) and labels.get(PLAN_LABEL) == "true"


def claims(document: Any) -> bool:
    if is_plan_configmap(document):
        return True
    return (
        isinstance(document, dict)
        and document.get("kind") == KIND
        and str(document.get("apiVersion", "")).startswith("pinning.celmut.io/")
    )


def parse(document: Document) -> Plan:
    """The plan in a PodPinningPlan or plan ConfigMap; raises PolicyError naming every invalid field."""
    errors: list[FieldError] = []
    root = Reader(document.content, "", errors)
    kind = root.string("kind")
    metadata = root.child("metadata")
    name = metadata.string("name", required=True)
    namespace = metadata.string("namespace", required=True)
    if name and not names.is_dns_subdomain(name):
        metadata.fail(f"Invalid value: {name!r}: must be a lowercase RFC 1123 subdomain", "name")
    if namespace and not names.is_dns_label(namespace):
        metadata.fail(f"Invalid value: {namespace!r}: must be a namespace name", "namespace")
    pins: list[Pin] = []
    if kind == "ConfigMap":
        text = root.child("data").string(PLAN_KEY, required=True)
        if text:
            try:
                content = parse_text(text, PLAN_KEY)
            except DocumentError as ex:
                root.fail(f"Invalid value: {ex.message}", f"data[{PLAN_KEY}]")
            else:
                if len(content) != 1:
                    root.fail("Invalid value: must hold one YAML document", f"data[{PLAN_KEY}]")
                else:
                    pins = _pins(Reader(content[0], f"data[{PLAN_KEY}]", errors))
    else:
        root.unknown_fields(["apiVersion", "kind", "metadata", "spec", "status"])
        root.string("apiVersion", enum=[API_VERSION])
        pins = _pins(root.child("spec"))
    policy = f"pod-pinning-{namespace}-{name}"
    if name and namespace and not names.is_dns_subdomain(policy):
        metadata.fail(f"Invalid value: {name!r}: the policy name {policy!r} would be too long", "name")
    if errors:
        raise PolicyError(document.path, kind or KIND, f"{namespace}/{name}", errors)
    return Plan(kind, namespace, name, tuple(pins))


def _pins(spec: Reader) -> list[Pin]:
    spec.unknown_fields(["pins"])
    if not spec.data.get("pins"):
        spec.fail("Required value: at least one pin", "pins")
    pins = []
    for item in spec.items("pins", max_items=MAX_PINS):
        item.unknown_fields(["workload", "ordinal", "labelSelector", "node"])
        node = item.string("node", required=True)
        if node and not names.is_dns_subdomain(node):
            item.fail(f"Invalid value: {node!r}: must be a node name (lowercase RFC 1123 subdomain)", "node")
        if item.has("workload") == item.has("labelSelector"):
            item.fail("Invalid value: exactly one of workload or labelSelector is required")
        kind = name = ""
        selector = None
        if item.has("workload"):
            workload = item.child("workload")
            workload.unknown_fields(["kind", "name"])
            kind = workload.string("kind", required=True, enum=WORKLOAD_KINDS)
            name = workload.string("name", required=True)
            if name and not names.is_dns_subdomain(name):
                workload.fail(f"Invalid value: {name!r}: must be a lowercase RFC 1123 subdomain", "name")
        if item.has("labelSelector"):
            selector = ls.parse_label_selector(item.child("labelSelector"))
            if selector.is_empty:
                item.fail(
                    "Required value: matchLabels or matchExpressions (an empty selector would pin every pod)",
                    "labelSelector",
                )
        ordinal = item.integer("ordinal", minimum=0)
        if ordinal is not None and kind != "StatefulSet":
            item.fail("Forbidden: only for a workload of kind StatefulSet", "ordinal")
        pins.append(Pin(item.path, node, kind, name, ordinal, selector))
    return pins


# --- CEL ----------------------------------------------------------------------------------------------


def pin_cel(pin: Pin) -> str:
    """``"<node>"`` when the pin matches the pod, else ``""``."""
    if pin.selector is not None:
        condition, what = ls.label_selector(pin.selector), "labelSelector"
    else:
        condition = (
            f"variables.workloadKind == {lit.cel_string(pin.kind)} && "
            f"variables.workloadName == {lit.cel_string(pin.name)}"
        )
        what = f"{pin.kind} {pin.name}"
        if pin.ordinal is not None:  # the name first: it rules most pods out without a lookup
            pod_name = lit.cel_string(f"{pin.name}-{pin.ordinal}")
            condition = f"variables.podName == {pod_name} &&\n  {condition}"
            what += f", ordinal {pin.ordinal}"
    return f'// {pin.path}: {what}\n{condition} ?\n  {lit.cel_string(pin.node)} : ""'


def planned_node_cel(pins: Sequence[Pin]) -> str:
    """The first matching pin's node, or ``""`` (a flat list, so plans of any size stay shallow)."""
    entries = ",\n".join(textwrap.indent(pin_cel(p), "  ") for p in pins)
    head = '// the node of the first pin that matches the pod, "" when none does'
    return f'{head}\n[\n{entries}\n].filter(node, node != "")[?0].orValue("")'


# cel-go refuses an expression over 100,000 code points (parser/parser.go expressionSizeCodePointLimit),
# and so does celmut: a large plan is split into variables of at most this size, tried in order.
MAX_CHUNK_CODE_POINTS = 90_000


def planned_node_variables(pins: Sequence[Pin]) -> list[dict[str, str]]:
    """``plannedNode``: one variable for a plan that fits in one expression, else one per chunk of
    pins and a ``plannedNode`` taking the first chunk's node that is not ``""`` (evaluated lazily,
    so the first matching pin still wins)."""
    chunks: list[list[Pin]] = [[]]
    size = 0
    for pin in pins:
        length = len(pin_cel(pin)) + 8
        if chunks[-1] and size + length > MAX_CHUNK_CODE_POINTS:
            chunks.append([])
            size = 0
        chunks[-1].append(pin)
        size += length
    if len(chunks) == 1:
        return [pl.variable("plannedNode", planned_node_cel(pins))]
    chain = '""'
    for index in reversed(range(len(chunks))):
        chain = f'variables.plannedNode{index} != "" ? variables.plannedNode{index} :\n{chain}'
    parts = [pl.variable(f"plannedNode{i}", planned_node_cel(chunk)) for i, chunk in enumerate(chunks)]
    return [*parts, pl.variable("plannedNode", chain)]


_REQUIRED = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"
_TERM = '{"matchExpressions": [variables.hostnameRequirement]}'
_REQUIRED_VALUE = f'{{"nodeSelectorTerms": [{_TERM}]}}'

PIN_PATCHES = f"""
// the requirement goes into every required node selector term (they are ORed), or a new one
cel.bind(terms,
  object.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([]),
  size(terms) > 0 ?
    terms.transformList(i, t, has(t.matchExpressions) ?
      JSONPatch{{op: "add", path: "{_REQUIRED}/nodeSelectorTerms/" + string(i) + "/matchExpressions/-",
        value: variables.hostnameRequirement}} :
      JSONPatch{{op: "add", path: "{_REQUIRED}/nodeSelectorTerms/" + string(i) + "/matchExpressions",
        value: [variables.hostnameRequirement]}}) :
  !has(object.spec.affinity) ?
    [JSONPatch{{op: "add", path: "/spec/affinity",
      value: {{"nodeAffinity": {{"requiredDuringSchedulingIgnoredDuringExecution": {_REQUIRED_VALUE}}}}}}}] :
  !has(object.spec.affinity.nodeAffinity) ?
    [JSONPatch{{op: "add", path: "/spec/affinity/nodeAffinity",
      value: {{"requiredDuringSchedulingIgnoredDuringExecution": {_REQUIRED_VALUE}}}}}] :
    [JSONPatch{{op: "add", path: "{_REQUIRED}", value: {_REQUIRED_VALUE}}}])
""".strip()


def build_policy(plan: Plan) -> dict[str, Any]:
    candidates = [
        *pl.workload_variables(),
        pl.variable("podLabels", "object.metadata.?labels.orValue({})"),
        pl.variable("podName", 'object.metadata.?name.orValue("")'),
        *planned_node_variables(plan.pins),
        pl.variable(
            "hostnameRequirement",
            f'{{"key": {lit.cel_string(HOSTNAME)}, "operator": "In", "values": dyn([variables.plannedNode])}}',
        ),
    ]
    conditions = [
        pl.variable("not-bound-to-a-node", 'object.spec.?nodeName.orValue("") == ""'),
        pl.variable(
            "not-already-pinned",
            "!object.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution"
            ".?nodeSelectorTerms.orValue([]).exists(t,\n"
            f'  t.?matchExpressions.orValue([]).exists(e, e.key == {lit.cel_string(HOSTNAME)} && e.operator == "In"))',
        ),
        pl.variable("in-the-plan", 'variables.plannedNode != ""'),
    ]
    variables = pl.prune_variables(candidates, PIN_PATCHES, *(c["expression"] for c in conditions))
    policy = pl.mutating_policy(
        plan.policy_name,
        variables=variables,
        match_conditions=conditions,
        patches=PIN_PATCHES,
        annotations={GENERATED_BY: f"{plan.kind} {plan.namespace}/{plan.name}"},
        labels={"celmut.io/preset": "pod-pinning"},
    )
    policy["spec"]["matchConstraints"]["namespaceSelector"] = {
        "matchLabels": {"kubernetes.io/metadata.name": plan.namespace}
    }
    return yaml_format.readable(policy)


class PinningCompiler:
    name = "pod-pinning"

    def claims(self, document: Any) -> bool:
        return claims(document)

    def compile(self, documents: Sequence[Document]) -> PresetOutput:
        def duplicate(document: Document, plan: Plan, first: str) -> PolicyError:
            message = f"Duplicate value: policy {plan.policy_name} is already generated from {first}"
            return PolicyError(
                document.path, plan.kind, f"{plan.namespace}/{plan.name}", [FieldError("metadata.name", message)]
            )

        return compile_each(
            documents,
            parse,
            lambda document, plan: (plan.policy_name, f"{plan.kind} {plan.namespace}/{plan.name} in {document.path}"),
            lambda _document, plan: build_policy(plan),
            duplicate,
        )


COMPILER = PinningCompiler()
