"""Issue 24: no celmut release ever deletes (or rewrites) a CRD it does not own at that moment — real
Helm 4 against the fake API server, next to a release of a chart shaped like Kyverno's (kyverno_chart.py).

Each row plays install / upgrade / upgrade with changed values / rollback / take-over / uninstall in one
order, with a MutatingPolicy, a NamespacedMutatingPolicy, a PolicyException and a PodMutation stored by
the user as soon as their CRDs exist; after every step it asserts which CRDs exist, which release owns
each (``meta.helm.sh/release-name``), that Kyverno's CRDs are as Kyverno wrote them, and which of the
user's objects are still there. What Helm does is read from helm/helm: pkg/action/upgrade.go and
pkg/kube/client.go ``Update`` (a resource of the old release manifest missing from the new one is
deleted unless it carries ``helm.sh/resource-policy: keep``, read from the live object),
pkg/action/hooks.go ``deleteHookByPolicy`` ("Never delete CustomResourceDefinitions"), pkg/action/
install.go ``installCRDs`` (``crds/``: install only, by server-side apply in Helm 4), pkg/action/
validate.go (``--take-ownership`` skips the ownership check and re-stamps the annotations).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakekube import FakeApiServer

from .kyverno_chart import write_kyverno_chart
from .lifecycle import (
    ABSENT,
    CELMUT,
    EVERYTHING,
    KYVERNO,
    NO_POLICIES,
    PODMUTATION,
    Cluster,
    Step,
    owners,
)

INSTALL_CELMUT = ("install", "celmut", "@celmut", "-n", "celmut", "--create-namespace")
UPGRADE_CELMUT = ("upgrade", "celmut", "@celmut", "-n", "celmut")
INSTALL_KYVERNO = (
    "install", "kyverno", "@kyverno", "-n", "kyverno", "--create-namespace",
    "--set", "features.policyExceptions.enabled=true", "--take-ownership",
)  # fmt: skip
NOTHING: frozenset[str] = frozenset()

ROWS: dict[str, list[Step]] = {
    # The scenario: celmut first, Kyverno takes the CRDs over, then a plain celmut upgrade.
    "celmut first; Kyverno takes over; celmut upgrades, rolls back, uninstalls; then Kyverno uninstalls": [
        Step("install celmut", INSTALL_CELMUT, owners(CELMUT), NOTHING),
        Step("upgrade celmut", UPGRADE_CELMUT, owners(CELMUT), EVERYTHING),
        Step("install kyverno without --take-ownership: refused, nothing changes",
             INSTALL_KYVERNO[:-1], owners(CELMUT), EVERYTHING, fails=True),
        Step("install kyverno --take-ownership", INSTALL_KYVERNO, owners(KYVERNO), EVERYTHING),
        Step("upgrade celmut (the issue)", UPGRADE_CELMUT, owners(KYVERNO), EVERYTHING),
        Step("upgrade celmut with changed values", (*UPGRADE_CELMUT, "--set", "replicas=3"),
             owners(KYVERNO), EVERYTHING),
        Step("upgrade celmut with kyvernoCrds.enabled=false", (*UPGRADE_CELMUT, "--set", "kyvernoCrds.enabled=false"),
             owners(KYVERNO), EVERYTHING),
        Step("rollback celmut to its first revision", ("rollback", "celmut", "1", "-n", "celmut"),
             owners(KYVERNO), EVERYTHING),
        Step("upgrade celmut --take-ownership (take-over the other way)", (*UPGRADE_CELMUT, "--take-ownership"),
             owners(KYVERNO), EVERYTHING),
        Step("uninstall celmut", ("uninstall", "celmut", "-n", "celmut"), owners(KYVERNO), EVERYTHING),
        Step("upgrade kyverno", ("upgrade", "kyverno", "@kyverno", "-n", "kyverno"), owners(KYVERNO), EVERYTHING),
        # Kyverno's chart does not keep its CRDs: its uninstall deletes them with the policies (its own).
        Step("uninstall kyverno", ("uninstall", "kyverno", "-n", "kyverno"), owners(ABSENT), NO_POLICIES),
    ],
    "Kyverno first; celmut installs next to it, upgrades, rolls back; Kyverno leaves; celmut takes over": [
        Step("install kyverno", INSTALL_KYVERNO[:-1], owners(KYVERNO, ABSENT, ABSENT), NOTHING),
        Step("install celmut", INSTALL_CELMUT, owners(KYVERNO), EVERYTHING - {PODMUTATION}),
        Step("install celmut again as upgrade --install --take-ownership",
             ("upgrade", "--install", "celmut", "@celmut", "-n", "celmut", "--take-ownership"),
             owners(KYVERNO), EVERYTHING),
        Step("upgrade celmut with changed values", (*UPGRADE_CELMUT, "--set", "replicas=3"),
             owners(KYVERNO), EVERYTHING),
        Step("rollback celmut", ("rollback", "celmut", "1", "-n", "celmut"), owners(KYVERNO), EVERYTHING),
        Step("upgrade kyverno with changed values",
             ("upgrade", "kyverno", "@kyverno", "-n", "kyverno", "--set", "admissionController.replicas=3"),
             owners(KYVERNO), EVERYTHING),
        Step("uninstall kyverno", ("uninstall", "kyverno", "-n", "kyverno"), owners(ABSENT), NO_POLICIES),
        Step("upgrade celmut: installs the missing CRDs", UPGRADE_CELMUT, owners(CELMUT), NO_POLICIES),
        Step("upgrade celmut with kyvernoCrds.enabled=false: its CRDs stay", (*UPGRADE_CELMUT, "--set",
             "kyvernoCrds.enabled=false"), owners(CELMUT), EVERYTHING),
        Step("uninstall celmut: every CRD and object stays", ("uninstall", "celmut", "-n", "celmut"),
             owners(CELMUT), EVERYTHING),
    ],
    "celmut first; uninstalled before Kyverno arrives; Kyverno adopts what it left": [
        Step("install celmut", INSTALL_CELMUT, owners(CELMUT), NOTHING),
        Step("rollback celmut to itself", ("rollback", "celmut", "1", "-n", "celmut"), owners(CELMUT), EVERYTHING),
        Step("a second celmut release elsewhere leaves the first one's CRDs alone",
             ("install", "celmut-b", "@celmut", "-n", "tools", "--create-namespace"), owners(CELMUT), EVERYTHING),
        Step("and so does its uninstall", ("uninstall", "celmut-b", "-n", "tools"), owners(CELMUT), EVERYTHING),
        Step("uninstall celmut: CRDs and objects stay", ("uninstall", "celmut", "-n", "celmut"),
             owners(CELMUT), EVERYTHING),
        Step("install kyverno --take-ownership", INSTALL_KYVERNO, owners(KYVERNO), EVERYTHING),
        Step("install celmut again", INSTALL_CELMUT, owners(KYVERNO), EVERYTHING),
        Step("uninstall celmut", ("uninstall", "celmut", "-n", "celmut"), owners(KYVERNO), EVERYTHING),
    ],
}


@pytest.fixture
def cluster(helm: Path, tmp_path: Path) -> Iterator[Cluster]:
    with FakeApiServer() as fake:
        yield Cluster(fake, helm, fake.kubeconfig(tmp_path / "kubeconfig"), write_kyverno_chart(tmp_path))


@pytest.mark.parametrize("row", list(ROWS), ids=list(ROWS))
def test_no_release_deletes_or_rewrites_a_crd_it_does_not_own(cluster: Cluster, row: str) -> None:
    cluster.play(ROWS[row])


def test_the_docs_run_what_the_matrix_runs() -> None:
    """docs/install/next-to-kyverno.md, "Installing in either order": each `helm` command is a step of
    the matrix, verbatim (the Kyverno-shaped chart standing in for kyverno/kyverno)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "install" / "next-to-kyverno.md").read_text()
    section = text[text.index("## Installing in either order") :]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None
    steps = {step.argv for steps in ROWS.values() for step in steps}
    commands = [shlex.split(line, comments=True) for line in block.group(1).splitlines() if line.startswith("helm ")]
    assert len(commands) == 5
    for argv in commands:
        replaced = tuple({"kyverno/kyverno": "@kyverno", "charts/celmut": "@celmut"}.get(a, a) for a in argv[1:])
        assert replaced in steps, " ".join(argv)
