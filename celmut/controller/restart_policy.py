"""``restartPolicy: immediate`` on a PodMutation: opt-in at the controller, said in the object's status.

CAST AI documents ``immediate`` as "reserved for future use" (its pod mutator does nothing with it:
changes reach pods when they are recreated). celmut can do more — replace running pods that do not
match, through the Eviction API at a bounded rate — but a migrated PodMutation must not start evicting
pods just because celmut, unlike CAST AI, acts on the value. So the controller replaces pods only with
``--allow-immediate-restart`` (the chart's ``controller.allowImmediateRestart``, default false);
otherwise ``immediate`` behaves as CAST AI documents, as ``deferred``.

Either way each PodMutation read from the cluster that asks for ``immediate`` carries a
``celmut.io/ImmediateRestart`` condition saying which it is (``True``/``Enabled`` or
``False``/``Disabled``), and one that does not ask has none. The leader writes it after each reload,
guarded by the object's resourceVersion and only when the stored condition says something else
(:func:`celmut.kube.policy_status.update_status`), so replicas and restarts change nothing.
"""

from __future__ import annotations

import datetime
import functools
import logging
from collections.abc import Iterable
from typing import Any

from celmut.compile.compiled import CompiledPolicy
from celmut.kube.client import Cluster, ClusterError, NotFound
from celmut.kube.policy_status import update_status

log = logging.getLogger("celmut.controller")

CONDITION_TYPE = "celmut.io/ImmediateRestart"
CHART_VALUE = "controller.allowImmediateRestart"
DISABLED = (
    "restartPolicy immediate is not enabled: as in CAST AI's pod mutator, where it is reserved for future use, "
    "this mutation reaches pods when they are created or recreated (deferred); running pods are never evicted. "
    f"To replace running pods that do not match, set the chart value {CHART_VALUE}=true "
    "(celmut controller --allow-immediate-restart)"
)
ENABLED = (
    "restartPolicy immediate is enabled ({CHART_VALUE}): the controller evicts running pods that do not match, "
    "at most {rate:g} a minute and one per workload until its replacement is Ready; pods without a controller "
    "are never evicted"
)


def wanted_condition(podmutation: dict[str, Any], *, allowed: bool, per_minute: float) -> dict[str, str] | None:
    """The condition ``podmutation`` should carry (type, status, reason, message), None for none."""
    if ((podmutation.get("spec") or {}).get("restartPolicy") or "deferred") != "immediate":
        return None
    if allowed:
        message = ENABLED.format(CHART_VALUE=CHART_VALUE, rate=per_minute)
        return {"type": CONDITION_TYPE, "status": "True", "reason": "Enabled", "message": message}
    return {"type": CONDITION_TYPE, "status": "False", "reason": "Disabled", "message": DISABLED}


def status_patch(podmutation: dict[str, Any], wanted: dict[str, str] | None) -> dict[str, Any] | None:
    """The status merge patch making the condition ``wanted`` (None when it already is)."""
    conditions = [c for c in (podmutation.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]
    mine = next((c for c in conditions if c.get("type") == CONDITION_TYPE), None)
    others = [c for c in conditions if c is not mine]
    generation = (podmutation.get("metadata") or {}).get("generation", 0)
    if wanted is None:
        return None if mine is None else {"status": {"conditions": others}}
    if (
        mine is not None
        and all(mine.get(k) == v for k, v in wanted.items())
        and mine.get("observedGeneration") == generation
    ):
        return None
    same = mine is not None and mine.get("status") == wanted["status"]
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        **wanted,
        "observedGeneration": generation,
        "lastTransitionTime": (mine or {}).get("lastTransitionTime") if same else now,
    }
    return {"status": {"conditions": [*others, condition]}}


def sync_conditions(
    cluster: Cluster, podmutations: Iterable[dict[str, Any]], *, allowed: bool, per_minute: float
) -> int:
    """Write each PodMutation's condition where it differs; the number written. A failure is logged
    and left to the next reload (the behaviour does not depend on the condition, only its report)."""
    written = 0
    for podmutation in podmutations:
        wanted = wanted_condition(podmutation, allowed=allowed, per_minute=per_minute)
        try:
            if update_status(cluster, podmutation, "podmutations", functools.partial(status_patch, wanted=wanted)):
                written += 1
        except NotFound:
            continue
        except ClusterError as ex:
            name = (podmutation.get("metadata") or {}).get("name")
            log.warning("could not write the PodMutation's restart condition", extra={"policy": name, "error": str(ex)})
    return written


def warn_disabled(policies: Iterable[CompiledPolicy], warned: set[str]) -> None:
    """Log once per policy (files included, which have no status) that ``immediate`` is not acted on."""
    for policy in policies:
        if policy.restart_policy == "immediate" and policy.display_name not in warned:
            warned.add(policy.display_name)
            log.warning(
                "restartPolicy immediate is not enabled: running pods are left as they are",
                extra={"policy": policy.display_name, "enable": f"{CHART_VALUE}=true"},
            )
