"""Policies from custom resources: discovery, compile errors reported on the object, presets."""

from __future__ import annotations

from pathlib import Path

import yaml

from celmut.kube.client import Cluster
from celmut.kube.policy_source import CONDITION_TYPE, ClusterPolicySource
from celmut.service.assembly import EngineSettings
from celmut.service.store import PolicyStore
from celmut.sources.files import FileSource
from tests.fakekube import FakeApiServer
from tests.waiting import HANG_SECONDS

from .conftest import admission_policy, binding, eventually, label_policy, policy_documents
from .crds import crd, policy_crds, spec_of


def store_of(source: ClusterPolicySource) -> PolicyStore:
    return PolicyStore([source], EngineSettings())


def policy_names(store: PolicyStore) -> set[str]:
    store.reload()
    assert store.engine is not None
    return {p.name for p in store.engine.policies}


def test_documents_name_the_cluster_object(with_crds: FakeApiServer, source: ClusterPolicySource) -> None:
    with_crds.store.create(label_policy("team"))
    eventually(lambda: policy_documents(source))
    assert [d.path for d in policy_documents(source)] == ["cluster:MutatingPolicy/team"]
    assert source.documents()[1] == []


def test_created_changed_and_deleted_policies_follow_the_cluster(
    with_crds: FakeApiServer, source: ClusterPolicySource
) -> None:
    store = store_of(source)
    with_crds.store.create(label_policy("first"))
    eventually(lambda: policy_names(store) == {"first"}, what="the created policy")
    with_crds.store.create(label_policy("second"))
    eventually(lambda: policy_names(store) == {"first", "second"}, what="the second policy")
    with_crds.store.delete("mutatingpolicies.policies.kyverno.io", "first")
    eventually(lambda: policy_names(store) == {"second"}, what="the deletion")


def test_a_crd_installed_later_is_discovered(fake_apiserver: FakeApiServer, source: ClusterPolicySource) -> None:
    store = store_of(source)
    assert policy_names(store) == set()  # nothing served yet: no policies, no error
    for definition in policy_crds():
        fake_apiserver.store.create(definition)
    fake_apiserver.store.create(label_policy("late"))
    eventually(lambda: policy_names(store) == {"late"}, what="discovery of the new CRD")


def test_an_older_served_version_is_used(fake_apiserver: FakeApiServer, source: ClusterPolicySource) -> None:
    fake_apiserver.store.create(crd(spec_of("MutatingPolicy"), ("v1alpha1",)))
    fake_apiserver.store.create({**label_policy("alpha"), "apiVersion": "policies.kyverno.io/v1alpha1"})
    store = store_of(source)
    eventually(lambda: policy_names(store) == {"alpha"}, what="the v1alpha1 policy")


def test_a_broken_policy_is_skipped_and_reported_on_the_object(
    with_crds: FakeApiServer, source: ClusterPolicySource
) -> None:
    store = store_of(source)
    with_crds.store.create(label_policy("good"))
    with_crds.store.create(label_policy("broken", expression="object.metadata.name +"))
    eventually(lambda: len(policy_documents(source)) == 2)
    outcome = store.reload()
    assert outcome is not None and outcome.accepted  # the cluster skips, it does not reject the reload
    assert {p.name for p in store.engine.policies} == {"good"}  # type: ignore[union-attr]
    assert any("cluster:MutatingPolicy/broken" in e and "spec.mutations[0]" in e for e in outcome.errors)

    events = with_crds.store.list("events", "default")
    assert [(e["involvedObject"]["name"], e["reason"], e["type"]) for e in events] == [
        ("broken", "PolicyInvalid", "Warning")
    ]
    assert "spec.mutations[0].jsonPatch.expression" in events[0]["message"]
    broken = with_crds.store.get("mutatingpolicies.policies.kyverno.io", "broken")
    (condition,) = broken["status"]["conditionStatus"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (CONDITION_TYPE, "False", "Invalid")

    # Reported once per generation: reloading again adds no second Event.
    store.reload(force=True)
    assert len(with_crds.store.list("events", "default")) == 1

    # Fixed: the policy is served and its condition turns True.
    fixed = label_policy("broken")
    with_crds.store.patch("mutatingpolicies.policies.kyverno.io", "broken", {"spec": fixed["spec"]})
    eventually(lambda: policy_names(store) == {"good", "broken"}, what="the fixed policy")
    status = with_crds.store.get("mutatingpolicies.policies.kyverno.io", "broken")["status"]
    assert status["conditionStatus"]["conditions"][0]["status"] == "True"


def test_status_has_kyvernos_shape_so_the_ready_column_is_filled(
    with_crds: FakeApiServer, source: ClusterPolicySource
) -> None:
    """kyverno/api MutatingPolicyStatus: conditionStatus {ready, message, conditions}; the CRD's READY printer
    column reads .status.conditionStatus.ready. Every policy gets it, not only broken ones."""
    store = store_of(source)
    with_crds.store.create(label_policy("good"))
    with_crds.store.create(label_policy("broken", expression="object.metadata.name +"))
    eventually(lambda: len(policy_documents(source)) == 2)
    outcome = store.reload()
    assert outcome is not None
    good = with_crds.store.get("mutatingpolicies.policies.kyverno.io", "good")["status"]["conditionStatus"]
    broken = with_crds.store.get("mutatingpolicies.policies.kyverno.io", "broken")["status"]["conditionStatus"]
    assert good["ready"] is True and good["message"] == "" and good["conditions"][0]["status"] == "True"
    assert broken["ready"] is False and broken["message"].startswith("spec.mutations[0].jsonPatch.expression: ")
    assert broken["conditions"][0]["message"] == broken["message"]
    # The log and the reload errors name the object once: no "cluster:MutatingPolicy/broken: MutatingPolicy broken:".
    (error,) = [e for e in outcome.errors if "broken" in e]
    assert error.startswith("cluster:MutatingPolicy/broken: spec.mutations[0]") and "MutatingPolicy broken" not in error


def test_one_warning_event_per_broken_generation_across_processes(with_crds: FakeApiServer, cluster: Cluster) -> None:
    """Two webhook replicas and a restarted one compile the same broken policy: one Event per generation."""
    with_crds.store.create(label_policy("broken", expression="object.metadata.name +"))
    sources = [ClusterPolicySource(cluster, rediscover_seconds=0.05).start() for _ in range(3)]
    try:
        for replica in sources[:2]:
            eventually(lambda r=replica: len(policy_documents(r)) == 1)  # type: ignore[misc]
            store_of(replica).reload()
        assert len(with_crds.store.list("events", "default")) == 1
        eventually(lambda: len(policy_documents(sources[2])) == 1)
        store_of(sources[2]).reload()  # a restart
        assert len(with_crds.store.list("events", "default")) == 1
        still_broken = label_policy("broken", expression="object.metadata.namespace +")
        with_crds.store.patch("mutatingpolicies.policies.kyverno.io", "broken", {"spec": still_broken["spec"]})
        for replica in sources:
            eventually(lambda r=replica: "namespace" in str(policy_documents(r)[0].content["spec"]))  # type: ignore[misc]
            store_of(replica).reload()
        assert len(with_crds.store.list("events", "default")) == 2  # the new generation is reported once
    finally:
        for replica in sources:
            replica.stop()


def test_a_broken_cluster_policy_does_not_block_files(
    with_crds: FakeApiServer, source: ClusterPolicySource, tmp_path: Path
) -> None:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(yaml.safe_dump(label_policy("from-file")))
    store = PolicyStore([FileSource([str(policy_file)]), source], EngineSettings())
    assert store.reload() is not None
    with_crds.store.create(label_policy("broken", expression="1 +"))
    eventually(lambda: len(policy_documents(source)) == 1)
    outcome = store.reload()
    assert outcome is not None and outcome.accepted
    assert {p.name for p in store.engine.policies} == {"from-file"}  # type: ignore[union-attr]

    policy_file.write_text(yaml.safe_dump(label_policy("from-file", expression="1 +")))
    outcome = store.reload()
    assert outcome is not None and not outcome.accepted  # a broken file still rejects the reload
    assert {p.name for p in store.engine.policies} == {"from-file"}  # type: ignore[union-attr]


MAP = admission_policy("native", '[JSONPatch{op: "add", path: "/a", value: 1}]')


def test_mutating_admission_policies_are_left_to_the_api_server_unless_asked(
    with_crds: FakeApiServer, cluster: Cluster
) -> None:
    """kube-apiserver's MAP plugin (GA in 1.36) applies cluster MAPs before any webhook: reading them too
    would apply each twice. `--serve-admission-policies` is for API servers without the plugin."""
    with_crds.store.create(MAP)
    with_crds.store.create(binding("native"))
    with_crds.store.create(label_policy("kyverno"))
    default = ClusterPolicySource(cluster, rediscover_seconds=0.05).start()
    serving = ClusterPolicySource(cluster, rediscover_seconds=0.05, admission_policies=True).start()
    try:
        assert default.wait_synced(HANG_SECONDS) and serving.wait_synced(HANG_SECONDS)
        eventually(lambda: policy_names(store_of(serving)) == {"kyverno", "native"}, what="the MAP served")
        assert policy_names(store_of(default)) == {"kyverno"}
    finally:
        default.stop()
        serving.stop()
