"""CAST AI spot webhook presets (``castai-pod-node-lifecycle`` Helm values) as one MutatingPolicy.

Claims a Helm values document with a top-level ``staticConfig`` mapping (and no ``kind``), plus an
optional top-level ``celmutNamespace`` (default ``celmut``: the namespace celmut runs in, whose pods
are never touched)::

    staticConfig:
      preset: allSpot | allSpotExceptKubeSystem | partialSpot     # or the custom keys below
      defaultToSpot: true                 # pods no rule decides: spot (true) or left as they are (false)
      spotPercentageOfReplicaSet: 0       # 1–99: that share of each controller's pods on spot; 0 = off
      ignorePods: []                      # PodAffinityTerms (labelSelector and/or namespaces)
      forcePodsToSpot: []
      forcePodsToOnDemand: []

The presets are the chart's: ``allSpot`` (every pod on spot), ``allSpotExceptKubeSystem`` (the same,
with ``forcePodsToOnDemand: [{namespaces: [kube-system]}]``) and ``partialSpot`` (``defaultToSpot:
false``, ``spotPercentageOfReplicaSet: 40``). With a preset, the custom keys may only hold their
defaults (the chart ignores them then; celmut reports the conflict instead). The chart's ``presets``
and ``stringTemplate`` keys are accepted and ignored.

A PodAffinityTerm matches a pod when its ``labelSelector`` matches the pod's labels and the pod's
namespace is in ``namespaces`` (each part only when given; a term needs at least one).
``topologyKey`` is ignored and ``namespaceSelector`` is rejected, as in the CAST AI webhook.

**Decision, first match wins** (one named variable per step in the generated policy):

0. *Ignored* — the policy is skipped by a named matchCondition and the pod is untouched: bare pods
   (no controller owner), pods in ``celmutNamespace``, pods with a topologySpreadConstraint on
   ``scheduling.cast.ai/spot`` (the reference's "TopologyKey=Lifecycle": the node label telling spot
   from on-demand — such a pod spreads itself over both), pods matching ``ignorePods``.
1. ``isDaemonSetPod`` — DaemonSet pods get the spot toleration only (they may run on either kind of
   node); no other rule applies to them.
2. ``alreadyPlaced`` — a decision recorded in ``celmut.io/placement`` is kept: the policy is
   idempotent, and when several spot policies are active the first one (by name) decides.
3. ``lifecycleOverride`` — pod (template) annotation ``scheduling.cast.ai/lifecycle``: ``spot`` or
   ``on-demand``.
4. ``forcedToOnDemand`` — ``forcePodsToOnDemand`` matches.
5. ``forcedToSpot`` — ``forcePodsToSpot`` matches.
6. ``spotPercentage`` — annotation ``scheduling.cast.ai/spot-percentage`` (1–99), else
   ``spotPercentageOfReplicaSet``: ``placement.spot_split`` puts exactly that share of the pods of
   the pod's controller (ReplicaSet, StatefulSet, Job …) on spot, rounding down (a single pod below
   100 % goes on-demand).
7. ``defaultToSpot`` — spot, or (false) the pod is left as it is: without the spot toleration it
   cannot land on a tainted spot node anyway, and a pod whose own spec asks for spot keeps working.

**Invalid annotation values are reported, never guessed**: a ``scheduling.cast.ai/lifecycle`` other
than ``spot``/``on-demand``, a ``scheduling.cast.ai/spot-percentage`` other than an integer 1–99 or a
``celmut.io/placement`` other than ``spot``/``on-demand`` leaves the pod unchanged, skipped by a
matchCondition named after the annotation (``scheduling.cast.ai/spot-percentage-is-1-to-99`` …), the
reason celmut reports. An empty value counts as absent; DaemonSet pods ignore the two overrides.

Placement: *spot* records ``celmut.io/placement: spot`` and adds the spot toleration and node
selector; *on-demand* records ``on-demand`` and adds the required node affinity
``scheduling.cast.ai/spot DoesNotExist``; all patches are idempotent (``placement.py``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
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
from celmut.sources.documents import Document

LIFECYCLE_ANNOTATION = "scheduling.cast.ai/lifecycle"
PERCENTAGE_ANNOTATION = "scheduling.cast.ai/spot-percentage"
DEFAULT_NAMESPACE = "celmut"
KIND = "spot webhook values"

RULE_LISTS = ("ignorePods", "forcePodsToSpot", "forcePodsToOnDemand")
CUSTOM_KEYS = ("defaultToSpot", "spotPercentageOfReplicaSet", *RULE_LISTS)
CUSTOM_DEFAULTS: dict[str, Any] = {"defaultToSpot": True, "spotPercentageOfReplicaSet": 0}
IGNORED_KEYS = ("presets", "stringTemplate")  # the chart's own machinery
POLICY_NAMES = {
    "allSpot": "spot-all",
    "allSpotExceptKubeSystem": "spot-all-except-kube-system",
    "partialSpot": "spot-partial",
    "": "spot-custom",
}


@dataclass(frozen=True)
class Term:
    """One PodAffinityTerm: the pod's labels match ``selector`` (when set) and its namespace is one of
    ``namespaces`` (when set)."""

    path: str
    selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()


@dataclass
class SpotWebhookConfig:
    """The spot webhook's Helm values (a preset or a custom configuration); PodMutation's own
    ``spotConfig`` is :class:`celmut.compile.presets.podmutation.model.SpotConfig`."""

    preset: str = ""  # "" for a custom configuration
    default_to_spot: bool = True
    percentage: int = 0
    ignore_pods: list[Term] = field(default_factory=list)
    force_to_spot: list[Term] = field(default_factory=list)
    force_to_on_demand: list[Term] = field(default_factory=list)
    celmut_namespace: str = DEFAULT_NAMESPACE

    @property
    def policy_name(self) -> str:
        return POLICY_NAMES[self.preset]


def preset_config(preset: str) -> SpotWebhookConfig:
    """The configuration a chart preset stands for."""
    if preset == "allSpot":
        return SpotWebhookConfig(preset)
    if preset == "allSpotExceptKubeSystem":
        kube_system = Term(f"preset {preset}: forcePodsToOnDemand[0]", namespaces=("kube-system",))
        return SpotWebhookConfig(preset, force_to_on_demand=[kube_system])
    if preset == "partialSpot":
        return SpotWebhookConfig(preset, default_to_spot=False, percentage=40)
    raise ValueError(f"unknown preset {preset!r}")


def claims(document: Any) -> bool:
    return isinstance(document, dict) and "staticConfig" in document and "kind" not in document


def parse(document: Document) -> SpotWebhookConfig:
    """The configuration of one values document; raises PolicyError naming every invalid field."""
    errors: list[FieldError] = []
    root = Reader(document.content, "", errors)
    namespace = root.string("celmutNamespace", default=DEFAULT_NAMESPACE)
    if namespace and not names.is_dns_label(namespace):
        root.fail(f"Invalid value: {namespace!r}: must be a namespace name", "celmutNamespace")
    static = root.child("staticConfig")
    static.unknown_fields(["preset", *CUSTOM_KEYS, *IGNORED_KEYS])
    preset = static.string("preset", enum=[p for p in POLICY_NAMES if p])
    if preset:
        config = preset_config(preset)
        for key in CUSTOM_KEYS:  # the chart's defaults may stay (a copy of its values.yaml has them)
            value = static.data.get(key)
            default = CUSTOM_DEFAULTS.get(key)
            if value not in (None, []) and not (type(value) is type(default) and value == default):
                static.fail(f"Forbidden: cannot be combined with staticConfig.preset ({preset})", key)
    else:
        config = SpotWebhookConfig(
            default_to_spot=static.boolean("defaultToSpot", True),
            percentage=static.integer("spotPercentageOfReplicaSet", 0, minimum=0, maximum=99) or 0,
            ignore_pods=_terms(static, "ignorePods"),
            force_to_spot=_terms(static, "forcePodsToSpot"),
            force_to_on_demand=_terms(static, "forcePodsToOnDemand"),
        )
    config.celmut_namespace = namespace or DEFAULT_NAMESPACE
    if errors:
        raise PolicyError(document.path, KIND, f"#{document.index}", errors)
    return config


def _terms(static: Reader, field_name: str) -> list[Term]:
    terms = []
    for item in static.items(field_name, max_items=100):
        item.unknown_fields(["labelSelector", "namespaces", "topologyKey", "namespaceSelector"])
        if item.has("namespaceSelector"):
            item.fail("Forbidden: not supported (as in the CAST AI webhook): list the namespaces in namespaces")
        selector = ls.parse_label_selector(item.child("labelSelector")) if item.has("labelSelector") else None
        namespaces = item.string_list("namespaces") or []
        for index, name in enumerate(namespaces):
            if not names.is_dns_label(name):
                item.fail(f"Invalid value: {name!r}: must be a namespace name", f"namespaces[{index}]")
        if selector is None and not namespaces and not item.has("namespaceSelector"):
            item.fail("Required value: labelSelector or namespaces (an empty term would match every pod)")
        terms.append(Term(item.path, selector, tuple(namespaces)))
    return terms


# --- CEL ----------------------------------------------------------------------------------------------


def term_cel(term: Term) -> str:
    parts = []
    if term.selector is not None:
        parts.append(ls.label_selector(term.selector))
    if term.namespaces:
        parts.append(f"request.namespace in {lit.cel_strings(term.namespaces)}")
    body = " && ".join(f"({p})" if "&&" in p and len(parts) > 1 else p for p in parts)
    return f"// {term.path}\n{body}"


def terms_cel(terms: Sequence[Term]) -> str:
    """``true`` when any of the terms matches the pod."""
    if len(terms) == 1:
        return term_cel(terms[0])
    return " ||\n".join(f"({term_cel(t)})" for t in terms)


def _annotation(name: str) -> str:
    return f'variables.podAnnotations[?{lit.cel_string(name)}].orValue("")'


def ignored_conditions(config: SpotWebhookConfig, spec: str = "object.spec") -> list[dict[str, str]]:
    """What leaves a pod (or, with ``spec`` a template's, a DaemonSet) alone: celmut's namespace, a
    topology spread over spot, ``ignorePods`` (on ``variables.podLabels``)."""
    conditions = [
        pl.variable("outside-the-celmut-namespace", f"request.namespace != {lit.cel_string(config.celmut_namespace)}"),
        pl.variable(
            "no-topology-spread-over-spot",
            f"!{spec}.?topologySpreadConstraints.orValue([]).exists(c,\n"
            f'  c.?topologyKey.orValue("") == {lit.cel_string(pl.SPOT_LABEL)})',
        ),
    ]
    if config.ignore_pods:
        ignored = textwrap.indent(terms_cel(config.ignore_pods), "  ")
        conditions.append(pl.variable("not-in-ignore-pods", f"!(\n{ignored}\n)"))
    return conditions


def match_conditions(config: SpotWebhookConfig) -> list[dict[str, str]]:
    """The ignored pods, then the override annotations' validity (an invalid value skips the pod)."""
    conditions = [
        pl.variable(
            "controlled-by-a-workload",
            "object.metadata.?ownerReferences.orValue([]).exists(r, r.?controller.orValue(false))",
        ),
        *ignored_conditions(config),
    ]
    conditions += [
        pl.variable(
            f"{pl.PLACEMENT_ANNOTATION}-is-spot-or-on-demand",
            'variables.alreadyPlaced in ["", "spot", "on-demand"]',
        ),
        pl.variable(
            f"{LIFECYCLE_ANNOTATION}-is-spot-or-on-demand",
            'variables.isDaemonSetPod || variables.lifecycleOverride in ["", "spot", "on-demand"]',
        ),
        pl.variable(
            f"{PERCENTAGE_ANNOTATION}-is-1-to-99",
            'variables.isDaemonSetPod || variables.spotPercentageAnnotation == "" ||\n'
            '  variables.spotPercentageAnnotation.matches("^0?[1-9][0-9]?$")',
        ),
    ]
    return conditions


def decision_variables(config: SpotWebhookConfig) -> list[dict[str, str]]:
    """The decision steps, in precedence order; steps the configuration leaves empty are omitted."""
    steps = [
        pl.variable("podLabels", "object.metadata.?labels.orValue({})"),
        pl.variable("podAnnotations", "object.metadata.?annotations.orValue({})"),
        pl.variable("isDaemonSetPod", 'variables.ownerKind == "DaemonSet"'),
        pl.variable(
            "alreadyPlaced",
            "// a decision recorded by this (or an earlier) spot policy is kept\n"
            + _annotation(pl.PLACEMENT_ANNOTATION),
        ),
        pl.variable(
            "lifecycleOverride",
            '// workload override on the pod template: "spot" or "on-demand"\n' + _annotation(LIFECYCLE_ANNOTATION),
        ),
        pl.variable("spotPercentageAnnotation", _annotation(PERCENTAGE_ANNOTATION)),
    ]
    if config.force_to_on_demand:
        steps.append(pl.variable("forcedToOnDemand", terms_cel(config.force_to_on_demand)))
    if config.force_to_spot:
        steps.append(pl.variable("forcedToSpot", terms_cel(config.force_to_spot)))
    steps.append(
        pl.variable(
            "spotPercentage",
            "// workload override on the pod template (1-99), else staticConfig.spotPercentageOfReplicaSet\n"
            f'variables.spotPercentageAnnotation == "" ? {config.percentage} : int(variables.spotPercentageAnnotation)',
        )
    )
    steps.append(pl.siblings_variable())
    steps.append(pl.variable("percentageSplit", pl.spot_split("variables.spotPercentage")))
    chain = [
        'variables.isDaemonSetPod ? "toleration-only" :',
        'variables.alreadyPlaced != "" ? variables.alreadyPlaced :',
        'variables.lifecycleOverride != "" ? variables.lifecycleOverride :',
    ]
    if config.force_to_on_demand:
        chain.append('variables.forcedToOnDemand ? "on-demand" :')
    if config.force_to_spot:
        chain.append('variables.forcedToSpot ? "spot" :')
    chain.append("variables.spotPercentage > 0 ? variables.percentageSplit :")
    chain.append('"spot" // defaultToSpot: true' if config.default_to_spot else '"unchanged" // defaultToSpot: false')
    steps.append(
        pl.variable(
            "placement",
            "// spot, on-demand, toleration-only or unchanged: the first step that decides\n" + "\n".join(chain),
        )
    )
    return steps


def patch_variables() -> list[dict[str, str]]:
    """The JSONPatch lists of each outcome (evaluated only for the outcome chosen)."""
    return [
        pl.variable("recordPlacement", pl.annotate(pl.PLACEMENT_ANNOTATION, "variables.placement")),
        pl.variable("spotPatches", pl.spot_patches("only-spot")),
        pl.variable("onDemandPatches", pl.on_demand_patches()),
        pl.variable("spotToleration", pl.spot_patches("optional-spot")),
    ]


PATCHES = """
variables.placement == "spot" ? variables.recordPlacement + variables.spotPatches :
variables.placement == "on-demand" ? variables.recordPlacement + variables.onDemandPatches :
variables.placement == "toleration-only" ? variables.spotToleration :
[]
""".strip()


def build_policy(config: SpotWebhookConfig, source: str) -> dict[str, Any]:
    conditions = match_conditions(config)
    candidates = [*pl.workload_variables(), *decision_variables(config), *patch_variables()]
    variables = pl.prune_variables(candidates, PATCHES, *(c["expression"] for c in conditions))
    description = f"preset {config.preset}" if config.preset else "custom staticConfig"
    policy = pl.mutating_policy(
        config.policy_name,
        variables=variables,
        match_conditions=conditions,
        patches=PATCHES,
        annotations={GENERATED_BY: f"{KIND} {source} ({description})"},
        labels={"celmut.io/preset": "spot"},
    )
    return yaml_format.readable(policy)


DAEMONSETS = {
    "apiGroups": ["apps"],
    "apiVersions": ["v1"],
    "operations": ["CREATE", "UPDATE"],
    "resources": ["daemonsets"],
}
TEMPLATE_SPEC = "object.spec.template.spec"


def build_daemonset_policy(config: SpotWebhookConfig, source: str) -> dict[str, Any]:
    """``<policy>-daemonsets``: the spot toleration on every DaemonSet's pod template.

    The DaemonSet controller decides which nodes get a daemon pod from the template, not from the
    pods admission later changes (``pkg/controller/daemon/daemon_controller.go`` ``NodeShouldRunDaemonPod``
    checks the template's tolerations against each node's taints), so a toleration added to the pods
    alone never reaches a tainted spot node. Mutated on DaemonSet CREATE/UPDATE, and by the controller
    for those that already exist (mutateExisting: their pods are rolled once, as for any template change)."""
    conditions = ignored_conditions(config, TEMPLATE_SPEC)
    variables = [pl.variable("podLabels", "object.spec.template.metadata.?labels.orValue({})")]
    patches = pl.spot_patches("optional-spot", spec=TEMPLATE_SPEC, path="/spec/template/spec")
    description = f"preset {config.preset}" if config.preset else "custom staticConfig"
    policy = pl.mutating_policy(
        f"{config.policy_name}-daemonsets",
        variables=pl.prune_variables(variables, patches, *(c["expression"] for c in conditions)),
        match_conditions=conditions,
        patches=patches,
        annotations={GENERATED_BY: f"{KIND} {source} ({description}): DaemonSet pod templates"},
        labels={"celmut.io/preset": "spot"},
        resource_rule=DAEMONSETS,
        mutate_existing=True,
    )
    return yaml_format.readable(policy)


class SpotCompiler:
    name = "spot"

    def claims(self, document: Any) -> bool:
        return claims(document)

    def compile(self, documents: Sequence[Document]) -> PresetOutput:
        def duplicate(document: Document, config: SpotWebhookConfig, first: str) -> PolicyError:
            message = f"Duplicate value: policy {config.policy_name} is already generated from {first}"
            return PolicyError(document.path, KIND, f"#{document.index}", [FieldError("staticConfig", message)])

        return compile_each(
            documents,
            parse,
            lambda document, config: (config.policy_name, document.path),
            lambda document, config: [
                build_policy(config, Path(document.path).name),
                build_daemonset_policy(config, Path(document.path).name),
            ],
            duplicate,
        )


COMPILER = SpotCompiler()
