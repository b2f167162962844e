"""What ``celmut serve --from-cluster`` connects: policies, lookups and readiness from the cluster.

A :class:`ClusterConnection` is opened once per server process (after forking workers, never
before: watch threads do not survive a fork). It provides the cluster policy source, the
``ResourceLookup`` CEL uses (namespaces, ``resource.Get/List``, owners), the opt-out label followed
through owners, the readiness check (every watch has listed once) and the hook that remembers pods
the webhook has just admitted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from celmut.cel.lookups import HttpPolicy, RegistryPolicy
from celmut.kube.admission_errors import AdmissionErrorRecorder, errors_of
from celmut.kube.client import Cluster
from celmut.kube.decision_ledger import DecisionLedger
from celmut.kube.global_context import GlobalContextStore
from celmut.kube.lookup import CacheSet, ClusterLookup
from celmut.kube.owners import OwnerOptOut
from celmut.kube.policy_source import ClusterPolicySource
from celmut.kube.registry import RegistryImages
from celmut.policy.selection import PolicySelection
from celmut.runtime.ownership import DEFAULT_OPT_OUT_LABEL
from celmut.service.lookup_needs import METADATA_RESOURCES, OWNER_KINDS, metadata_only_resources

log = logging.getLogger("celmut.kube")


@dataclass
class ClusterConnection:
    cluster: Cluster
    caches: CacheSet
    resources: ClusterLookup
    policy_source: ClusterPolicySource
    opt_out: OwnerOptOut
    global_context: GlobalContextStore  # GlobalContextEntry data (the controller's leader writes their status)
    images: RegistryImages  # image.GetMetadata from the registries (the pods' pull secrets when allowed)
    # admission errors, flushed as coalesced Events for the controller's reports (issue 28)
    admission_errors: AdmissionErrorRecorder | None = None

    @classmethod
    def open(
        cls,
        kubeconfig: str | None = None,
        *,
        sync_timeout: float = 30.0,
        opt_out_label: str = DEFAULT_OPT_OUT_LABEL,
        admission_policies: bool = False,
        policy_selection: PolicySelection | None = None,
        http_policy: HttpPolicy | None = None,
        registry_policy: RegistryPolicy | None = None,
    ) -> ClusterConnection:
        """Connect, start the watches and wait (up to ``sync_timeout``) for their first lists.

        ``admission_policies``: also serve the cluster's MutatingAdmissionPolicies (for an API server
        without the MAP plugin; one with it applies them itself). ``policy_selection``: which
        MutatingPolicies are celmut's (default ``auto``, :mod:`celmut.policy.selection`)."""
        cluster = Cluster.connect(kubeconfig)
        caches = CacheSet(cluster, metadata_only=METADATA_RESOURCES)
        caches.cache("v1", "namespaces", wait=False)  # every namespaced request looks its namespace up
        for api_version, resource in OWNER_KINDS:  # a pod's owners, for the opt-out label: ready before pods come
            caches.cache(api_version, resource, wait=False)
        source = ClusterPolicySource(cluster, admission_policies=admission_policies, selection=policy_selection).start()
        global_context = GlobalContextStore(cluster, http_policy or HttpPolicy()).start()
        images = RegistryImages(registry_policy or RegistryPolicy(), cluster)
        # split decisions across replicas and workers (CELMUT_DECISION_LEDGER, POD_NAMESPACE; the chart sets both)
        lookup = ClusterLookup(caches, ledger=DecisionLedger.from_environment(cluster))
        connection = cls(cluster, caches, lookup, source, OwnerOptOut(caches, opt_out_label), global_context, images)
        connection.admission_errors = AdmissionErrorRecorder(cluster).start()
        if not connection.policy_source.wait_synced(sync_timeout):
            log.warning("cluster policies not listed yet; serving what is known", extra={"timeout": sync_timeout})
        # The entries' first data, briefly: not a readiness condition (a cluster without the CRD, or RBAC
        # without the rule, must not keep the webhook unready); an entry still syncing answers an error.
        global_context.wait_ready(min(sync_timeout, 5.0))
        return connection

    def not_ready(self) -> str:
        """'' when every watch has listed once, else why not."""
        if not self.policy_source.synced():
            return "cluster policies not synced"
        if not self.caches.synced():
            return "cluster caches not synced"
        return ""

    def plan_caches(self, policies: Any) -> None:
        """Cache metadata-only what the loaded policies read only metadata of (after each reload)."""
        resources = metadata_only_resources(policies)
        if resources != self.caches.metadata_only:
            log.info("cache projections changed", extra={"metadataOnly": sorted("/".join(r) for r in resources)})
            self.caches.set_metadata_only(resources)

    def declines(self, kind: str, obj: Mapping[str, Any]) -> str:
        """Why celmut leaves this policy object to another engine, as of now ('' when it is celmut's): the
        policy validating webhook does not refuse what is not celmut's."""
        return self.policy_source.current_ownership().declines(kind, obj, natively=False)

    def admitted(self, received: dict[str, Any] | None, admitted: dict[str, Any]) -> None:
        self.resources.remember_admitted(admitted, received=received)

    def decided(self, request: Any, result: Any) -> None:
        """After each admission: its policy errors go to the reports (:mod:`celmut.kube.admission_errors`)."""
        if self.admission_errors is not None:
            for error in errors_of(request, result):
                self.admission_errors.record(error)

    def stop(self) -> None:
        if self.admission_errors is not None:
            self.admission_errors.stop()
            self.admission_errors.flush()  # what the last interval recorded
        self.global_context.stop()
        self.policy_source.stop()
        self.caches.stop()
        self.cluster.close()
