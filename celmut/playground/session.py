"""One run of the page: its panes through the policies, as ``celmut apply`` and ``celmut explain`` do.

The panes are read (:mod:`celmut.playground.inputs`), the policies compiled with the cluster objects,
Context and UserInfo into the offline cluster every offline command uses
(:class:`celmut.service.offline.OfflineCluster`), each resource admitted with provenance on, then a
policy-event pass for mutateExisting policies. What comes back is what the page shows: per object,
the side-by-side diff with who wrote each line (:mod:`celmut.playground.diffview`), every policy's
outcome with its reason, time and CEL cost, the response patch, warnings, audit annotations.
:func:`natives` gives, per MutatingPolicy, the native MutatingAdmissionPolicy it converts to or why it
cannot (:mod:`celmut.playground.native`), asked for apart: converting a preset's policy takes longer
than the run itself. A policy that does not compile stops the run, as it stops ``celmut apply``
(exit 2), with every problem located in the policies pane.

The same bounds as the webhook hold: the CEL cost budget per request and per expression, the webhook's
deadline on each admission (:data:`ADMISSION_SECONDS`), no outbound HTTP (the default allow-list is
empty), and on top a cap on the resources of one run and on its length (:data:`RUN_SECONDS`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from celmut.cel.lookups import ResourceLookup, ResourceNotFound
from celmut.errors import CelmutError
from celmut.playground import diffview, native
from celmut.playground.inputs import Pane, PaneError, PaneProblem, located, objects_of, read_pane, single
from celmut.playground.layered import Layered
from celmut.playground.workloads import is_workload, replicas
from celmut.policy.errors import PolicyError
from celmut.runtime.mutate_existing import TargetResult
from celmut.runtime.provenance import AppliedMutation, from_outcomes, selects_resource, summary
from celmut.runtime.results import AdmissionResult, PolicyOutcome
from celmut.service import kyverno_files
from celmut.service.offline import OfflineCluster, reference
from celmut.service.offline_context import ContextFileEntry, StaticGlobalContext, StaticImages
from celmut.sources.documents import Document, DocumentError

OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
MAX_RESOURCES = 50
ADMISSION_SECONDS = 9.0  # the webhook's deadline with the chart's 10 s timeout (docs/security.md)
RUN_SECONDS = 20.0  # resources left when a run has taken this long are reported, not evaluated
_SOURCE = re.compile(r"^policies(?:#(\d+))?$")


@dataclass(frozen=True)
class State:
    """What the page posts: the text of each pane and the operation."""

    policies: str
    resources: str
    cluster: str = ""
    context: str = ""
    user_info: str = ""
    operation: str = "CREATE"
    old_objects: str = ""

    @classmethod
    def from_json(cls, body: Any) -> State:
        """The state in a request body; a :class:`PaneError` names the first field of a wrong shape."""
        if not isinstance(body, dict):
            raise PaneError([PaneProblem("", "the request must be a JSON object")])
        fields = {
            "policies": "policies", "resources": "resources", "cluster": "cluster", "context": "context",
            "userInfo": "user_info", "oldObjects": "old_objects", "operation": "operation",
        }  # fmt: skip
        values: dict[str, str] = {}
        for key, attribute in fields.items():
            value = body.get(key, "")
            if not isinstance(value, str):
                raise PaneError([PaneProblem(key, f"{key}: must be a string")])
            values[attribute] = value
        values["operation"] = values["operation"] or "CREATE"
        if values["operation"] not in OPERATIONS:
            raise PaneError([PaneProblem("operation", f"operation: must be one of {', '.join(OPERATIONS)}")])
        return cls(**values)


@dataclass
class Loaded:
    """The panes read, and the offline cluster built from them."""

    panes: dict[str, Pane]
    offline: OfflineCluster
    resources: list[dict[str, Any]]
    old_objects: list[dict[str, Any]]
    notes: list[str]


def load(state: State, *, with_policies: bool = True, lookups: ResourceLookup | None = None) -> Loaded:
    """Read the panes and compile; raises :class:`PaneError` with every problem, located.

    ``with_policies=False`` leaves the policies pane out (empty, broken or not): the CEL scratch pad needs
    the resources and the cluster, never a policy. ``lookups`` serves ``resource.Get/List`` and
    ``namespaceObject`` instead of the cluster pane alone (a live cluster, read-only, behind the pane's
    objects: :class:`celmut.playground.live.Layered`)."""
    panes = {
        name: read_pane(name, text)
        for name, text in (
            ("policies", state.policies if with_policies else ""), ("resources", state.resources),
            ("cluster", state.cluster), ("context", state.context), ("userInfo", state.user_info),
            ("oldObjects", state.old_objects),
        )
    }  # fmt: skip
    resources, old_objects = objects_of(panes["resources"]), objects_of(panes["oldObjects"])
    cluster_documents = _cluster_documents(panes["cluster"])
    notes: list[str] = []
    policies, unbound = kyverno_files.bind_unbound_admission_policies(list(panes["policies"].documents))
    notes += unbound
    images, entries = StaticImages(), StaticGlobalContext()
    try:
        context_doc = single(panes["context"], "Context")
        if context_doc is not None:
            context = kyverno_files.context_from(context_doc, "context", None)
            cluster_documents += [Document("context spec.resources", i, o) for i, o in enumerate(context.resources)]
            images = StaticImages(context.images)
            entries.entries.update({n: ContextFileEntry(n, v) for n, v in context.global_context.items()})
            notes += context.warnings
        user_doc = single(panes["userInfo"], "UserInfo")
        user_info = kyverno_files.user_info_from(user_doc, "userInfo") if user_doc is not None else None
        offline = OfflineCluster.build(
            policies,
            cluster_documents,
            images=images,
            global_context=entries,
            user_info=user_info,
            lookups=lookups,
            timeout_seconds=ADMISSION_SECONDS,
        )
        if isinstance(lookups, Layered):
            lookups.local = offline.cluster  # the pane's objects, and what a run admits, before the cluster's
    except DocumentError as ex:
        pane = "context" if ex.path.startswith("context") else "userInfo" if ex.path == "userInfo" else "cluster"
        raise PaneError([PaneProblem(pane, ex.message)]) from None
    except CelmutError as ex:  # a GlobalContextEntry among the cluster objects that cannot be served offline
        raise PaneError([PaneProblem("cluster", str(ex))]) from None
    if offline.compilation.errors:
        raise PaneError([_policy_problem(panes["policies"], e) for e in offline.compilation.errors])
    if with_policies and not offline.compilation.compiled.policies:
        raise PaneError([PaneProblem("policies", "no policy here: paste a MutatingPolicy, a preset or an example")])
    if len(resources) > MAX_RESOURCES:
        raise PaneError([PaneProblem("resources", f"{len(resources)} resources: at most {MAX_RESOURCES} per run")])
    table = offline.engine.options.schemas.kinds
    resources = [kyverno_files.default_namespace(r, table) for r in resources]
    old_objects = [kyverno_files.default_namespace(r, table) for r in old_objects]
    notes += [str(w) for w in offline.compilation.compiled.warnings]
    return Loaded(panes, offline, resources, old_objects, notes)


def namespace_object(lookups: ResourceLookup, name: str) -> dict[str, Any] | None:
    """The Namespace ``name`` as the engine gives ``namespaceObject``: from the lookups, or None."""
    if not name:
        return None
    try:
        return lookups.get("v1", "namespaces", "", name)
    except ResourceNotFound:
        return None


def _cluster_documents(pane: Pane) -> list[Document]:
    """The cluster pane's objects, ClusterResource wrappers unwrapped; one naming files is refused."""
    objects_of(pane)
    for document in pane.documents:
        spec = document.content.get("spec") if kyverno_files.is_cli_kind(document.content, "ClusterResource") else None
        if isinstance(spec, dict) and spec.get("crds"):
            problem = "spec.crds names files, and the playground reads none: paste the CRDs as documents"
            raise PaneError([located(pane, document.index, "spec.crds", problem)])
    try:
        return kyverno_files.unwrap_cluster_resources(pane.documents)
    except DocumentError as ex:
        raise PaneError([PaneProblem("cluster", ex.message)]) from None


def _document_of(source: str) -> int | None:
    found = _SOURCE.match(source.split(" ", 1)[0])
    return int(found[1] or 0) if found else None


def _policy_problem(pane: Pane, error: Exception) -> PaneProblem:
    """A compilation error as a located problem: each field error of a PolicyError at its field and
    position in the expression (the first one; the message lists them all)."""
    if not isinstance(error, PolicyError) or not error.errors:
        return PaneProblem(pane.name, str(error), _document_of(getattr(error, "source", "") or ""))
    first = error.errors[0]
    document = _document_of(error.source)
    return located(pane, document, first.path, error.render(), first.line, first.column, first.snippet())


def run(state: State, lookups: ResourceLookup | None = None) -> dict[str, Any]:
    """The page's whole result for ``state`` (see the module); ``errors`` when it cannot run."""
    started = time.perf_counter()
    try:
        loaded = load(state, lookups=lookups)
    except PaneError as ex:
        return {"errors": [p.to_dict() for p in ex.problems]}
    offline, policies_pane = loaded.offline, loaded.panes["policies"]
    sources = {p.display_name: p.source for p in offline.engine.policies}
    objects: list[dict[str, Any]] = []
    for index, resource in enumerate(loaded.resources):
        if time.perf_counter() - started > RUN_SECONDS:
            left = len(loaded.resources) - index
            loaded.notes.append(f"{left} resources not evaluated: the run took over {RUN_SECONDS:.0f} s")
            break
        old = loaded.old_objects[index] if index < len(loaded.old_objects) else None
        (admitted,) = offline.admit([resource], state.operation, [old], explain=True)
        shown = {"resource": index, **admitted_object(resource, admitted.result, policies_pane, sources)}
        if is_workload(resource):  # offered to run as its pods
            shown["workload"] = {"kind": resource["kind"], "replicas": replicas(resource)}
        objects.append(shown)
        objects += [_target(t, policies_pane, sources) for t in admitted.targets if t.changed]
    objects += [_target(t, policies_pane, sources) for t in offline.scan() if t.changed]
    return {
        "objects": objects,
        "notes": loaded.notes,
        "seconds": round(time.perf_counter() - started, 4),
    }


def natives(state: State, lookups: ResourceLookup | None = None) -> dict[str, Any]:
    """``{"policies": [...]}``: each MutatingPolicy of the panes as a native MAP, or why not
    (:func:`celmut.playground.native.policies`); ``errors`` when the panes cannot be read."""
    try:
        loaded = load(state, lookups=lookups)
    except PaneError as ex:
        return {"errors": [p.to_dict() for p in ex.problems]}
    return {"policies": native.policies(loaded.offline.compilation)}


def admitted_object(
    resource: dict[str, Any], result: AdmissionResult, pane: Pane, sources: Mapping[str, str]
) -> dict[str, Any]:
    """What the page shows of one admission: the diff with who wrote each line, outcomes, patch."""
    after = result.object if result.allowed else None
    provenance = from_outcomes(result.outcomes, after)
    shown_after = after if after is not None else resource
    return {
        "reference": reference(resource),
        "allowed": result.allowed,
        "message": result.message,
        "rows": diffview.rows(result.original or resource, shown_after, provenance.applied),
        "applied": [_applied(m, pane, sources) for m in provenance.applied],
        "outcomes": [_outcome(o, pane, sources) for o in result.outcomes],
        "patch": result.patch,
        "warnings": list(result.warnings),
        "auditAnnotations": dict(result.audit_annotations),
    }


def _target(target: TargetResult, pane: Pane, sources: Mapping[str, str]) -> dict[str, Any]:
    provenance = from_outcomes([target.outcome], trigger=target.trigger)
    return {
        "reference": target.reference,
        "target": True,
        "allowed": True,
        "message": "",
        "rows": diffview.rows(target.target, target.mutated, provenance.applied),
        "applied": [_applied(m, pane, sources) for m in provenance.applied],
        "outcomes": [_outcome(target.outcome, pane, sources)],
        "patch": target.patch,
        "warnings": [],
        "auditAnnotations": dict(target.outcome.audit_annotations),
    }


def _applied(mutation: AppliedMutation, pane: Pane, sources: Mapping[str, str]) -> dict[str, Any]:
    """The mutation as ``explain -o json`` prints it, and where it is written in the policies pane."""
    out = mutation.to_dict()
    document = _document_of(sources.get(mutation.policy, ""))
    if mutation.mutation and document is not None:
        out["location"] = located(pane, document, mutation.mutation, "").to_dict()
    return out


def _outcome(outcome: PolicyOutcome, pane: Pane, sources: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "policy": outcome.policy,
        "kind": outcome.kind,
        "status": outcome.status,
        "cause": outcome.cause,
        "reason": outcome.reason,
        "summary": summary(
            outcome.status, outcome.cause, outcome.cause_name, outcome.reason, outcome.failure_policy, outcome.path
        ),
        "selects": selects_resource(outcome.cause, outcome.cause_name),
        "failurePolicy": outcome.failure_policy,
        "seconds": outcome.seconds,
        "cost": outcome.cost,
    }
    for key, value in (("binding", outcome.binding), ("reinvoked", outcome.reinvoked)):
        if value:
            out[key] = value
    if outcome.path:
        document = _document_of(sources.get(outcome.policy, ""))
        out["location"] = located(pane, document, outcome.path, outcome.message).to_dict()
    return out
