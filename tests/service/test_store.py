"""The policy store: a broken source keeps only its own last good documents (issue 12 §4), and sources
hear about the errors of what is actually in service."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from celmut.kube.client import Cluster
from celmut.kube.policy_source import CONDITION_TYPE, ClusterPolicySource
from celmut.service.assembly import EngineSettings
from celmut.service.store import PolicyStore
from celmut.sources.files import FileSource
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually, label_policy
from tests.kube.crds import policy_crds

BROKEN = (
    "apiVersion: policies.kyverno.io/v1\nkind: MutatingPolicy\nmetadata: {name: broken}\nspec: {matchConstraints: {}}\n"
)


def file_policy(name: str, value: str) -> str:
    return f"""
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {{name: {name}}}
spec:
  matchConstraints:
    resourceRules: [{{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}}]
  mutations:
  - patchType: JSONPatch
    jsonPatch: {{expression: '[JSONPatch{{op: "add", path: "/metadata/labels/v", value: "{value}"}}]'}}
"""


@pytest.fixture
def cluster(fake_apiserver: FakeApiServer, tmp_path: Path) -> Iterator[Cluster]:
    for definition in policy_crds():
        fake_apiserver.store.create(definition)
    connected = Cluster.connect(str(fake_apiserver.kubeconfig(tmp_path / "kubeconfig")), timeout=5)
    try:
        yield connected
    finally:
        connected.close()


def names(store: PolicyStore) -> set[str]:
    store.reload()
    assert store.engine is not None
    return {p.name for p in store.engine.policies}


def condition(fake: FakeApiServer, name: str) -> dict[str, Any]:
    status = fake.store.get("mutatingpolicies.policies.kyverno.io", name).get("status") or {}
    conditions = (status.get("conditionStatus") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == CONDITION_TYPE), {})


def test_a_broken_policy_file_does_not_freeze_cluster_policies(
    fake_apiserver: FakeApiServer, cluster: Cluster, tmp_path: Path
) -> None:
    """The report: with one --policies file broken, `kubectl delete mpol X` had no effect."""
    files = tmp_path / "policies"
    files.mkdir()
    (files / "mine.yaml").write_text(file_policy("mine", "one"))
    source = ClusterPolicySource(cluster, rediscover_seconds=0.05).start()
    try:
        store = PolicyStore([FileSource([str(files)]), source], EngineSettings())
        fake_apiserver.store.create(label_policy("x"))
        eventually(lambda: names(store) == {"mine", "x"}, what="both sources loaded")
        (files / "broken.yaml").write_text(BROKEN)
        (files / "mine.yaml").write_text(file_policy("mine", "two"))  # held back with the broken file
        fake_apiserver.store.delete("mutatingpolicies.policies.kyverno.io", "x")
        fake_apiserver.store.create(label_policy("y"))
        eventually(lambda: names(store) == {"mine", "y"}, what="the cluster changes in service")
        assert any("broken" in e for e in store.last_errors)
        engine = store.engine
        assert engine is not None
        (mine,) = [p for p in engine.policies if p.name == "mine" and not p.autogen]
        assert '"one"' in mine.mutations[0].program.source  # the file's last good version
        eventually(lambda: condition(fake_apiserver, "y").get("status") == "True", what="y reported in service")
        (files / "broken.yaml").unlink()
        store.reload()
        engine = store.engine
        assert engine is not None
        (mine,) = [p for p in engine.policies if p.name == "mine" and not p.autogen]
        assert '"two"' in mine.mutations[0].program.source
    finally:
        source.stop()


def test_a_broken_file_alone_keeps_its_last_good_set(tmp_path: Path) -> None:
    files = tmp_path / "policies"
    files.mkdir()
    (files / "mine.yaml").write_text(file_policy("mine", "one"))
    store = PolicyStore([FileSource([str(files)])], EngineSettings())
    first = store.reload(force=True)
    assert first is not None and first.accepted
    (files / "broken.yaml").write_text(BROKEN)
    outcome = store.reload()
    assert outcome is not None and not outcome.accepted and outcome.held_back == [0]
    assert names(store) == {"mine"}


def test_without_a_last_good_set_what_compiles_is_served(tmp_path: Path) -> None:
    files = tmp_path / "policies"
    files.mkdir()
    (files / "mine.yaml").write_text(file_policy("mine", "one"))
    (files / "broken.yaml").write_text(BROKEN)
    store = PolicyStore([FileSource([str(files)])], EngineSettings())
    outcome = store.reload(force=True)
    assert outcome is not None and not outcome.accepted and outcome.held_back == []
    assert names(store) == {"mine"}
