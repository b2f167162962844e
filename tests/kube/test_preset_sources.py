"""Presets from the cluster: PodMutation resources and pinning-plan ConfigMaps compile like files."""

from __future__ import annotations

from celmut.kube.policy_source import ClusterPolicySource
from tests.fakekube import FakeApiServer

from .conftest import eventually, policy_documents
from .test_policy_source import store_of


def test_presets_and_pinning_plan_configmaps_come_from_the_cluster(
    with_crds: FakeApiServer, source: ClusterPolicySource
) -> None:
    with_crds.store.create(
        {
            "apiVersion": "pod-mutations.cast.ai/v1",
            "kind": "PodMutation",
            "metadata": {"name": "spot-everything"},
            "spec": {"spotConfig": {"mode": "optional-spot", "distributionPercentage": 100}},
        }
    )
    with_crds.store.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unrelated", "namespace": "default"}}
    )
    eventually(lambda: policy_documents(source))
    documents = policy_documents(source)
    assert [d.path for d in documents] == ["cluster:PodMutation/spot-everything"]  # unlabelled ConfigMaps are not read
    store = store_of(source)
    assert store.reload() is not None and store.engine is not None and store.engine.policies
