"""The offline cluster's lists: indexed by namespace and label, they answer what a scan of every stored
object answers, in the API server's order (namespace, then name); and ``resource.List`` reads them
without a copy (``list_values``) yet sees exactly what a copy would show, each object in CEL's value
form, rebuilt when the object is replaced."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from celmut.cel.libs.kyverno.json import to_cel_value
from celmut.cel.values import Timestamp
from celmut.service.static_resources import StaticResources

NAMESPACES = ("", "default", "shop")
LABELS = st.dictionaries(
    st.sampled_from(["app", "tier", "pod-template-hash"]),
    st.one_of(st.sampled_from(["web", "db", "1"]), st.just(1)),  # an int label never matches a selector's "1"
    max_size=3,
)
OBJECTS = st.builds(
    lambda kind, namespace, name, labels: {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name, **({"namespace": namespace} if namespace else {}), "labels": labels},
    },
    st.sampled_from(["Pod", "Namespace"]),  # namespaced, and cluster-scoped
    st.sampled_from(NAMESPACES),
    st.sampled_from(["a", "b", "c", "b-0", "a0"]),
    LABELS,
)
SELECTORS = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(["app", "tier", "missing"]), st.sampled_from(["web", "db", "1"]), max_size=2),
)


def scanned(objects: list[dict[str, Any]], kind: str, namespace: str, labels: dict[str, str] | None) -> list[str]:
    """What listing answers by its definition: the latest version of each (namespace, name), those of the
    namespace (an object written without one is in "default" when its kind is namespaced, as kubectl
    assumes), carrying every label, sorted by namespace then name."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for obj in objects:
        if obj["kind"] == kind:
            latest[(obj["metadata"].get("namespace", ""), obj["metadata"]["name"])] = obj
    found = [
        (stored_namespace, name)
        for (stored_namespace, name), obj in latest.items()
        if not namespace
        or stored_namespace == namespace
        or (not stored_namespace and namespace == "default" and kind == "Pod")
        if all(obj["metadata"]["labels"].get(k) == v for k, v in (labels or {}).items())
    ]
    return [f"{ns}/{name}" for ns, name in sorted(found)]


def names(listed: dict[str, Any]) -> list[str]:
    return [f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in listed["items"]]


@settings(max_examples=300, deadline=None)
@given(
    objects=st.lists(OBJECTS, max_size=12),
    kind=st.sampled_from(["Pod", "Namespace"]),
    namespace=st.sampled_from(NAMESPACES),
    labels=SELECTORS,
)
def test_an_indexed_list_answers_what_a_scan_answers(
    objects: list[dict[str, Any]], kind: str, namespace: str, labels: dict[str, str] | None
) -> None:
    store = StaticResources()
    for obj in objects:  # upserts: an object may come back with other labels, and must leave its old ones
        store.put(obj)
    resource = "pods" if kind == "Pod" else "namespaces"
    listed = store.list("v1", resource, namespace, labels)
    assert names(listed) == scanned(objects, kind, namespace, labels)
    assert store.list_values("v1", resource, namespace, labels) == to_cel_value(listed)


def pod(name: str, labels: dict[str, str], **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "shop", "labels": labels,
                                                              **metadata}}  # fmt: skip


def test_resource_list_reads_the_stored_objects_themselves() -> None:
    """What an offline run admits is kept as it is (``keep``) and nothing edits it: a list costs the
    objects it selects, not a copy of each (every pod of a workload lists the pods before it)."""
    store = StaticResources()
    kept = [pod(f"web-{i}", {"pod-template-hash": "5d8f7c"}) for i in range(3)]
    for obj in kept:
        store.keep(obj)
    store.keep(pod("db-0", {"pod-template-hash": "7b9c"}))
    shared = store.list_values("v1", "pods", "shop", {"pod-template-hash": "5d8f7c"})["items"]
    assert [a is b for a, b in zip(shared, kept, strict=True)] == [True, True, True]
    copied = store.list("v1", "pods", "shop", {"pod-template-hash": "5d8f7c"})["items"]
    assert copied == kept and not any(a is b for a, b in zip(copied, kept, strict=True))  # other readers: copies


def test_an_object_not_in_cel_form_is_converted_once_per_version() -> None:
    """A YAML file's unquoted timestamp is a datetime, which CEL sees as a timestamp (as to_cel_value
    makes it): converted on the first read, reused, made again when the object is replaced."""
    created = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)
    store = StaticResources([pod("web-0", {"app": "web"}, creationTimestamp=created)])
    (first,) = store.list_values("v1", "pods", "shop")["items"]
    assert first["metadata"]["creationTimestamp"] == Timestamp.from_datetime(created)
    (again,) = store.list_values("v1", "pods", "shop")["items"]
    assert again is first
    store.put(pod("web-0", {"app": "db"}, creationTimestamp=created))
    (replaced,) = store.list_values("v1", "pods", "shop")["items"]
    assert replaced is not first and replaced["metadata"]["labels"] == {"app": "db"}
    assert store.list_values("v1", "pods", "shop", {"app": "web"})["items"] == []  # it left its old label


@pytest.mark.parametrize(
    ("namespace", "expected"),
    [
        ("shop", ["shop/web-0", "shop/web-1"]),
        ("shop-2", ["shop-2/web-0"]),  # a namespace that extends another's name is not within it
        ("default", ["/bare", "default/web-0"]),  # written without a namespace: "default", as kubectl assumes
        ("", ["/bare", "default/web-0", "shop/web-0", "shop/web-1", "shop-2/web-0"]),
    ],
)
def test_a_namespace_lists_its_own_objects_in_name_order(namespace: str, expected: list[str]) -> None:
    store = StaticResources()
    for ns, name in [("shop", "web-1"), ("shop-2", "web-0"), ("", "bare"), ("shop", "web-0"), ("default", "web-0")]:
        store.add({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **({"namespace": ns} if ns else {})}})
    assert names(store.list("v1", "pods", namespace)) == expected
    assert names(store.list_values("v1", "pods", namespace)) == expected
