"""Issue 27: globalContext.Get (a kubernetesResource entry and an apiCall entry) and image.GetMetadata
give the same object in `celmut test`, in the webhook and in the controller.

The cluster is the fake API server (the GlobalContextEntry CRD celmut ships, the entries, the ConfigMap
one of them watches), the apiCall entry calls a loopback JSON service of the test's own, and the image
lives in a real distribution registry on loopback (Debian's docker-registry; skipped without it).
Offline, `celmut test` reads the same data from the Test: the entry object among its clusterResources,
the service's answer as a globalContextEntries mock, the registry's image data in its context file."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
import yaml

from celmut import cel
from celmut.main import main
from tests.controller.support import running
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually
from tests.kube.crds import crds_next_to_kyverno, policy_crds
from tests.kube.gctx_support import JsonService, api_entry, configmap, install_gce_crd, resource_entry
from tests.kube.registry_support import PushedImage, Registry, oci_registry  # noqa: F401 (the fixture)
from tests.waiting import HANG_SECONDS

from .in_cluster import celmut_in_cluster, wait_for_policies

Obj = dict[str, Any]
TEAM = {"team": {"name": "payments", "size": 3}}
IMAGE_CONFIG = {
    "architecture": "amd64",
    "os": "linux",
    "config": {"Labels": {"team": "checkout"}},
    "rootfs": {"type": "layers", "diff_ids": []},
}
GCE = "kyverno.io/v2alpha1/globalcontextentries"
PODS = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}


def policy(name: str, expression: str) -> Obj:
    """A pod policy applied at admission and, by the controller, to existing pods."""
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": name},
        "spec": {
            "evaluation": {"admission": {"enabled": True}, "mutateExisting": {"enabled": True}},
            "autogen": {"podControllers": {"controllers": []}},
            "matchConstraints": {"resourceRules": [PODS]},
            "matchConditions": [{"name": "apps", "expression": "object.metadata.namespace == 'default'"}],
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}],
        },
    }


GLOBAL_CONTEXT_POLICY = policy(
    "team-from-global-context",
    "Object{metadata: Object.metadata{annotations: {"
    '"owner": string(globalContext.Get("team-configs", "owners")[0]), '
    '"entries": string(size(globalContext.Get("team-configs", ""))), '
    '"team": string(globalContext.Get("team-api", "name"))}}}',
)
IMAGE_POLICY = policy(
    "team-from-image",
    "Object{metadata: Object.metadata{labels: {"
    '"image-team": string(image.GetMetadata(object.spec.containers[0].image).config.config.Labels.team), '
    '"image-arch": string(image.GetMetadata(object.spec.containers[0].image).config.architecture)}}}',
)


@dataclass
class World:
    fake: FakeApiServer
    image: PushedImage
    registry: Registry
    service: JsonService
    policies: Path
    entries: list[Obj]
    team_configmap: Obj

    def pod(self, name: str) -> Obj:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": self.image.reference}]},
        }

    def http_policy(self) -> cel.HttpPolicy:
        return cel.HttpPolicy(allow=(f"{self.service.url}/",), allow_private_networks=True)

    def registry_policy(self) -> cel.RegistryPolicy:
        return cel.RegistryPolicy(allow=(self.registry.host,), insecure=(self.registry.host,))


@pytest.fixture
def world(fake_apiserver: FakeApiServer, oci_registry: Registry, tmp_path: Path) -> Iterator[World]:  # noqa: F811
    image = oci_registry.push_image("team/checkout", "v3", IMAGE_CONFIG)
    with JsonService(TEAM).running() as service:
        install_gce_crd(fake_apiserver)
        fake_apiserver.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "teams"}})
        owners = configmap("owners", "teams", owner="ann")
        fake_apiserver.store.create(owners)
        entries = [
            resource_entry("team-configs", "teams", ("owners", "[].data.owner")),
            api_entry("team-api", {"service": {"url": f"{service.url}/team"}}, ("name", "team.name")),
        ]
        for item in entries:
            fake_apiserver.store.create(copy.deepcopy(item))
        policies = tmp_path / "policies"
        policies.mkdir()
        for document in (GLOBAL_CONTEXT_POLICY, IMAGE_POLICY):
            (policies / f"{document['metadata']['name']}.yaml").write_text(yaml.safe_dump(document))
        yield World(fake_apiserver, image, oci_registry, service, policies, entries, owners)


def offline_result(world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Obj:
    """The pod `celmut test` expects, checked by `celmut test` itself (exit 0: the patched resource matched)."""
    suite = tmp_path / "suite"
    suite.mkdir()
    pod = world.pod("web")
    expected = copy.deepcopy(pod)
    expected["metadata"]["annotations"] = {"owner": "ann", "entries": "1", "team": "payments"}
    expected["metadata"]["labels"] = {"image-team": "checkout", "image-arch": "amd64"}
    (suite / "pod.yaml").write_text(yaml.safe_dump(pod))
    (suite / "patched.yaml").write_text(yaml.safe_dump(expected))
    (suite / "cluster.yaml").write_text(yaml.safe_dump_all([world.entries[0], world.team_configmap]))
    image_data = {"image": world.image.reference, "config": world.image.config, "manifest": world.image.manifest}
    context = {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Context", "spec": {"images": [image_data]}}
    (suite / "context.yaml").write_text(yaml.safe_dump(context))
    test = {
        "apiVersion": "cli.kyverno.io/v1alpha1",
        "kind": "Test",
        "metadata": {"name": "cluster-data"},
        "policies": [
            str(world.policies / f"{p['metadata']['name']}.yaml") for p in (GLOBAL_CONTEXT_POLICY, IMAGE_POLICY)
        ],
        "resources": ["pod.yaml"],
        "clusterResources": ["cluster.yaml"],
        "context": "context.yaml",
        "globalContextEntries": [
            {"name": "team-api", "data": TEAM, "projections": [{"name": "name", "path": "team.name"}]}
        ],
        "results": [
            {
                "policy": name,
                "isMutatingPolicy": True,
                "kind": "Pod",
                "resources": ["default/web"],
                "patchedResources": "patched.yaml",
                "result": "pass",
            }
            for name in ("team-from-global-context", "team-from-image")
        ],
    }
    (suite / "kyverno-test.yaml").write_text(yaml.safe_dump(test))
    code = main(["test", str(suite)])
    out = capsys.readouterr().out
    assert code == 0, out
    return expected


def written(obj: Obj) -> tuple[Obj, Obj]:
    """What the policies write: the pod's labels and annotations (the cluster adds defaults elsewhere)."""
    meta = obj["metadata"]
    return dict(meta.get("labels") or {}), {k: v for k, v in (meta.get("annotations") or {}).items()}


@pytest.mark.fakekube(webhooks=True)
def test_the_webhook_gives_the_object_celmut_test_gives(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = offline_result(world, tmp_path, capsys)
    settings = {"services": cel.Services(http_policy=world.http_policy()), "registry": world.registry_policy()}
    with celmut_in_cluster(world.fake, tmp_path, policy_paths=(str(world.policies),), **settings) as servers:
        wait_for_policies(servers, "team-from-global-context", "team-from-image")
        store = servers[0].cluster.global_context if servers[0].cluster is not None else None
        assert store is not None
        eventually(lambda: store.wait_ready(5.0).get("team-api", "name") == "payments", what="the entries' data")
        kubernetes.client.CoreV1Api(world.fake.api_client()).create_namespaced_pod("default", world.pod("web"))
    assert written(world.fake.store.get("pods", "web", "default")) == written(expected)


def test_the_controller_gives_the_object_celmut_test_gives(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = offline_result(world, tmp_path, capsys)
    world.fake.store.create(world.pod("web"))  # an existing pod: mutateExisting
    settings = {"services": cel.Services(http_policy=world.http_policy()), "registry": world.registry_policy()}
    with running(world.fake, tmp_path, world.policies, **settings):
        eventually(
            lambda: written(world.fake.store.get("pods", "web", "default")) == written(expected),
            what="the controller's mutation",
        )


@pytest.mark.parametrize(
    "kyverno", [False, True], ids=["without Kyverno: celmut writes it", "next to Kyverno: left to it"]
)
def test_the_controller_leader_writes_entry_status_only_while_kyverno_is_absent(
    fake_apiserver: FakeApiServer, tmp_path: Path, kyverno: bool
) -> None:
    """api/kyverno/v2alpha1 GlobalContextEntryStatus.SetReady; Kyverno, when present, writes it itself."""
    for definition in crds_next_to_kyverno() if kyverno else policy_crds():
        fake_apiserver.store.create(definition)
    install_gce_crd(fake_apiserver)
    fake_apiserver.store.create(api_entry("denied", {"service": {"url": "https://teams.example.com/x"}}))
    policies = tmp_path / "policies"
    policies.mkdir()
    with running(fake_apiserver, tmp_path, policies, from_cluster=True) as controller:
        controller.global_context.wait_ready(HANG_SECONDS)  # the entry's call was made and its outcome recorded
        source = controller.policy_source
        assert source is not None
        eventually(lambda: source.ownership is not None, what="Kyverno's presence known")
        controller.global_context.flush_status()  # as the reload loop does: outcomes recorded before then
        status = fake_apiserver.store.get(GCE, "denied").get("status")
    if kyverno:
        assert status is None
        assert not fake_apiserver.requests_matching("PATCH", r"/globalcontextentries/denied/status")
    else:
        condition = status["conditions"][0]
        assert (condition["type"], condition["status"], condition["reason"]) == ("Ready", "False", "Failed")
        assert "HTTP allow-list is empty" in condition["message"] and status["ready"] is False
