"""Upgrading a CRD keeps every stored object readable (issue 24): objects stored through the CRD as an
older release shipped it are read, after `kubectl apply` of today's CRD, through every version it serves.

The API server keeps one storage per CRD and converts on read (``conversion: None``: only ``apiVersion``
changes); it refuses a CRD that drops a version still in ``status.storedVersions`` (apiextensions
``ValidateCustomResourceDefinitionStoredVersions``); and an object stored before a field existed must
stay valid under the new schema (a new field is optional). The fake API server models the first two.
Rows: a new field (each of celmut's own kinds, and Kyverno's), new served versions with a storage-version
change (Kyverno's kinds as Kyverno 1.14 and earlier celmut shipped them: v1alpha1 only, today v1beta1).
"""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from celmut.install.crds import all_crds
from tests.fakekube import FakeApiServer

from . import helm as helm_tool
from .structural import validate

Obj = dict[str, Any]
SHIPPED = {crd.name: crd.to_dict() for crd in all_crds()}

#: CRD -> an object as the older CRD stored it, the field today's schema added (dropped from the old one).
OBJECTS: dict[str, tuple[Obj, str | None]] = {
    "podmutations.pod-mutations.cast.ai": (
        {"apiVersion": "pod-mutations.cast.ai/v1", "kind": "PodMutation", "metadata": {"name": "spot-batch"},
         "spec": {"filter": {"workload": {"namespaces": ["apps"]}}}},
        "patches",
    ),
    "gpuslicings.presets.celmut.io": (
        {"apiVersion": "presets.celmut.io/v1alpha1", "kind": "GpuSlicing", "metadata": {"name": "gpus"},
         "spec": {"workloadTypes": {"inference": 4}}},
        "sharedResource",
    ),
    "podpinningplans.pinning.celmut.io": (
        {"apiVersion": "pinning.celmut.io/v1alpha1", "kind": "PodPinningPlan",
         "metadata": {"name": "plan", "namespace": "apps"}, "spec": {"pins": [{"node": "n1", "labelSelector": {"matchLabels": {"app": "cache"}}}]}},
        None,  # its only field is required: no "new field" row yet
    ),
    "mutatingpolicies.policies.kyverno.io": (
        {"apiVersion": "policies.kyverno.io/v1alpha1", "kind": "MutatingPolicy", "metadata": {"name": "add-team"},
         "spec": {"mutations": [{"patchType": "ApplyConfiguration",
                                 "applyConfiguration": {"expression": "Object{}"}}]}},
        "autogen",
    ),
}  # fmt: skip


def older(name: str, versions: tuple[str, ...] | None) -> Obj:
    """The shipped CRD as an older release had it: without today's new field, serving only ``versions``
    (the first one stored)."""
    definition = copy.deepcopy(SHIPPED[name])
    _, new_field = OBJECTS[name]
    kept = [v for v in definition["spec"]["versions"] if versions is None or v["name"] in versions]
    for index, version in enumerate(kept):
        spec_schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
        if new_field is not None:
            spec_schema.get("properties", {}).pop(new_field, None)
        if versions is not None:
            version["storage"] = index == 0
    definition["spec"]["versions"] = kept
    return definition


def kubectl_apply(kubectl: Path, kubeconfig: Path, obj: Obj) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(kubectl), "apply", "-f", "-", "--kubeconfig", str(kubeconfig)],
        input=yaml.safe_dump(obj), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


ROWS = [
    (name, versions)
    for name in OBJECTS
    for versions in ((None, ("v1alpha1",)) if name.endswith("kyverno.io") else (None,))
]


@pytest.mark.parametrize(
    ("name", "versions"),
    ROWS,
    ids=[f"{n.split('.')[0]}: {'v1alpha1 only before' if v else 'a new field'}" for n, v in ROWS],
)
def test_stored_objects_stay_readable_through_every_served_version_after_the_upgrade(
    tmp_path: Path, name: str, versions: tuple[str, ...] | None
) -> None:
    obj, _ = OBJECTS[name]
    stored = copy.deepcopy(obj)
    old = older(name, versions)
    stored["apiVersion"] = f"{old['spec']['group']}/{old['spec']['versions'][0]['name']}"
    with FakeApiServer() as fake:
        kubeconfig = fake.kubeconfig(tmp_path / "kubeconfig")
        kubectl = helm_tool.kubectl_binary()
        assert kubectl_apply(kubectl, kubeconfig, old).returncode == 0
        assert kubectl_apply(kubectl, kubeconfig, stored).returncode == 0
        upgrade = kubectl_apply(kubectl, kubeconfig, SHIPPED[name])
        assert upgrade.returncode == 0, upgrade.stderr
        crd = fake.store.get("customresourcedefinitions", name)
        listed = [v["name"] for v in crd["spec"]["versions"]]
        assert set(crd["status"]["storedVersions"]) <= set(listed)
        api = kubernetes.client.CustomObjectsApi(fake.api_client())
        group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
        meta = stored["metadata"]
        for version in (v["name"] for v in crd["spec"]["versions"] if v.get("served")):
            if "namespace" in meta:
                read = api.get_namespaced_custom_object(group, version, meta["namespace"], plural, meta["name"])
            else:
                read = api.get_cluster_custom_object(group, version, plural, meta["name"])
            assert read["apiVersion"] == f"{group}/{version}" and read["spec"] == stored["spec"], version
            # valid under today's schema as stored: an update of it is not refused for a field it lacks
            assert validate(crd, {**stored, "apiVersion": f"{group}/{version}"}) == [], version


def test_a_crd_that_drops_a_stored_version_is_refused(tmp_path: Path) -> None:
    """What the rows rely on: the server keeps every version objects may be stored at."""
    name = "mutatingpolicies.policies.kyverno.io"
    with FakeApiServer() as fake:
        kubeconfig = fake.kubeconfig(tmp_path / "kubeconfig")
        kubectl = helm_tool.kubectl_binary()
        assert kubectl_apply(kubectl, kubeconfig, older(name, ("v1alpha1",))).returncode == 0
        without = copy.deepcopy(SHIPPED[name])
        without["spec"]["versions"] = [v for v in without["spec"]["versions"] if v["name"] != "v1alpha1"]
        refused = kubectl_apply(kubectl, kubeconfig, without)
        assert refused.returncode != 0 and "must appear in spec.versions" in refused.stderr
