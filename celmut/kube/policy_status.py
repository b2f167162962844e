"""Telling the cluster whether each policy object is in service: its status, and one Warning Event.

Every webhook replica and the controller compile the same objects, so each would report the same
thing; what they write is made idempotent instead of coordinated:

* **status** — written only when the stored status does not already say it (same condition status,
  message and ``observedGeneration``); a condition keeps its ``lastTransitionTime`` while its status
  does not change, so a second process's identical write changes nothing. Kyverno's kinds get
  Kyverno's status shape (kyverno/api ``api/policies.kyverno.io/v1beta1`` ``MutatingPolicyStatus``:
  ``conditionStatus.ready``, ``.message``, ``.conditions``), which the CRD's READY printer column reads;
  celmut's kinds a ``celmut.io/Compiled`` condition in ``status.conditions`` (their COMPILED column).
* **Warning Event** — named after the object's uid, generation and error, so a second process (or a
  restart) posting the same one gets ``AlreadyExists`` and the cluster keeps exactly one per broken
  generation.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
from collections.abc import Sequence
from typing import Any

from celmut.kube.client import Cluster, Conflict, NotFound
from celmut.kube.events import MAX_MESSAGE, post_event

CONDITION_TYPE = "celmut.io/Compiled"
IN_SERVICE = "the policy compiled and is in service"
COMPONENT = "celmut"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _holder(status: Any, path: Sequence[str]) -> dict[str, Any]:
    for key in path:
        status = status.get(key) if isinstance(status, dict) else None
    return status if isinstance(status, dict) else {}


def status_patch(obj: dict[str, Any], conditions_at: Sequence[str], error: str) -> dict[str, Any] | None:
    """The merge patch of ``.status`` saying whether ``obj`` is in service; None when it already says so.

    ``conditions_at`` is where the conditions list lives under ``.status`` (``("conditions",)``, or
    ``("conditionStatus", "conditions")`` for Kyverno's kinds, which also get ``ready`` and ``message``).
    """
    generation = (obj.get("metadata") or {}).get("generation", 0)
    status = "False" if error else "True"
    message = error[:MAX_MESSAGE] if error else IN_SERVICE
    parent = _holder(obj.get("status") or {}, conditions_at[:-1])
    existing = [c for c in parent.get(conditions_at[-1]) or [] if isinstance(c, dict)]
    current = next((c for c in existing if c.get("type") == CONDITION_TYPE), None)
    kyverno = conditions_at[0] == "conditionStatus"
    up_to_date = (
        current is not None
        and current.get("status") == status
        and current.get("message") == message
        and current.get("observedGeneration") == generation
        and (not kyverno or (parent.get("ready") == (not error) and parent.get("message") == (error and message)))
    )
    if up_to_date:
        return None
    transition = current.get("lastTransitionTime") if current and current.get("status") == status else None
    condition = {
        "type": CONDITION_TYPE,
        "status": status,
        "reason": "Invalid" if error else "Compiled",
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": transition or _now(),
    }
    patch: dict[str, Any] = {conditions_at[-1]: [*(c for c in existing if c is not current), condition]}
    if kyverno:
        patch.update(ready=not error, message=message if error else "")
    for key in reversed(conditions_at[:-1]):
        patch = {key: patch}
    return patch


def event_name(obj: dict[str, Any], error: str) -> str:
    """The same for every process reporting the same error on the same generation of the same object."""
    meta = obj.get("metadata") or {}
    key = f"{meta.get('uid')}/{meta.get('generation')}/{error}"
    return f"{meta.get('name') or 'object'}.celmut-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def report_status(
    cluster: Cluster, obj: dict[str, Any], resource: str, conditions_at: Sequence[str], error: str
) -> None:
    """Post the Warning Event (once per generation and error) and write the status (when it differs);
    raises :class:`~celmut.kube.client.ClusterError` when the API server refuses."""
    meta = obj.get("metadata") or {}
    if error:
        name = event_name(obj, error)
        with contextlib.suppress(Conflict):  # another process (or an earlier run) reported this generation
            post_event(
                cluster, obj, reason="PolicyInvalid", message=error, component=COMPONENT, warning=True, name=name
            )
    if not conditions_at:
        return
    patch = status_patch(obj, conditions_at, error)
    if patch is None:
        return
    with contextlib.suppress(NotFound):  # deleted meanwhile, or no status subresource: the Event and log remain
        cluster.patch(
            str(obj.get("apiVersion")),
            resource,
            meta.get("namespace") or "",
            str(meta.get("name")),
            {"status": patch},
            content_type="application/merge-patch+json",
            sub="status",
        )
