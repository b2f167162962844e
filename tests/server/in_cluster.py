"""celmut inside the fake cluster: its real webhook (``running_server``, TLS, ``--from-cluster``) registered
in the fake API server's admission chain exactly as the chart registers it (a Service with one endpoint
per replica), so Deployments, ReplicaSets and Pods created through the API go through it."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from celmut.install.manifests import InstallOptions, webhook_configuration
from celmut.kube import certs
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually
from tests.kube.crds import policy_crds

from .support import RunningServer, running_server

Obj = dict[str, Any]


def install_webhook(
    fake: FakeApiServer, servers: list[RunningServer], configuration: Obj | None = None, *, create: bool = True
) -> Obj:
    """Register ``configuration`` (default: the chart's own MutatingWebhookConfiguration, as `celmut
    manifests` prints it) with the servers' CA, and the servers as the endpoints of its Service.
    ``create=False``: only the Service's endpoints (the controller writes the configuration)."""
    config = configuration or webhook_configuration(InstallOptions())
    ca_bundle = base64.b64encode(servers[0].ca_file.read_bytes()).decode()
    for webhook in config["webhooks"]:
        webhook["clientConfig"]["caBundle"] = ca_bundle
    if create:
        fake.store.create(config)
    hooks = fake.enable_webhooks()
    service = config["webhooks"][0]["clientConfig"].get("service")
    if service is not None:
        hooks.register_service(service["namespace"], service["name"], *[s.url for s in servers])
    return config


@contextmanager
def celmut_in_cluster(
    fake: FakeApiServer,
    tmp_path: Path,
    *,
    replicas: int = 1,
    policy_paths: tuple[str, ...] = (),
    configuration: Obj | None = None,
    create_configuration: bool = True,
    **settings: Any,
) -> Iterator[list[RunningServer]]:
    """``replicas`` webhook processes (``celmut serve --from-cluster``) sharing one certificate, registered."""
    for definition in policy_crds():
        if not fake.store.exists("customresourcedefinitions", definition["metadata"]["name"]):
            fake.store.create(definition)
    if not fake.store.exists("namespaces", "celmut"):
        fake.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "celmut"}})
    kubeconfig = fake.kubeconfig(tmp_path / "kubeconfig")
    material = certs.self_signed(tmp_path / "tls", ["127.0.0.1", "localhost"])
    with ExitStack() as stack:
        servers = [
            stack.enter_context(
                running_server(
                    tmp_path / f"replica-{index}",
                    list(policy_paths),
                    material=material,
                    from_cluster=True,
                    kubeconfig=str(kubeconfig),
                    **settings,
                )
            )
            for index in range(replicas)
        ]
        install_webhook(fake, servers, configuration, create=create_configuration)
        yield servers


def app_pod(name: str) -> Obj:
    """A one-container pod ``default/<name>`` labelled app=x."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def wait_for_policies(servers: list[RunningServer], *names: str) -> None:
    """Until every replica serves the named policies."""

    def loaded() -> bool:
        for server in servers:
            server.store.reload()
            engine = server.store.engine
            if engine is None or not {p.name for p in engine.policies} >= set(names):
                return False
        return True

    eventually(loaded, what=f"policies {names} in service")


def seen_by(servers: list[RunningServer]) -> Callable[[list[Obj]], None]:
    """A ``controllers.after_batch`` hook: wait until every replica's pod cache holds the pods just created."""

    def wait(pods: list[Obj]) -> None:
        for server in servers:
            assert server.cluster is not None
            cache = server.cluster.caches.cache("v1", "pods")
            assert cache is not None
            for pod in pods:
                meta = pod["metadata"]
                eventually(
                    lambda c=cache, m=meta: c.get(m["namespace"], m["name"]) is not None, what="the pod in the cache"
                )

    return wait


def deployment(
    replicas: int = 10, image: str = "registry.k8s.io/pause:3.10", *, name: str = "web", namespace: str = "shop"
) -> Obj:
    """A Deployment ``namespace/name`` of ``replicas`` one-container pods labelled ``app=<name>``."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "web", "image": image}]}},
        },
    }

