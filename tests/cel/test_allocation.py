"""Memory a request builds is charged and capped (issue 17, item 3), on every engine.

cel-go charges string concatenation a tenth of the result (interpreter/runtimecost.go ``add_string``);
its list concatenation is a view, celmut's a copy, so celmut charges one unit per element copied.
No string a request builds may exceed 3 MiB — the size Kubernetes assumes for any value in its
cost estimates (apis/cel/config.go ``MaxRequestSizeBytes``) — and the values one request builds
are counted against ``Budget.max_bytes``. Expressions longer than cel-go's parser accepts
(parser/parser.go ``expressionSizeCodePointLimit`` = 100,000) are refused before parsing.
"""

from __future__ import annotations

import pytest

from celmut import cel
from celmut.cel.environment import MAX_EXPRESSION_CODE_POINTS
from tests.cel.helpers import CEL_ENGINES


@pytest.fixture(params=CEL_ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


def doubling(seed: str, levels: int) -> str:
    """``cel.bind`` chain where each level concatenates the previous value with itself."""
    expression = f"size(v{levels})"
    for level in range(levels, 0, -1):
        expression = f"cel.bind(v{level}, v{level - 1} + v{level - 1}, {expression})"
    return f"cel.bind(v0, {seed}, {expression})"


def test_string_doubling_stops_at_the_string_limit(engine: str) -> None:
    """24 doublings of 'abcd' make 64 MiB (before: charged len/64, so allowed)."""
    program = cel.Environment("kyverno", backend=engine).compile(doubling("'abcd'", 24))
    with pytest.raises(cel.CelCostError, match="over the limit of 3145728 bytes"):
        program.evaluate(cel.Activation())


def test_list_doubling_is_charged_per_element_copied(engine: str) -> None:
    """22 doublings of a 4-element list make 16 million elements, 128 MiB of pointers (before:
    charged len/64, 262,000 units in all, so allowed)."""
    program = cel.Environment("kyverno", backend=engine).compile(doubling("[1, 2, 3, 4]", 22))
    with pytest.raises(cel.CelCostError, match="cost limit"):
        program.evaluate(cel.Activation())


def test_the_values_a_request_builds_are_capped_across_its_expressions(engine: str) -> None:
    """Each evaluation builds 450,000 integers (16 MB) within the per-expression cost limit; the
    request's ledger (32 MiB) stops the third (before: nothing counted what was built)."""
    program = cel.Environment("kyverno", backend=engine).compile("lists.range(450000).size()")
    activation = cel.Activation(budget=cel.Budget(limit=10**9))  # the ledger alone
    with pytest.raises(cel.CelCostError, match="built more than 33554432 bytes"):
        for _ in range(30):
            assert program.evaluate(activation) == 450_000


def test_an_expression_longer_than_cel_go_accepts_is_refused_before_parsing() -> None:
    """cel-go: "expression code point size exceeds limit: size: N, limit 100000" (before: compiled,
    for seconds and hundreds of MB)."""
    source = "[" + ",".join(["1"] * (MAX_EXPRESSION_CODE_POINTS // 2)) + "].size() > 0"
    assert len(source) > MAX_EXPRESSION_CODE_POINTS
    with pytest.raises(cel.CelCompileError, match=f"size: {len(source)}, limit 100000"):
        cel.Environment("kubernetes").compile(source)
    shorter = "[" + ",".join(["1"] * 1000) + "].size() > 0"
    assert cel.Environment("kubernetes").compile(shorter).evaluate(cel.Activation()) is True
