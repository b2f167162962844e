"""Kyverno's ``orValue``, exactly: ``pkg/cel/compiler/env.go`` ``OrValueCompatEnvOptions`` rewrites
``x.orValue(y)`` at parse time into ``__orValueCompat__(x, y)``, a strict cel-go binary function (no
``OverloadIsNonStrict``), so cel-go's interpreter returns an error in ``x`` or ``y`` before calling it
(``interpreter/interpretable.go`` ``evalBinary.Eval``). Its body: an optional gives its value or ``y``;
any other value is returned as it is. cel-spec ``tests/simple/testdata/optionals.textproto``
``optional_chaining_10`` expects the error too. The kubernetes profile has only cel-go's optional
``orValue`` (a value that is no optional: no such overload). ``__orValueCompat__`` is declared
``(dyn, dyn) -> dyn``, so the kyverno profile type-checks any receiver and default, and the result is
``dyn``. Every row runs on both engines.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cel.helpers import Err, check_case

POD = {
    "metadata": {"name": "web-0", "labels": {"app": "web"}},
    "spec": {"replicas": 1, "containers": [{"name": "a", "securityContext": {"privileged": True}}, {"name": "b"}]},
}
CHAINING_10 = (
    "optional.ofNonZeroValue({'c': {'dashed-index': 'goodbye'}}.a.z)"
    ".orValue({'c': {'dashed-index': 'goodbye'}}.c['dashed-index'])"
)


def row(profile: str, expression: str, expected: Any, pins: str) -> Any:
    return pytest.param(profile, expression, expected, id=f"{profile}: {pins}")


KYVERNO_OR_VALUE = [
    # __orValueCompat__ is strict: an error in x is the result, whatever y is
    row("kyverno", "object.missing.orValue(2)", Err("evaluation", "no such key: missing"), "error in x"),
    row("kyverno", "object.spec.replicas.x.orValue(2)", Err("evaluation"), "error deeper in x"),
    row("kyverno", CHAINING_10, Err("evaluation", "no such key"), "cel-spec optional_chaining_10"),
    row(
        "kyverno",
        "object.spec.containers.map(c, c.securityContext.privileged.orValue(false))",
        Err("evaluation", "no such key: securityContext"),
        "error in x inside a comprehension",
    ),
    # ... and so is an error in y, even when x alone decides the value
    row("kyverno", "optional.of(1).orValue(1 / 0)", Err("evaluation", "division by zero"), "error in y, x present"),
    row("kyverno", "object.spec.replicas.orValue(1 / 0)", Err("evaluation", "division by zero"), "error in y"),
    row("kyverno", "object.missing.orValue(1 / 0)", Err("evaluation", "no such key: missing"), "both: x's error"),
    # an optional gives its value, or y when empty
    row("kyverno", "optional.none().orValue(2)", 2, "optional none"),
    row("kyverno", "object.?missing.orValue(2)", 2, "absent field"),
    row("kyverno", "object.?spec.?replicas.orValue(5)", 1, "present field"),
    row("kyverno", "object.metadata.labels[?'team'].orValue('none')", "none", "absent key"),
    row(
        "kyverno",
        "object.spec.containers.map(c, c.?securityContext.?privileged.orValue(false))",
        [True, False],
        "optional chain in a comprehension",
    ),
    row("kyverno", "namespaceObject.?metadata.?labels[?'team'].orValue('x')", "x", "optional step on null"),
    # a value that is no optional is returned as it is (cel-go v0.27's behaviour the macro keeps)
    row("kyverno", "object.spec.replicas.orValue(2)", 1, "concrete int"),
    row("kyverno", "object.metadata.orValue({}).name", "web-0", "concrete map"),
    row("kyverno", "dyn(null).orValue(3)", None, "null is a value"),
    row("kyverno", "dyn(object.spec).orValue(1).replicas", 1, "dyn value"),
    # __orValueCompat__ is declared (dyn, dyn) -> dyn: any receiver and default type-check, the result is dyn
    row("kyverno", "optional.of(1).orValue('a')", 1, "default of another type"),
    row("kyverno", "optional.of(1).orValue(2) == 'x'", False, "result typed dyn"),
    row("kyverno", "1.orValue(2)", 1, "literal receiver"),
    row("kyverno", "[1].orValue([]).size()", 1, "list receiver"),
    # the kubernetes profile: cel-go's own orValue, lazy in y and only on optionals
    row("kubernetes", "optional.of(1).orValue('a')", Err("compile", "found no matching overload"), "default type"),
    row("kubernetes", "1.orValue(2)", Err("compile", "found no matching overload"), "literal receiver"),
    row("kubernetes", "optional.of(1).orValue(1 / 0)", 1, "y not evaluated"),
    row("kubernetes", "optional.none().orValue(2)", 2, "optional none"),
    row("kubernetes", "object.missing.orValue(2)", Err("evaluation", "no such key: missing"), "error in x"),
    row("kubernetes", "object.spec.replicas.orValue(2)", Err("evaluation", "no such overload"), "int"),
    row("kubernetes", CHAINING_10, Err("evaluation", "no such key"), "cel-spec optional_chaining_10"),
]


@pytest.mark.parametrize(("profile", "expression", "expected"), KYVERNO_OR_VALUE)
def test_or_value_is_kyvernos_strict_or_value_compat(profile: str, expression: str, expected: Any) -> None:
    check_case(expression, expected, profile=profile, object=POD, namespace_object=None)

