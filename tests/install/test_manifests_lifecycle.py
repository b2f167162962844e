"""Issue 24, without Helm: `celmut manifests` piped into the real kubectl (the one the dev extras ship
next to Helm) never deletes or rewrites a CRD it does not own, next to a Kyverno installed by Helm from
the Kyverno-shaped chart, in either order.

`celmut manifests --crds` (the Namespace and the CRDs; the shared ones only while absent or celmut's) is
applied first and never deleted; `celmut manifests` (the workload) is applied, re-applied with
``--prune`` (kubectl's default prune allowlist has no CRDs) and deleted. Rows and assertions as in
test_helm_lifecycle.py (lifecycle.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakekube import FakeApiServer

from . import helm as helm_tool
from .kyverno_chart import write_kyverno_chart
from .lifecycle import ABSENT, CRDS_DIR, EVERYTHING, KYVERNO, NO_POLICIES, PODMUTATION, Cluster, Step, owners
from .test_helm_lifecycle import INSTALL_KYVERNO

CRDS = ("manifests", "--crds", "|", "kubectl", "apply", "-f", "-")
WORKLOAD = ("manifests", "|", "kubectl", "apply", "-f", "-")
PRUNE = ("manifests", "--replicas", "3", "|", "kubectl", "apply", "--prune", "-l", "app.kubernetes.io/part-of=celmut",
         "-f", "-")
UNINSTALL = ("manifests", "|", "kubectl", "delete", "--ignore-not-found", "-f", "-")
NOTHING: frozenset[str] = frozenset()

ROWS: dict[str, list[Step]] = {
    "celmut first with kubectl; Kyverno takes over; celmut re-applies, prunes, uninstalls": [
        Step("apply celmut's CRDs", CRDS, owners(CRDS_DIR), NOTHING),
        Step("apply celmut", WORKLOAD, owners(CRDS_DIR), EVERYTHING),
        Step("install kyverno --take-ownership", INSTALL_KYVERNO, owners(KYVERNO), EVERYTHING),
        Step("apply celmut's CRDs again: Kyverno's are left out", CRDS, owners(KYVERNO), EVERYTHING),
        Step("re-apply celmut with --prune and a changed option", PRUNE, owners(KYVERNO), EVERYTHING),
        Step("uninstall celmut: no CRD, no policy goes", UNINSTALL, owners(KYVERNO), EVERYTHING),
        Step("uninstall kyverno: its CRDs go with the policies", ("uninstall", "kyverno", "-n", "kyverno"),
             owners(ABSENT), NO_POLICIES),
    ],
    "Kyverno first; celmut with kubectl next to it; Kyverno leaves; celmut's CRDs apply again": [
        Step("install kyverno", INSTALL_KYVERNO[:-1], owners(KYVERNO, ABSENT, ABSENT), NOTHING),
        Step("apply celmut's CRDs: Kyverno's untouched", CRDS, owners(KYVERNO), EVERYTHING - {PODMUTATION}),
        Step("apply celmut", WORKLOAD, owners(KYVERNO), EVERYTHING),
        Step("re-apply celmut with --prune", PRUNE, owners(KYVERNO), EVERYTHING),
        Step("uninstall kyverno", ("uninstall", "kyverno", "-n", "kyverno"), owners(ABSENT), NO_POLICIES),
        Step("apply celmut's CRDs: installs the missing ones", CRDS, owners(CRDS_DIR), NO_POLICIES),
        Step("uninstall celmut: every CRD and object stays", UNINSTALL, owners(CRDS_DIR), EVERYTHING),
    ],
}


@pytest.fixture
def cluster(helm: Path, tmp_path: Path) -> Iterator[Cluster]:
    with FakeApiServer() as fake:
        kubeconfig = fake.kubeconfig(tmp_path / "kubeconfig")
        yield Cluster(fake, helm, kubeconfig, write_kyverno_chart(tmp_path), kubectl=helm_tool.kubectl_binary())


@pytest.mark.parametrize("row", list(ROWS), ids=list(ROWS))
def test_celmut_manifests_never_delete_or_rewrite_a_crd_they_do_not_own(cluster: Cluster, row: str) -> None:
    cluster.play(ROWS[row])
