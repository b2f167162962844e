"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's leaderelection does it.

The leader renews the Lease every ``retry_period``; a standby takes it over once the record has not
changed for ``lease_duration`` *as observed by the standby's own clock* (timestamps written by
another machine are never compared with local time). Every write is a PUT guarded by the Lease's
resourceVersion, so two candidates cannot both win. :meth:`LeaderElector.is_leader` turns False
the moment a renewal is refused or ``renew_deadline`` passes without one, so a deposed leader
stops writing at once.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from celmut.kube.client import Cluster, ClusterError, Conflict, NotFound

log = logging.getLogger("celmut.controller")

LEASES = ("coordination.k8s.io/v1", "leases")


def _micro_time() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        cluster: Cluster,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")
        self.cluster = cluster
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_change = on_change
        self._renewed_at = 0.0  # monotonic time of our last successful acquire/renew
        self._leading = False
        self._observed: tuple[str, str] = ("", "")  # (holder, renewTime) of the last record seen
        self._observed_at = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def is_leader(self) -> bool:
        return self._leading and time.monotonic() - self._renewed_at < self.renew_deadline

    def start(self) -> LeaderElector:
        self._thread = threading.Thread(target=self._run, name="celmut-leader-election", daemon=True)
        self._thread.start()
        return self

    def stop(self, *, release: bool = True) -> None:
        """Stop campaigning; a leader releases the Lease so a standby takes over at once."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.retry_period + 5)
        if release and self._leading:
            try:
                lease = self.cluster.get(*LEASES, self.namespace, self.name)
                if (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                    lease["spec"]["holderIdentity"] = ""
                    lease["spec"]["leaseDurationSeconds"] = 1
                    self._put(lease)
            except ClusterError as ex:
                log.warning("could not release the leader lease", extra={"error": str(ex)})
        self._set_leading(False)

    def _set_leading(self, leading: bool) -> None:
        if leading != self._leading:
            self._leading = leading
            log.info("leadership %s", "acquired" if leading else "lost", extra={"identity": self.identity})
            if self.on_change is not None:
                self.on_change(leading)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.try_acquire_or_renew()
            except ClusterError as ex:
                log.warning("leader election request failed", extra={"error": str(ex)})
            if self._leading and not self.is_leader():
                self._set_leading(False)  # renew deadline passed without a successful renewal
            self._stop.wait(self.retry_period)

    def _spec(self, transitions: int, acquired: str) -> dict[str, Any]:
        now = _micro_time()
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_duration)),
            "acquireTime": acquired or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    def _put(self, lease: dict[str, Any]) -> None:
        self.cluster.replace(*LEASES, self.namespace, self.name, lease)

    def try_acquire_or_renew(self) -> bool:
        """One round of the election; True when this candidate holds the Lease afterwards."""
        now = time.monotonic()
        try:
            lease = self.cluster.get(*LEASES, self.namespace, self.name)
        except NotFound:
            body = {
                "apiVersion": LEASES[0],
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(0, ""),
            }
            try:
                self.cluster.create(*LEASES, self.namespace, body)
            except Conflict:
                return False  # another candidate created it first
            self._renewed_at = now
            self._set_leading(True)
            return True
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        record = (holder, str(spec.get("renewTime") or ""))
        if record != self._observed:
            self._observed, self._observed_at = record, now
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and now - self._observed_at < duration:
            self._set_leading(False)
            return False  # held by someone else and still fresh
        transitions = int(spec.get("leaseTransitions") or 0) + (0 if holder == self.identity else 1)
        acquired = str(spec.get("acquireTime") or "") if holder == self.identity else ""
        lease["spec"] = self._spec(transitions, acquired)
        try:
            self._put(lease)
        except Conflict:
            self._set_leading(False)  # someone else wrote the Lease in between
            return False
        self._renewed_at = now
        self._observed, self._observed_at = (self.identity, lease["spec"]["renewTime"]), now
        self._set_leading(True)
        return True
