"""Kyverno's chainsaw tests on a real cluster other people use at the same time: what keeps a run to its own
objects, and what it leaves behind (nothing).

A run has a label, ``celmut-chainsaw=<random>`` (:class:`RunScope`):

* every object a test writes carries it, and every MutatingPolicy an objectSelector for it in its match and
  target constraints (declared adjustments, printed with the case): the run's policies select only the run's
  objects;
* a write or a ``delete`` of an object that exists without the label is refused before it is sent: the tests
  name their cluster-scoped objects and some namespaces (``default``, ``isolated-ns``) themselves, and an
  object of that name may be someone else's;
* everything celmut registers is scoped by it too (:mod:`tests.chainsaw.real_celmut`);
* a case does not start while the cluster holds what another celmut wrote and a celmut of the run would
  take for its own (:meth:`RunScope.others_celmut`): reports labelled ``managed-by: celmut`` (a controller
  adopts them at start and drops the results of policies it does not serve) and generated
  MutatingAdmissionPolicies (the run's controller does not generate any: every run policy has an
  objectSelector, which keeps a policy in the webhook);
* after a case, the Events about its objects that outlive its namespaces (those on cluster-scoped objects
  and on objects in ``default``) are deleted, found by the uid of each object the case wrote
  (:meth:`RunScope.remove_events`), and so are the ClusterPolicyReports about them.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

Obj = dict[str, Any]
POLICY_KINDS = ("MutatingPolicy", "NamespacedMutatingPolicy")
LABEL = "celmut-chainsaw"
MANAGED_BY_CELMUT = "app.kubernetes.io/managed-by=celmut"
#: What a celmut controller takes over from any other celmut on the cluster: (apiVersion, kind).
TAKEN_OVER = (
    ("wgpolicyk8s.io/v1alpha2", "PolicyReport"),
    ("wgpolicyk8s.io/v1alpha2", "ClusterPolicyReport"),
    ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy"),
    ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding"),
)


class ForeignObject(AssertionError):
    """An object the test would write or delete exists and is not this run's: left alone, the case fails."""


@dataclass
class RunScope:
    """One run's label and the bookkeeping of the case it is running."""

    client: DynamicClient
    value: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    key: str = LABEL
    uids: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # uid -> kind, namespace, name
    _after_write: list[Callable[[], None]] = field(default_factory=list)

    @property
    def selector(self) -> str:
        """In ``kubectl get -l`` syntax (celmut's ``--policy-selector``)."""
        return f"{self.key}={self.value}"

    @property
    def prefix(self) -> str:
        """Of the cluster-scoped objects the harness itself creates (owner ClusterRoles, configurations)."""
        return f"{self.key}-{self.value}"

    def label_selector(self) -> Obj:
        """A ``metav1.LabelSelector`` selecting the run's objects."""
        return {"matchExpressions": [{"key": self.key, "operator": "In", "values": [self.value]}]}

    def scoped(self, selector: Obj | None) -> Obj:
        """``selector`` ANDed with the run's label."""
        out = {k: v for k, v in (selector or {}).items() if k in ("matchLabels", "matchExpressions")}
        out["matchExpressions"] = [*(out.get("matchExpressions") or []), *self.label_selector()["matchExpressions"]]
        return out

    def is_ours(self, obj: Obj) -> bool:
        return ((obj.get("metadata") or {}).get("labels") or {}).get(self.key) == self.value

    # --- what a test writes -----------------------------------------------------------------------

    def prepare(self, document: Obj) -> str | None:
        """Label ``document`` (a MutatingPolicy: also scope its constraints); refuse it when an object of
        that name exists and is not the run's. The note says what was adjusted."""
        self.refuse_foreign(document)
        document.setdefault("metadata", {}).setdefault("labels", {})[self.key] = self.value
        if document.get("kind") == "Namespace":
            self._after_write.append(lambda name=document["metadata"]["name"]: self._service_account(name))
        if document.get("kind") not in POLICY_KINDS:
            return f"shared cluster: every object a test writes labelled {self.selector}"
        spec = document.setdefault("spec", {})
        for constraints in (spec.get("matchConstraints"), spec.get("targetMatchConstraints")):
            if isinstance(constraints, dict) and constraints.get("resourceRules"):
                constraints["objectSelector"] = self.scoped(constraints.get("objectSelector"))
        return (
            f"shared cluster: celmut serves only the policies labelled {self.selector}, their "
            f"match/targetMatchConstraints limited to objects labelled so (never anyone else's objects)"
        )

    def refuse_foreign(self, document: Obj) -> None:
        """:class:`ForeignObject` when the object ``document`` names exists without the run's label."""
        existing = self._stored(document)
        if existing is not None and not self.is_ours(existing):
            meta = document.get("metadata") or {}
            where = f"{meta.get('namespace')}/" if meta.get("namespace") else ""
            raise ForeignObject(
                f"shared cluster: {document.get('kind')} {where}{meta.get('name')} exists and is not this run's "
                f"(no {self.selector}): not touched, the case cannot run now"
            )

    def written(self, document: Obj, namespace: str | None) -> None:
        """After a write: remember the object's uid (its Events are found by it), then what was queued."""
        stored = self._stored({**document, "metadata": {**document["metadata"], "namespace": namespace}})
        if stored is not None:
            meta = stored["metadata"]
            self.uids[meta["uid"]] = (stored["kind"], meta.get("namespace") or "", meta["name"])
        while self._after_write:
            self._after_write.pop()()

    def _stored(self, document: Obj) -> Obj | None:
        meta = document.get("metadata") or {}
        try:
            resource = self.client.resources.get(api_version=document["apiVersion"], kind=document["kind"])
        except ResourceNotFoundError:
            return None
        namespace = meta.get("namespace") if resource.namespaced else None
        if resource.namespaced and not namespace:
            return None  # the case's own namespace: created by the run
        try:
            found: Obj = resource.get(name=meta["name"], namespace=namespace).to_dict()
            return found
        except NotFoundError:
            return None

    def _service_account(self, namespace: str) -> None:
        """Without a controller-manager a namespace gets no ``default`` ServiceAccount (pods need one)."""
        accounts = self.client.resources.get(api_version="v1", kind="ServiceAccount")
        for _ in range(50):
            with contextlib.suppress(NotFoundError):
                accounts.get(name="default", namespace=namespace)
                return
            with contextlib.suppress(Exception):
                accounts.create(body={"metadata": {"name": "default"}}, namespace=namespace)
                return
            time.sleep(0.1)

    def others_celmut(self) -> list[str]:
        """What another celmut wrote on the cluster that a celmut of this run would take over (none is left
        between the run's cases): ``Kind namespace/name`` each."""
        found = []
        for api_version, kind in TAKEN_OVER:
            try:
                resource = self.client.resources.get(api_version=api_version, kind=kind)
            except ResourceNotFoundError:
                continue
            for item in resource.get(label_selector=MANAGED_BY_CELMUT).items:
                where = f"{item.metadata.namespace}/" if item.metadata.namespace else ""
                found.append(f"{kind} {where}{item.metadata.name}")
        return found

    # --- after a case -------------------------------------------------------------------------------

    def remove_events(self, namespaces: set[str]) -> int:
        """Delete the Events about the case's objects in ``namespaces`` (those that outlive the case); how many."""
        events = self.client.resources.get(api_version="v1", kind="Event")
        removed = 0
        for namespace in sorted(namespaces):
            for event in events.get(namespace=namespace).items:
                if event.involvedObject.uid in self.uids:
                    with contextlib.suppress(NotFoundError):
                        events.delete(name=event.metadata.name, namespace=namespace)
                        removed += 1
        return removed

    def remove_cluster_reports(self) -> int:
        """Delete the ClusterPolicyReports about the case's cluster-scoped objects the garbage collector has
        not (yet) removed with them; how many."""
        try:
            reports = self.client.resources.get(api_version="wgpolicyk8s.io/v1alpha2", kind="ClusterPolicyReport")
        except ResourceNotFoundError:
            return 0
        removed = 0
        for report in reports.get().items:
            owners = {o.uid for o in report.metadata.ownerReferences or []}
            scope = report.get("scope") or {}
            if owners & set(self.uids) or scope.get("uid") in self.uids:
                with contextlib.suppress(NotFoundError):
                    reports.delete(name=report.metadata.name)
                    removed += 1
        return removed

    def next_case(self) -> None:
        self.uids.clear()
        self._after_write.clear()
