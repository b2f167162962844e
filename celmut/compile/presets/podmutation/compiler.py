"""PodMutations → MutatingPolicies (one per PodMutation, compiled as a set).

Each generated policy ``podmutation-<name>`` is an ordinary pod-CREATE MutatingPolicy
(failurePolicy Ignore, as the CAST AI webhook registers) with:

* **variables**: the workload identity (:func:`placement.workload_variables`), ``podLabels``,
  ``matches`` (this PodMutation's filters, see :mod:`.filters`) and ``outranked`` (the filters of
  every more specific PodMutation, ORed, see :mod:`.specificity`); with spot or distribution
  settings also ``siblings``, ``group``, ``spotMode`` and ``placement``.
* **matchConditions**: ``not-ignored`` (no ``pod-mutator.cast.ai/ignore`` label),
  ``filters-match`` (``variables.matches``), ``most-specific`` (``!variables.outranked``) — so exactly
  one PodMutation applies to a pod, the same one in ``celmut apply`` and the webhook.
* **mutation 0 (patches)**: every patchesV2 group's operations, then the legacy ``patches``, then the
  chosen distribution group's operations, then the annotation
  ``pod-mutations.cast.ai/pod-mutation-name: <name>`` on the pod (``add`` creates missing parents,
  see :mod:`.patches`). A failed ``test`` skips it (the outcome's reason names the test); any other
  patch error (a missing path for remove/replace/move/copy/test …) is a policy error, which
  discards the whole policy result: the pod is admitted unchanged, with a warning.
* **mutation 1 (placement)**, only with a spot mode or distribution groups: the spot/on-demand
  changes and the ``celmut.io/placement`` / ``celmut.io/distribution-group`` annotations. It runs on
  the pod as patched by mutation 0 — so a patch that creates ``/spec/nodeSelector`` or
  ``/spec/tolerations`` is extended, not overwritten — and only when mutation 0 applied (it checks
  the name annotation mutation 0 wrote), so nothing is ever applied partially. (A pod that already
  carries this PodMutation's name, e.g. admitted a second time, passes the gate; its recorded
  placement is kept, so this changes nothing. Patches that remove ``/metadata/annotations`` or
  replace ``/metadata`` make the name record fail: a policy error, the pod admitted unchanged.)

**distributionGroups**: ``placement.group_split`` picks a group per pod (exact with a cluster
lookup, hash buckets without); pods in the unallocated percentage get the group ``(none)`` and only
the top-level configuration. A group's patches run after the top-level ones. A group with
``spotMode`` puts its pods on spot in that mode; pods of a group without ``spotMode`` (and pods in no
group) are placed by ``spotConfig``: split by ``distributionPercentage`` (default 100) in its mode,
counting every spot pod of the workload (group ones included) — and left alone when spotConfig has
no mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from celmut import jsonutil
from celmut.compile.cel_literals import cel_string
from celmut.compile.presets import placement as pl
from celmut.compile.presets import yaml_format
from celmut.compile.presets.base import GENERATED_BY, PresetOutput
from celmut.compile.presets.podmutation import model
from celmut.compile.presets.podmutation.filters import LABELS_EXPRESSION, matches_cel
from celmut.compile.presets.podmutation.model import PodMutation
from celmut.compile.presets.podmutation.patches import PatchState, cel_operations, within, writes
from celmut.compile.presets.podmutation.specificity import rank, specificity
from celmut.policy.errors import FieldError, PolicyError
from celmut.policy.mutating_policy import RESTART_POLICY_ANNOTATION
from celmut.sources.documents import Document

NAME_ANNOTATION = f"{model.API_GROUP}/pod-mutation-name"
IGNORE_LABEL = "pod-mutator.cast.ai/ignore"
SPECIFICITY_ANNOTATION = "celmut.io/specificity"
PRESET_LABEL = "celmut.io/preset"
ANNOTATIONS_PATH = "/metadata/annotations"


def policy_name(mutation_name: str) -> str:
    return f"podmutation-{mutation_name}"


def _inner(text: str) -> str:
    """``text`` escaped for pasting between the double quotes the placement helpers write."""
    return cel_string(text)[1:-1]


def _may_change(operation: model.Operation, container: str) -> bool:
    """Whether ``operation`` may create, replace or remove ``container``: it writes it or an
    ancestor, or adds below it (``add`` creates missing parents)."""
    if any(within(container, w) for w in writes(operation)):
        return True
    return operation.op == "add" and operation.path.startswith(container + "/")


def _group_operations(mutation: PodMutation, state: PatchState) -> str:
    branches = [
        f"variables.group == {cel_string(g.name)} ? ({cel_operations(g.operations, state.copy())}) :"
        for g in mutation.groups
        if g.operations
    ]
    return "(" + "\n".join(branches) + "\n[])" if branches else ""


def patches_cel(mutation: PodMutation) -> str:
    """Mutation 0: the user's operations in order, then the name annotation."""
    operations = list(mutation.operations) + [op for g in mutation.groups for op in g.operations]
    name = cel_string(mutation.name)
    state = PatchState()
    parts: list[str] = []
    if any(_may_change(op, ANNOTATIONS_PATH) for op in operations):
        # the patches may create or replace the annotations map: make sure it exists before them and
        # add the name after them (a check of the incoming pod would overwrite what they wrote)
        ensure = f'[JSONPatch{{op: "add", path: "{ANNOTATIONS_PATH}", value: {{}}}}]'
        parts.append(f"(has(object.metadata.annotations) ? [] : {ensure})")
        state.ensured.add(ANNOTATIONS_PATH)
        path = f"{ANNOTATIONS_PATH}/{jsonutil.escape_pointer(NAME_ANNOTATION)}"
        record = f'[JSONPatch{{op: "add", path: "{path}", value: {name}}}]'
    else:
        record = pl.annotate(NAME_ANNOTATION, name)
    if mutation.operations:
        parts.append(cel_operations(mutation.operations, state))
    if group_ops := _group_operations(mutation, state):
        parts.append(group_ops)
    parts.append(record)
    return " +\n".join(parts)


def _spot_modes(mutation: PodMutation) -> list[str]:
    modes = [mutation.spot.mode] if mutation.spot is not None and mutation.spot.mode else []
    modes += [g.spot_mode for g in mutation.groups if g.spot_mode]
    return list(dict.fromkeys(modes))


def placement_variables(mutation: PodMutation) -> list[dict[str, str]]:
    purpose = "distribution groups need pod counts" if mutation.groups else "spot percentages need pod counts"
    variables = [pl.siblings_variable(purpose)]
    if mutation.groups:
        groups = [(_inner(g.name), g.percentage) for g in mutation.groups]
        variables.append(pl.variable("group", pl.group_split(groups, _inner(model.NO_GROUP))))
    modes = _spot_modes(mutation)
    if not modes:
        return variables
    top = mutation.spot.mode if mutation.spot is not None and mutation.spot.mode else None
    if len(modes) > 1:
        chain = [
            f"variables.group == {cel_string(g.name)} ? {cel_string(g.spot_mode)} :"
            for g in mutation.groups
            if g.spot_mode
        ]
        variables.append(pl.variable("spotMode", "\n".join([*chain, cel_string(top or modes[0])])))
    base = pl.spot_split(str(mutation.spot.percentage)) if top and mutation.spot is not None else '""'
    forced = [cel_string(g.name) for g in mutation.groups if g.spot_mode]
    if forced:
        base = f'variables.group in [{", ".join(forced)}] ? "spot" :\n{base}'
    variables.append(pl.variable("placement", base))
    return variables


def placement_cel(mutation: PodMutation) -> str:
    """Mutation 1: spot/on-demand changes and the recorded decisions, gated on mutation 0."""
    modes = _spot_modes(mutation)
    has_top = mutation.spot is not None and bool(mutation.spot.mode)
    parts: list[str] = []
    if modes:
        if len(modes) == 1:
            spot = pl.spot_patches(modes[0])
        else:
            spot = "\n".join(f"variables.spotMode == {cel_string(m)} ? ({pl.spot_patches(m)}) :" for m in modes[:-1])
            spot += f"\n({pl.spot_patches(modes[-1])})"
        on_demand = f'variables.placement == "on-demand" ? ({pl.on_demand_patches()}) :\n' if has_top else ""
        parts.append(f'(variables.placement == "spot" ? ({spot}) :\n{on_demand}[])')
        record = pl.annotate(pl.PLACEMENT_ANNOTATION, "variables.placement")
        parts.append(record if has_top else f'(variables.placement == "" ? [] : {record})')
    if mutation.groups:
        parts.append(pl.annotate(pl.GROUP_ANNOTATION, "variables.group"))
    gate = f'object.metadata.?annotations[?"{NAME_ANNOTATION}"].orValue("") != {cel_string(mutation.name)} ? [] :'
    return gate + "\n" + " +\n".join(parts)


def outranked_cel(outranking: Sequence[PodMutation]) -> str:
    """True when a more specific PodMutation's filters match the pod."""
    if not outranking:
        return "false"
    return "\n|| ".join(f"// {m.name}\n({matches_cel(m.filters)})" for m in outranking)


def build_policy(mutation: PodMutation, outranking: Sequence[PodMutation]) -> dict[str, Any]:
    """The MutatingPolicy for ``mutation``; ``outranking`` are the PodMutations ranked above it."""
    variables = [
        *pl.workload_variables(),
        pl.variable("podLabels", LABELS_EXPRESSION),
        pl.variable("matches", matches_cel(mutation.filters)),
        pl.variable("outranked", outranked_cel(outranking)),
    ]
    placed = bool(_spot_modes(mutation) or mutation.groups)
    if placed:
        variables += placement_variables(mutation)
    annotations = {
        GENERATED_BY: f"{model.API_VERSION} {model.KIND} {mutation.name} ({mutation.source})",
        RESTART_POLICY_ANNOTATION: mutation.restart_policy,
        SPECIFICITY_ANNOTATION: specificity(mutation).describe(),
        **mutation.annotations,
    }
    applied = f'object.metadata.?annotations[?{cel_string(NAME_ANNOTATION)}].orValue("")'
    conditions = [
        # A pod this PodMutation already mutated (a reinvocation, or a running pod the controller
        # re-checks) is left alone: user patches such as an add to "/-" are not idempotent.
        {"name": "not-yet-applied", "expression": f"{applied} != {cel_string(mutation.name)}"},
        {"name": "not-ignored", "expression": f"!({cel_string(IGNORE_LABEL)} in variables.podLabels)"},
        {"name": "filters-match", "expression": "variables.matches"},
        {"name": "most-specific", "expression": "!variables.outranked"},
    ]
    mutations = [patches_cel(mutation)] + ([placement_cel(mutation)] if placed else [])
    policy = pl.mutating_policy(
        policy_name(mutation.name),
        variables=pl.prune_variables(variables, *(c["expression"] for c in conditions), *mutations),
        match_conditions=conditions,
        patches=mutations[0],
        annotations=annotations,
        labels={PRESET_LABEL: "podmutation"},
    )
    policy["spec"]["mutations"] += [{"patchType": "JSONPatch", "jsonPatch": {"expression": m}} for m in mutations[1:]]
    return yaml_format.readable(policy)


class PodMutationCompiler:
    """The ``PodMutation`` preset: all PodMutations are compiled together (specificity is global)."""

    name = "podmutation"

    def claims(self, document: Any) -> bool:
        return model.claims(document)

    def compile(self, documents: Sequence[Document]) -> PresetOutput:
        output = PresetOutput()
        parsed: dict[str, PodMutation] = {}
        for document in documents:
            try:
                mutation = model.parse(document)
            except PolicyError as ex:
                output.errors.append(ex)
                continue
            if mutation.name in parsed:
                first = parsed[mutation.name].source
                output.errors.append(
                    PolicyError(
                        document.path,
                        model.KIND,
                        mutation.name,
                        [FieldError("metadata.name", f"Duplicate value: {mutation.name!r} is also defined in {first}")],
                    )
                )
                continue
            parsed[mutation.name] = mutation
        ranked = rank(parsed.values())
        output.policies = [build_policy(m, ranked[:i]) for i, m in enumerate(ranked)]
        return output


COMPILER = PodMutationCompiler()
