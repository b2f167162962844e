"""Why a workload's pod went where it went: the rule of a placement preset that decided, with its numbers.

The presets that split a workload's pods (the spot webhook presets, PodMutation's spot percentage and
distribution groups; :mod:`celmut.compile.presets.placement`) decide in CEL variables: ``placement``
(spot or on-demand, from the split ``cel.bind(percent, …)`` over ``siblings``, the other live pods of
the same owner) and ``group``. After a pod is admitted, those variables are read as the admission
computed them (:attr:`~celmut.runtime.results.PolicyOutcome.variables`, recorded when explaining):
nothing is listed or counted twice. One the admission did not need is evaluated then, before the pod
is stored (so it is not its own sibling), with the object the policy received and the cluster as it
was. What decided is then said in words, with the counts of the split, for example: "40 % on spot: 2
of the 5 pods before it are on spot; 6 × 40 % = 2.4, rounded down 2: on-demand".

The spot webhook preset's steps (:func:`celmut.compile.presets.spot.decision_variables`) are named
variables; the first that decides is the rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from celmut import cel
from celmut.cel.evalcontext import Budget
from celmut.compile.presets import placement as pl
from celmut.runtime.results import PolicyOutcome

SPLIT = re.compile(r"cel\.bind\(percent,\s*([^,]+?),")
GROUPS = re.compile(r'"name": dyn\("([^"]*)"\), "percent": dyn\((\d+)\)')
Row = dict[str, Any]


def _recorded(pod: Any, annotation: str) -> str:
    return (
        str(((pod.get("metadata") or {}).get("annotations") or {}).get(annotation, "")) if isinstance(pod, dict) else ""
    )


def _is_true(value: Any) -> bool:
    return value is True


def _is_set(value: Any) -> bool:
    return isinstance(value, str) and value != ""


# The spot webhook preset's steps before the split, in its order: (variable, decides when, the rule).
STEPS: tuple[tuple[str, Any, str], ...] = (
    ("isDaemonSetPod", _is_true, "a DaemonSet pod: the spot toleration only"),
    ("alreadyPlaced", _is_set, f"the placement already recorded ({pl.PLACEMENT_ANNOTATION})"),
    ("lifecycleOverride", _is_set, "the pod template's annotation scheduling.cast.ai/lifecycle"),
    ("forcedToOnDemand", _is_true, "forcePodsToOnDemand matched"),
    ("forcedToSpot", _is_true, "forcePodsToSpot matched"),
)


def received_objects(original: Any, outcomes: Sequence[PolicyOutcome]) -> dict[str, Any]:
    """The object each policy received, by display name: the one before it, as the policies chain."""
    current = original
    received: dict[str, Any] = {}
    for outcome in outcomes:
        received.setdefault(outcome.policy, current)
        if outcome.after is not None:
            current = outcome.after
    return received


def computed_variables(outcomes: Sequence[PolicyOutcome]) -> dict[str, dict[str, Any]]:
    """The variables each policy's evaluation computed, by display name (of its first evaluation: the
    one :func:`received_objects` gives the object of)."""
    computed: dict[str, dict[str, Any]] = {}
    for outcome in outcomes:
        if outcome.policy not in computed:
            computed[outcome.policy] = outcome.variables or {}
    return computed


def explain(
    policies: Sequence[Any],
    outcomes: Sequence[PolicyOutcome],
    original: Any,
    request: Mapping[str, Any],
    namespace_object: Any,
    services: cel.Services,
) -> list[Row]:
    """One row per placement policy that took part: ``policy``, ``rule`` (words), ``numbers`` and the
    ``placement``/``group`` it chose; policies without a placement or group variable give none."""
    received = received_objects(original, outcomes)
    computed = computed_variables(outcomes)
    statuses = {o.policy: o.status for o in outcomes}
    rows: list[Row] = []
    for policy in policies:
        variables = policy.variables
        if statuses.get(policy.display_name) not in ("applied", "unchanged") or not (
            "placement" in variables or "group" in variables
        ):
            continue
        sources = {
            v.get("name"): v.get("expression", "")
            for v in (policy.definition.raw.get("spec") or {}).get("variables") or []
        }
        activation = cel.Activation(
            object=received.get(policy.display_name, original),
            request=request,
            namespace_object=namespace_object,
            variables=variables,
            variable_values=computed.get(policy.display_name),
            services=services,
            budget=Budget.with_timeout(),
        )
        try:
            rows.append({"policy": policy.display_name, **_decision(activation.variables, sources)})
        except cel.CelError as ex:
            rows.append({"policy": policy.display_name, "rule": f"could not be evaluated again: {ex}", "numbers": {}})
    return rows


def _decision(variables: Any, sources: Mapping[str, str]) -> Row:
    value = variables.cel_select
    if "group" in sources:
        return _group(value, sources)
    placement = value("placement")
    for name, decides, rule in STEPS:
        if name in sources and decides(value(name)):
            found = value(name)
            return {
                "placement": placement,
                "rule": f"{rule}: {found}" if isinstance(found, str) else rule,
                "numbers": {},
            }
    split = SPLIT.search(sources.get("percentageSplit", "") or sources.get("placement", ""))
    percent = (
        value("spotPercentage")
        if "spotPercentage" in sources
        else int(split[1])
        if split and split[1].isdigit()
        else None
    )
    if split and isinstance(percent, int) and percent > 0 and placement in ("spot", "on-demand"):
        return {"placement": placement, **_split(value("siblings"), percent, placement)}
    if "spotPercentage" in sources:
        default = "defaultToSpot: true" if placement == "spot" else "defaultToSpot: false: left as it is"
        return {"placement": placement, "rule": default, "numbers": {}}
    return {"placement": placement, "rule": "the preset's spot mode", "numbers": {}}


def _split(siblings: Any, percent: int, placement: str) -> Row:
    """The split's counts: the pods before this one, those on spot, and how many may be."""
    if siblings is None:
        rule = f"{percent} % on spot, without a cluster to count in: the hash of the pod's name decided"
        return {"rule": rule, "numbers": {"percent": percent}}
    earlier = len(siblings)
    on_spot = sum(1 for pod in siblings if _recorded(pod, pl.PLACEMENT_ANNOTATION) == "spot")
    total = earlier + 1
    allowed = total * percent // 100
    exact = total * percent / 100
    pods = f"{earlier} pod{'s' * (earlier > 1)}"
    before = f"{on_spot} of the {pods} before it on spot" if earlier else "no pod before it"
    rule = f"{percent} % on spot: {before}; {total} × {percent} % = {exact:g}, rounded down {allowed}: {placement}"
    return {"rule": rule, "numbers": {"percent": percent, "earlier": earlier, "earlierOnSpot": on_spot,
                                      "total": total, "allowedOnSpot": allowed}}  # fmt: skip


def _group(value: Any, sources: Mapping[str, str]) -> Row:
    group = value("group")
    siblings = value("siblings")
    wanted = [(name, int(percent)) for name, percent in GROUPS.findall(sources["group"])]
    row: Row = {"group": group}
    if "placement" in sources:
        row["placement"] = value("placement")
    if siblings is None:
        row["rule"] = "distribution groups, without a cluster to count in: the hash of the pod's name decided"
        row["numbers"] = {}
        return row
    counts = {name: 0 for name, _ in wanted}
    for pod in siblings:
        recorded = _recorded(pod, pl.GROUP_ANNOTATION)
        counts[recorded] = counts.get(recorded, 0) + 1
    total = len(siblings) + 1
    parts = ", ".join(
        f"{name} {percent} % ({counts.get(name, 0)} of {len(siblings)} before it)" for name, percent in wanted
    )
    row["rule"] = f"distribution groups over {total} pods: {parts}: {group}"
    row["numbers"] = {"total": total, "counts": counts}
    return row
