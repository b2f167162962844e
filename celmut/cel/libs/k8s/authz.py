"""Kubernetes' authorization library (``kubernetes.authz`` and ``kubernetes.authzSelectors``,
k8s.io/apiserver/pkg/cel/library/authz.go): checks against the cluster's authorizer.

A MutatingAdmissionPolicy sees the variables ``authorizer`` (checks for the requesting user) and
``authorizer.requestResource`` (a ResourceCheck for the request's group, resource, subresource,
namespace and name). Kyverno's MutatingPolicy compiler declares no ``authorizer``
(``HasAuthorizer: false``), so there the variables do not exist.

<Authorizer>.path(<string>) -> PathCheck                    ("path must not be empty")
<Authorizer>.group(<string>) -> GroupCheck
<Authorizer>.serviceAccount(<string> namespace, <string> name) -> Authorizer
<GroupCheck>.resource(<string>) -> ResourceCheck            ("resource must not be empty")
<ResourceCheck>.subresource|namespace|name(<string>) -> ResourceCheck
<ResourceCheck>.fieldSelector|labelSelector(<string>) -> ResourceCheck   (authzSelectors, 1.31+)
<PathCheck>.check(<string> verb) -> Decision,  <ResourceCheck>.check(<string> verb) -> Decision
<Decision>.allowed() -> bool,  .reason() -> string,  .errored() -> bool,  .error() -> string

    authorizer.group('').resource('pods').namespace('default').check('create').allowed()
    authorizer.requestResource.check('update').allowed()
    authorizer.serviceAccount('default', 'builder').path('/healthz').check('get').allowed()

Each ``check`` asks :attr:`Services.authorizer <celmut.cel.lookups.Services>` (a
SubjectAccessReview in the cluster, ``--authorizer`` offline); without one it fails, saying so — it is
never silently allowed. An authorizer error is not a CEL error: it is the Decision's ``error()``, as in
Kubernetes. Decisions are cached per request and at most :data:`MAX_CHECKS_PER_REQUEST` distinct
checks are asked per request. Cost: a check costs 350000 (``library/cost.go``: two checks per
expression), every other function 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.lookups import AuthorizationAttributes, AuthorizationDecision, LookupUnavailable, UserInfo
from celmut.cel.values import no_such_overload
from celmut.names import is_dns_label, is_dns_subdomain

LIBRARY: Library = Library("kubernetes.authz")
method = LIBRARY.method

AUTHORIZER = "kubernetes.authorization.Authorizer"
PATH_CHECK = "kubernetes.authorization.PathCheck"
GROUP_CHECK = "kubernetes.authorization.GroupCheck"
RESOURCE_CHECK = "kubernetes.authorization.ResourceCheck"
DECISION = "kubernetes.authorization.Decision"
CHECK_COST = 350_000  # k8s.io/apiserver/pkg/cel/library/cost.go: "check"
MAX_CHECKS_PER_REQUEST = 32
UNAVAILABLE = (
    "no authorizer is configured: offline, pass --authorizer allow|deny|FILE (checks are never silently allowed)"
)


@dataclass
class RequestChecks:
    """The decisions of one request, shared by every check value derived from its ``authorizer``."""

    decisions: dict[AuthorizationAttributes, AuthorizationDecision] = field(default_factory=dict)


@LIBRARY.opaque(AUTHORIZER)
@dataclass(frozen=True, eq=False)
class Authorizer:
    user: UserInfo
    checks: RequestChecks


@LIBRARY.opaque(PATH_CHECK)
@dataclass(frozen=True, eq=False)
class PathCheck:
    authorizer: Authorizer
    path: str


@LIBRARY.opaque(GROUP_CHECK)
@dataclass(frozen=True, eq=False)
class GroupCheck:
    authorizer: Authorizer
    group: str


@LIBRARY.opaque(RESOURCE_CHECK)
@dataclass(frozen=True, eq=False)
class ResourceCheck:
    authorizer: Authorizer
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    field_selector: str = ""
    label_selector: str = ""


@LIBRARY.opaque(DECISION)
@dataclass(frozen=True, eq=False)
class Decision:
    result: AuthorizationDecision


def user_from_request(request: Mapping[str, Any]) -> UserInfo:
    """The requesting user of an AdmissionRequest (``request.userInfo``)."""
    info = request.get("userInfo") or {}
    extra = info.get("extra") or {}
    return UserInfo(
        username=str(info.get("username") or ""),
        uid=str(info.get("uid") or ""),
        groups=tuple(str(g) for g in info.get("groups") or ()),
        extra=tuple(sorted((str(k), tuple(str(x) for x in v or ())) for k, v in extra.items())),
    )


REQUEST_VARIABLES = frozenset(("authorizer", "authorizer.requestResource"))


def request_variables(request: Mapping[str, Any]) -> dict[str, Any]:
    """``authorizer`` and ``authorizer.requestResource`` for one request (``NewAuthorizerVal``,
    ``NewResourceAuthorizerVal``: the request's resource, subresource, namespace and name)."""
    authorizer = Authorizer(user_from_request(request), RequestChecks())
    resource = request.get("resource") or {}
    request_resource = ResourceCheck(
        authorizer,
        str(resource.get("group") or ""),
        str(resource.get("resource") or ""),
        subresource=str(request.get("subResource") or ""),
        namespace=str(request.get("namespace") or ""),
        name=str(request.get("name") or ""),
    )
    return {"authorizer": authorizer, "authorizer.requestResource": request_resource}


def _string(function: str, receiver: Any, value: Any, kind: type) -> str:
    if not isinstance(receiver, kind) or not isinstance(value, str):
        raise no_such_overload(function, receiver, value)
    return value


@method("path", AUTHORIZER, ("string",), PATH_CHECK, cost=lambda *_: 1)
def path(authorizer: Any, value: Any) -> PathCheck:
    if not _string("path", authorizer, value, Authorizer).strip():
        raise CelEvaluationError("path must not be empty")
    return PathCheck(authorizer, value)


@method("group", AUTHORIZER, ("string",), GROUP_CHECK, cost=lambda *_: 1)
def group(authorizer: Any, value: Any) -> GroupCheck:
    return GroupCheck(authorizer, _string("group", authorizer, value, Authorizer))


@method("serviceAccount", AUTHORIZER, ("string", "string"), AUTHORIZER, cost=lambda *_: 1)
def service_account(authorizer: Any, namespace: Any, name: Any) -> Authorizer:
    _string("serviceAccount", authorizer, namespace, Authorizer)
    if not isinstance(name, str):
        raise no_such_overload("serviceAccount", authorizer, namespace, name)
    if not is_dns_subdomain(name):
        raise CelEvaluationError("Invalid service account name")
    if not is_dns_label(namespace):
        raise CelEvaluationError("Invalid service account namespace")
    user = UserInfo(  # serviceaccount.ServiceAccountInfo.UserInfo
        username=f"system:serviceaccount:{namespace}:{name}",
        groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}"),
    )
    return Authorizer(user, authorizer.checks)


@method("resource", GROUP_CHECK, ("string",), RESOURCE_CHECK, cost=lambda *_: 1)
def resource(check: Any, value: Any) -> ResourceCheck:
    if not _string("resource", check, value, GroupCheck).strip():
        raise CelEvaluationError("resource must not be empty")
    return ResourceCheck(check.authorizer, check.group, value)


def _setter(name: str, attribute: str, since: int = 0) -> None:
    @method(name, RESOURCE_CHECK, ("string",), RESOURCE_CHECK, cost=lambda *_: 1, since=since)
    def set_field(check: Any, value: Any) -> ResourceCheck:
        updated: ResourceCheck = replace(check, **{attribute: _string(name, check, value, ResourceCheck)})
        return updated


_setter("subresource", "subresource")
_setter("namespace", "namespace")
_setter("name", "name")
_setter("fieldSelector", "field_selector", since=1)  # kubernetes.authzSelectors (1.31+)
_setter("labelSelector", "label_selector", since=1)


def _decide(ctx: Any, authorizer: Authorizer, attributes: AuthorizationAttributes) -> Decision:
    checks = authorizer.checks
    cached = checks.decisions.get(attributes)
    if cached is not None:
        return Decision(cached)
    provider = ctx.services.authorizer
    if provider is None:
        raise LookupUnavailable(f"authorizer check: {UNAVAILABLE}")
    if len(checks.decisions) >= MAX_CHECKS_PER_REQUEST:
        raise CelEvaluationError(f"authorizer check: more than {MAX_CHECKS_PER_REQUEST} distinct checks in one request")
    try:
        decision = provider.authorize(attributes)
    except LookupUnavailable:
        raise
    except Exception as ex:  # an authorizer failure is the Decision's error(), as in Kubernetes
        decision = AuthorizationDecision("no-opinion", error=str(ex) or type(ex).__name__)
    checks.decisions[attributes] = decision
    return Decision(decision)


@method("check", PATH_CHECK, ("string",), DECISION, context=True, pure=False, cost=lambda *_: CHECK_COST)
def check_path(ctx: Any, check: Any, verb: Any) -> Decision:
    _string("check", check, verb, PathCheck)
    return _decide(ctx, check.authorizer, AuthorizationAttributes(check.authorizer.user, verb, path=check.path))


@method("check", RESOURCE_CHECK, ("string",), DECISION, context=True, pure=False, cost=lambda *_: CHECK_COST)
def check_resource(ctx: Any, check: Any, verb: Any) -> Decision:
    _string("check", check, verb, ResourceCheck)
    attributes = AuthorizationAttributes(
        check.authorizer.user,
        verb,
        resource_request=True,
        group=check.group,
        resource=check.resource,
        subresource=check.subresource,
        namespace=check.namespace,
        name=check.name,
        field_selector=check.field_selector,
        label_selector=check.label_selector,
    )
    return _decide(ctx, check.authorizer, attributes)


def _decision(function: str, value: Any) -> AuthorizationDecision:
    if not isinstance(value, Decision):
        raise no_such_overload(function, value)
    return value.result


@method("allowed", DECISION, (), "bool", cost=lambda *_: 1)
def allowed(decision: Any) -> bool:
    return _decision("allowed", decision).decision == "allow"  # "no opinion" is not allowed


@method("reason", DECISION, (), "string", cost=lambda *_: 1)
def reason(decision: Any) -> str:
    return _decision("reason", decision).reason


@method("errored", DECISION, (), "bool", cost=lambda *_: 1)
def errored(decision: Any) -> bool:
    return bool(_decision("errored", decision).error)


@method("error", DECISION, (), "string", cost=lambda *_: 1)
def error(decision: Any) -> str:
    return _decision("error", decision).error
