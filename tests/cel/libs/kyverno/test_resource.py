"""Kyverno's resource library: rows from kyverno/sdk ``extensions/cel/libs/resource/*_test.go`` and the
MutatingPolicy documentation, served by :class:`StaticResources` (an in-memory API server) or by fakes
of a cluster client at the provider seam."""

from __future__ import annotations

from typing import Any

import pytest

from celmut.cel import Activation, Environment, to_plain
from celmut.cel.lookups import LookupFailed, ResourceNotFound, Services
from celmut.service.static_resources import StaticResources, kind_to_resource
from tests.cel.helpers import Err, cases, check_case

OBJECTS: list[dict[str, Any]] = [
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "allowed-registry", "namespace": "kube-system"},
        "data": {"registry": "ghcr.io"},
    },
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "no-namespace"}, "data": {}},
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
    },
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "other", "namespace": "prod", "labels": {"app": "other", "tier": "web"}},
    },
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}},
]


def cluster() -> Services:
    return Services(resources=StaticResources(OBJECTS))


def namespaced(namespace: str = "default") -> Services:
    return Services(resources=StaticResources(OBJECTS), namespaced_policy_namespace=namespace)


CLUSTER_POLICY = [
    # the MutatingPolicy documentation's example
    ('resource.Get("v1", "configmaps", "kube-system", "allowed-registry").data[?"registry"].orValue("")', "ghcr.io"),
    ('resource.get("v1", "configmaps", "kube-system", "allowed-registry").data.registry', "ghcr.io"),
    # Kyverno turns NotFound into null (not_found_doesnt_error)
    ('resource.Get("v1", "configmaps", "kube-system", "missing")', None),
    ('dyn(resource.Get("v1", "configmaps", "default", "allowed-registry")) == null', True),
    # an object written without a namespace lives in "default", as kubectl assumes
    ('resource.Get("v1", "configmaps", "default", "no-namespace").metadata.name', "no-namespace"),
    ('resource.Get("v1", "namespaces", "", "prod").kind', "Namespace"),
    ('resource.list("apps/v1", "deployments", "default").items[0].kind', "Deployment"),
    ('resource.List("apps/v1", "deployments", "default").kind', "DeploymentList"),
    ('resource.List("apps/v1", "deployments", "").items.map(d, d.metadata.name)', ["nginx", "other"]),
    ('resource.List("apps/v1", "deployments", "", {"app": "nginx"}).items.map(d, d.metadata.name)', ["nginx"]),
    ('resource.list("apps/v1", "deployments", "", {"app": "other", "tier": "db"}).items', []),
    ('resource.List("batch/v1", "jobs", "default").items', []),
    ('resource.ToGVR("apps/v1", "Deployment")', {"Group": "apps", "Version": "v1", "Resource": "deployments"}),
    ('resource.toGVR("v1", "ConfigMap")', {"Group": "", "Version": "v1", "Resource": "configmaps"}),
    (
        'resource.ToGVR("networking.k8s.io/v1", "NetworkPolicy")',
        {"Group": "networking.k8s.io", "Version": "v1", "Resource": "networkpolicies"},
    ),
    ('resource.Get(resource.ToGVR("apps/v1", "Deployment"), "default", "nginx").metadata.name', "nginx"),
    ('resource.get(resource.ToGVR("apps/v1", "Deployment"), "default", "missing")', None),
    ('resource.List(resource.toGVR("v1", "ConfigMap"), "kube-system").items.size()', 1),
    ('resource.List(resource.ToGVR("apps/v1", "Deployment"), "", {"tier": "web"}).items[0].metadata.namespace', "prod"),
    ('type(resource.ToGVR("apps/v1", "Deployment")) == type(resource.ToGVR("v1", "Pod"))', True),
    # a namespaced form in a cluster policy: Kyverno has no such overload there
    (
        'resource.Get("v1", "configmaps", "allowed-registry")',
        Err("evaluation", "only available in a NamespacedMutatingPolicy"),
    ),
    ('resource.List("apps/v1", "deployments")', Err("evaluation", "only available in a NamespacedMutatingPolicy")),
    # type errors
    ('resource.Get("v1", 1, "default", "x")', Err("compile", "no matching overload")),
    ('resource.List("v1", "configmaps", "default", {"app": 1})', Err("compile", "no matching overload")),
    ('resource.Post("v1", "configmaps", "default", "data")', Err("compile", "no matching overload")),
    ('resource.Get(dyn(1), "configmaps", "default", "x")', Err("evaluation", "no such overload")),
    ('resource.ToGVR("example.com/v1", "")', Err("evaluation", 'no matches for kind "" in version "example.com/v1"')),
]

NAMESPACED_POLICY = [
    ('resource.Get("v1", "configmaps", "no-namespace").metadata.name', "no-namespace"),
    ('resource.get("v1", "configmaps", "allowed-registry")', None),
    ('resource.List("apps/v1", "deployments").items.map(d, d.metadata.name)', ["nginx"]),
    ('resource.list("apps/v1", "deployments", {"app": "other"}).items', []),
    ('resource.Get(resource.ToGVR("apps/v1", "Deployment"), "nginx").metadata.namespace', "default"),
    ('resource.List(resource.ToGVR("apps/v1", "Deployment")).items.size()', 1),
    ('resource.List(resource.ToGVR("apps/v1", "Deployment"), {"app": "nginx"}).items.size()', 1),
    # naming a namespace would escape the policy's namespace: refused
    (
        'resource.Get("v1", "configmaps", "kube-system", "allowed-registry")',
        Err("evaluation", "may not name a namespace"),
    ),
    ('resource.List("apps/v1", "deployments", "prod")', Err("evaluation", "may not name a namespace")),
    ('resource.List(resource.ToGVR("apps/v1", "Deployment"), "prod")', Err("evaluation", "may not name a namespace")),
    (
        'resource.Post("v1", "configmaps", "prod", {"metadata": {"name": "x"}})',
        Err("evaluation", "may not name a namespace"),
    ),
]

POST = [
    # Test_post_resource_string_string_string_map
    (
        'resource.post("apps/v1", "deployments", "default", {"apiVersion": dyn("apps/v1"), "kind": dyn("Deployment"),'
        ' "metadata": dyn({"name": "name", "namespace": "default"})}).metadata',
        {"name": "name", "namespace": "default"},
    ),
    ('resource.Post("v1", "configmaps", "default", {"metadata": {"name": "new"}}).metadata.namespace', "default"),
    # without a namespace argument a cluster policy creates a cluster-scoped object
    (
        'resource.Post("v1", "namespaces", {"kind": dyn("Namespace"), "metadata": dyn({"name": "team-a"})}).metadata',
        {"name": "team-a"},
    ),
    (
        'resource.Post("v1", "configmaps", "kube-system", {"metadata": {"name": "allowed-registry"}})',
        Err("evaluation", 'failed to create resource: configmaps "allowed-registry" already exists'),
    ),
    ('resource.Post("v1", "configmaps", "default", {"data": {}})', Err("evaluation", "name is required")),
]

KUBERNETES_PROFILE = [
    ('resource.Get("v1", "configmaps", "default", "x")', Err("compile", "undeclared reference to 'resource.Get'")),
    ('resource.List("v1", "configmaps", "default")', Err("compile", "only in the Kyverno")),
    ('resource.ToGVR("apps/v1", "Deployment")', Err("compile", "undeclared reference")),
    ('resource.post("v1", "configmaps", "default", {})', Err("compile", "undeclared reference")),
]


@cases(CLUSTER_POLICY)
def test_cluster_policy(expression: str, expected: Any) -> None:
    check_case(expression, expected, services=cluster())


@cases(NAMESPACED_POLICY)
def test_namespaced_policy(expression: str, expected: Any) -> None:
    check_case(expression, expected, services=namespaced())


@cases(POST)
def test_post(expression: str, expected: Any) -> None:
    check_case(expression, expected, services=cluster())


def test_post_in_namespaced_policy_uses_the_policy_namespace() -> None:
    services = namespaced("team-a")
    check_case(
        'resource.Post("v1", "configmaps", {"metadata": {"name": "x"}}).metadata.namespace', "team-a", services=services
    )
    check_case('resource.Get("v1", "configmaps", "x").metadata.name', "x", services=services)


@cases(KUBERNETES_PROFILE)
def test_kubernetes_profile_has_no_resource_library(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes")


@pytest.mark.parametrize(
    "expression",
    [
        'resource.Get("v1", "configmaps", "default", "x")',
        'resource.List("v1", "configmaps", "default")',
        'resource.Post("v1", "configmaps", "default", {"metadata": {"name": "x"}})',
        'resource.ToGVR("v1", "ConfigMap")',
    ],
)
def test_missing_provider(expression: str) -> None:
    check_case(expression, Err("evaluation", "no cluster resource lookup is configured"))


# An admission engine without a cluster (celmut.service.assembly.without_cluster): Get and List find
# nothing (null), so the placement presets fall back to names and hashes without an error; creating
# and mapping kinds still need a cluster.
NO_CLUSTER = [
    ('resource.Get("v1", "configmaps", "default", "x")', None),
    ('resource.List("v1", "pods", "default", {"a": "b"})', None),
    ('dyn(resource.List("apps/v1", "deployments", "default")) == null', True),
    ('resource.Post("v1", "configmaps", "default", {"metadata": {"name": "x"}})', Err("evaluation", "no cluster")),
    ('resource.ToGVR("v1", "ConfigMap")', Err("evaluation", "no cluster resource lookup is configured")),
]


@cases(NO_CLUSTER)
def test_an_engine_without_a_cluster_finds_nothing(expression: str, expected: Any) -> None:
    check_case(expression, expected, services=Services(null_without_resources=True))


# --- provider failures (fakes of a cluster client) --------------------------------------------------------


class Forbidden(Exception):
    reason = "Forbidden"


class FailingCluster:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def get(self, api_version: str, resource: str, namespace: str, name: str) -> dict[str, Any]:
        raise self.error

    def list(self, api_version: str, resource: str, namespace: str, labels: Any = None) -> dict[str, Any]:
        raise self.error

    def post(self, api_version: str, resource: str, namespace: str, data: dict[str, Any]) -> dict[str, Any]:
        raise self.error

    def resource_for_kind(self, api_version: str, kind: str) -> str | None:
        return None


FAILURES = [
    (
        RuntimeError("connection reset"),
        'resource.Get("v1", "pods", "default", "x")',
        "failed to get resource: connection reset",
    ),
    (
        RuntimeError("connection reset"),
        'resource.List("v1", "pods", "default")',
        "failed to list resource: connection reset",
    ),
    (RuntimeError("timeout"), 'resource.Post("v1", "pods", "default", {})', "failed to create resource: timeout"),
    (Forbidden("User cannot list resource"), 'resource.list("apps/v1", "deployments", "default")', "permission denied"),
    (
        Forbidden("User cannot get resource"),
        'resource.get("apps/v1", "deployments", "default", "x")',
        "permission denied",
    ),
    (LookupFailed("etcd unavailable"), 'resource.Get("v1", "pods", "default", "x")', "etcd unavailable"),
    (
        RuntimeError("x"),
        'resource.ToGVR("example.com/v1", "Widget")',
        'no matches for kind "Widget" in version "example.com/v1"',
    ),
]


@pytest.mark.parametrize(("error", "expression", "fragment"), FAILURES)
def test_provider_failures_name_the_call(error: Exception, expression: str, fragment: str) -> None:
    services = Services(resources=FailingCluster(error))
    check_case(expression, Err("evaluation", fragment), services=services)
    check_case(expression, Err("evaluation", expression.split("(", 1)[0]), services=services)


def test_not_found_from_any_provider_is_null() -> None:
    check_case(
        'resource.Get("v1", "pods", "default", "x")',
        None,
        services=Services(resources=FailingCluster(ResourceNotFound("x"))),
    )


def test_kubernetes_client_api_exceptions_are_understood() -> None:
    from kubernetes.client.exceptions import ApiException

    missing = Services(resources=FailingCluster(ApiException(status=404, reason="Not Found")))
    check_case('resource.Get("v1", "pods", "default", "x")', None, services=missing)
    forbidden = Services(resources=FailingCluster(ApiException(status=403, reason="Forbidden")))
    check_case('resource.Get("v1", "pods", "default", "x")', Err("evaluation", "permission denied"), services=forbidden)


def test_results_are_copies() -> None:
    store = StaticResources(OBJECTS)
    program = Environment("kyverno").compile('resource.Get("v1", "configmaps", "kube-system", "allowed-registry")')
    result = program.evaluate(Activation(services=Services(resources=store)))
    result["data"]["registry"] = "changed"
    assert store.get("v1", "configmaps", "kube-system", "allowed-registry")["data"]["registry"] == "ghcr.io"
    assert to_plain(result)["kind"] == "ConfigMap"


# --- StaticResources ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "resource"),
    [
        ("Pod", "pods"),
        ("ConfigMap", "configmaps"),
        ("Ingress", "ingresses"),
        ("NetworkPolicy", "networkpolicies"),
        ("PriorityClass", "priorityclasses"),
        ("Endpoints", "endpoints"),
        ("EndpointSlice", "endpointslices"),
        ("ComponentStatus", "componentstatuses"),
        ("Gateway", "gateways"),
        ("MutatingPolicy", "mutatingpolicies"),
    ],
)
def test_kind_to_resource(kind: str, resource: str) -> None:
    assert kind_to_resource(kind) == resource


def test_static_resources_not_found_messages_match_the_api_server() -> None:
    store = StaticResources(OBJECTS)
    with pytest.raises(ResourceNotFound, match=r'^configmaps "x" not found$'):
        store.get("v1", "configmaps", "default", "x")
    with pytest.raises(ResourceNotFound, match=r'^deployments\.apps "x" not found$'):
        store.get("apps/v1", "deployments", "default", "x")
    assert isinstance(ResourceNotFound("x"), LookupFailed)


def test_static_resources_flattens_lists_and_honours_plural_overrides() -> None:
    store = StaticResources(
        [
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [{"apiVersion": "example.com/v1", "kind": "Moose", "metadata": {"name": "m"}}],
            }
        ],
        plurals={"Moose.example.com": "moose"},
    )
    assert store.get("example.com/v1", "moose", "", "m")["kind"] == "Moose"
    assert store.resource_for_kind("example.com/v1", "Moose") == "moose"
    assert [o["metadata"]["name"] for o in store.list("example.com/v1", "moose", "")["items"]] == ["m"]


def test_a_dry_run_request_cannot_post() -> None:
    from celmut.cel import Activation, Environment

    program = Environment("kyverno").compile(
        'resource.Post("v1", "configmaps", "default", {"metadata": {"name": "new"}})'
    )
    store = StaticResources(OBJECTS)
    with pytest.raises(LookupFailed, match="not allowed for a dry-run request"):
        program.evaluate(Activation(services=Services(resources=store, dry_run=True)))
    with pytest.raises(ResourceNotFound):
        store.get("v1", "configmaps", "default", "new")
