"""Offline clusters for tests: policies and cluster objects in, an :class:`OfflineCluster` that
compiled without errors out (the CLI's own assembly, :meth:`OfflineCluster.build`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from celmut.service.offline import OfflineCluster
from celmut.sources.documents import Document


def documents(items: Iterable[dict[str, Any] | Document], path: str = "policies.yaml") -> list[Document]:
    return [item if isinstance(item, Document) else Document(path, i, item) for i, item in enumerate(items)]


def offline_cluster(
    policies: Iterable[dict[str, Any] | Document], cluster: Iterable[dict[str, Any] | Document] = ()
) -> OfflineCluster:
    """An offline cluster over ``policies`` and ``cluster`` (documents, or bare objects)."""
    offline = OfflineCluster.build(documents(policies), documents(cluster, "cluster.yaml"))
    assert not offline.compilation.errors, [str(e) for e in offline.compilation.errors]
    return offline
