"""The C++ engine's own behaviour: lowering, the fallback table, the Python bridge (variables,
lookups, errors, cost), the per-request activation cache and the engine choice."""

from __future__ import annotations

from typing import Any

import pytest

from celmut import cel
from celmut.cel import types
from celmut.cel.backends import select
from celmut.service.static_resources import StaticResources
from tests.cel.helpers import ENGINES, evaluate, outcome

pytestmark = pytest.mark.skipif("cpp" not in ENGINES, reason="the C++ engine (cel-expr-python) is not installed")


def compile_cpp(expression: str, profile: str = "kyverno", **variables: Any) -> Any:
    env = cel.Environment(profile, variables={name: types.DYN for name in variables}, backend="cpp")
    return env.compile(expression)


# --- lowering -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("Object.spec{replicas: 1, ?paused: object.spec.?paused}", '{"replicas": 1, ?"paused": '),
        ('JSONPatch{op: "add", path: "/a", value: 1}', '{"op": "add", "path": "/a", "value": 1}'),
        ("object.spec.containers.map(c, c.name)", "__celmut_p"),  # a hoisted path, not `object`
        ("has(object.metadata.labels)", "__celmut_p"),
        ("[1, 2].indexOf(2)", "celmut.method.indexOf([1, 2], 2, "),  # Kubernetes' list library
        ('jsonpatch.escapeKey("a/b")', "celmut.fn.jsonpatch.escapeKey("),
        ("variables.team", 'celmut.variable("team")'),
        ("[1, 2].exists_one(x, x > 1)", ".exists_one(x, "),
        ("[1, 2].existsOne(i, x, x > 1)", ".existsOne(i, x, "),
        ('"a".lowerAscii()', '"a".lowerAscii()'),  # native
        ("object.?metadata.?name", ".optMap(__celmut_o, [__celmut_o]).orValue([])"),
    ],
)
def test_lowered_text(expression: str, fragment: str) -> None:
    program = compile_cpp(expression, team=None)
    assert getattr(program, "fallback_reason", None) is None
    assert fragment in program.text, program.text


# --- the fallback table ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("{'a': 1}.transformMap(k, v, v + 1)", "cel.@mapInsert"),
        ("{'a': 1}.transformMapEntry(k, v, {k: v})", "cel.@mapInsert"),
        ("[2, 1].sortBy(x, x)", "sortBy"),
        ("quantity('1Gi').isGreaterThan(quantity('1Mi'))", "kubernetes.Quantity"),
        ("ip('10.0.0.1').family()", "net.IP"),
        ("url('https://a.example').getHost()", "kubernetes.URL"),
        ("semver('1.2.3').major()", "kubernetes.Semver"),
        ("[1u, 2u].sum()", "uint"),
        ("'%s'.format([[1, dyn(optional.of(2))]])", "optional value would reach"),
        ("[JSONPatch{op: 'add'}][0] == dyn({'op': 'add'})", "typed objects compare"),
        ("dyn(JSONPatch{op: 'add'}) == {'op': 'add'}", "typed objects compare"),
        ("type(JSONPatch{op: 'add'})", "typed object"),
        ("base64.decode('aGk=')", "NUL byte"),
        ("[[1].first()]", "optionals inside a container"),
        ("variables.?x", "variables.?x"),
        ("[1].map(celmut, celmut)", "celmut"),
    ],
)
def test_fallback_reasons(expression: str, reason: str) -> None:
    program = compile_cpp(expression, x=None)
    assert reason in (getattr(program, "fallback_reason", None) or ""), getattr(program, "fallback_reason", None)
    assert outcome(expression, "kyverno", "cpp", {}) == outcome(expression, "kyverno", "celpy", {}) or isinstance(
        outcome(expression, "kyverno", "cpp", {}), cel.CelError
    )


def test_kyverno_or_value_runs_on_cel_cpp_as_kyvernos_strict_compat_function() -> None:
    """Kyverno pkg/cel/compiler/env.go OrValueCompatEnvOptions: ``__orValueCompat__(x, y)``."""
    expressions = [
        'namespaceObject.?metadata.?labels[?"team"].orValue("unowned")',
        "object.spec.containers.map(c, c.?securityContext.?privileged.orValue(false))",
        "dyn(object.spec).orValue(1)",  # not an optional: the value itself
        "dyn(object.nope).orValue(1)",  # an error: the error (the function is strict)
        "optional.of(1).orValue(1 / 0)",  # the default is evaluated too
    ]
    pod = {"spec": {"containers": [{"securityContext": {"privileged": True}}, {"securityContext": 5}]}}
    bindings = {"object": pod, "namespace_object": {"metadata": {"labels": {"team": "a"}}}}

    def plain(result: Any) -> Any:
        return (type(result).__name__, str(result)) if isinstance(result, Exception) else result

    for expression in expressions:
        assert getattr(compile_cpp(expression), "fallback_reason", None) is None, expression
        on_cpp = plain(outcome(expression, "kyverno", "cpp", bindings))
        assert on_cpp == plain(outcome(expression, "kyverno", "celpy", bindings)), expression


# --- the bridge -----------------------------------------------------------------------------------


class _Counting:
    """A variable program that counts its evaluations."""

    def __init__(self, program: Any) -> None:
        self.program, self.calls = program, 0

    def evaluate(self, activation: cel.Activation) -> Any:
        self.calls += 1
        return self.program.evaluate(activation)


@pytest.mark.parametrize("variable_engine", ["celpy", "cpp"])
def test_variables_are_lazy_and_memoised_whichever_engine_runs_them(variable_engine: str) -> None:
    env = cel.Environment("kyverno", backend=variable_engine)
    team = _Counting(env.compile("object.metadata.labels.team"))
    broken = _Counting(env.compile("object.metadata.labels.missing"))
    user = cel.Environment("kyverno", variables={"team": types.DYN, "broken": types.DYN}, backend="cpp")
    activation = cel.Activation(
        object={"metadata": {"labels": {"team": "a"}}}, variables={"team": team, "broken": broken}
    )
    assert user.compile("variables.team + variables.team").evaluate(activation) == "aa"
    assert user.compile("true || variables.broken == 1").evaluate(activation) is True
    assert (team.calls, broken.calls) == (1, 0)
    with pytest.raises(cel.CelEvaluationError, match="variable 'broken': no such key: missing"):
        user.compile("variables.broken == 1").evaluate(activation)
    assert user.compile("has(variables.team)").evaluate(activation) is True


def test_library_functions_get_the_evaluation_context() -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d"}, "data": {"k": "v"}}
    services = cel.Services(resources=StaticResources([config]))
    program = compile_cpp('resource.Get("v1", "configmaps", "d", "c").data.k')
    assert getattr(program, "fallback_reason", None) is None
    assert program.evaluate(cel.Activation(services=services)) == "v"


def test_a_cost_error_in_a_library_function_is_not_absorbed_by_logic() -> None:
    program = compile_cpp('object.s.split("").size() > 0 || true')
    assert getattr(program, "fallback_reason", None) is None
    budget = cel.Budget(per_call_limit=50)
    with pytest.raises(cel.CelCostError):
        program.evaluate(cel.Activation(object={"s": "x" * 10_000}, budget=budget))


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("object.missing", "no such key: missing"),
        ("object.a.b", "no such key"),  # cel-go refQualify: selecting on a non-container
        ("1 / object.zero", "division by zero"),
        ("1 % object.zero", "modulus by zero"),
        ("object.list[5]", "index out of bounds: 5"),
        ("9223372036854775807 + object.one", "integer overflow"),
        ("object.a + 'x'", "no such overload: _+_(int, string)"),
        ("object.?missing.value()", "optional.none() dereference"),
        ("int(1e19 + double(object.zero))", "int overflow"),
        ("object.list['a']", "no such overload: _[_](list, string)"),
    ],
)
def test_error_messages_match_the_cel_python_engine(expression: str, message: str) -> None:
    bindings = {"object": {"a": 1, "zero": 0, "one": 1, "list": [1]}}
    cpp = outcome(expression, "kyverno", "cpp", bindings)
    celpy = outcome(expression, "kyverno", "celpy", bindings)
    assert isinstance(cpp, cel.CelEvaluationError) and message in cpp.message, cpp
    assert isinstance(celpy, cel.CelEvaluationError) and message in celpy.message, celpy


def test_strings_with_nul_characters_are_evaluated_on_cel_python() -> None:
    """cel-expr-python 0.1.3 cuts strings at NUL on their way in; such inputs are not given to it."""
    program = compile_cpp('object.image.endsWith(":latest")')
    assert program.evaluate(cel.Activation(object={"image": "x:latest\x00evil"})) is False
    assert program.evaluate(cel.Activation(object={"image": "x:latest"})) is True


def test_results_keep_celmut_types() -> None:
    cases = {
        "1u + 2u": cel.to_plain(3),
        "b'ab' + b'c'": b"abc",
        "type(1) == int": True,
        "[dyn(type(1)), dyn(type(''))]": None,
        "duration('1.5s') + duration('1s')": None,
        "timestamp('2024-01-02T03:04:05Z')": None,
        "object.?metadata.?name": None,
        "object.?missing": None,
    }
    for expression in cases:
        assert repr(compile_cpp(expression).evaluate(cel.Activation(object={"metadata": {"name": "n"}}))) == repr(
            cel.Environment("kyverno", backend="celpy")
            .compile(expression)
            .evaluate(cel.Activation(object={"metadata": {"name": "n"}}))
        ), expression


# --- the activation cache ---------------------------------------------------------------------------


def test_only_what_an_expression_reads_is_converted() -> None:
    pod = {"spec": {"containers": [{"name": "a", "image": "nginx", "env": [{"name": "X", "value": "1"}]}]}}
    budget = cel.Budget()
    program = compile_cpp('object.spec.containers.exists(c, c.image.startsWith("nginx") && has(c.resources))')
    assert program.evaluate(cel.Activation(object=pod, budget=budget)) is False
    ((sources, _, _, _),) = budget.engine_cache.values()  # type: ignore[union-attr]
    variable = next(v for v in program._hoisted if v.name in sources)
    from celmut.cel.backends.cpp_projection import project

    assert project(sources[variable.name], variable.shape) == [{"image": "nginx"}]


def test_expressions_of_one_request_share_converted_subtrees() -> None:
    pod = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "a"}]}}
    budget = cel.Budget()
    first = compile_cpp("object.spec.containers.all(c, c.name != '')")
    second = compile_cpp("object.spec.containers.exists(c, c.name == 'a')")
    for program in (first, second):  # two policies: two activations, one budget (one request)
        assert program.evaluate(cel.Activation(object=pod, budget=budget)) is True
    assert len(budget.engine_cache or ()) == 1
    patched = {**pod, "metadata": {"labels": {"app": "api"}}}  # a mutation that leaves spec alone
    assert second.evaluate(cel.Activation(object=patched, budget=budget)) is True
    assert len(budget.engine_cache or ()) == 1


# --- the engine choice --------------------------------------------------------------------------------


def test_engine_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(select.ENV_VAR, raising=False)
    assert select.resolve() == "celpy"  # auto: the engine measured faster for policy workloads
    assert cel.Environment("kyverno").backend.name == "celpy"
    monkeypatch.setenv(select.ENV_VAR, "cpp")
    assert cel.Environment("kyverno").backend.name == "cpp"
    monkeypatch.setenv(select.ENV_VAR, "celpy")
    assert cel.Environment("kyverno").backend.name == "celpy"
    assert cel.Environment("kyverno", backend="cpp").backend.name == "cpp"
    monkeypatch.setenv(select.ENV_VAR, "nope")
    with pytest.raises(select.BackendUnavailable, match="unknown CEL engine"):
        select.resolve()


def test_auto_does_not_need_cel_expr_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(select, "cpp_available", lambda: False)
    assert select.resolve("auto") == "celpy"
    with pytest.raises(select.BackendUnavailable, match="celmut\\[fast\\]"):
        select.resolve("cpp")


@pytest.mark.skipif("cpp" not in ENGINES, reason="the cpp backend (cel-expr-python) is not installed")
@pytest.mark.parametrize("key", ["celmut-error#0", "celmut-error#7", "x celmut-error#0 y"])
def test_user_data_that_looks_like_a_bridged_error_is_only_data(key: str) -> None:
    """The bridge marks Python errors with a token; a missing map key with that text is still a
    missing key (it gave an internal IndexError before, when a bridged function ran too)."""
    for engine in ENGINES:
        with pytest.raises(cel.CelEvaluationError, match="no such key"):
            evaluate(f'[1, 2].sum() > 0 && object.data["{key}"] == "x"', engine=engine, object={"data": {}})
