"""Objects celmut leaves alone because of who owns them.

**ReplicaSets of a controller.** The deployment controller compares each ReplicaSet's stored pod
template with its Deployment's (``pkg/controller/deployment/util/deployment_util.go``
``EqualIgnoreHash``); a template an admission webhook changed never matches, so the controller takes
it for a hash collision, bumps ``collisionCount`` and creates another ReplicaSet — which is mutated
again, without end (``pkg/controller/deployment/sync.go`` ``getNewReplicaSet``;
kubernetes/kubernetes#57167). Kyverno avoids it with its default resource filters ``[ReplicaSet,*,*]``
``[ReplicaSet/*,*,*]``; celmut never evaluates a Kyverno-semantics policy (MutatingPolicy,
NamespacedMutatingPolicy, the presets, their autogen variants, mutateExisting targets) on a ReplicaSet
that has a controller owner, whatever its rules say. A ReplicaSet without one (created by hand) has no
controller comparing it and is mutated as its rules say. A MutatingAdmissionPolicy keeps the API
server's own semantics, which has no such filter.

**Opting out through owners.** The webhook's objectSelector sees only the object in the request; a
Deployment labelled with the opt-out label does not pass the label to its ReplicaSets or Pods. The
surfaces that know the cluster supply an :data:`OptOut` check (``celmut.kube.owners``) that follows the
controller ownerReferences; the engine skips every policy for an object it names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DEFAULT_OPT_OUT_LABEL = "celmut.io/ignore"  # the chart's webhook.optOutLabel

#: Given the object of a request, why celmut must leave it alone ('' when it need not).
OptOut = Callable[[dict[str, Any]], str]


def controller_owner(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ownerReference with ``controller: true`` (``metav1.GetControllerOf``), or None."""
    for ref in ((obj or {}).get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def controlled_replicaset(obj: dict[str, Any] | None) -> str:
    """Why ``obj`` is a ReplicaSet celmut must not mutate ('' when it is not one)."""
    if not obj or obj.get("kind") != "ReplicaSet" or str(obj.get("apiVersion", "")).split("/")[0] != "apps":
        return ""
    owner = controller_owner(obj)
    if owner is None:
        return ""
    return (
        f"a ReplicaSet controlled by {owner.get('kind')} {owner.get('name')} is never mutated: its controller "
        "would take the changed template for a new revision and create ReplicaSets without end"
    )
