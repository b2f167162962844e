"""Graceful deletion of pods, as the API server does it (issue 38).

A pod bound to a node is not removed by a DELETE: it is marked ``deletionTimestamp`` (now + the grace
period) and ``deletionGracePeriodSeconds`` — Terminating — and only its kubelet's final DELETE with grace
period 0 removes it. Without a kubelet here, :meth:`tests.fakekube.controllers.ControllerManager.end_grace_periods`
(or a test's own DELETE with ``gracePeriodSeconds: 0``) plays that part, which is how the grace period
passes on this fake.

* ``pkg/registry/core/pod/strategy.go`` ``CheckGracefulDelete``: the grace period is the request's
  ``gracePeriodSeconds``, else the pod's ``spec.terminationGracePeriodSeconds`` (defaulted to 30 on
  create; 30 here when absent, as no defaulting runs); 0 for a pod not bound to a node or already
  ``Failed``/``Succeeded``; a negative value becomes 1.
* ``staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go`` ``BeforeDelete``: a graceful deletion sets
  ``deletionTimestamp = now + period`` and ``deletionGracePeriodSeconds``; a pod already Terminating is
  changed only by a shorter period (0 removes it), a longer or equal one leaves it as it is.

Only pods are deleted gracefully (the only built-in kind with a ``RESTGracefulDeleteStrategy``).
"""

from __future__ import annotations

import time
from typing import Any

Obj = dict[str, Any]
DEFAULT_TERMINATION_GRACE_PERIOD = 30  # pkg/apis/core/v1/defaults.go SetDefaults_PodSpec


def grace_period(pod: Obj, requested: int | None) -> int:
    """``podStrategy.CheckGracefulDelete``: the grace period a DELETE of ``pod`` gets."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    if requested is not None:
        period = int(requested)
    else:
        period = int(spec.get("terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD))
    if not spec.get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
        period = 0
    return 1 if period < 0 else period


def _timestamp(seconds_from_now: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds_from_now))


def marked_terminating(pod: Obj, period: int) -> Obj | None:
    """The pod marked Terminating for ``period`` seconds (``BeforeDelete``), or None when a pod already
    Terminating keeps its deadline (the new period is not shorter)."""
    meta = pod["metadata"]
    current = meta.get("deletionGracePeriodSeconds")
    if meta.get("deletionTimestamp") and current is not None and period >= int(current):
        return None
    meta["deletionTimestamp"] = _timestamp(period)
    meta["deletionGracePeriodSeconds"] = period
    return pod


def terminating(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))
