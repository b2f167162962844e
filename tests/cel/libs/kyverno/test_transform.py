"""Kyverno's transform library: rows from kyverno/sdk ``extensions/cel/libs/transform/impl_test.go``."""

from __future__ import annotations

from typing import Any

from tests.cel.helpers import Err, cases, check_case

KEYS = '[{"name": "kyverno", "lfx": "mentorship"}, {"name": "kubernetes", "lfx": "something"}]'
VALUES = '[{"domain": "security"}, {"domain": "orchestration"}]'

ROWS = [
    (
        f'transform.listObjToMap({KEYS}, {VALUES}, "name", "domain")',
        {"kyverno": "security", "kubernetes": "orchestration"},
    ),
    (f'listObjToMap({KEYS}, {VALUES}, "name", "domain")', {"kyverno": "security", "kubernetes": "orchestration"}),
    (f'listObjToMap({KEYS}, {VALUES}, "name", "missing")', {"kyverno": None, "kubernetes": None}),
    ('listObjToMap([], [], "a", "b")', {}),
    # lists built with "+" work too (Kyverno normalises their map shapes)
    ('listObjToMap([{"k": "a"}] + [{"k": "b"}], [{"v": 1}] + [{"v": 2}], "k", "v")', {"a": 1, "b": 2}),
    ('listObjToMap([{"k": "a"}, {"k": "a"}], [{"v": 1}, {"v": 2}], "k", "v")', {"a": 2}),
    (
        'listObjToMap(object.spec.containers, object.spec.containers, "name", "image")',
        {"web": "nginx", "side": "envoy"},
    ),
    (
        'listObjToMap([{"k": "a"}], [], "k", "v")',
        Err("evaluation", "listObjToMap must take lists of equal length. list1: 1, list2: 0"),
    ),
    (
        'listObjToMap([{"k": 1}], [{"v": 1}], "k", "v")',
        Err("evaluation", "the passed key name cannot be handled as a string"),
    ),
    (
        'listObjToMap([{"x": "a"}], [{"v": 1}], "k", "v")',
        Err("evaluation", "the passed key name cannot be handled as a string"),
    ),
    ('listObjToMap([{"k": "a"}], ["v"], "k", "v")', Err("evaluation", "cannot be handled as a map")),
    ('listObjToMap(["a"], [{"v": 1}], "k", "v")', Err("evaluation", "cannot be handled as a map")),
    ('listObjToMap({}, [], "k", "v")', Err("compile", "no matching overload")),
]


@cases(ROWS)
def test_list_obj_to_map(expression: str, expected: Any) -> None:
    pod = {"spec": {"containers": [{"name": "web", "image": "nginx"}, {"name": "side", "image": "envoy"}]}}
    check_case(expression, expected, object=pod)


def test_kubernetes_profile_has_no_transform_library() -> None:
    check_case(
        'listObjToMap([], [], "a", "b")', Err("compile", "undeclared reference to 'listObjToMap'"), profile="kubernetes"
    )
