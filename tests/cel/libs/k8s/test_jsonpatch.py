"""Kubernetes' JSON Patch library (k8s.io/apiserver/pkg/cel/library/jsonpatch.go):
``jsonpatch.escapeKey`` escapes ``~`` as ``~0`` and ``/`` as ``~1`` (RFC 6901)."""

from __future__ import annotations

from typing import Any

from tests.cel.helpers import Err, cases, check_case

ROWS = [
    ("'/metadata/labels/' + jsonpatch.escapeKey('k8s.io/my~label')", "/metadata/labels/k8s.io~1my~0label"),
    ("jsonpatch.escapeKey('plain')", "plain"),
    ("jsonpatch.escapeKey('')", ""),
    # '~' is escaped before '/', so '~1' in the input stays distinguishable from an escaped '/'.
    ("jsonpatch.escapeKey('~1')", "~01"),
    ("jsonpatch.escapeKey('a/b/c')", "a~1b~1c"),
    ("jsonpatch.escapeKey('~/~/')", "~0~1~0~1"),
    ("jsonpatch.escapeKey('é/ü')", "é~1ü"),
    ("jsonpatch.escapeKey(1)", Err("compile", "no matching overload")),
    ("jsonpatch.escapeKey(dyn(1))", Err("evaluation", "no such overload")),
    ("jsonpatch.unknown('a')", Err("compile", "undeclared reference")),
]


@cases(ROWS)
def test_jsonpatch(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@cases(
    [
        ("jsonpatch.escapeKey('app.kubernetes.io/name')", "app.kubernetes.io~1name"),
        (
            "JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('a/b'), value: 'x'}.path",
            "/metadata/labels/a~1b",
        ),
    ]
)
def test_jsonpatch_kubernetes_profile(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes")
