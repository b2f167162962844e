"""Bounds on evaluation: per-expression cost limit, per-request budget, wall-clock deadline,
input size limit, and error messages that never dump input data — on every engine."""

from __future__ import annotations

import time
from typing import Any

import pytest

from celmut import cel
from tests.cel.helpers import CEL_ENGINES


@pytest.fixture(params=CEL_ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


def test_a_quadratic_comprehension_hits_the_per_expression_cost_limit(engine: str) -> None:
    items = list(range(2000))
    program = cel.Environment("kyverno", backend=engine).compile(
        "object.items.all(i, object.items.all(j, i >= 0 && j >= 0))"
    )
    with pytest.raises(cel.CelCostError, match="cost limit"):  # no deadline: only the cost can stop it
        program.evaluate(cel.Activation(object={"items": items}, budget=cel.Budget()))


def test_the_request_budget_is_shared_by_expressions_of_one_request(engine: str) -> None:
    program = cel.Environment("kyverno", backend=engine).compile("object.items.map(i, i * 2).size()")
    budget = cel.Budget(limit=50_000)
    activation = cel.Activation(object={"items": list(range(10_000))}, budget=budget)
    assert program.evaluate(activation) == 10_000
    with pytest.raises(cel.CelCostError, match="budget"):
        for _ in range(10):
            program.evaluate(activation)


def test_the_deadline_stops_a_long_evaluation(engine: str) -> None:
    program = cel.Environment("kyverno", backend=engine).compile(
        "object.items.all(i, object.items.all(j, i >= 0 && j >= 0))"
    )
    # No cost limit to speak of: only the deadline can stop 9,000,000 iterations, which take seconds
    # where the deadline is 50 ms away; the error proves it stopped (a finished run returns true), so
    # nothing here depends on how fast the machine is.
    budget = cel.Budget(per_call_limit=10**12, limit=10**12, deadline=time.monotonic() + 0.05)
    with pytest.raises(cel.CelCostError, match="deadline"):
        program.evaluate(cel.Activation(object={"items": list(range(3000))}, budget=budget))


def test_a_passed_deadline_stops_the_next_evaluation(engine: str) -> None:
    program = cel.Environment("kyverno", backend=engine).compile("object.items.size() > 0")
    budget = cel.Budget(deadline=time.monotonic() - 1)
    with pytest.raises(cel.CelCostError, match="deadline"):
        program.evaluate(cel.Activation(object={"items": [1]}, budget=budget))


def test_inputs_over_the_size_limit_are_refused() -> None:
    big = {"data": "x" * 2_000_000}
    with pytest.raises(cel.CelInputError, match="exceeds the limit"):
        cel.Activation(object=big, max_input_bytes=1_000_000)


@pytest.mark.parametrize(
    "big",
    [
        pytest.param({"data": "x" * 2_000_000}, id="string keys (orjson's fast encoding)"),
        pytest.param({1: "x" * 2_000_000}, id="an integer key (encoded with OPT_NON_STR_KEYS)"),
        pytest.param({"data": [b"x" * 2_000_000]}, id="bytes orjson cannot encode (walked)"),
    ],
)
def test_inputs_over_the_size_limit_are_refused_whatever_their_keys(big: dict[Any, Any]) -> None:
    with pytest.raises(cel.CelInputError, match="exceeds the limit"):
        cel.Activation(object=big, max_input_bytes=1_000_000)
    cel.Activation(object=big, max_input_bytes=3_000_000)  # and within the limit they are taken


def test_error_messages_do_not_contain_object_contents(engine: str) -> None:
    secret = "s3cr3t-value-that-must-not-leak"
    program = cel.Environment("kyverno", backend=engine).compile("object.missing.field")
    with pytest.raises(cel.CelEvaluationError) as info:
        program.evaluate(cel.Activation(object={"data": {"password": secret}}))
    assert secret not in str(info.value)
    for expression in ("object.data[object.data.password]", "object.data.password.x", "object.data.password + 1"):
        program = cel.Environment("kyverno", backend=engine).compile(expression)
        with pytest.raises(cel.CelEvaluationError) as info:
            program.evaluate(cel.Activation(object={"data": {"password": secret * 10}}))
        assert secret * 2 not in str(info.value), expression
    program = cel.Environment("kyverno", backend=engine).compile("int(object.data.password)")
    with pytest.raises(cel.CelEvaluationError) as info:
        program.evaluate(cel.Activation(object={"data": {"password": secret * 10}}))
    assert secret * 2 not in str(info.value)


def test_compile_errors_carry_line_and_column() -> None:
    with pytest.raises(cel.CelCompileError) as info:
        cel.Environment("kyverno").compile("object.a &&\n  object.b.startsWith(1)")
    assert (info.value.line, info.value.column) == (2, 22)
    assert "no matching overload" in str(info.value)


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("cel.bind(x, 1, x)", "undeclared reference to 'cel.bind'"),
        ("math.greatest(1, 2)", "undeclared reference to 'math.greatest'"),
        ("base64.encode(b'a')", "undeclared reference to 'base64.encode'"),
        ("exceptions.allowedImages", "undeclared reference to 'exceptions'"),
        ("int('twelve')", "program instantiation failed: cannot convert string 'twelve' to int"),
    ],
)
def test_the_kubernetes_profile_refuses_what_the_api_server_refuses(expression: str, fragment: str) -> None:
    with pytest.raises(cel.CelCompileError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        cel.Environment("kubernetes").compile(expression)


def test_params_exist_only_in_the_kubernetes_profile() -> None:
    assert cel.Environment("kubernetes").compile("params.x").evaluate(cel.Activation(params={"x": 1})) == 1
    with pytest.raises(cel.CelCompileError, match="undeclared reference to 'params'"):
        cel.Environment("kyverno").compile("params.x")


def test_compiled_programs_are_cached_by_source() -> None:
    env = cel.Environment("kyverno")
    assert env.compile("1 + 1") is env.compile("1 + 1")
    assert cel.Environment("kubernetes").compile("1 + 1") is not env.compile("1 + 1")
