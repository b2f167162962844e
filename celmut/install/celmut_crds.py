"""The preset kinds: CAST AI's ``PodMutation`` and celmut's ``GpuSlicing`` and ``PodPinningPlan``.

Schemas are the documented fields with their enums, bounds and required fields, so ``kubectl apply``
rejects a typo before celmut sees it. What a structural schema cannot say (RE2 regexes, group
percentages summing to at most 100, DNS names) celmut checks when it compiles the object and reports
on it: a ``celmut.io/Compiled`` condition in ``status.conditions`` and a Warning Event. Conditional
fields are expressed with ``anyOf``/``oneOf`` of ``required`` (no CEL rules: their cost estimate
depends on list sizes the API server cannot bound).
"""

from __future__ import annotations

from celmut.compile.presets import gpu, pinning
from celmut.compile.presets.placement import SPOT_MODES
from celmut.compile.presets.podmutation import model as pm
from celmut.install import schema as s
from celmut.install.crd import CRD, Version

COMPILED = {
    "jsonPath": '.status.conditions[?(@.type=="celmut.io/Compiled")].status',
    "name": "Compiled",
    "type": "string",
    "description": "Whether celmut compiled the object into a policy that is in service.",
}
AGE = {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"}
_STATUS = s.obj({"conditions": s.conditions("celmut.io/Compiled: whether the object is in service.")})
_WORKLOAD_LISTS = {
    "namespaces": "namespace names",
    "excludeNamespaces": "namespaces to exclude",
    "names": "workload names",
    "excludeNames": "workload names to exclude",
    "kinds": "workload kinds (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Pod)",
    "excludeKinds": "workload kinds to exclude",
}


# --- PodMutation ------------------------------------------------------------------------------------


def _matcher(description: str = "") -> s.Schema:
    return s.obj(
        {
            "type": s.string("exact, or regex (RE2, matching the whole value).", enum=pm.MATCH_TYPES),
            "value": s.string("The value or regular expression."),
        },
        description,
        required=("type", "value"),
    )


def _label_group(description: str) -> s.Schema:
    matcher = s.obj(
        {"keyMatcher": _matcher("Matches the label key."), "valueMatcher": _matcher("Matches the label value.")},
        required=("keyMatcher", "valueMatcher"),
    )
    return s.obj(
        {
            "matchers": s.arr(matcher, "Label matchers; one matches when a label's key and value both match."),
            "operator": s.string("and (the default: all matchers) or or (any).", enum=pm.OPERATORS),
        },
        description,
    )


def _operation() -> s.Schema:
    needs_value = [op for op in pm.OPS if op not in ("add", "replace", "test")]
    needs_from = [op for op in pm.OPS if op not in ("move", "copy")]
    schema = s.obj(
        {
            "from": s.string("Source JSON Pointer, for move and copy.", pattern=r"^/([^~]|~[01])*$"),
            "op": s.string("The operation.", enum=pm.OPS),
            "path": s.string(
                "JSON Pointer (RFC 6901) to the target; '/-' appends to a list.", pattern=r"^/([^~]|~[01])*$"
            ),
            "value": s.any_value("The value, for add, replace and test."),
        },
        "A JSON Patch (RFC 6902) operation on the pod.",
        required=("op", "path"),
    )
    schema["allOf"] = [
        {"anyOf": [{"properties": {"op": {"enum": needs_value}}}, {"required": ["value"]}]},
        {"anyOf": [{"properties": {"op": {"enum": needs_from}}}, {"required": ["from"]}]},
    ]
    return schema


def _patches_v2(description: str) -> s.Schema:
    group = s.obj(
        {"operations": s.arr(_operation(), "Operations applied in order.")},
        required=("operations",),
    )
    return s.arr(group, description)


def _percentage(description: str) -> s.Schema:
    return s.integer(description, minimum=0, maximum=100)


def _pod_mutation_spec() -> s.Schema:
    workload_v2 = s.obj(
        {name: s.arr(_matcher(), f"Matchers for {what}.") for name, what in _WORKLOAD_LISTS.items()},
        "Filters on the pod's namespace and parent workload.",
    )
    legacy_label = s.obj(
        {"key": s.string("The label key."), "value": s.string("The label value.")}, required=("key", "value")
    )
    legacy_workload = s.obj(
        {name: s.strings(f"Exact {what}.") for name, what in _WORKLOAD_LISTS.items()},
        "Filters on the pod's namespace and parent workload (exact values).",
    )
    legacy_pod = s.obj(
        {
            "excludeLabelsFilter": s.arr(legacy_label, "Labels of pods to exclude."),
            "excludeLabelsOperator": s.string("and or or.", enum=pm.OPERATORS),
            "labelsFilter": s.arr(legacy_label, "Labels of pods to include."),
            "labelsOperator": s.string("and or or.", enum=pm.OPERATORS),
        },
        "Filters on the pod's labels.",
    )
    group = s.obj(
        {
            "configuration": s.obj(
                {
                    "patches": s.arr(_operation(), "Legacy operations for this group."),
                    "patchesV2": _patches_v2("Operation groups for this group."),
                    "spotMode": s.string("Puts this group's pods on spot in this mode.", enum=SPOT_MODES),
                },
                "What pods of this group get.",
            ),
            "name": s.string("Unique name of the group.", min_length=1),
            "percentage": _percentage("Share of the matched pods in this group (0–100)."),
        },
        required=("name", "percentage", "configuration"),
    )
    return s.obj(
        {
            "distributionGroups": s.arr(
                group,
                "Split of a workload's pods between configurations (percentages sum to at most 100; preview).",
                list_type="map",
                map_keys=("name",),
            ),
            "filter": s.obj({"pod": legacy_pod, "workload": legacy_workload}, "Legacy filter (exact values)."),
            "filterV2": s.obj(
                {
                    "pod": s.obj(
                        {
                            "excludeLabels": _label_group("Pods with these labels are excluded."),
                            "labels": _label_group("Pods must have these labels."),
                        },
                        "Filters on the pod's labels.",
                    ),
                    "workload": workload_v2,
                },
                "Which pods the mutation applies to; all given filters must match (none: every pod).",
            ),
            "patches": s.arr(_operation(), "Legacy patch operations."),
            "patchesV2": _patches_v2("Groups of patch operations applied to matched pods, in order."),
            "restartPolicy": s.string(
                "deferred (the default): new pods only. immediate: as deferred (CAST AI: reserved for future use) "
                "unless celmut's controller runs with --allow-immediate-restart (chart: "
                "controller.allowImmediateRestart), which replaces running pods that do not match.",
                enum=pm.RESTART_POLICIES,
            ),
            "spotConfig": s.obj(
                {
                    "distributionPercentage": _percentage("Share of matched pods put on spot (0–100, default 100)."),
                    "mode": s.string("optional-spot, only-spot or preferred-spot.", enum=SPOT_MODES),
                },
                "Spot instance scheduling of matched pods.",
            ),
        },
        "Which pods to mutate and how.",
    )


def pod_mutation() -> CRD:
    columns = (
        {"jsonPath": ".spec.spotConfig.mode", "name": "Spot Mode", "type": "string"},
        {"jsonPath": ".spec.spotConfig.distributionPercentage", "name": "Spot %", "type": "integer"},
        {"jsonPath": ".spec.restartPolicy", "name": "Restart", "type": "string"},
        COMPILED,
        AGE,
    )
    root = s.root(_pod_mutation_spec(), _STATUS, "PodMutation: filters selecting pods and the changes they get.")
    return CRD(
        group=pm.API_GROUP,
        kind=pm.KIND,
        plural="podmutations",
        scope="Cluster",
        short_names=("pomu", "pomus"),
        categories=("celmut",),
        versions=(Version("v1", root, storage=True, printer_columns=columns),),
    )


# --- GpuSlicing -------------------------------------------------------------------------------------


def gpu_slicing() -> CRD:
    spec = s.obj(
        {
            "sharedResource": s.string(
                f"The extended resource GPUs become (default {gpu.DEFAULT_SHARED}).",
                pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$",
            ),
            "workloadTypes": s.obj(
                description="Slice counts per castops.io/workload-type, added to or overriding "
                + ", ".join(f"{k} {v}" for k, v in gpu.WORKLOAD_TYPES.items())
                + ".",
                additionalProperties=s.integer(minimum=1, maximum=999_999_999),
            ),
        },
        "GPU slicing settings; every field is optional.",
    )
    columns = ({"jsonPath": ".spec.sharedResource", "name": "Shared Resource", "type": "string"}, COMPILED, AGE)
    root = s.root(spec, _STATUS, "GpuSlicing: pods opting in share GPUs as slices.", spec_required=False)
    return CRD(
        group=gpu.API_VERSION.split("/")[0],
        kind=gpu.KIND,
        plural="gpuslicings",
        scope="Cluster",
        categories=("celmut",),
        versions=(Version(gpu.API_VERSION.split("/")[1], root, storage=True, printer_columns=columns),),
    )


# --- PodPinningPlan ---------------------------------------------------------------------------------


def pod_pinning_plan() -> CRD:
    pin = s.obj(
        {
            "labelSelector": s.label_selector("Pods whose labels match (not empty)."),
            "node": s.string("The node the pods are pinned to.", min_length=1, max_length=253),
            "ordinal": s.integer("StatefulSet only: pins the pod <name>-<ordinal>.", minimum=0),
            "workload": s.obj(
                {
                    "kind": s.string("The workload kind.", enum=pinning.WORKLOAD_KINDS),
                    "name": s.string("The workload name.", min_length=1),
                },
                "The pods of one workload (found through the pod's controller owner).",
                required=("kind", "name"),
            ),
        },
        "One pin: node and exactly one of workload or labelSelector.",
        required=("node",),
    )
    pin["oneOf"] = [{"required": ["workload"]}, {"required": ["labelSelector"]}]
    pin["anyOf"] = [
        {"not": {"required": ["ordinal"]}},
        {"required": ["workload"], "properties": {"workload": {"properties": {"kind": {"enum": ["StatefulSet"]}}}}},
    ]
    spec = s.obj(
        {"pins": s.arr(pin, "Pins; the first that matches a pod wins.", min_items=1, max_items=pinning.MAX_PINS)},
        "The plan: which node each pod of this namespace should run on.",
        required=("pins",),
    )
    columns = ({"jsonPath": ".spec.pins[*].node", "name": "Nodes", "type": "string"}, COMPILED, AGE)
    root = s.root(spec, _STATUS, "PodPinningPlan: binds pods of its namespace to planned nodes.")
    return CRD(
        group=pinning.API_VERSION.split("/")[0],
        kind=pinning.KIND,
        plural="podpinningplans",
        scope="Namespaced",
        categories=("celmut",),
        versions=(Version(pinning.API_VERSION.split("/")[1], root, storage=True, printer_columns=columns),),
    )


def celmut_crds() -> list[CRD]:
    return [pod_mutation(), gpu_slicing(), pod_pinning_plan()]
