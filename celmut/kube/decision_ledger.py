"""Split decisions made one at a time across webhook processes (issue 38): the decision ledger.

Inside one process the decisions about a workload's pods are serialised by a lock and each counts the
pods the earlier ones admitted (:mod:`celmut.kube.admitted_pods`). Several processes (the chart's
replicas, ``--workers``) share nothing but the API server, and a pod another process is admitting is
stored only after the whole admission chain: two processes deciding at the same moment would each miss
the other's pod. The ledger is that missing piece, kept in the API server with its compare-and-swap:

* a fixed set of Leases in celmut's namespace (``<prefix>-00`` … ``-31``; a workload's decisions use
  the one its decision lock's stripe names), each holding, in an annotation, the pods admitted in the
  last :data:`KEEP_SECONDS` by any process: the decision id, who admitted it, when, and the pod's
  metadata as the split counts it (owner, labels, the recorded placement and group);
* a decision reads its Lease after taking the local lock, counts the other processes' entries whose pod
  is not stored yet (an entry and a stored pod carry the same id, :data:`DECISION_ANNOTATION`, stamped
  on the admitted pod), and, once the admission has decided, writes its own entry with the Lease's
  ``resourceVersion`` as precondition. A 409 means another process decided about a workload of the
  stripe meanwhile: the admission is evaluated again on the new Lease (:class:`celmut.cel.lookups.
  AdmissionScope`), so decisions about a workload are linearised across every process;
* an entry stops counting when a stored or cached pod shows its id, or :data:`IN_FLIGHT_SECONDS` after
  its admission when none does (refused by a later webhook, or stored and deleted already); each write
  drops the entries older than :data:`KEEP_SECONDS`.

Only decisions that count pods (a percentage split, a distribution group) use it: one GET and one PUT
per such pod (a retry on each conflict). When the ledger cannot be read or written (RBAC, the API
server) the decision is made as in one process, and a warning says why.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from celmut.kube.admitted_pods import IN_FLIGHT_SECONDS, OVERLAY_KEYS
from celmut.kube.client import Cluster, ClusterError, Conflict, NotFound
from celmut.limits import DECISION_LEDGER_STRIPES

log = logging.getLogger("celmut.kube")

Obj = dict[str, Any]
#: On a pod whose admission counted its siblings through the ledger: that admission's uid.
DECISION_ANNOTATION = "celmut.io/decision"
ENTRIES_ANNOTATION = "celmut.io/in-flight"
LEDGER_LABELS = {"app.kubernetes.io/managed-by": "celmut", "celmut.io/ledger": "decisions"}
STRIPES = DECISION_LEDGER_STRIPES
KEEP_SECONDS = 10.0
#: At most this many entries per Lease (an annotation holds 256 KiB; an entry ~0.3–0.5 KiB): the oldest go.
MAX_ENTRIES = 200
#: ``CELMUT_DECISION_LEDGER`` names the Leases' prefix (the chart: ``<release>-decisions``), in ``POD_NAMESPACE``.
PREFIX_VARIABLE = "CELMUT_DECISION_LEDGER"


@dataclass(frozen=True)
class LedgerView:
    """One Lease as a decision read it: its resourceVersion (None: not created yet) and entries."""

    name: str
    version: str | None
    entries: tuple[Obj, ...]


def decision_of(pod: Mapping[str, Any]) -> str:
    return str(((pod.get("metadata") or {}).get("annotations") or {}).get(DECISION_ANNOTATION) or "")


def _counted(pod: Mapping[str, Any]) -> Obj:
    """What a split reads of a pod (metadata.ownerReferences, labels and the recorded annotations)."""
    metadata = pod.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    kept: Obj = {"namespace": metadata.get("namespace") or ""}
    if metadata.get("labels"):
        kept["labels"] = dict(metadata["labels"])
    owners = [r for r in metadata.get("ownerReferences") or [] if r.get("controller")]
    if owners:
        kept["ownerReferences"] = owners
    recorded = {k: annotations[k] for k in (*OVERLAY_KEYS, DECISION_ANNOTATION) if k in annotations}
    if recorded:
        kept["annotations"] = recorded
    return {"apiVersion": "v1", "kind": "Pod", "metadata": kept}


class DecisionLedger:
    """The Leases of one celmut installation (see the module docstring); thread-safe (no state of its own)."""

    def __init__(self, cluster: Cluster, namespace: str, prefix: str, identity: str | None = None) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.prefix = prefix
        self.identity = identity or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self._warned = 0.0

    @classmethod
    def from_environment(cls, cluster: Cluster, env: Mapping[str, str] | None = None) -> DecisionLedger | None:
        """The ledger ``CELMUT_DECISION_LEDGER`` and ``POD_NAMESPACE`` name; None without them (one process)."""
        env = os.environ if env is None else env
        prefix, namespace = env.get(PREFIX_VARIABLE, ""), env.get("POD_NAMESPACE", "")
        if prefix and not namespace:
            log.warning(
                f"{PREFIX_VARIABLE} is set without POD_NAMESPACE (the Leases' namespace); each process decides alone"
            )
        return cls(cluster, namespace, prefix) if prefix and namespace else None

    def name(self, stripe: int) -> str:
        return f"{self.prefix}-{stripe % STRIPES:02d}"

    def read(self, stripe: int) -> LedgerView | None:
        """The stripe's Lease now; None when it cannot be read (the decision goes on without it)."""
        return self.read_lease(self.name(stripe))

    def read_lease(self, name: str) -> LedgerView | None:
        try:
            lease = self.cluster.get("coordination.k8s.io/v1", "leases", self.namespace, name)
        except NotFound:
            return LedgerView(name, None, ())
        except ClusterError as ex:
            self._warn("cannot read the decision ledger", name, ex)
            return None
        metadata = lease.get("metadata") or {}
        labels = metadata.get("labels") or {}
        if any(labels.get(key) != value for key, value in LEDGER_LABELS.items()):
            # a Lease of that name celmut did not write: never rewritten (the decision goes on without it)
            self._warn("a Lease of the decision ledger's name is not celmut's; leaving it alone", name, None)
            return None
        try:
            entries = json.loads((metadata.get("annotations") or {}).get(ENTRIES_ANNOTATION) or "[]")
        except ValueError:
            entries = []  # an annotation that is no list of entries: the next write replaces it
        valid = tuple(e for e in entries if isinstance(e, dict) and isinstance(e.get("at"), int | float))
        return LedgerView(name, str(metadata.get("resourceVersion") or ""), valid)

    def record(self, view: LedgerView, decision: str, pod: Mapping[str, Any]) -> bool:
        """Add the pod this process admitted to the Lease ``view`` read; False when another process
        wrote it meanwhile (decide again on a fresh view). True also when it cannot be written (warned)."""
        now = time.time()
        entries = [e for e in view.entries if now - float(e["at"]) < KEEP_SECONDS]
        entries.append({"id": decision, "by": self.identity, "at": now, "pod": _counted(pod)})
        metadata: Obj = {
            "name": view.name,
            "namespace": self.namespace,
            "labels": dict(LEDGER_LABELS),
            "annotations": {ENTRIES_ANNOTATION: json.dumps(entries[-MAX_ENTRIES:], separators=(",", ":"))},
        }
        lease: Obj = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": {}}
        try:
            if view.version is None:
                self.cluster.create("coordination.k8s.io/v1", "leases", self.namespace, lease)
            else:
                metadata["resourceVersion"] = view.version
                self.cluster.replace("coordination.k8s.io/v1", "leases", self.namespace, view.name, lease)
        except Conflict:
            return False
        except ClusterError as ex:
            self._warn("cannot write the decision ledger", view.name, ex)
        return True

    def record_anyway(self, view: LedgerView, decision: str, pod: Mapping[str, Any], attempts: int = 5) -> None:
        """Add an entry for a decision that stands whatever others wrote since ``view`` (an admission's
        last evaluation): re-read and write until it is in, so that later decisions count its pod."""
        for _ in range(attempts):
            fresh = self.read_lease(view.name)
            if fresh is None or self.record(fresh, decision, pod):
                return
        log.warning("could not record a split decision in the ledger", extra={"lease": view.name})

    def in_flight(self, view: LedgerView, namespace: str, present: set[str], since: float | None = None) -> list[Obj]:
        """The pods of ``namespace`` other processes admitted that are not stored yet: entries whose id no
        pod in ``present`` (the ids of the stored and cached pods) shows, admitted at most
        :data:`IN_FLIGHT_SECONDS` before ``since`` (``time.time()`` when the stored list was requested;
        default now)."""
        oldest = (time.time() if since is None else since) - IN_FLIGHT_SECONDS
        return [
            entry["pod"]
            for entry in view.entries
            if entry.get("by") != self.identity
            and float(entry["at"]) >= oldest
            and entry.get("id") not in present
            and isinstance(entry.get("pod"), dict)
            and (entry["pod"].get("metadata") or {}).get("namespace") == namespace
        ]

    def _warn(self, message: str, name: str, error: ClusterError | None) -> None:
        now = time.monotonic()
        if now - self._warned >= 60.0:  # once a minute: every split decision would say it
            self._warned = now
            hint = " (grant the webhook get/create/update on leases)" if error is not None else ""
            log.warning(
                f"{message}; deciding as one process would{hint}",
                extra={"lease": f"{self.namespace}/{name}", "error": str(error) if error is not None else ""},
            )
