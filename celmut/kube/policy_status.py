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

Next to Kyverno (:mod:`celmut.policy.selection`) both engines would write Kyverno's status fields of a
policy: celmut then writes only its own condition on the policies it serves (``kyverno_fields=False``:
``conditionStatus.ready`` and ``.message`` are Kyverno's), and nothing at all on the others — except,
once, taking back its own condition from a policy it served before (:func:`release_status`), so the
object never claims celmut serves it.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
from collections.abc import Callable, Sequence
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


def _conditions(obj: dict[str, Any], conditions_at: Sequence[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The status object holding the conditions list, and the list."""
    parent = _holder(obj.get("status") or {}, conditions_at[:-1])
    return parent, [c for c in parent.get(conditions_at[-1]) or [] if isinstance(c, dict)]


def _nested(conditions_at: Sequence[str], patch: dict[str, Any]) -> dict[str, Any]:
    for key in reversed(conditions_at[:-1]):
        patch = {key: patch}
    return patch


def status_patch(
    obj: dict[str, Any],
    conditions_at: Sequence[str],
    error: str,
    *,
    kyverno_fields: bool = True,
    in_service: str = IN_SERVICE,
    message_field: bool = True,
) -> dict[str, Any] | None:
    """The merge patch of ``.status`` saying whether ``obj`` is in service; None when it already says so.

    ``conditions_at`` is where the conditions list lives under ``.status`` (``("conditions",)``, or
    ``("conditionStatus", "conditions")`` for Kyverno's kinds, which also get ``ready`` and ``message``
    unless ``kyverno_fields`` is False: Kyverno writes them when it runs). ``in_service`` is the
    condition's message when there is no error. ``message_field=False`` leaves ``message`` alone: on a
    policy that asks for a MutatingAdmissionPolicy it is the generator's (Kyverno's CRD: "details about the
    generation of ValidatingAdmissionPolicy/MutatingAdmissionPolicy").
    """
    generation = (obj.get("metadata") or {}).get("generation", 0)
    status = "False" if error else "True"
    message = error[:MAX_MESSAGE] if error else in_service[:MAX_MESSAGE]
    parent, existing = _conditions(obj, conditions_at)
    current = next((c for c in existing if c.get("type") == CONDITION_TYPE), None)
    kyverno = conditions_at[0] == "conditionStatus" and kyverno_fields
    up_to_date = (
        current is not None
        and current.get("status") == status
        and current.get("message") == message
        and current.get("observedGeneration") == generation
        and (not kyverno or parent.get("ready") == (not error))
        and (not kyverno or not message_field or parent.get("message") == (error and message))
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
        patch["ready"] = not error
        if message_field:
            patch["message"] = message if error else ""
    return _nested(conditions_at, patch)


def release_patch(obj: dict[str, Any], conditions_at: Sequence[str]) -> dict[str, Any] | None:
    """The patch taking celmut's condition off ``obj`` (None when it has none), guarded by the object's
    resourceVersion: the conditions list is replaced whole, so a concurrent write must not be lost."""
    if not conditions_at:
        return None
    _, existing = _conditions(obj, conditions_at)
    if not any(c.get("type") == CONDITION_TYPE for c in existing):
        return None
    kept = [c for c in existing if c.get("type") != CONDITION_TYPE]
    meta = obj.get("metadata") or {}
    return {
        "metadata": {"resourceVersion": meta.get("resourceVersion")},
        "status": _nested(conditions_at, {conditions_at[-1]: kept}),
    }


def event_name(obj: dict[str, Any], error: str) -> str:
    """The same for every process reporting the same error on the same generation of the same object."""
    meta = obj.get("metadata") or {}
    key = f"{meta.get('uid')}/{meta.get('generation')}/{error}"
    return f"{meta.get('name') or 'object'}.celmut-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def report_status(
    cluster: Cluster,
    obj: dict[str, Any],
    resource: str,
    conditions_at: Sequence[str],
    error: str,
    *,
    kyverno_fields: bool = True,
    in_service: str = IN_SERVICE,
    message_field: bool = True,
) -> None:
    """Post the Warning Event (once per generation and error) and write the status (when it differs);
    raises :class:`~celmut.kube.client.ClusterError` when the API server refuses."""
    if error:
        name = event_name(obj, error)
        with contextlib.suppress(Conflict):  # another process (or an earlier run) reported this generation
            post_event(
                cluster, obj, reason="PolicyInvalid", message=error, component=COMPONENT, warning=True, name=name
            )
    if not conditions_at:
        return

    def patch(current: dict[str, Any]) -> dict[str, Any] | None:
        found = status_patch(
            current,
            conditions_at,
            error,
            kyverno_fields=kyverno_fields,
            in_service=in_service,
            message_field=message_field,
        )
        return None if found is None else {"status": found}

    with contextlib.suppress(NotFound):  # deleted meanwhile, or no status subresource: the Event and log remain
        update_status(cluster, obj, resource, patch)


def update_status(
    cluster: Cluster,
    obj: dict[str, Any],
    resource: str,
    compute: Callable[[dict[str, Any]], dict[str, Any] | None],
    *,
    attempts: int = 4,
) -> bool:
    """Merge-patch ``compute(obj)`` into ``obj``'s status, guarded by its resourceVersion: the conditions
    list is written whole, and celmut's processes and its generator each write their own condition, so
    a write from a stale copy must not drop another's. On a conflict the object is read again and the
    patch computed anew. True when something was written; raises the last Conflict after ``attempts``."""
    current = obj
    for attempt in range(attempts):
        patch = compute(current)
        if patch is None:
            return False
        meta = current.get("metadata") or {}
        guarded = {**patch, "metadata": {"resourceVersion": meta.get("resourceVersion")}}
        try:
            _patch_status(cluster, current, resource, guarded)
            return True
        except Conflict:
            if attempt == attempts - 1:
                raise
            namespace, name = meta.get("namespace") or "", str(meta.get("name"))
            current = cluster.get(str(current.get("apiVersion")), resource, namespace, name)
    return False


def release_status(cluster: Cluster, obj: dict[str, Any], resource: str, conditions_at: Sequence[str]) -> bool:
    """Take celmut's condition off a policy celmut no longer serves; True when there was one to take.
    A conflict (the object changed since it was read) or a deletion is left to the next reload."""
    patch = release_patch(obj, conditions_at)
    if patch is None:
        return False
    with contextlib.suppress(NotFound, Conflict):
        _patch_status(cluster, obj, resource, patch)
    return True


def _patch_status(cluster: Cluster, obj: dict[str, Any], resource: str, patch: dict[str, Any]) -> None:
    meta = obj.get("metadata") or {}
    cluster.patch(
        str(obj.get("apiVersion")),
        resource,
        meta.get("namespace") or "",
        str(meta.get("name")),
        patch,
        content_type="application/merge-patch+json",
        sub="status",
    )
