"""Policies from the cluster: the policy kinds and presets as custom resources, watched.

:class:`ClusterPolicySource` is a :class:`celmut.service.store.PolicySource`: it lists and watches
every kind celmut reads (Kyverno MutatingPolicy, NamespacedMutatingPolicy and PolicyException;
Kubernetes MutatingAdmissionPolicy and its bindings; the PodMutation, GPU slicing and pod pinning
presets, including plan ConfigMaps labelled ``celmut.io/pinning-plan=true``; and the CRDs, whose
schemas custom resources are merged by) and hands them to the
same compile pipeline files go through. Each object becomes a document named
``cluster:<Kind>/<namespace>/<name>``, so errors say which object is wrong.

A kind whose API is not served (its CRD is not installed) is simply empty; discovery is retried, so
installing the CRD later is picked up.

MutatingAdmissionPolicies and their bindings are served only when asked (``admission_policies=True``,
``--serve-admission-policies``): an API server with the MutatingAdmissionPolicy plugin (GA in 1.36,
on by default) applies them itself, before calling the webhooks, so celmut serving them too would apply
each one twice (an appended toleration lands twice). ``celmut apply`` still evaluates MAP files offline.
They are watched all the same: a MutatingPolicy whose generated MutatingAdmissionPolicies are in
service (:mod:`celmut.controller.generator`: each exists, owned by the policy, and its binding names
it) is applied by the API server, so celmut leaves it (:meth:`~celmut.policy.selection.Ownership.declines`)
and reports it in service that way; once they are gone, celmut serves it again.

Only the policies celmut owns are handed out (:mod:`celmut.policy.selection`): the policy selector
decides among MutatingPolicies — by default, once Kyverno is detected (its policy CRDs, or its webhook
configurations, watched here), only those labelled ``celmut.io/owner=celmut`` — and PolicyExceptions
made for Kyverno only are left out. Every change of who owns what is logged, and the condition celmut
writes on each policy it serves says why (:meth:`~celmut.policy.selection.Ownership.describe`).

A policy that fails to compile is skipped (the store keeps the rest). After each reload the objects
of the set now in service are reported (:mod:`celmut.kube.policy_status`): a log line per broken
generation, a status that says whether the object is in service (Kyverno's ``conditionStatus.ready``
while Kyverno is absent, a ``celmut.io/Compiled`` condition) and one Warning Event per broken
generation across processes. Objects left to another engine get nothing, except that celmut takes its
condition back from a policy it no longer serves.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from celmut.kube.cache import WatchedCache
from celmut.kube.client import Cluster, ClusterError, NotFound
from celmut.kube.native_policies import NativeIndex
from celmut.kube.policy_status import CONDITION_TYPE, IN_SERVICE, release_status, report_status
from celmut.policy.errors import PolicyError
from celmut.policy.selection import (
    KYVERNO_WEBHOOK_LABEL,
    SELECTED_KINDS,
    Ownership,
    PolicySelection,
    kyverno_presence,
)
from celmut.sources.documents import Document

__all__ = ["CONDITION_TYPE", "POLICY_KINDS", "ClusterPolicySource", "WatchedKind", "document_path", "watched_kinds"]

log = logging.getLogger("celmut.kube")

SOURCE_PREFIX = "cluster:"
REDISCOVERY_SECONDS = 30.0


@dataclass(frozen=True)
class WatchedKind:
    """One kind celmut reads from the cluster, with the versions it understands (preferred first)."""

    group: str
    resource: str
    kind: str
    versions: tuple[str, ...]
    label_selector: str = ""
    conditions_at: tuple[str, ...] = ("conditions",)  # where status conditions live under .status


_KYVERNO = ("v1", "v1beta1", "v1alpha1")
_KYVERNO_CONDITIONS = ("conditionStatus", "conditions")

POLICY_KINDS: tuple[WatchedKind, ...] = (
    WatchedKind(
        "policies.kyverno.io", "mutatingpolicies", "MutatingPolicy", _KYVERNO, conditions_at=_KYVERNO_CONDITIONS
    ),
    WatchedKind(
        "policies.kyverno.io",
        "namespacedmutatingpolicies",
        "NamespacedMutatingPolicy",
        _KYVERNO,
        conditions_at=_KYVERNO_CONDITIONS,
    ),
    WatchedKind("policies.kyverno.io", "policyexceptions", "PolicyException", _KYVERNO, conditions_at=()),
    WatchedKind("admissionregistration.k8s.io", "mutatingadmissionpolicies", "MutatingAdmissionPolicy", _KYVERNO),
    WatchedKind(
        "admissionregistration.k8s.io",
        "mutatingadmissionpolicybindings",
        "MutatingAdmissionPolicyBinding",
        _KYVERNO,
        conditions_at=(),
    ),
    WatchedKind("pod-mutations.cast.ai", "podmutations", "PodMutation", ("v1",)),
    WatchedKind("presets.celmut.io", "gpuslicings", "GpuSlicing", ("v1alpha1",)),
    WatchedKind("pinning.celmut.io", "podpinningplans", "PodPinningPlan", ("v1alpha1",)),
    WatchedKind("", "configmaps", "ConfigMap", ("v1",), "celmut.io/pinning-plan=true", conditions_at=()),
    # Not a policy: the schemas of custom resources (ApplyConfiguration merges follow their list and
    # map types), as the CLI takes them from --cluster-resources. They reach the engine through
    # Compilation.other, like CRDs shipped with policy files.
    WatchedKind(
        "apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition", ("v1",), conditions_at=()
    ),
)


#: Not a policy: Kyverno's webhook configurations, which tell whether Kyverno serves MutatingPolicies.
KYVERNO_WEBHOOKS = WatchedKind(
    "admissionregistration.k8s.io",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    ("v1",),
    f"{KYVERNO_WEBHOOK_LABEL}=kyverno",
    conditions_at=(),
)

#: The kinds the API server serves itself (its MutatingAdmissionPolicy admission plugin).
ADMISSION_POLICY_KINDS = frozenset({"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"})


def watched_kinds(*, admission_policies: bool = False) -> tuple[WatchedKind, ...]:
    """The kinds a server compiles from the cluster: MAPs and their bindings only when it serves them
    (it watches them either way, to know which MutatingPolicies the API server applies)."""
    return tuple(k for k in POLICY_KINDS if admission_policies or k.kind not in ADMISSION_POLICY_KINDS)


NATIVE = "in service as a MutatingAdmissionPolicy the API server applies (celmut's webhook does not)"


def _in_service(kind: str, ownership: Ownership) -> str:
    return f"{IN_SERVICE}; {ownership.describe()}" if kind in SELECTED_KINDS else IN_SERVICE


def _asks_for_map(policy: dict[str, Any]) -> bool:
    """``spec.autogen.mutatingAdmissionPolicy.enabled``: its ``conditionStatus.message`` is the generator's."""
    autogen = (policy.get("spec") or {}).get("autogen") or {}
    return bool(isinstance(autogen, dict) and (autogen.get("mutatingAdmissionPolicy") or {}).get("enabled") is True)


def document_path(kind: str, obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace") or "", meta.get("name") or ""
    return f"{SOURCE_PREFIX}{kind}/{namespace}/{name}" if namespace else f"{SOURCE_PREFIX}{kind}/{name}"


def _revision(obj: dict[str, Any]) -> str:
    """What changes when the object's meaning changes (not when only its status does): its spec (the
    generation, which metadata changes leave alone), its annotations, and its labels, which decide who
    serves it (``celmut.io/owner``, the policy selector, :mod:`celmut.policy.selection`)."""
    meta = obj.get("metadata") or {}
    if "generation" in meta and obj.get("kind") not in ("ConfigMap", *ADMISSION_POLICY_KINDS):
        labels = sorted((meta.get("labels") or {}).items())
        annotations = sorted((meta.get("annotations") or {}).items())
        return f"{meta['generation']}:{labels}:{annotations}"
    return str(meta.get("resourceVersion") or "")


class _KindWatch:
    """The watched cache of one kind, at the version the API server serves (found by discovery)."""

    def __init__(
        self, cluster: Cluster, spec: WatchedKind, start: Callable[[WatchedCache], object], rediscover_seconds: float
    ) -> None:
        self.cluster = cluster
        self.spec = spec
        self.start = start
        self.rediscover_seconds = rediscover_seconds
        self.cache: WatchedCache | None = None
        self.checked_at = -rediscover_seconds

    def served_version(self) -> str | None:
        if not self.spec.group:
            return self.spec.versions[0]
        try:
            group = self.cluster.request("GET", f"/apis/{self.spec.group}")
        except NotFound:
            return None
        served = {v.get("version") for v in (group or {}).get("versions") or []}
        return next((v for v in self.spec.versions if v in served), None)

    def refresh(self) -> None:
        """Discover (again, every ``rediscover_seconds`` while the kind is not served); start the watch."""
        if self.cache is not None and not self.cache.absent:
            return
        now = time.monotonic()
        if now - self.checked_at < self.rediscover_seconds:
            return
        self.checked_at = now
        try:
            version = self.served_version()
        except ClusterError as ex:
            log.warning("discovery failed", extra={"group": self.spec.group, "error": str(ex)})
            return
        if version is None:
            return
        api_version = f"{self.spec.group}/{version}" if self.spec.group else version
        if self.cache is not None and self.cache.api_version == api_version:
            return
        if self.cache is not None:
            self.cache.stop()
        self.cache = WatchedCache(
            self.cluster, api_version, self.spec.resource, label_selector=self.spec.label_selector
        )
        self.start(self.cache)

    def items(self) -> list[dict[str, Any]]:
        return self.cache.items() if self.cache is not None and not self.cache.absent else []

    def synced(self) -> bool:
        return self.cache is None or self.cache.synced.is_set() or self.cache.absent


class ClusterPolicySource:
    """Policies and presets from custom resources, kept current by watches."""

    skips_invalid = True  # a policy that does not compile is skipped; the others keep working

    def __init__(
        self,
        cluster: Cluster,
        kinds: tuple[WatchedKind, ...] | None = None,
        *,
        admission_policies: bool = False,
        selection: PolicySelection | None = None,
        report: bool = True,
        rediscover_seconds: float = REDISCOVERY_SECONDS,
    ) -> None:
        """``selection``: which MutatingPolicies celmut serves (default ``auto``: all of them until Kyverno
        is detected, then those labelled ``celmut.io/owner=celmut``)."""
        self.cluster = cluster
        self.report_to_cluster = report
        self.selection = selection or PolicySelection()
        self.admission_policies = admission_policies
        chosen = kinds if kinds is not None else POLICY_KINDS
        self._watches = [_KindWatch(cluster, spec, WatchedCache.start, rediscover_seconds) for spec in chosen]
        self._kyverno_webhooks = _KindWatch(cluster, KYVERNO_WEBHOOKS, WatchedCache.start, rediscover_seconds)
        self._reported: dict[str, tuple[str, str, str]] = {}  # path -> (revision, error or "", in-service text)
        self._left: dict[str, tuple[str, str]] = {}  # path -> (revision, why celmut leaves it alone)
        self._served: dict[str, tuple[WatchedKind, dict[str, Any]]] = {}
        self._declined: dict[str, tuple[WatchedKind, dict[str, Any], str]] = {}
        self._native = NativeIndex()
        self.ownership: Ownership | None = None  # as of the last documents(); None before

    @property
    def _all_watches(self) -> list[_KindWatch]:
        return [*self._watches, self._kyverno_webhooks]

    def start(self) -> ClusterPolicySource:
        for watch in self._all_watches:
            watch.refresh()
        return self

    def stop(self) -> None:
        for watch in self._all_watches:
            if watch.cache is not None:
                watch.cache.stop()

    def wait_synced(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        for watch in self._all_watches:
            if watch.cache is not None and not watch.cache.wait_synced(max(deadline - time.monotonic(), 0.0)):
                return False
        return True

    def synced(self) -> bool:
        """Every policy kind listed once. Kyverno's webhook configurations are waited for at start
        (wait_synced) but not for readiness: a watch that cannot list them (RBAC without the rule) must
        not keep the webhook unready forever; Kyverno's CRDs still show it, and the warning is logged."""
        return all(watch.synced() for watch in self._watches)

    # --- PolicySource ---------------------------------------------------------------------------

    def _objects(self) -> list[tuple[WatchedKind, dict[str, Any]]]:
        return [(w.spec, obj) for w in self._watches for obj in w.items()]

    def current_ownership(self) -> Ownership:
        """Who serves which policy, from what the watches hold now (Kyverno's CRDs and webhooks, the
        MutatingAdmissionPolicies generated from policies)."""
        crds = self.objects_of("CustomResourceDefinition")
        return self.selection.resolve(kyverno_presence(crds, self._kyverno_webhooks.items()), self.natively_applied())

    def natively_applied(self) -> tuple[tuple[str, str], ...]:
        """(policy, its MutatingAdmissionPolicies) for each MutatingPolicy the API server applies."""
        return self._native.applied(
            self.objects_of("MutatingPolicy"),
            self.objects_of("MutatingAdmissionPolicy"),
            self.objects_of("MutatingAdmissionPolicyBinding"),
        )

    def fingerprint(self) -> object:
        for watch in self._all_watches:
            watch.refresh()
        objects = tuple(sorted((document_path(spec.kind, obj), _revision(obj)) for spec, obj in self._objects()))
        return objects, self.current_ownership()

    def documents(self) -> tuple[list[Document], list[Exception]]:
        ownership = self.current_ownership()
        if ownership != self.ownership:
            log.info("policy ownership: %s", ownership.describe(), extra={"kyverno": ownership.kyverno.detected})
        self.ownership = ownership
        served: dict[str, tuple[WatchedKind, dict[str, Any]]] = {}
        declined: dict[str, tuple[WatchedKind, dict[str, Any], str]] = {}
        for spec, obj in self._objects():
            if spec.kind in ADMISSION_POLICY_KINDS and not self.admission_policies:
                continue  # the API server applies them (watched only to see which policies it applies)
            path = document_path(spec.kind, obj)
            reason = ownership.declines(spec.kind, obj)
            if reason:
                declined[path] = (spec, obj, reason)
            else:
                served[path] = (spec, obj)
        self._served, self._declined = served, declined  # what report() describes: the set being compiled
        documents = [Document(path, 0, obj) for path, (_, obj) in served.items()]
        return sorted(documents, key=lambda d: d.path), []

    def policies(self) -> list[tuple[str, dict[str, Any]]]:
        """Every (Namespaced)MutatingPolicy of the last documents(), celmut's and the others, with its kind."""
        everything = [(spec, obj) for spec, obj in self._served.values()]
        everything += [(spec, obj) for spec, obj, _ in self._declined.values()]
        return [(spec.kind, obj) for spec, obj in everything if spec.kind in SELECTED_KINDS]

    def objects_of(self, kind: str) -> list[dict[str, Any]]:
        """The objects of ``kind`` the watches hold now."""
        return [obj for w in self._watches if w.spec.kind == kind for obj in w.items()]

    def api_version(self, kind: str) -> str | None:
        """The apiVersion ``kind`` is read at (the one the API server serves), None while not served."""
        for watch in self._watches:
            if watch.spec.kind == kind and watch.cache is not None and not watch.cache.absent:
                return watch.cache.api_version
        return None

    # --- reporting what is in service back to the cluster ----------------------------------------

    def report(self, errors: list[Exception]) -> None:
        """For each object of the documents last handed out (the set now in service): log a compile error
        once per generation, and write its status and Warning Event (:mod:`celmut.kube.policy_status`)."""
        by_path: dict[str, list[str]] = {}
        for error in errors:
            source = getattr(error, "source", "") if isinstance(error, PolicyError) else ""
            if isinstance(error, PolicyError) and source.startswith(SOURCE_PREFIX):
                by_path.setdefault(source, []).append(error.details)  # the object is named by the status
        ownership = self.ownership or self.current_ownership()
        kyverno_fields = not ownership.kyverno.detected  # next to Kyverno, ready/message are Kyverno's to write
        subjects = [
            (path, spec, obj, "\n".join(by_path.get(path, [])), _in_service(spec.kind, ownership))
            for path, (spec, obj) in self._served.items()
        ]
        for path, (spec, obj, _) in self._declined.items():
            if maps := ownership.natively_applied(spec.kind, obj):
                subjects.append((path, spec, obj, "", f"{NATIVE}: {maps}; {ownership.describe()}"))
        reported: dict[str, tuple[str, str, str]] = {}
        for path, spec, obj, problem, in_service in subjects:
            state = (_revision(obj), problem, f"{in_service}:{kyverno_fields}")
            if self._reported.get(path) != state:
                if problem:
                    log.error("policy skipped: it does not compile", extra={"policy": path, "error": problem})
                if self.report_to_cluster:
                    try:
                        report_status(
                            self.cluster,
                            obj,
                            spec.resource,
                            spec.conditions_at,
                            problem,
                            kyverno_fields=kyverno_fields,
                            in_service=in_service,
                            message_field=not _asks_for_map(obj),
                        )
                    except ClusterError as ex:  # best effort: the policy is in service (or skipped) either way
                        log.warning("could not report policy status", extra={"policy": path, "error": str(ex)})
                        continue  # not recorded: tried again after the next reload
            reported[path] = state
        served_before, self._reported = self._reported, reported
        self._report_declined(ownership, served_before)

    def _report_declined(self, ownership: Ownership, served_before: Mapping[str, object]) -> None:
        """Log each object left to another engine once per generation and reason; take celmut's condition
        back from one it served before (not from a policy the API server applies: its status says so).
        ``served_before``: the paths this source reported as served at the previous reload."""
        left: dict[str, tuple[str, str]] = {}
        for path, (spec, obj, reason) in self._declined.items():
            state = (_revision(obj), reason)
            if ownership.natively_applied(spec.kind, obj):
                if self._left.get(path) != state:
                    log.info("policy applied by the API server", extra={"policy": path, "reason": reason})
                left[path] = state
                continue
            if self._left.get(path) != state:
                log.info("policy left to another engine", extra={"policy": path, "reason": reason})
                # another celmut install's (a fixed policy selector leaves it out): the condition is its own;
                # unless this install served it until now: the condition is this one's, and would otherwise
                # say the policy is served while no install may serve it (a resourceVersion guards the
                # release against the install that takes it over writing meanwhile)
                mine = not ownership.belongs_to_another(spec.kind, obj) or path in served_before
                if self.report_to_cluster and mine:
                    try:
                        release_status(self.cluster, obj, spec.resource, spec.conditions_at)
                    except ClusterError as ex:
                        log.warning("could not take celmut's condition back", extra={"policy": path, "error": str(ex)})
                        continue
            left[path] = state
        self._left = left
