"""``image.GetMetadata`` and ``globalContext.Get`` offline (celmut.service.offline_context), through
a real policy admitted by the OfflineCluster: image data by exact reference, a Context file's
per-projection values, a Test's JMESPath mocks, and GlobalContextEntry objects whose kubernetesResource
list or apiCall urlPath is read from the cluster resources. Messages are the Kyverno CLI's
(``pkg/cel/libs`` FakeContextProvider)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from celmut.errors import ConfigurationError
from celmut.service.offline import OfflineCluster
from celmut.service.offline_context import (
    ContextFileEntry,
    MockEntry,
    StaticGlobalContext,
    StaticImages,
    api_get,
    compile_path,
)
from celmut.service.static_resources import StaticResources
from celmut.sources.documents import Document
from tests.runtime.helpers import jsonpatch, mpol, pod


def label_policy(expression: str) -> list[Document]:
    """A policy that writes ``string(<expression>)`` into the label ``out``."""
    patch = f'[JSONPatch{{op: "add", path: "/metadata/labels/out", value: string({expression})}}]'
    return [Document("policy.yaml", 0, yaml.safe_load(mpol("p", jsonpatch(patch))))]


def admitted_label(offline: OfflineCluster) -> str:
    [run] = offline.admit([pod()])
    assert run.result.allowed and not run.result.errored, run.result.outcomes
    assert run.result.object is not None
    return str(run.result.object["metadata"]["labels"]["out"])


def outcome_reason(offline: OfflineCluster) -> str:
    [run] = offline.admit([pod()])
    [outcome] = run.result.outcomes
    assert outcome.status == "error"
    return outcome.reason


CONFIGMAPS = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "namespace": ns, "labels": {"team": t}}}
    for n, ns, t in (("a", "shop", "red"), ("b", "shop", "blue"), ("c", "infra", "red"))
]


def cluster_docs(*objects: dict[str, Any]) -> list[Document]:
    return [Document("cluster.yaml", i, o) for i, o in enumerate([*CONFIGMAPS, *objects])]


def gce(spec: dict[str, Any], name: str = "maps", version: str = "v2alpha1") -> dict[str, Any]:
    return {"apiVersion": f"kyverno.io/{version}", "kind": "GlobalContextEntry", "metadata": {"name": name}, "spec": spec}


# --- images ------------------------------------------------------------------------------------------


def test_image_metadata_comes_from_the_context_images_by_exact_reference() -> None:
    images = StaticImages([{"image": "nginx:1.21", "config": {"architecture": "amd64"}}])
    offline = OfflineCluster.build(
        label_policy('image.GetMetadata("nginx:1.21").config.architecture'), images=images
    )
    assert admitted_label(offline) == "amd64"


def test_image_metadata_has_kyvernos_always_present_fields() -> None:
    images = StaticImages([{"image": "nginx:1.21"}])
    assert images.get_metadata("nginx:1.21") == {"image": "nginx:1.21", "resolvedImage": "", "registry": "", "repository": ""}


def test_a_missing_image_names_the_available_ones_as_kyverno_does() -> None:
    images = StaticImages([{"image": "nginx:1.21"}, {"image": "busybox"}])
    offline = OfflineCluster.build(label_policy('image.GetMetadata("nginx:latest")'), images=images)
    assert (
        "image data for nginx:latest not found in the context - available images: [busybox nginx:1.21]. "
        "Add the missing image data to your context file"
    ) in outcome_reason(offline)


def test_without_a_context_an_image_lookup_says_where_image_data_goes() -> None:
    offline = OfflineCluster.build(label_policy('image.GetMetadata("nginx")'))
    assert "Add the missing image data to your context file" in outcome_reason(offline)


# --- global context: Context file and Test mocks --------------------------------------------------------


def test_context_file_values_per_projection_fall_back_to_the_empty_projection() -> None:
    entry = ContextFileEntry("teams", {"": {"all": 3}, "names": ["red", "blue"]})
    served = StaticGlobalContext({"teams": entry})
    assert served.get("teams") == {"all": 3}
    assert served.get("teams", "names") == ["red", "blue"]
    assert served.get("teams", "other") == {"all": 3}  # Kyverno: entry[projection], else entry[""]
    assert served.get("nobody") is None  # a missing entry is null


def test_context_file_missing_projection_without_fallback_names_the_projections() -> None:
    offline = OfflineCluster.build(
        label_policy('globalContext.Get("teams", "count")'),
        global_context=StaticGlobalContext({"teams": ContextFileEntry("teams", {"names": ["red"]})}),
    )
    assert 'global context entry "teams" projection "count" not found - available projections: [names]' in (
        outcome_reason(offline)
    )


def test_test_mocks_apply_field_path_then_jmespath_projections() -> None:
    entry = MockEntry(
        "deployments",
        {"items": [{"name": "a", "replicas": 2}, {"name": "b", "replicas": 3}]},
        field_path=compile_path("items", "fieldPath"),
        projections={"names": compile_path("[*].name", "p0"), "total": compile_path("sum([*].replicas)", "p1")},
    )
    offline = OfflineCluster.build(
        label_policy('globalContext.Get("deployments", "total")'),
        global_context=StaticGlobalContext({"deployments": entry}),
    )
    assert admitted_label(offline) == "5"
    assert entry.get("") == {"names": ["a", "b"], "total": 5}


def test_an_invalid_jmespath_is_bad_input_naming_the_field() -> None:
    with pytest.raises(ConfigurationError, match=r"globalContextEntries\[0\].projections\[0\].path: invalid JMESPath"):
        compile_path("[*.name", "globalContextEntries[0].projections[0].path")


# --- GlobalContextEntry objects served from the cluster resources ---------------------------------------


def test_a_kubernetes_resource_entry_lists_the_cluster_objects_with_projections() -> None:
    entry = gce(
        {
            "kubernetesResource": {"group": "", "version": "v1", "resource": "configmaps", "namespace": "shop"},
            "projections": [{"name": "names", "jmesPath": "[*].metadata.name"}],
        }
    )
    offline = OfflineCluster.build(
        label_policy('globalContext.Get("maps", "names").join("-")'), cluster_docs(entry)
    )
    assert admitted_label(offline) == "a-b"


@pytest.mark.parametrize("version", ["v2alpha1", "v2"])
def test_an_api_call_entry_reads_its_url_path_from_the_cluster(version: str) -> None:
    entry = gce({"apiCall": {"urlPath": "/api/v1/configmaps?labelSelector=team=red", "method": "GET"}}, version=version)
    offline = OfflineCluster.build(
        label_policy('globalContext.Get("maps", "").items.map(i, i.metadata.name).join("-")'), cluster_docs(entry)
    )
    assert admitted_label(offline) == "c-a"  # listed by namespace, then name, as the API server does


def test_an_entry_sees_objects_admitted_before_it_is_read() -> None:
    entry = gce({"kubernetesResource": {"version": "v1", "resource": "pods", "namespace": "default"}})
    offline = OfflineCluster.build(label_policy('size(globalContext.Get("maps", ""))'), cluster_docs(entry))
    first, second = offline.admit([pod("one"), pod("two")])
    assert first.result.object is not None and second.result.object is not None
    assert first.result.object["metadata"]["labels"]["out"] == "0"
    assert second.result.object["metadata"]["labels"]["out"] == "1"


def test_test_mocks_win_over_an_entry_object_of_the_same_name() -> None:
    entry = gce({"kubernetesResource": {"version": "v1", "resource": "configmaps"}})
    offline = OfflineCluster.build(
        label_policy('globalContext.Get("maps", "")'),
        cluster_docs(entry),
        global_context=StaticGlobalContext({"maps": MockEntry("maps", "mocked")}),
    )
    assert admitted_label(offline) == "mocked"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"apiCall": {"service": {"url": "https://x"}}}, "only a urlPath into the cluster resources is served"),
        ({"apiCall": {"urlPath": "/api/v1/pods", "method": "POST"}}, "only GET is served offline, not POST"),
        ({"projections": []}, "spec needs kubernetesResource"),
        (
            {"kubernetesResource": {"version": "v1", "resource": "pods"}, "projections": [{"name": "x", "jmesPath": "[*"}]},
            "spec.projections[0].jmesPath: invalid JMESPath",
        ),
    ],
)
def test_an_entry_that_cannot_be_served_offline_is_bad_input_naming_it(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        OfflineCluster.build(label_policy("1"), cluster_docs(gce(spec)))
    assert "cluster.yaml#3: GlobalContextEntry maps" in str(raised.value) and message in str(raised.value)


def test_api_paths_map_to_gets_and_lists() -> None:
    cluster = StaticResources([*CONFIGMAPS, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}])
    assert [i["metadata"]["name"] for i in api_get(cluster, "/api/v1/namespaces/shop/configmaps")["items"]] == ["a", "b"]
    assert api_get(cluster, "/api/v1/namespaces/shop/configmaps/b")["metadata"]["name"] == "b"
    assert api_get(cluster, "/api/v1/namespaces/shop")["kind"] == "Namespace"
    assert len(api_get(cluster, "/api/v1/configmaps")["items"]) == 3
