"""Kyverno's resource library (kyverno/sdk ``extensions/cel/libs/resource``): Kubernetes objects.

Every call goes to :attr:`Services.resources <celmut.cel.lookups.Services>`; without one it fails
with :class:`~celmut.cel.lookups.LookupUnavailable`, except in an admission engine without a cluster
(:attr:`Services.null_without_resources <celmut.cel.lookups.Services>`), where ``resource.Get`` and
``resource.List`` answer ``null``. PascalCase names have camelCase aliases (``resource.Get`` /
``resource.get``).

resource.Get(<string> apiVersion, <string> resource, <string> namespace, <string> name) -> <map(string, dyn)>
resource.Get(<GVR>, <string> namespace, <string> name) -> <map(string, dyn)>

    One object, or ``null`` when it does not exist (Kyverno turns NotFound into null: kyverno/sdk
    ``extensions/cel/libs/resource/impl.go`` ``get_resource_string_string_string_string``).

        resource.Get("v1", "configmaps", "kube-system", "allowed-registry").data.registry

resource.List(<string> apiVersion, <string> resource, <string> namespace[, <map(string, string)> labels]) -> <map>
resource.List(<GVR>, <string> namespace[, <map(string, string)> labels]) -> <map(string, dyn)>

    A list object whose ``items`` are the matching objects (none: an empty list, not an error);
    namespace ``""`` lists all namespaces.

        resource.List("apps/v1", "deployments", "prod", {"app": "web"}).items.size()

resource.Post(<string> apiVersion, <string> resource[, <string> namespace], <map(string, dyn)> data) -> <map>

    Creates an object and returns it as stored.

        resource.Post("v1", "configmaps", "default", {"metadata": {"name": "x"}})

resource.ToGVR(<string> apiVersion, <string> kind) -> <schema.GroupVersionResource>

    The resource serving a kind (``resource.ToGVR("apps/v1", "Deployment")`` is apps/v1 deployments).

In a NamespacedMutatingPolicy (``Services.namespaced_policy_namespace`` set) Kyverno drops the
namespace argument: ``resource.Get(apiVersion, resource, name)``, ``resource.List(apiVersion,
resource[, labels])``, ``resource.Get(gvr, name)``, ``resource.List(gvr[, labels])`` and
``resource.Post(apiVersion, resource, data)`` use the policy's namespace. The forms that name a
namespace are refused there, so a namespaced policy cannot read other namespaces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError, describe
from celmut.cel.libs.kyverno.json import encoding_cost, to_cel_value
from celmut.cel.lookups import LookupFailed, LookupUnavailable, ResourceLookup
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("kyverno.resource")
fn = LIBRARY.function

_OBJECT = "map(string, dyn)"
_LABELS = "map(string, string)"


@LIBRARY.opaque("schema.GroupVersionResource")
class GroupVersionResource:
    """A resource of an API group version (Kyverno's ``schema.GroupVersionResource``)."""

    __slots__ = ("group", "resource", "version")

    def __init__(self, group: str, version: str, resource: str) -> None:
        self.group, self.version, self.resource = group, version, resource

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GroupVersionResource):
            return NotImplemented
        return (self.group, self.version, self.resource) == (other.group, other.version, other.resource)

    def __hash__(self) -> int:
        return hash((self.group, self.version, self.resource))

    def __repr__(self) -> str:
        return f"{self.api_version}, Resource={self.resource}"

    def to_plain(self) -> dict[str, str]:
        return {"Group": self.group, "Version": self.version, "Resource": self.resource}


def _call(function: str, *args: Any) -> str:
    shown = ", ".join(describe(a) if isinstance(a, str) else f"<{type(a).__name__}>" for a in args)
    return f"{function}({shown})"


def _provider(ctx: Any, function: str) -> ResourceLookup:
    resources: ResourceLookup | None = ctx.services.resources
    if resources is None:
        raise LookupUnavailable(f"{function}: no cluster resource lookup is configured (resource.* needs a cluster)")
    return resources


def _reason(ex: Exception) -> str:
    reason = getattr(ex, "reason", None)
    if isinstance(reason, str) and reason in ("NotFound", "Forbidden", "Unauthorized"):
        return reason
    status = getattr(ex, "status", None)  # kubernetes.client ApiException
    return {404: "NotFound", 403: "Forbidden", 401: "Unauthorized"}.get(status, "") if isinstance(status, int) else ""


def _failure(call: str, verb: str, ex: Exception) -> LookupFailed:
    detail = ex.message if isinstance(ex, CelEvaluationError) else (str(ex) or type(ex).__name__)
    if _reason(ex) in ("Forbidden", "Unauthorized"):
        return LookupFailed(f"{call}: failed to {verb} resource: permission denied: {detail}")
    return LookupFailed(f"{call}: failed to {verb} resource: {detail}")


def _policy_namespace(ctx: Any, function: str) -> str:
    namespace: str | None = ctx.services.namespaced_policy_namespace
    if not namespace:
        raise CelEvaluationError(
            f"{function} without a namespace argument is only available in a NamespacedMutatingPolicy "
            "(no policy namespace is set); name the namespace explicitly"
        )
    return namespace


def _refuse_in_namespaced_policy(ctx: Any, function: str) -> None:
    if ctx.services.namespaced_policy_namespace:
        raise CelEvaluationError(
            f"{function}: a NamespacedMutatingPolicy may not name a namespace; omit the namespace argument "
            "to use the policy's namespace"
        )


def _check_strings(function: str, *args: Any) -> None:
    if not all(isinstance(a, str) for a in args):
        raise no_such_overload(function, *args)


def _labels(function: str, labels: Any) -> dict[str, str]:
    if not isinstance(labels, dict) or not all(isinstance(k, str) and isinstance(x, str) for k, x in labels.items()):
        raise CelEvaluationError(f"{function}: labels must be a map(string, string)")
    return labels


# --- the operations (shared by every overload) -------------------------------------------------------


def _nothing_without_a_cluster(ctx: Any) -> bool:
    """An admission engine with no cluster: Get and List answer null (see Services.null_without_resources)."""
    return ctx.services.resources is None and ctx.services.null_without_resources


def do_get(ctx: Any, function: str, api_version: Any, resource: Any, namespace: Any, name: Any) -> Any:
    _check_strings(function, api_version, resource, namespace, name)
    if _nothing_without_a_cluster(ctx):
        return None
    resources = _provider(ctx, function)
    try:
        return to_cel_value(resources.get(api_version, resource, namespace, name))
    except LookupUnavailable:
        raise
    except Exception as ex:  # a provider may fail in any way; report it as a lookup failure
        if _reason(ex) == "NotFound":
            return None
        raise _failure(_call(function, api_version, resource, namespace, name), "get", ex) from ex


def do_list(ctx: Any, function: str, api_version: Any, resource: Any, namespace: Any, labels: Any = None) -> Any:
    _check_strings(function, api_version, resource, namespace)
    selector = None if labels is None else _labels(function, labels)
    if _nothing_without_a_cluster(ctx):
        return None
    resources = _provider(ctx, function)
    try:
        shared: Callable[..., dict[str, Any]] | None = getattr(resources, "list_values", None)  # SharedListLookup
        if shared is not None:
            return shared(api_version, resource, namespace, selector)
        return to_cel_value(resources.list(api_version, resource, namespace, selector))
    except LookupUnavailable:
        raise
    except Exception as ex:
        raise _failure(_call(function, api_version, resource, namespace), "list", ex) from ex


def do_post(ctx: Any, function: str, api_version: Any, resource: Any, namespace: Any, data: Any) -> Any:
    _check_strings(function, api_version, resource, namespace)
    if not isinstance(data, dict):
        raise no_such_overload(function, api_version, resource, namespace, data)
    ctx.services.refuse_side_effects(function)
    resources = _provider(ctx, function)
    try:
        return to_cel_value(resources.post(api_version, resource, namespace, data))
    except LookupUnavailable:
        raise
    except Exception as ex:
        raise _failure(_call(function, api_version, resource, namespace), "create", ex) from ex


def _gvr(function: str, value: Any) -> GroupVersionResource:
    if not isinstance(value, GroupVersionResource):
        raise no_such_overload(function, value)
    return value


def _data_cost(*args: Any) -> int:
    return encoding_cost(args[-1])  # the object is encoded to be sent to the API server


def _declare(get: str, lst: str, post: str, to_gvr: str) -> None:
    """Declare every overload of Kyverno's ``resource`` library under the given names."""

    @fn(get, ("string", "string", "string", "string"), _OBJECT, context=True, pure=False)
    def get_cluster(ctx: Any, api_version: Any, resource: Any, namespace: Any, object_name: Any) -> Any:
        _refuse_in_namespaced_policy(ctx, get)
        return do_get(ctx, get, api_version, resource, namespace, object_name)

    @fn(get, ("schema.GroupVersionResource", "string", "string"), _OBJECT, context=True, pure=False)
    def get_gvr(ctx: Any, gvr: Any, namespace: Any, object_name: Any) -> Any:
        _refuse_in_namespaced_policy(ctx, get)
        g = _gvr(get, gvr)
        return do_get(ctx, get, g.api_version, g.resource, namespace, object_name)

    @fn(get, ("string", "string", "string"), _OBJECT, context=True, pure=False)
    def get_namespaced(ctx: Any, api_version: Any, resource: Any, object_name: Any) -> Any:
        return do_get(ctx, get, api_version, resource, _policy_namespace(ctx, get), object_name)

    @fn(get, ("schema.GroupVersionResource", "string"), _OBJECT, context=True, pure=False)
    def get_gvr_namespaced(ctx: Any, gvr: Any, object_name: Any) -> Any:
        g = _gvr(get, gvr)
        return do_get(ctx, get, g.api_version, g.resource, _policy_namespace(ctx, get), object_name)

    @fn(lst, ("string", "string", "string"), _OBJECT, context=True, pure=False)
    @fn(lst, ("string", "string", "string", _LABELS), _OBJECT, context=True, pure=False)
    def list_cluster(ctx: Any, api_version: Any, resource: Any, namespace: Any, labels: Any = None) -> Any:
        _refuse_in_namespaced_policy(ctx, lst)
        return do_list(ctx, lst, api_version, resource, namespace, labels)

    @fn(lst, ("schema.GroupVersionResource", "string"), _OBJECT, context=True, pure=False)
    @fn(lst, ("schema.GroupVersionResource", "string", _LABELS), _OBJECT, context=True, pure=False)
    def list_gvr(ctx: Any, gvr: Any, namespace: Any, labels: Any = None) -> Any:
        _refuse_in_namespaced_policy(ctx, lst)
        g = _gvr(lst, gvr)
        return do_list(ctx, lst, g.api_version, g.resource, namespace, labels)

    @fn(lst, ("string", "string"), _OBJECT, context=True, pure=False)
    @fn(lst, ("string", "string", _LABELS), _OBJECT, context=True, pure=False)
    def list_namespaced(ctx: Any, api_version: Any, resource: Any, labels: Any = None) -> Any:
        return do_list(ctx, lst, api_version, resource, _policy_namespace(ctx, lst), labels)

    @fn(lst, ("schema.GroupVersionResource",), _OBJECT, context=True, pure=False)
    @fn(lst, ("schema.GroupVersionResource", _LABELS), _OBJECT, context=True, pure=False)
    def list_gvr_namespaced(ctx: Any, gvr: Any, labels: Any = None) -> Any:
        g = _gvr(lst, gvr)
        return do_list(ctx, lst, g.api_version, g.resource, _policy_namespace(ctx, lst), labels)

    @fn(post, ("string", "string", "string", "map(string, dyn)"), _OBJECT, context=True, pure=False, cost=_data_cost)
    def post_cluster(ctx: Any, api_version: Any, resource: Any, namespace: Any, data: Any) -> Any:
        _refuse_in_namespaced_policy(ctx, post)
        return do_post(ctx, post, api_version, resource, namespace, data)

    @fn(post, ("string", "string", "map(string, dyn)"), _OBJECT, context=True, pure=False, cost=_data_cost)
    def post_implied(ctx: Any, api_version: Any, resource: Any, data: Any) -> Any:
        # cluster policy: a cluster-scoped create (namespace ""); namespaced policy: its namespace
        namespace = ctx.services.namespaced_policy_namespace or ""
        return do_post(ctx, post, api_version, resource, namespace, data)

    @fn(to_gvr, ("string", "string"), "schema.GroupVersionResource", context=True, pure=False)
    def convert_to_gvr(ctx: Any, api_version: Any, kind: Any) -> GroupVersionResource:
        _check_strings(to_gvr, api_version, kind)
        resources = _provider(ctx, to_gvr)
        try:
            plural = resources.resource_for_kind(api_version, kind)
        except Exception as ex:
            raise _failure(_call(to_gvr, api_version, kind), "map kind to", ex) from ex
        if not plural:
            raise LookupFailed(
                f'{to_gvr}: failed to map kind to resource: no matches for kind "{kind}" in version "{api_version}"'
            )
        group, _, version = api_version.rpartition("/")
        return GroupVersionResource(group, version, plural)


_declare("resource.Get", "resource.List", "resource.Post", "resource.ToGVR")
_declare("resource.get", "resource.list", "resource.post", "resource.toGVR")
