"""One engine behind every surface: the webhook (a real HTTPS server, ``--from-cluster``), the
controller (its policy store) and the CLI (``celmut apply``) assemble their admission engine through
:func:`celmut.service.assembly.assemble_engine`, so the same policies and cluster objects give the
same objects. The cases need what differed between the surfaces before: a CRD-defined kind whose
list is merged by key (the schema comes from the cluster's CRD, or from ``--cluster-resources``), a
``resource.Get`` lookup, and a MutatingAdmissionPolicy with its binding."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from celmut.controller.run import Controller, ControllerConfig
from celmut.kube.client import Cluster
from celmut.main import main
from celmut.runtime import AdmissionInput
from celmut.service.settings import ServiceSettings
from tests.fakekube import FakeApiServer
from tests.fakekube_tests.manifests import structural_widget_crd
from tests.server.support import admission_request, decoded_patch, running_server

WIDGET_CRD: dict[str, Any] = structural_widget_crd(
    {
        "ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
            },
        }
    }
)
CLUSTER: list[dict[str, Any]] = [
    WIDGET_CRD,
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"tier": "gold"}}},
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "teams", "namespace": "shop"},
        "data": {"owner": "payments"},
    },
]
POLICIES = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: widget-http-port}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}]
  mutations:
    - patchType: ApplyConfiguration
      applyConfiguration:
        expression: 'Object{spec: Object.spec{ports: [Object.spec.ports{name: "http", port: 8080}]}}'
---
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: owner-from-configmap}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  variables:
    - {name: owner, expression: 'resource.Get("v1", "configmaps", object.metadata.namespace, "teams").data.owner'}
  mutations:
    - patchType: ApplyConfiguration
      applyConfiguration:
        expression: 'Object{metadata: Object.metadata{labels: {"owner": variables.owner}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: tier-annotation}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: >
          [JSONPatch{op: "add", path: "/metadata/annotations",
                     value: {"tier": namespaceObject.metadata.labels["tier"]}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: tier-annotation}
spec: {policyName: tier-annotation}
"""
WIDGET = {
    "apiVersion": "example.com/v1",
    "kind": "Widget",
    "metadata": {"name": "w", "namespace": "shop"},
    "spec": {"ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]},
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {"containers": [{"name": "app", "image": "nginx"}]},
}
EXPECTED = {
    "Widget": {**WIDGET, "spec": {"ports": [{"name": "http", "port": 8080}, {"name": "metrics", "port": 9090}]}},
    "Pod": {
        **POD,
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "labels": {"owner": "payments"},
            "annotations": {"tier": "gold"},
        },
    },
}
RESOURCES = {"Widget": ("example.com", "v1", "widgets"), "Pod": ("", "v1", "pods")}


@pytest.fixture
def cluster_files(fake_apiserver: FakeApiServer, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """The same cluster twice: in the fake API server, and as files for the CLI; plus the policies."""
    for obj in CLUSTER:
        fake_apiserver.store.create(obj)
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(CLUSTER))
    (tmp_path / "policies.yaml").write_text(POLICIES)
    yield tmp_path / "policies.yaml", tmp_path / "cluster.yaml"


def through_the_cli(policies: Path, cluster: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    (tmp_path / "resources.yaml").write_text(yaml.safe_dump_all([WIDGET, POD]))
    out = io.StringIO()
    with redirect_stdout(out):
        resources = str(tmp_path / "resources.yaml")
        code = main(["apply", str(policies), "-r", resources, "--cluster-resources", str(cluster), "-o", "json"])
    assert code == 0
    listed = json.loads(out.getvalue())
    assert listed["apiVersion"] == "v1" and listed["kind"] == "List"
    return {obj["kind"]: obj for obj in listed["items"]}


def through_the_webhook(policies: Path, kubeconfig: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    results = {}
    with running_server(tmp_path, [str(policies)], from_cluster=True, kubeconfig=str(kubeconfig)) as server:
        engine = server.store.engine
        assert engine is not None and engine.options.schemas.for_kind("example.com/v1", "Widget") is not None
        for obj in (WIDGET, POD):
            group, version, resource = RESOURCES[obj["kind"]]
            gvr = {"group": group, "version": version, "resource": resource}
            gvk = {"group": group, "version": version, "kind": obj["kind"]}
            request = admission_request(obj, kind=gvk, resource=gvr, requestKind=gvk, requestResource=gvr)
            results[obj["kind"]] = jsonpatch.apply_patch(obj, decoded_patch(server.review(request)))
    return results


def through_the_controller(policies: Path, kubeconfig: Path) -> dict[str, dict[str, Any]]:
    cluster = Cluster.connect(str(kubeconfig))
    controller = Controller(
        ControllerConfig(ServiceSettings(policy_paths=(str(policies),), from_cluster=True)), cluster
    )
    try:
        controller.policy_source.start()  # type: ignore[union-attr]
        controller.policy_source.wait_synced(10)  # type: ignore[union-attr]
        controller.reload(force=True)
        engine = controller.store.engine
        assert engine is not None
        return {obj["kind"]: engine.admit(AdmissionInput.from_object(obj)).object for obj in (WIDGET, POD)}
    finally:
        controller.stop()
        cluster.close()


def test_the_webhook_the_controller_and_the_cli_give_the_same_objects(
    cluster_files: tuple[Path, Path], fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    policies, cluster = cluster_files
    kubeconfig = fake_apiserver.kubeconfig(tmp_path / "kubeconfig")
    cli = through_the_cli(policies, cluster, tmp_path)
    webhook = through_the_webhook(policies, kubeconfig, tmp_path)
    controller = through_the_controller(policies, kubeconfig)
    assert cli == EXPECTED  # the CRD's list-map keys merged the ports by name, not replaced the list
    assert webhook == EXPECTED
    assert controller == EXPECTED
