"""A workload run as its pods through a real ``celmut playground``: the pods made as the controllers
make them, admitted in order through the policies, each counted by the next; the summary and, per pod,
the rule and numbers that placed it (the spot presets' exact split, celmut/compile/presets/placement.py)."""

from __future__ import annotations

import re

import yaml

from tests.playground.support import Playground

STATEFULSET = """apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  replicas: 5
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres}]}
"""
JOB = """apiVersion: batch/v1
kind: Job
metadata: {name: backup, namespace: shop}
spec:
  parallelism: 5
  template:
    spec: {restartPolicy: Never, containers: [{name: backup, image: busybox}]}
"""


def workload(served: Playground, state: dict, index: int = 0) -> dict:
    answer = served.post("/api/workload", {"state": state, "resource": index})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_deployment_of_10_under_partial_spot_puts_4_on_spot_and_says_why_for_each(
    served: Playground, examples: dict
) -> None:
    state = examples["spot-partial-workload"]
    (deployment,) = served.post("/api/run", state).json()["objects"]
    assert deployment["workload"] == {"kind": "Deployment", "replicas": 10}  # the page offers to run its pods
    assert deployment["reference"] == "Deployment shop/web" and not deployment["patch"]
    found = workload(served, state)
    assert found["summary"] == "4 of 10 on spot, 6 on-demand"
    (replicaset,) = found["owners"]
    assert re.fullmatch(r"ReplicaSet shop/web-[a-z0-9]+", replicaset)
    pods = found["pods"]
    prefix = "Pod " + replicaset.removeprefix("ReplicaSet ") + "-"
    assert len({p["reference"] for p in pods}) == 10 and all(p["reference"].startswith(prefix) for p in pods)
    placements = [p["decisions"][0]["placement"] for p in pods]
    assert placements == ["on-demand", "on-demand", "spot", "on-demand", "spot", "on-demand", "on-demand", "spot",
                          "on-demand", "spot"]  # fmt: skip  # floor(n x 40 / 100) at every n
    sixth = pods[5]["decisions"][0]
    assert sixth["numbers"] == {"percent": 40, "earlier": 5, "earlierOnSpot": 2, "total": 6, "allowedOnSpot": 2}
    assert sixth["rule"] == "40 % on spot: 2 of the 5 pods before it on spot; 6 × 40 % = 2.4, rounded down 2: on-demand"
    annotations = [
        yaml.safe_load(r["right"]["text"])
        for p in pods
        for r in p["rows"]
        if "celmut.io/placement" in r["right"]["text"]
    ]
    assert [a["celmut.io/placement"] for a in annotations] == placements  # what each pod carries


def test_100_replicas_keep_the_split_exact(served: Playground, examples: dict) -> None:
    state = dict(examples["spot-partial-workload"])
    state["resources"] = state["resources"].replace("replicas: 10", "replicas: 100")
    found = workload(served, state)
    assert found["summary"] == "40 of 100 on spot, 60 on-demand" and len(found["pods"]) == 100


def test_a_statefulset_and_a_job_are_split_over_their_own_pods(served: Playground, examples: dict) -> None:
    state = {**examples["spot-partial-workload"], "resources": STATEFULSET + "---\n" + JOB}
    statefulset = workload(served, state, 0)
    assert [p["reference"] for p in statefulset["pods"]] == [f"Pod shop/db-{i}" for i in range(5)]
    assert statefulset["summary"] == "2 of 5 on spot, 3 on-demand"
    job = workload(served, state, 1)
    assert job["summary"] == "2 of 5 on spot, 3 on-demand"  # counted by the Job's controller-uid label
    assert all(re.fullmatch(r"Pod shop/backup-[a-z0-9]{5}", p["reference"]) for p in job["pods"])


def test_a_resource_that_is_not_a_workload_says_so(served: Playground, examples: dict) -> None:
    (problem,) = workload(served, examples["team-label"])["errors"]
    assert problem["pane"] == "resources" and "a Deployment, StatefulSet, Job or ReplicaSet" in problem["message"]
    assert served.post("/api/workload", {"state": examples["team-label"], "resource": "x"}).status_code == 400
