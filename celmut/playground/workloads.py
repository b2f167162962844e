"""A workload's pods as its controller makes them, for "run as its pods".

A Deployment, StatefulSet, Job or ReplicaSet pasted in the resources pane is what a person applies;
what a mutating webhook then sees is its *pods*, created one by one by kube-controller-manager. This
module makes those pods (and, for a Deployment, its ReplicaSet) the way the controllers do:

* **ReplicaSet** (``pkg/controller/replicaset/replica_set.go`` ``manageReplicas``, pods from
  ``pkg/controller/controller_utils.go`` ``GetPodFromTemplate``): ``spec.replicas`` pods, each with the
  template's labels, annotations and finalizers, ``generateName: <replicaset>-``, a controller
  ownerReference, the template's spec. The API server names each after admission
  (``staging/src/k8s.io/apiserver/pkg/storage/names``: the generateName and 5 characters of
  ``bcdfghjklmnpqrstvwxz2456789``); here those characters are drawn from a generator seeded with the
  workload, so a page shows the same names each time it runs.
* **Deployment** (``pkg/controller/deployment/sync.go`` ``getNewReplicaSet``): its ReplicaSet
  ``<deployment>-<pod-template-hash>``, the hash added to the ReplicaSet's labels, selector and
  template, the Deployment as its controller owner; then the ReplicaSet's pods. The hash has the
  controller's form (FNV-32a, then ``rand.SafeEncodeString``) but not its value: Go hashes the template's
  Go struct (``controller.ComputeHash``), which JSON does not reproduce.
* **StatefulSet** (``pkg/controller/statefulset/stateful_set_utils.go`` ``newVersionedStatefulSetPod``):
  pods ``<set>-<ordinal>`` from ``spec.ordinals.start`` in order (OrderedReady creates them one at a
  time), labelled ``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index`` and
  ``controller-revision-hash``, with ``hostname``/``subdomain`` and a claim per volumeClaimTemplate.
* **Job** (``pkg/controller/job/job_controller.go`` ``manageJob``; the labels the API server adds to a
  Job's template, ``pkg/registry/batch/job/strategy.go`` ``generateSelector``): ``min(parallelism,
  completions)`` pods (parallelism defaults to 1), ``generateName: <job>-`` (Indexed:
  ``<job>-<index>-``, with the completion index annotation and label and ``hostname: <job>-<index>``),
  the ``batch.kubernetes.io/job-tracking`` finalizer.

A workload without a uid gets one derived from its kind, namespace and name (the API server would
assign a random one), so owner references hold together.
"""

from __future__ import annotations

import copy
import json
import random
import uuid
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

SAFE_CHARACTERS = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand alphanums
GENERATED_SUFFIX = 5  # names.SimpleNameGenerator's randomLength
MAX_PODS = 500
HASH_LABEL = "pod-template-hash"
JOB_LABELS = ("batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name", "controller-uid", "job-name")
KINDS = {("apps/v1", "Deployment"), ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet"), ("batch/v1", "Job")}


class NotAWorkload(ValueError):
    """The object is not a workload whose pods the playground can make (a message says why)."""


@dataclass
class Expansion:
    """The objects the controllers would create: owners in between (a Deployment's ReplicaSet), then
    the pods in the order they are created (``names``: each pod's name once stored)."""

    workload: Obj
    owners: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


def is_workload(obj: Any) -> bool:
    return isinstance(obj, dict) and (str(obj.get("apiVersion")), str(obj.get("kind"))) in KINDS


def replicas(obj: Obj) -> int:
    """How many pods the controller makes first (a Job: ``min(parallelism, completions)``)."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Job":
        parallelism = _count(spec.get("parallelism"), 1)
        completions = spec.get("completions")
        return min(parallelism, _count(completions, parallelism)) if completions is not None else parallelism
    return _count(spec.get("replicas"), 1)


def _count(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def safe_encode(value: int) -> str:
    """``rand.SafeEncodeString(fmt.Sprint(value))``: each decimal digit as a character no one reads as a word."""
    return "".join(SAFE_CHARACTERS[ord(c) % len(SAFE_CHARACTERS)] for c in str(value))


def template_hash(template: Obj, collision_count: int | None = None) -> str:
    """FNV-32a of the template (and the collision count), safe-encoded: ``controller.ComputeHash``'s form."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += collision_count.to_bytes(4, "little")
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return safe_encode(value)


def uid_of(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    if meta.get("uid"):
        return str(meta["uid"])
    key = f"{obj.get('apiVersion')}/{obj.get('kind')}/{meta.get('namespace', '')}/{meta.get('name', '')}"
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "celmut-playground:" + key))


def controller_ref(owner: Obj) -> Obj:
    """``metav1.NewControllerRef``."""
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": uid_of(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_from_template(owner: Obj, template: Obj, generate_name: str | None = None) -> Obj:
    """``controller.GetPodFromTemplate``: the pod a controller asks the API server to create."""
    template_meta = template.get("metadata") or {}
    metadata: Obj = {"generateName": generate_name or f"{owner['metadata']['name']}-"}
    if owner["metadata"].get("namespace"):
        metadata["namespace"] = owner["metadata"]["namespace"]
    for key in ("labels", "annotations", "finalizers"):
        if template_meta.get(key):
            metadata[key] = copy.deepcopy(template_meta[key])
    metadata["ownerReferences"] = [controller_ref(owner)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": copy.deepcopy(template.get("spec") or {})}


def expand(workload: Obj) -> Expansion:
    """The pods (and owners in between) ``workload``'s controller creates; :class:`NotAWorkload` else."""
    if not is_workload(workload):
        raise NotAWorkload("run as pods: a Deployment, StatefulSet, Job or ReplicaSet (apps/v1, batch/v1)")
    meta = workload.get("metadata") or {}
    if not meta.get("name"):
        raise NotAWorkload("run as pods: the workload needs metadata.name (its pods are named after it)")
    template = (workload.get("spec") or {}).get("template")
    if not isinstance(template, dict):
        raise NotAWorkload(f"run as pods: {workload['kind']} {meta['name']} has no spec.template")
    count = replicas(workload)
    if count > MAX_PODS:
        raise NotAWorkload(f"run as pods: {count} replicas, at most {MAX_PODS} per run")
    workload = copy.deepcopy(workload)
    workload["metadata"].setdefault("uid", uid_of(workload))
    names = random.Random(uid_of(workload))  # the same names for the same workload, run after run
    kind = workload["kind"]
    if kind == "Deployment":
        replicaset = _replicaset_of(workload, count)
        found = _replicaset_pods(replicaset, count, names)
        found.workload, found.owners = workload, [replicaset]
        return found
    if kind == "ReplicaSet":
        found = _replicaset_pods(workload, count, names)
        found.workload = workload
        return found
    if kind == "StatefulSet":
        return _statefulset_pods(workload, count)
    return _job_pods(workload, count, names)


def generated_name(prefix: str, names: random.Random) -> str:
    return prefix + "".join(names.choice(SAFE_CHARACTERS) for _ in range(GENERATED_SUFFIX))


def _replicaset_of(deployment: Obj, count: int) -> Obj:
    spec = deployment.get("spec") or {}
    template = copy.deepcopy(spec["template"])
    pod_hash = template_hash(template, (deployment.get("status") or {}).get("collisionCount"))
    template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = pod_hash
    selector = copy.deepcopy(spec.get("selector") or {})
    selector.setdefault("matchLabels", {})[HASH_LABEL] = pod_hash
    meta = deployment["metadata"]
    replicaset: Obj = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{meta['name']}-{pod_hash}",
            "labels": dict(template["metadata"]["labels"]),
            "annotations": {
                "deployment.kubernetes.io/revision": "1",
                "deployment.kubernetes.io/desired-replicas": str(count),
            },
            "ownerReferences": [controller_ref(deployment)],
        },
        "spec": {"replicas": count, "selector": selector, "template": template},
    }
    if meta.get("namespace"):
        replicaset["metadata"]["namespace"] = meta["namespace"]
    replicaset["metadata"]["uid"] = uid_of(replicaset)
    return replicaset


def _replicaset_pods(replicaset: Obj, count: int, names: random.Random) -> Expansion:
    found = Expansion(replicaset)
    prefix = f"{replicaset['metadata']['name']}-"
    for _ in range(count):
        found.pods.append(pod_from_template(replicaset, replicaset["spec"]["template"]))
        found.names.append(generated_name(prefix, names))
    return found


def _statefulset_pods(statefulset: Obj, count: int) -> Expansion:
    spec = statefulset.get("spec") or {}
    name = statefulset["metadata"]["name"]
    revision = f"{name}-{template_hash(spec['template'])}"
    start = _count((spec.get("ordinals") or {}).get("start"), 0)
    found = Expansion(statefulset)
    for ordinal in range(start, start + count):
        pod = pod_from_template(statefulset, spec["template"])
        pod_name = f"{name}-{ordinal}"
        del pod["metadata"]["generateName"]
        pod["metadata"] = {"name": pod_name, **pod["metadata"]}
        labels = pod["metadata"].setdefault("labels", {})
        labels["controller-revision-hash"] = revision
        labels["statefulset.kubernetes.io/pod-name"] = pod_name
        labels["apps.kubernetes.io/pod-index"] = str(ordinal)
        pod["spec"]["hostname"] = pod_name
        if spec.get("serviceName"):
            pod["spec"]["subdomain"] = spec["serviceName"]
        claims = [
            c
            for c in spec.get("volumeClaimTemplates") or []
            if isinstance(c, dict) and (c.get("metadata") or {}).get("name")
        ]
        if claims:
            kept = [
                v
                for v in pod["spec"].get("volumes") or []
                if v.get("name") not in {c["metadata"]["name"] for c in claims}
            ]
            volumes = [
                {"name": c["metadata"]["name"],
                 "persistentVolumeClaim": {"claimName": f"{c['metadata']['name']}-{name}-{ordinal}"}}
                for c in claims
            ]  # fmt: skip
            pod["spec"]["volumes"] = volumes + kept
        found.pods.append(pod)
        found.names.append(pod_name)
    return found


def _job_pods(job: Obj, count: int, names: random.Random) -> Expansion:
    spec = job.get("spec") or {}
    name, uid = job["metadata"]["name"], uid_of(job)
    template = copy.deepcopy(spec["template"])
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    for label in JOB_LABELS:  # what the API server adds to a Job's template (generateSelector)
        labels.setdefault(label, uid if label.endswith("controller-uid") else name)
    found = Expansion(job)
    indexed = spec.get("completionMode") == "Indexed"
    for index in range(count):
        prefix = f"{name}-{index}-" if indexed else f"{name}-"
        pod = pod_from_template(job, template, generate_name=prefix)
        pod["metadata"].setdefault("finalizers", []).append("batch.kubernetes.io/job-tracking")
        if indexed:
            pod["metadata"].setdefault("annotations", {})["batch.kubernetes.io/job-completion-index"] = str(index)
            pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] = str(index)
            pod["spec"]["hostname"] = f"{name}-{index}"
        found.pods.append(pod)
        found.names.append(generated_name(prefix, names))
    return found
