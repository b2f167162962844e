"""A fake cluster (the in-repo fake API server, real REST through the real ``kubernetes`` client) with a
few objects, and ``celmut playground --kubeconfig`` connected to it, for the live-mode tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.fakekube.server import FakeApiServer
from tests.playground.support import Playground, playground

SHOP = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "payments"}}}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "nginx"}]},
}
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {
        "replicas": 5,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]},
        },
    },
}


@dataclass
class LiveCluster:
    server: FakeApiServer
    served: Playground


@contextmanager
def live_playground(directory: Path) -> Iterator[LiveCluster]:
    """A fake cluster holding namespace ``shop`` (label team: payments), a pod and a Deployment, and a
    playground connected to it; the server's request log starts after the objects are in."""
    server = FakeApiServer().start()
    try:
        for obj in (SHOP, POD, DEPLOYMENT, {**POD, "metadata": {**POD["metadata"], "name": "web-2"}}):
            server.store.create(obj)
        kubeconfig = server.kubeconfig(directory / "kubeconfig")
        server.clear_requests()
        with playground("--kubeconfig", str(kubeconfig)) as served:
            yield LiveCluster(server, served)
    finally:
        server.stop()
