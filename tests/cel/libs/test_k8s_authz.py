"""Kubernetes' authorizer library (issue 25, item 6), on every CEL engine.

Upstream: ``k8s.io/apiserver/pkg/cel/library/authz.go`` (the documented examples, ``authorizerPath``
"path must not be empty", ``groupCheckResource`` "resource must not be empty",
``authorizerServiceAccount`` name/namespace validation, ``resourceCheckVal.Authorize`` attributes
with APIVersion "*", ``NewResourceAuthorizerVal`` for ``authorizer.requestResource``, decision
functions), ``library/cost.go`` (a check costs 350000), ``mutating/compilation.go`` (HasAuthorizer)
and Kyverno's ``pkg/cel/policies/mpol/compiler/compiler.go`` (``HasAuthorizer: false``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from celmut import cel
from celmut.cel.lookups import AuthorizationAttributes, AuthorizationDecision
from tests.cel.helpers import CEL_ENGINES, Err

REQUEST = cel.admission_request(
    resource={"group": "apps", "version": "v1", "resource": "deployments"},
    sub_resource="scale",
    namespace="shop",
    name="web",
    user_info={"username": "alice", "uid": "u1", "groups": ["dev", "system:authenticated"], "extra": {"k": ["v"]}},
)


@dataclass
class Recorder:
    """Allows ``create``, denies ``delete``, fails ``explode``, no opinion otherwise; records checks."""

    calls: list[AuthorizationAttributes] = field(default_factory=list)

    def authorize(self, attributes: AuthorizationAttributes) -> AuthorizationDecision:
        self.calls.append(attributes)
        if attributes.verb == "explode":
            raise RuntimeError("webhook authorizer unreachable")
        decision = {"create": "allow", "delete": "deny"}.get(attributes.verb, "no-opinion")
        return AuthorizationDecision(decision, reason=f"rbac says {decision}")


def run(expression: str, engine: str, authorizer: Any = None) -> Any:
    env = cel.Environment("kubernetes", backend=engine)
    activation = cel.Activation(request=REQUEST, services=cel.Services(authorizer=authorizer), budget=cel.Budget())
    return cel.to_plain(env.compile(expression).evaluate(activation))


CASES = [
    # (what it pins, expression, result, the one check asked: (verb, group, resource, subresource, ns, name, path))
    (
        "authz.go example: group('').resource('pods').namespace('default').check('create').allowed()",
        "authorizer.group('').resource('pods').namespace('default').check('create').allowed()",
        True,
        ("create", "", "pods", "", "default", "", ""),
    ),
    (
        "NewResourceAuthorizerVal: requestResource is the request's group/resource/subresource/namespace/name",
        "authorizer.requestResource.check('update').allowed()",
        False,
        ("update", "apps", "deployments", "scale", "shop", "web", ""),
    ),
    (
        "decisionReason: the authorizer's reason",
        "authorizer.requestResource.check('delete').reason()",
        "rbac says deny",
        ("delete", "apps", "deployments", "scale", "shop", "web", ""),
    ),
    (
        "pathCheck: a non-resource check of a path",
        "authorizer.path('/healthz').check('get').allowed()",
        False,
        ("get", "", "", "", "", "", "/healthz"),
    ),
    (
        "subresource('') and name('') unset the field",
        "authorizer.group('apps').resource('deployments').subresource('').name('').check('create').allowed()",
        True,
        ("create", "apps", "deployments", "", "", "", ""),
    ),
    (
        "decisionErrored/decisionError: an authorizer failure is a decision, not a CEL error",
        "authorizer.path('/x').check('explode').errored() && "
        "authorizer.path('/x').check('explode').error() == 'webhook authorizer unreachable'",
        True,
        ("explode", "", "", "", "", "", "/x"),  # asked once: decisions are cached per request
    ),
    (
        "decisionAllowed: no opinion is not allowed",
        "!authorizer.group('').resource('pods').check('get').allowed()",
        True,
        ("get", "", "pods", "", "", "", ""),
    ),
]


@pytest.mark.parametrize("engine", CEL_ENGINES)
@pytest.mark.parametrize(("name", "expression", "expected", "asked"), CASES, ids=[c[0][:50] for c in CASES])
def test_checks_reach_the_authorizer_with_the_requesting_user(
    name: str, expression: str, expected: Any, asked: tuple[str, ...], engine: str
) -> None:
    recorder = Recorder()
    assert run(expression, engine, recorder) == expected
    (call,) = recorder.calls
    got = (call.verb, call.group, call.resource, call.subresource, call.namespace, call.name, call.path)
    assert got == asked
    assert call.resource_request is bool(call.resource)
    assert call.user.username == "alice" and call.user.groups == ("dev", "system:authenticated")
    assert call.user.extra == (("k", ("v",)),)


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_service_account_checks_as_the_service_account(engine: str) -> None:
    """authz.go authorizerServiceAccount: serviceaccount.ServiceAccountInfo.UserInfo."""
    recorder = Recorder()
    assert run(
        "authorizer.serviceAccount('ci', 'builder').path('/metrics').check('create').allowed()", engine, recorder
    )
    (call,) = recorder.calls
    assert call.user.username == "system:serviceaccount:ci:builder"
    assert call.user.groups == ("system:serviceaccounts", "system:serviceaccounts:ci")


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_selectors_are_part_of_the_check(engine: str) -> None:
    """authzSelectors (1.31+): fieldSelector and labelSelector travel with the check."""
    recorder = Recorder()
    run(
        "authorizer.group('').resource('pods').fieldSelector('spec.nodeName=n1').labelSelector('a=b').check('list')",
        engine,
        recorder,
    )
    (call,) = recorder.calls
    assert (call.field_selector, call.label_selector) == ("spec.nodeName=n1", "a=b")


ERRORS = [
    ("authz.go: path must not be empty", "authorizer.path('  ')", Err("evaluation", "path must not be empty")),
    (
        "authz.go: resource must not be empty",
        "authorizer.group('apps').resource('')",
        Err("evaluation", "resource must not be empty"),
    ),
    (
        "authz.go: Invalid service account name",
        "authorizer.serviceAccount('default', 'invalid@*name')",
        Err("evaluation", "Invalid service account name"),
    ),
    (
        "authz.go: Invalid service account namespace",
        "authorizer.serviceAccount('not@a#valid!namespace', 'validname')",
        Err("evaluation", "Invalid service account namespace"),
    ),
]


@pytest.mark.parametrize("engine", CEL_ENGINES)
@pytest.mark.parametrize(("name", "expression", "expected"), ERRORS, ids=[e[0] for e in ERRORS])
def test_invalid_arguments_are_errors(name: str, expression: str, expected: Err, engine: str) -> None:
    with pytest.raises(cel.CelError) as raised:
        run(expression, engine, Recorder())
    assert raised.value.kind == expected.kind and expected.fragment in str(raised.value)


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_without_an_authorizer_a_check_is_an_error_naming_the_flag(engine: str) -> None:
    with pytest.raises(cel.CelError, match="pass --authorizer allow\\|deny\\|FILE"):
        run("authorizer.requestResource.check('get').allowed()", engine)


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_three_checks_exceed_one_expressions_cost_limit(engine: str) -> None:
    """cost.go: "This cost is set to allow for only two authorization checks per expression"."""
    two = "authorizer.path('/a').check('get').allowed() || authorizer.path('/b').check('get').allowed()"
    assert run(two, engine, Recorder()) is False
    with pytest.raises(cel.CelError) as raised:
        run(two + " || authorizer.path('/c').check('get').allowed()", engine, Recorder())
    assert raised.value.kind == "cost"


def test_kyverno_mutating_policies_have_no_authorizer() -> None:
    """Kyverno's MutatingPolicy compiler: HasAuthorizer false."""
    with pytest.raises(cel.CelCompileError, match="undeclared reference"):
        cel.Environment("kyverno").compile("authorizer.requestResource.check('get').allowed()")


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_distinct_checks_per_request_are_bounded_and_repeats_are_cached(engine: str) -> None:
    """One request asks at most MAX_CHECKS_PER_REQUEST distinct checks (the request's cost budget
    alone allows 28); asking the same check again is answered from the request's cache."""
    from celmut.cel.libs.k8s.authz import MAX_CHECKS_PER_REQUEST

    recorder = Recorder()
    env = cel.Environment("kubernetes", backend=engine)
    activation = cel.Activation(
        request=REQUEST, services=cel.Services(authorizer=recorder), budget=cel.Budget(limit=10**9)
    )
    for index in range(MAX_CHECKS_PER_REQUEST):
        env.compile(f"authorizer.path('/p{index}').check('get').allowed()").evaluate(activation)
        env.compile(f"authorizer.path('/p{index}').check('get').allowed()").evaluate(activation)
    assert len(recorder.calls) == MAX_CHECKS_PER_REQUEST
    with pytest.raises(cel.CelError, match="more than 32 distinct checks in one request"):
        env.compile("authorizer.path('/one-more').check('get').allowed()").evaluate(activation)
