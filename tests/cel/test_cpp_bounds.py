"""cel-cpp runs only what it can run within bounded work (celmut/cel/backends/cpp_bounds.py).

cel-cpp holds the GIL and charges nothing for its native operations, so an expression that makes
it unfold or repeat work without bound goes to cel-python, where cel-go's per-step charges
(interpreter/runtimecost.go) and the traversal charges of celmut.cel.costs apply."""

from __future__ import annotations

import pytest

from celmut import cel
from tests.cel.helpers import ENGINES

pytestmark = pytest.mark.skipif("cpp" not in ENGINES, reason="cel-expr-python is not installed")

DOUBLINGS = 26  # a 128 MiB string on cel-cpp


def reason(expression: str, profile: str = "kyverno") -> str | None:
    program = cel.Environment(profile, backend="cpp").compile(expression)
    return getattr(program, "fallback_reason", None)


@pytest.mark.parametrize(
    "expression",
    [
        # chained comprehensions over values the previous one built: exponential growth
        "size(['ab']" + ".map(s, s + s)" * DOUBLINGS + "[0])",
        "[[1, 2]].map(a, [a, a, a, a]).map(a, [a, a, a, a]).map(a, [a, a, a, a])[0] == []",
        "cel.bind(a, [object], cel.bind(b, [a, a], cel.bind(c, [b, b], c == c)))",
        "optional.of(object.x).optMap(y, y + y).optMap(z, z + z).hasValue()",
        # work repeated for every element on a value that does not change with it
        "object.items.all(i, object.spec == oldObject.spec)",
        "object.items.all(i, object.name in object.names)",
        "object.items.map(i, object.metadata.name + i.name).size() > 0",
        "object.items.map(i, object).size() > 0",
    ],
)
def test_work_cel_cpp_cannot_charge_runs_on_cel_python(expression: str) -> None:
    found = reason(expression)
    assert found is not None and "cel-cpp cannot charge its work" in found, found


@pytest.mark.parametrize(
    "expression",
    [
        "object.spec.containers.all(c, c.image.startsWith('registry.example.com/'))",
        "object.spec.containers.all(c, c.name == object.metadata.name)",
        "object.spec.containers.exists(c, c.image in ['a', 'b'] || 'x' in c.env)",
        "object.spec.containers.map(c, c.name + '-' + c.image)",
        "object.spec.containers.all(c, c.ports.all(p, p.containerPort > 1024))",
        "(object.spec.containers + object.spec.initContainers).all(c, has(c.securityContext))",
        "object.spec.containers.map(c, {'name': c.name, 'value': c.image.lowerAscii()})",
        "object.items.all(i, object.items.all(j, i >= 0 && j >= 0))",
    ],
)
def test_bounded_comprehensions_stay_on_cel_cpp(expression: str) -> None:
    assert reason(expression) is None


def test_a_doubling_chain_is_stopped_by_the_string_limit_instead_of_allocating_gigabytes() -> None:
    """On cel-cpp the chain built a 128 MiB string (a few more ``.map`` and it is gigabytes);
    on cel-python each ``+`` is charged and no string may exceed 3 MiB."""
    program = cel.Environment("kyverno", backend="cpp").compile("size(['ab']" + ".map(s, s + s)" * DOUBLINGS + "[0])")
    with pytest.raises(cel.CelCostError, match="over the limit of 3145728 bytes"):
        program.evaluate(cel.Activation())
