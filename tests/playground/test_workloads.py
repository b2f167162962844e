"""A workload's pods as kube-controller-manager makes them (pkg/controller/replicaset, deployment,
statefulset, job): names, owner references, labels, the template; the same names run after run."""

from __future__ import annotations

import re

import pytest
import yaml

from celmut.playground.workloads import MAX_PODS, SAFE_CHARACTERS, NotAWorkload, expand

DEPLOYMENT = yaml.safe_load("""
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {team: shop}}
    spec: {containers: [{name: web, image: nginx}]}
""")
STATEFULSET = yaml.safe_load("""
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  replicas: 3
  serviceName: db
  ordinals: {start: 1}
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres}]}
  volumeClaimTemplates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce]}}]
""")
JOB = yaml.safe_load("""
apiVersion: batch/v1
kind: Job
metadata: {name: backup, namespace: ops}
spec:
  parallelism: 3
  completions: 2
  template:
    spec: {restartPolicy: Never, containers: [{name: backup, image: busybox}]}
""")
SUFFIX = f"[{SAFE_CHARACTERS}]{{5}}"


def test_a_deployment_makes_its_replicaset_and_the_replicaset_its_pods() -> None:
    found = expand(DEPLOYMENT)
    (replicaset,) = found.owners
    name = replicaset["metadata"]["name"]
    pod_hash = replicaset["metadata"]["labels"]["pod-template-hash"]
    assert name == f"web-{pod_hash}" and re.fullmatch(f"[{SAFE_CHARACTERS}]+", pod_hash)
    assert replicaset["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
    (owner,) = replicaset["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Deployment", "web", True)
    assert owner["uid"] == found.workload["metadata"]["uid"]
    assert len(found.pods) == 3
    for pod, pod_name in zip(found.pods, found.names, strict=True):
        meta = pod["metadata"]
        assert "name" not in meta and meta["generateName"] == f"{name}-"  # named by the API server, later
        assert re.fullmatch(f"{name}-{SUFFIX}", pod_name)
        assert meta["labels"] == {"app": "web", "pod-template-hash": pod_hash}
        assert meta["annotations"] == {"team": "shop"} and meta["namespace"] == "shop"
        (ref,) = meta["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["uid"]) == ("ReplicaSet", name, replicaset["metadata"]["uid"])
        assert pod["spec"] == DEPLOYMENT["spec"]["template"]["spec"]
    assert len(set(found.names)) == 3 and expand(DEPLOYMENT).names == found.names  # the same names each run


def test_a_statefulset_makes_ordinal_pods_with_their_identity_and_claims() -> None:
    found = expand(STATEFULSET)
    assert found.names == ["db-1", "db-2", "db-3"] and not found.owners
    pod = found.pods[1]
    assert pod["metadata"]["name"] == "db-2" and "generateName" not in pod["metadata"]
    labels = pod["metadata"]["labels"]
    assert labels["statefulset.kubernetes.io/pod-name"] == "db-2" and labels["apps.kubernetes.io/pod-index"] == "2"
    assert labels["controller-revision-hash"].startswith("db-")
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("db-2", "db")
    assert pod["spec"]["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-2"}}]


def test_a_job_makes_parallelism_pods_up_to_its_completions_with_the_job_labels() -> None:
    found = expand(JOB)
    assert len(found.pods) == 2  # min(parallelism 3, completions 2)
    uid = found.workload["metadata"]["uid"]
    labels = found.pods[0]["metadata"]["labels"]
    assert labels["batch.kubernetes.io/controller-uid"] == uid and labels["batch.kubernetes.io/job-name"] == "backup"
    assert labels["controller-uid"] == uid and labels["job-name"] == "backup"
    assert found.pods[0]["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]
    assert all(re.fullmatch(f"backup-{SUFFIX}", n) for n in found.names)
    indexed = expand({**JOB, "spec": {**JOB["spec"], "completionMode": "Indexed"}})
    assert [p["metadata"]["generateName"] for p in indexed.pods] == ["backup-0-", "backup-1-"]
    assert indexed.pods[1]["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "1"
    assert indexed.pods[1]["spec"]["hostname"] == "backup-1"


def test_a_replicaset_makes_its_pods_itself() -> None:
    replicaset = {**DEPLOYMENT, "kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "shop", "uid": "u-1"}}
    found = expand(replicaset)
    assert [p["metadata"]["ownerReferences"][0]["uid"] for p in found.pods] == ["u-1"] * 3


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
            "a Deployment, StatefulSet, Job or ReplicaSet",
        ),
        ({**DEPLOYMENT, "metadata": {"namespace": "shop"}}, "needs metadata.name"),
        ({**DEPLOYMENT, "spec": {"replicas": 2}}, "has no spec.template"),
        ({**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "replicas": MAX_PODS + 1}}, f"at most {MAX_PODS}"),
    ],
)
def test_what_cannot_run_as_pods_says_why(obj: dict, message: str) -> None:
    with pytest.raises(NotAWorkload, match=message):
        expand(obj)
