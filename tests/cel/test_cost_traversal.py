"""Every CEL operation is charged by the size it traverses (issue 17, item 2), on every engine.

cel-go charges each evaluated step (interpreter/runtimecost.go): equality ``ceil(min(size)*0.1)``,
``in`` the list length, string ``+`` a tenth of the result; Kubernetes' library charges list
functions by ``traversalCost`` (staging/src/k8s.io/apiserver/pkg/cel/library/cost.go), and the
per-expression limit is 1e6, the per-request budget 1e7 (apis/cel/config.go). Values in celmut are
Python objects that may share subtrees (a policy variable used eight times in the next one), so a
value's *traversed* size can be exponential in its memory: these tests build such values and check
that each operation is charged for what it walks — with an identity shortcut for equality — and
that measuring the cost never walks the unfolded tree.
"""

from __future__ import annotations

from typing import Any

import pytest

from celmut import cel
from celmut.cel import costs, types
from tests.cel.helpers import CEL_ENGINES


@pytest.fixture(params=CEL_ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


def shared(levels: int, tag: int = 0) -> dict[str, Any]:
    """``m_i = {"k0": m_{i-1}, …, "k7": m_{i-1}}`` over ``m_0 = {"k": [tag, 1, …, 7]}``: 8**levels
    copies of ``m_0`` once unfolded, ``levels + 1`` maps in memory."""
    value: dict[str, Any] = {"k": [tag, *range(1, 8)]}
    for _ in range(levels):
        value = {f"k{i}": value for i in range(8)}
    return value


def nested_lists(levels: int) -> list[Any]:
    value: list[Any] = list(range(8))
    for _ in range(levels):
        value = [value] * 8
    return value


def run(expression: str, engine: str, budget: cel.Budget | None = None, **variables: Any) -> Any:
    env = cel.Environment("kyverno", variables={name: types.DYN for name in variables}, backend=engine)
    program = env.compile(expression)
    return program.evaluate(cel.Activation(variable_values=variables, budget=budget or cel.Budget()))


def test_equality_of_large_values_is_charged_by_the_elements_it_compares(engine: str) -> None:
    """cel-go runtimecost.go charges ``_==_`` by the operands' size; 100,000 equal elements cost more
    than a 50,000-unit limit (before: free, whatever the size)."""
    a, b = list(range(100_000)), list(range(100_000))
    with pytest.raises(cel.CelCostError, match="cost limit"):
        run("variables.a == variables.b", engine, cel.Budget(per_call_limit=50_000), a=a, b=b)
    with pytest.raises(cel.CelCostError, match="cost limit"):
        run("variables.a != variables.b", engine, cel.Budget(per_call_limit=50_000), a=a, b=b)


def test_membership_in_a_list_is_charged_by_its_length(engine: str) -> None:
    """cel-go runtimecost.go: ``in_list`` costs the list's size."""
    with pytest.raises(cel.CelCostError, match="cost limit"):
        run("-1 in variables.a", engine, cel.Budget(per_call_limit=50_000), a=list(range(100_000)))


def test_a_value_compared_with_itself_takes_the_identity_shortcut() -> None:
    """``m9 == m9`` unfolds to 134 million maps; the same object is equal to itself unless it holds
    a NaN (``[nan] == [nan]`` is false in CEL), which a walk over the 10 distinct maps decides."""
    budget = cel.Budget()
    assert run("variables.m == variables.m", "compiled", budget, m=shared(9)) is True
    assert budget.spent < 1_000
    nan = {"k": [float("nan")]}
    assert run("variables.m == variables.m", "compiled", cel.Budget(), m={"a": nan, "b": nan}) is False
    assert run("variables.m != variables.m", "compiled", cel.Budget(), m={"a": nan, "b": nan}) is True


def test_equal_structures_sharing_their_parts_compare_in_linear_time() -> None:
    """Two separately built copies of ``m9``: each pair of shared parts is compared once."""
    budget = cel.Budget()
    assert run("variables.a == variables.b", "compiled", budget, a=shared(9), b=shared(9)) is True
    assert budget.spent < 1_000
    assert run("variables.a == variables.b", "compiled", cel.Budget(), a=shared(9), b=shared(9, tag=1)) is False
    assert run("variables.a in [variables.b]", "compiled", cel.Budget(), a=shared(9), b=shared(9)) is True


BIG = list(range(1_100_000))
BIG_OTHER = [*range(1_099_999), -1]


@pytest.mark.parametrize(
    ("expression", "variables", "fragment"),
    [
        pytest.param(
            "'%s'.format([variables.m])", {"m": shared(6)}, "over the limit of 3145728 bytes", id="format-args"
        ),
        pytest.param(
            "json.marshal(variables.m).size()", {"m": shared(6)}, "over the limit of 3145728 bytes", id="json.marshal"
        ),
        pytest.param(
            "[variables.a, variables.b].distinct().size()", {"a": BIG, "b": BIG_OTHER}, "cost limit", id="distinct"
        ),
        pytest.param(
            "sets.contains([variables.a], [variables.b])", {"a": BIG, "b": BIG_OTHER}, "cost limit", id="sets.contains"
        ),
        pytest.param(
            "sets.intersects([variables.a], [variables.b])",
            {"a": BIG, "b": BIG_OTHER},
            "cost limit",
            id="sets.intersects",
        ),
        pytest.param("variables.l.flatten(7).size()", {"l": nested_lists(6)}, "cost limit", id="flatten"),
    ],
)
def test_library_functions_are_charged_by_the_values_they_walk(
    engine: str, expression: str, variables: Any, fragment: str
) -> None:
    """Formatting or encoding ``m6`` prints 2 million lists (48 MB): refused before printing, as the
    API server never takes a value over its 3 MiB request limit (apis/cel/config.go
    MaxRequestSizeBytes). Comparing two 1.1-million-element lists walks them: over the 1e6 limit.
    Before, these ran uncharged (``distinct`` and ``sets`` charged the lists' length only)."""
    with pytest.raises(cel.CelCostError, match=fragment):
        run(expression, engine, cel.Budget(), **variables)


@pytest.mark.parametrize(
    ("expression", "want"),
    [
        ("variables.m == variables.m", True),
        ("[variables.m, variables.m].distinct().size()", 1),
        ("sets.contains([variables.m], [variables.m])", True),
        ("variables.l.flatten(1).size()", 64),
        ("[variables.m, variables.n].distinct().size()", 2),
        ("sets.intersects([variables.m], [variables.n])", False),
        ("'%s'.format([variables.m]).size()", cel.CelCostError),
        ("json.marshal(variables.m).size()", cel.CelCostError),
        ("variables.l.flatten(40).size()", cel.CelCostError),
        ("[variables.m].indexOf(variables.m)", cel.CelCostError),
    ],
)
def test_the_cost_walk_of_a_deeply_shared_value_is_linear_in_what_exists(expression: str, want: Any) -> None:
    """Measuring ``m40`` (8**40 leaves unfolded, 41 maps in memory) must not unfold it: the identity
    shortcut answers, or the measure refuses at once (before: these ran for ever)."""
    variables = {"m": shared(40), "n": shared(40, tag=1), "l": nested_lists(40)}
    if want is cel.CelCostError:
        with pytest.raises(cel.CelCostError, match=r"cost limit|over the limit"):
            run(expression, "compiled", cel.Budget(), **variables)
        return
    assert run(expression, "compiled", cel.Budget(), **variables) == want


def deep_tree(depth: int) -> list[Any]:
    """``[[[…]]]`` ``depth`` lists deep, nothing shared."""
    root: list[Any] = []
    node = root
    for _ in range(depth):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


@pytest.mark.parametrize(
    "value",
    [
        pytest.param([{"op": "add", "path": "/metadata/labels/a", "value": "x"}], id="a JSONPatch result"),
        pytest.param(
            [cel.values.StructValue("JSONPatch", {"op": "add", "path": f"/a/{i}", "value": "x"}) for i in range(3)],
            id="JSONPatch structs (the flat walk)",
        ),
        pytest.param([{"k": "v"}] * 5, id="one map repeated in a list (the flat walk counts each)"),
        pytest.param([{"op": "add", "path": "/a", "value": "é"}], id="a non-ASCII value (leaves the flat walk)"),
        pytest.param([{"op": "add", "path": "/a", "value": ["x"]}], id="a nested value (leaves the flat walk)"),
        pytest.param([], id="an empty list"),
        pytest.param({"k": ["é漢", b"\x00\x01", 1.5, float("nan"), True, None, 10**30]}, id="every leaf kind"),
        pytest.param({"k": [cel.values.NONE, cel.values.OptionalValue("ab")]}, id="optionals"),
        pytest.param({"ü": (1, 2), 3: "int key"}, id="non-ascii and int keys, tuples"),
        pytest.param(shared(40), id="8**40 unfolded maps, 41 in memory"),
        pytest.param(nested_lists(40), id="nested shared lists"),
        pytest.param(["a", "é", ["b", {"c": "d"}], {"e": ["f", 1]}], id="a tree: strings in lists and maps"),
        pytest.param(deep_tree(500), id="a tree nested past the recursive walk's depth"),
        pytest.param({"a": [1], "b": {"c": [1]}, "d": ()}, id="a tree of equal but distinct containers"),
    ],
)
def test_the_engines_byte_measure_agrees_with_the_full_measure(value: Any) -> None:
    """The engine bounds every mutation result with :func:`costs.json_nbytes` (bytes only, cheaper):
    the same figure as ``Measure().nbytes``, and a shared value is still measured once per object."""
    assert costs.json_nbytes(value) == costs.Measure().nbytes(value)
