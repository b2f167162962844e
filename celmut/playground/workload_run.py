"""Run a workload "as its pods": its controller's pods (:mod:`celmut.playground.workloads`) admitted one
after the other through the policies, each stored once admitted so that the next one's lookups count
it, as the pods of a ReplicaSet are created in a cluster; then a summary ("4 of 10 on spot,
6 on-demand") and, per pod, its diff and the rule and numbers that placed it
(:mod:`celmut.playground.decisions`).

The workload and the objects between it and its pods (a Deployment's ReplicaSet) are stored first, so
the presets' owner lookups (ReplicaSet → Deployment) find them. A pod is named only after its admission,
as the API server names a ``generateName`` pod after the admission chain: what a webhook sees has no name.
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from typing import Any

from celmut import cel
from celmut.cel.lookups import ResourceLookup
from celmut.playground import decisions, session, workloads
from celmut.playground.inputs import PaneError, PaneProblem
from celmut.service.offline import reference

Obj = dict[str, Any]


def run(state: session.State, index: int, lookups: ResourceLookup | None = None) -> dict[str, Any]:
    """``{"workload", "owners", "pods": [...], "summary", "counts", "seconds"}`` for the resource at
    ``index``; ``errors`` when the panes cannot run or it is not a workload."""
    started = time.perf_counter()
    try:
        loaded = session.load(state, lookups=lookups)
        if not 0 <= index < len(loaded.resources):
            raise PaneError([PaneProblem("resources", f"no resource {index + 1} in the resources pane")])
        expansion = workloads.expand(loaded.resources[index])
    except PaneError as ex:
        return {"errors": [p.to_dict() for p in ex.problems]}
    except workloads.NotAWorkload as ex:
        return {"errors": [PaneProblem("resources", str(ex), document=index).to_dict()]}
    offline, pane = loaded.offline, loaded.panes["policies"]
    sources = {p.display_name: p.source for p in offline.engine.policies}
    for owner in (expansion.workload, *expansion.owners):
        offline.cluster.add(owner)
    resources: ResourceLookup = lookups or offline.cluster
    services = cel.Services(resources=resources)
    pods: list[dict[str, Any]] = []
    notes = list(loaded.notes)
    for number, (pod, name) in enumerate(zip(expansion.pods, expansion.names, strict=True)):
        if time.perf_counter() - started > session.RUN_SECONDS:
            notes.append(
                f"{len(expansion.pods) - number} pods not evaluated: the run took over {session.RUN_SECONDS:.0f} s"
            )
            break
        request = offline.request_for(pod, "CREATE", None)
        result = offline.engine.admit(request, explain=True)
        placed = decisions.explain(
            offline.engine.policies,
            result.outcomes,
            result.original if result.original is not None else pod,
            request.cel_request(),
            session.namespace_object(resources, request.namespace),
            services,
        )
        shown = session.admitted_object(pod, result, pane, sources)
        stored = _stored(result.object if result.allowed and result.object is not None else pod, name, number)
        if result.allowed:
            offline.cluster.keep(stored)  # the next pod's lookups count this one
        shown["reference"] = reference(stored)
        pods.append({"name": name, "resource": index, **shown, "decisions": placed})
    counts = _counts(pods)
    return {
        "workload": reference(expansion.workload),
        "kind": expansion.workload["kind"],
        "owners": [reference(o) for o in expansion.owners],
        "pods": pods,
        "counts": counts,
        "summary": summary(counts, len(pods)),
        "notes": notes,
        "seconds": round(time.perf_counter() - started, 4),
    }


def _stored(admitted: Obj, name: str, number: int) -> Obj:
    """The pod as the API server stores it: named (a generateName pod after admission), with a uid."""
    stored = copy.deepcopy(admitted)
    meta = stored.setdefault("metadata", {})
    if not meta.get("name"):
        meta["name"] = name
    meta.setdefault("uid", workloads.uid_of(stored))
    meta.setdefault("creationTimestamp", f"2025-01-01T00:{number // 60 % 60:02d}:{number % 60:02d}Z")
    return stored


def _counts(pods: list[dict[str, Any]]) -> dict[str, Any]:
    """How many pods were placed where (the first placement policy's decision), in groups, denied."""
    placements: Counter[str] = Counter()
    groups: Counter[str] = Counter()
    for pod in pods:
        chosen = next((d for d in pod["decisions"] if "placement" in d or "group" in d), None)
        if chosen is not None and chosen.get("placement"):
            placements[str(chosen["placement"])] += 1
        if chosen is not None and chosen.get("group"):
            groups[str(chosen["group"])] += 1
    return {
        "placements": dict(placements),
        "groups": dict(groups),
        "changed": sum(1 for p in pods if p["allowed"] and p["patch"]),
        "denied": sum(1 for p in pods if not p["allowed"]),
    }


def summary(counts: dict[str, Any], total: int) -> str:
    """ "4 of 10 on spot, 6 on-demand" (with the groups, the unchanged and the denied when there are)."""
    placements, groups = counts["placements"], counts["groups"]
    parts: list[str] = []
    if placements:
        spot, on_demand = placements.get("spot", 0), placements.get("on-demand", 0)
        parts.append(f"{spot} of {total} on spot, {on_demand} on-demand")
        others = {k: v for k, v in placements.items() if k not in ("spot", "on-demand")}
        parts += [f"{v} {k}" for k, v in sorted(others.items())]
    if groups:
        parts.append("groups: " + ", ".join(f"{k} {v}" for k, v in sorted(groups.items())))
    if not parts:
        parts.append(f"{counts['changed']} of {total} changed by the policies")
    if counts["denied"]:
        parts.append(f"{counts['denied']} denied")
    return "; ".join(parts)
