"""Kyverno's user library: rows from kyverno/sdk ``extensions/cel/libs/user/impl_test.go`` and the
MutatingPolicy documentation (which reads ``.Name`` and ``.Namespace``)."""

from __future__ import annotations

from typing import Any

from tests.cel.helpers import Err, cases, check_case

ROWS = [
    ('parseServiceAccount("system:serviceaccount:foo:bar")', {"Name": "bar", "Namespace": "foo"}),
    ('parseServiceAccount("system:serviceaccount:foo:bar:baz")', {"Name": "bar:baz", "Namespace": "foo"}),
    ('parseServiceAccount("something-else:123")', {"Name": "", "Namespace": ""}),
    ('parseServiceAccount("system:serviceaccount:nocolon")', {"Name": "", "Namespace": ""}),
    ('user.parseServiceAccount("system:serviceaccount:kube-system:ci").Name', "ci"),
    ('user.parseServiceAccount("system:serviceaccount:kube-system:ci").Namespace', "kube-system"),
    ("parseServiceAccount(request.userInfo.username).Name", "replicaset-controller"),
    ("parseServiceAccount(false)", Err("compile", "no matching overload")),
    ("parseServiceAccount(dyn(false))", Err("evaluation", "no such overload")),
]


@cases(ROWS)
def test_parse_service_account(expression: str, expected: Any) -> None:
    request = {"userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"}}
    check_case(expression, expected, request=request)


def test_kubernetes_profile_has_no_user_library() -> None:
    check_case(
        'parseServiceAccount("x")',
        Err("compile", "undeclared reference to 'parseServiceAccount'"),
        profile="kubernetes",
    )
    check_case('user.parseServiceAccount("x")', Err("compile", "undeclared reference"), profile="kubernetes")
