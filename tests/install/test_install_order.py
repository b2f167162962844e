"""Issue 20: the policies.kyverno.io CRDs in either install order, with Helm and with `celmut manifests`.

Helm: the chart renders a Kyverno CRD only while nobody else owns it — `helm template --dry-run=server`
runs the chart's `lookup` against the fake API server exactly as `helm install`/`upgrade` would — and
renders it as a hook, which Helm never deletes (issue 24: celmut/install/shared_crds.py; the whole
lifecycle with real Helm is tests/install/test_helm_lifecycle.py). A Kyverno installed first keeps its
CRDs untouched; a Kyverno installed later takes celmut's over (`--take-ownership`), after which celmut's
upgrades leave them alone. Helm's adoption rule is helm/helm pkg/action/validate.go `checkOwnership`
(label app.kubernetes.io/managed-by=Helm, annotations meta.helm.sh/release-name and -namespace equal to
the installing release).

kubectl: `celmut manifests` (default `--kyverno-crds auto`) prints a Kyverno CRD only when the cluster
does not have it or has celmut's, so `celmut manifests | kubectl delete -f -` never deletes Kyverno's.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from celmut.install.crds import all_crds
from celmut.install.shared_crds import shared_crd
from celmut.main import main
from tests.fakekube import FakeApiServer
from tests.kube.crds import crds_next_to_kyverno, kyvernos_crd

from . import helm as helm_tool

Obj = dict[str, Any]
def shared_crds() -> list[Any]:
    """The CRDs another product may own (celmut/install/shared_crds.py): Kyverno's kinds and the reports'."""
    return [crd for crd in all_crds() if shared_crd(crd.name) is not None]


KYVERNO_CRDS = sorted(crd.name for crd in shared_crds())


def installed_by(release: str, namespace: str) -> list[Obj]:
    """celmut's Kyverno CRDs as `helm install <release>` created them (Helm stamps its ownership)."""
    out = []
    for crd in shared_crds():
        obj = crd.to_dict()
        obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "Helm"
        obj["metadata"]["annotations"].update(
            {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": namespace}
        )
        out.append(obj)
    return out


def kyvernos_crds() -> list[Obj]:
    """Kyverno's CRDs celmut may install too (its policies.kyverno.io kinds, GlobalContextEntry and the
    wgpolicyk8s.io reports), as its chart installs them — also what `helm install kyverno kyverno/kyverno
    -n kyverno --take-ownership` leaves of celmut's."""
    kinds = (
        "MutatingPolicy",
        "NamespacedMutatingPolicy",
        "PolicyException",
        "GlobalContextEntry",
        "PolicyReport",
        "ClusterPolicyReport",
    )
    return [kyvernos_crd(kind) for kind in kinds]


def from_manifests() -> list[Obj]:
    """celmut's Kyverno CRDs as `celmut manifests | kubectl apply` created them (no Helm metadata)."""
    return [crd.to_dict() for crd in shared_crds()]


def rendered_kyverno_crds(helm: Path, fake: FakeApiServer, tmp_path: Path, *extra: str) -> list[Obj]:
    kubeconfig = fake.kubeconfig(tmp_path / "kubeconfig")
    args = ("--dry-run=server", "--disable-openapi-validation", "--kubeconfig", str(kubeconfig), *extra)
    objects = helm_tool.template(helm, None, *args)
    return [
        o for o in objects if o["kind"] == "CustomResourceDefinition" and shared_crd(o["metadata"]["name"]) is not None
    ]


# (what, the CRDs in the cluster, the Kyverno CRDs celmut's chart renders)
ORDERS = [
    ("celmut first: installs them", [], KYVERNO_CRDS),
    ("Kyverno first, or after it took them over (--take-ownership): its CRDs are left untouched", kyvernos_crds(), []),
    ("celmut's next upgrade: keeps managing the CRDs it installed", installed_by("celmut", "celmut"), KYVERNO_CRDS),
    ("another celmut release's CRDs: left alone", installed_by("celmut-b", "tools"), []),
    ("installed by celmut manifests (kubectl): left as they are", from_manifests(), []),
]


@pytest.mark.parametrize(("what", "existing", "expected"), ORDERS, ids=[o[0] for o in ORDERS])
def test_the_chart_renders_a_kyverno_crd_only_while_nobody_else_owns_it(
    helm: Path, fake_apiserver: FakeApiServer, tmp_path: Path, what: str, existing: list[Obj], expected: list[str]
) -> None:
    for definition in existing:
        fake_apiserver.store.create(copy.deepcopy(definition))
    rendered = rendered_kyverno_crds(helm, fake_apiserver, tmp_path)
    assert sorted(o["metadata"]["name"] for o in rendered) == expected, what
    for crd in rendered:  # a hook: never in the release diff, never deleted by Helm (helm/helm pkg/action/hooks.go)
        assert crd["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
        assert crd["metadata"]["annotations"]["meta.helm.sh/release-name"] == "celmut"
    assert not [r for r in fake_apiserver.requests if r.method != "GET"]  # rendering wrote nothing


def test_kyverno_crds_disabled_renders_none_even_on_an_empty_cluster(
    helm: Path, fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    assert rendered_kyverno_crds(helm, fake_apiserver, tmp_path, "--set", "kyvernoCrds.enabled=false") == []


def test_helm_template_without_a_cluster_renders_them_for_review(rendered: dict[str, list[Obj]]) -> None:
    crds = [o for o in rendered["default"] if o["kind"] == "CustomResourceDefinition"]
    assert sorted(o["metadata"]["name"] for o in crds if shared_crd(o["metadata"]["name"]) is not None) == KYVERNO_CRDS


# --- kubectl: celmut manifests --------------------------------------------------------------------------


def manifests(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[list[Obj], str]:
    """`celmut manifests --crds` (the CRDs are printed apart from the workload)."""
    assert main(["manifests", "--crds", *argv]) == 0
    captured = capsys.readouterr()
    return [d for d in yaml.safe_load_all(captured.out) if d], captured.err


def kyverno_crd_names(objects: list[Obj]) -> list[str]:
    return sorted(
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "CustomResourceDefinition" and shared_crd(o["metadata"]["name"]) is not None
    )


def kubectl_delete(fake: FakeApiServer, objects: list[Obj]) -> None:
    """`kubectl delete -f -` (--ignore-not-found), on the cluster-scoped objects that matter here."""
    for obj in objects:
        if obj["kind"] == "CustomResourceDefinition" and fake.store.exists(
            "customresourcedefinitions", obj["metadata"]["name"]
        ):
            fake.store.delete("customresourcedefinitions", obj["metadata"]["name"])


def test_manifests_next_to_kyverno_leave_its_crds_out_of_install_and_uninstall(
    fake_apiserver: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kyverno first, then `celmut manifests | kubectl apply`, then `... | kubectl delete`."""
    for definition in crds_next_to_kyverno():
        fake_apiserver.store.create(definition)
    kubeconfig = str(fake_apiserver.kubeconfig(tmp_path / "kubeconfig"))
    objects, said = manifests(capsys, "--kubeconfig", kubeconfig)
    assert kyverno_crd_names(objects) == []
    assert "mutatingpolicies.policies.kyverno.io: owned by kyverno (Kyverno), left out" in said
    kubectl_delete(fake_apiserver, objects)
    assert all(fake_apiserver.store.exists("customresourcedefinitions", name) for name in KYVERNO_CRDS)


def test_manifests_celmut_first_then_kyverno_takes_the_crds_over(
    fake_apiserver: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """celmut first: its manifests install the CRDs and would uninstall them; once Kyverno has taken
    them over, the uninstall leaves them (and the policies in them) alone."""
    kubeconfig = str(fake_apiserver.kubeconfig(tmp_path / "kubeconfig"))
    objects, said = manifests(capsys, "--kubeconfig", kubeconfig)
    assert kyverno_crd_names(objects) == KYVERNO_CRDS and "not in the cluster, included" in said
    for obj in objects:  # kubectl apply of the CRDs
        if obj["kind"] == "CustomResourceDefinition":
            fake_apiserver.store.create(obj)
    objects, said = manifests(capsys, "--kubeconfig", kubeconfig)
    assert kyverno_crd_names(objects) == KYVERNO_CRDS and "installed by celmut, included" in said
    for definition in kyvernos_crds():  # helm install kyverno --take-ownership relabels them
        fake_apiserver.store.update({**definition, "metadata": {**definition["metadata"], "resourceVersion": ""}})
    objects, _ = manifests(capsys, "--kubeconfig", kubeconfig)
    assert kyverno_crd_names(objects) == []
    kubectl_delete(fake_apiserver, objects)
    assert all(fake_apiserver.store.exists("customresourcedefinitions", name) for name in KYVERNO_CRDS)


@pytest.mark.parametrize(("choice", "expected"), [("include", KYVERNO_CRDS), ("skip", [])])
def test_an_explicit_choice_needs_no_cluster(
    capsys: pytest.CaptureFixture[str], choice: str, expected: list[str]
) -> None:
    objects, _ = manifests(capsys, "--kyverno-crds", choice)
    assert kyverno_crd_names(objects) == expected


def test_without_a_kubeconfig_auto_includes_them_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    objects, said = manifests(capsys)
    assert kyverno_crd_names(objects) == KYVERNO_CRDS
    assert "no kubeconfig" in said


def test_a_cluster_that_cannot_be_asked_is_an_error_naming_the_choice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    with FakeApiServer() as fake:
        fake.kubeconfig(kubeconfig)  # then the server goes away
    assert main(["manifests", "--crds", "--kubeconfig", str(kubeconfig)]) == 2
    err = capsys.readouterr().err
    assert "cannot tell who owns the policies.kyverno.io CRDs" in err and "--kyverno-crds include or skip" in err


def test_selectable_fields_are_left_out_for_api_servers_before_1_30(helm: Path) -> None:
    """An API server before 1.30 does not know selectableFields, and Helm 4's server-side apply uses
    fieldValidation=Strict: the chart renders the field from 1.30 on (CustomResourceFieldSelectors)."""
    for kube_version, expected in (("1.29.0", False), ("1.30.0", True)):
        objects = helm_tool.template(helm, None, "--kube-version", kube_version)
        crds = [
            o
            for o in objects
            if o["kind"] == "CustomResourceDefinition" and "mutatingpolicies" in o["metadata"]["name"]
        ]
        assert len(crds) == 2
        assert all(("selectableFields" in v) is expected for crd in crds for v in crd["spec"]["versions"]), kube_version
