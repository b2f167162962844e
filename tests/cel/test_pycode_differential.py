"""The compiled engine (each expression one generated Python function) against its reference, the
interpreted engine (the planner): generated well-typed expressions — errors inside ``&&``/``||``/``?:`` and
comprehensions, optionals, overflow, bindings, typed constructions — on generated pods must agree in
value, error text, cost and allocation, and at the limits (:mod:`tests.cel.pycode_reference`). Every
row of the CEL tables is compared the same way by ``tests/cel/helpers.py``.

Also pinned here: what the generator leaves to the planner (subtrees nested too deeply for one Python
function, expressions too large to be worth compiling) still agrees, and typical policy expressions
are really compiled (a regression to the planner everywhere would pass every other test).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from celmut import cel
from celmut.cel import types
from celmut.cel.backends import pycode
from celmut.cel.backends.runners import CompiledRunner
from tests.cel.pycode_reference import check_same_as_reference
from tests.cel.test_backend_differential import pods

cel.Environment("kyverno")  # raises the recursion limit (environment.py) before hypothesis records it

# --- a grammar of well-typed expressions, by type; ``scope`` holds loop variables of that type ------

INT_LEAVES = ["0", "1", "-3", "7", "9223372036854775807", "-9223372036854775808", "size(object.metadata.name)"]
FAILING_INTS = ["(1 / 0)", "(5 % 0)", "[1, 2][7]", "int('x')", "object.spec.replicas", "dyn('a') + 1"]
STRING_LEAVES = ["'a'", "'web'", "''", "'é/~'", "object.metadata.name", "object.kind"]
FAILING_STRINGS = ["object.missing", "object.metadata.labels['nope']", "{'k': 'v'}['x']"]
# each fails with its own message (which error wins is part of the semantics), or is no bool at all
FAILING_BOOLS = [
    "dyn(1)",
    "dyn('s')",
    "object.missing.x",
    "object.other.y",
    "[true][3]",
    "{'a': true}['b']",
    "(1 / 0 == 1)",
    "(int('x') > 0)",
    "'x' in object.metadata.labels",
]
LOOP_FAILING = st.sampled_from(["dyn(x)", "{'a': true}[string(x)]", "[true][x]", "x == 2 || [true][x]"])


def _pick(items: list[str]) -> st.SearchStrategy[str]:
    return st.sampled_from(items)


def ints(depth: int, scope: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    leaves = st.one_of(_pick(INT_LEAVES), _pick(FAILING_INTS), *([_pick(list(scope))] if scope else []))
    if depth <= 0:
        return leaves
    sub, text, cond = ints(depth - 1, scope), strings(depth - 1), bools(depth - 1, scope)
    return st.one_of(
        st.tuples(sub, _pick(["+", "-", "*", "/", "%"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        sub.map(lambda a: f"-{a}" if not a.startswith("-") else f"-({a})"),
        st.tuples(cond, sub, sub).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
        text.map(lambda s: f"size({s})"),
        st.tuples(int_lists(depth - 1, scope), sub).map(lambda t: f"{t[0]}[{t[1]}]"),
        st.tuples(sub, sub).map(lambda t: f"cel.bind(b, {t[0]}, b * {t[1]})"),
        st.tuples(int_lists(depth - 1, scope), sub).map(lambda t: f"{t[0]}[?0].orValue({t[1]})"),
        st.tuples(sub, sub).map(lambda t: f"optional.of({t[0]}).optMap(o, o + {t[1]}).value()"),
        sub.map(lambda a: f"int(string({a}))"),
        text.map(lambda s: f"{s}.indexOf('a')"),
        int_lists(depth - 1, scope).map(lambda xs: f"{xs}.filter(x, x > 0).size()"),
        st.tuples(sub, sub).map(lambda t: f"math.greatest({t[0]}, {t[1]})"),
        leaves,
    )


def strings(depth: int, scope: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    leaves = st.one_of(_pick(STRING_LEAVES), _pick(FAILING_STRINGS), *([_pick(list(scope))] if scope else []))
    if depth <= 0:
        return leaves
    sub = strings(depth - 1, scope)
    return st.one_of(
        st.tuples(sub, sub).map(lambda t: f"({t[0]} + {t[1]})"),
        sub.map(lambda s: f"{s}.upperAscii()"),
        st.tuples(sub, ints(depth - 1)).map(lambda t: f"{t[0]}.substring({t[1]})"),
        st.tuples(bools(depth - 1), sub, sub).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
        ints(depth - 1).map(lambda i: f"string({i})"),
        sub.map(lambda s: f"jsonpatch.escapeKey({s})"),
        NAMES.map(lambda n: f"object.metadata.?labels[?{n!r}].orValue('none')"),
        st.tuples(sub, sub).map(lambda t: f"optional.none().or(optional.of({t[0]})).orValue({t[1]})"),
        string_lists(depth - 1).map(lambda xs: f"{xs}.join('/')"),
        leaves,
    )


def bools(depth: int, scope: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    # in a loop, errors that name the element: which element's error wins is visible
    failing = _pick(
        FAILING_BOOLS + [f for v in scope for f in (f"dyn({v})", f"{{'a': true}}[string({v})]", f"[true][{v}]")]
    )
    leaves = st.one_of(
        failing,
        _pick(["true", "false", "has(object.metadata.labels)", "has(object.spec.containers)", "dyn(1) == 1"]),
        *([_pick([f"({v} > 1)" for v in scope])] if scope else []),
    )
    if depth <= 0:
        return leaves
    sub, number, text = bools(depth - 1, scope), ints(depth - 1, scope), strings(depth - 1)
    operand = st.one_of(failing, sub)  # which of several errors wins is part of the semantics
    return st.one_of(
        st.lists(operand, min_size=2, max_size=4).map(lambda xs: "(" + " && ".join(xs) + ")"),
        st.lists(operand, min_size=2, max_size=4).map(lambda xs: "(" + " || ".join(xs) + ")"),
        sub.map(lambda b: f"!{b}"),
        st.tuples(operand, sub, operand).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
        st.tuples(number, _pick(["<", "<=", ">", ">=", "==", "!="]), number).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(text, _pick(["==", "!=", "<", ">="]), text).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(text, text).map(lambda t: f"{t[0]}.startsWith({t[1]})"),
        st.tuples(text, string_lists(depth - 1)).map(lambda t: f"({t[0]} in {t[1]})"),
        st.tuples(number, int_lists(depth - 1, scope)).map(lambda t: f"({t[0]} in {t[1]})"),
        st.tuples(int_lists(depth - 1, scope), _pick(["all", "exists", "exists_one"]), bools(depth - 1, ("x",)))
        .filter(lambda t: "x" in t[2])
        .map(lambda t: f"{t[0]}.{t[1]}(x, {t[2]})"),
        st.tuples(_pick(["[1, 0, 2]", "[0, 1]", "[3]"]), _pick(["all", "exists", "exists_one", "filter"]), failing).map(
            lambda t: f"{t[0]}.{t[1]}(x, x == 1 || {t[2]})"
        ),  # an element's error, where another decides
        st.tuples(_pick(["[1, 0, 2]", "[2, 3]"]), _pick(["all", "exists", "exists_one", "filter"]), LOOP_FAILING).map(
            lambda t: f"{t[0]}.{t[1]}(x, {t[2]})"
        ),
        st.tuples(_pick(["all", "exists"]), bools(depth - 1, ("c",))).map(
            lambda t: f"object.spec.?containers.orValue([]).{t[0]}(c, {t[1]})"
        ),
        CONTAINER_PREDICATES.map(lambda p: f"object.spec.containers.exists(c, {p})"),
        st.tuples(text, NAMES).map(lambda t: f"object.metadata.?labels[?{t[1]!r}] == optional.of({t[0]})"),
        leaves,
    )


def int_lists(depth: int, scope: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    leaves = _pick(["[]", "[1, 2, 3]", "[0, -1]", "[9223372036854775807]"])
    if depth <= 0:
        return leaves
    sub = ints(depth - 1, scope)
    return st.one_of(
        st.lists(sub, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.tuples(leaves, ints(depth - 1, ("x",))).map(lambda t: f"{t[0]}.map(x, {t[1]})"),
        st.tuples(leaves, bools(depth - 1, ("x",))).map(lambda t: f"{t[0]}.filter(x, {t[1]})"),
        st.tuples(leaves, bools(depth - 1, ("x",)), ints(depth - 1, ("x",))).map(
            lambda t: f"{t[0]}.map(x, {t[1]}, {t[2]})"
        ),
        st.tuples(leaves, ints(depth - 1, ("i", "x"))).map(lambda t: f"{t[0]}.transformList(i, x, {t[1]})"),
        leaves.map(lambda xs: f"{xs}.sortBy(x, -x)"),
        st.tuples(leaves, leaves).map(lambda t: f"({t[0]} + {t[1]})"),
        st.tuples(leaves, sub).map(lambda t: f"[?optional.of({t[1]}), ?optional.none()] + {t[0]}"),
        leaves.map(lambda xs: f"{{'a': {xs}}}.transformMap(k, v, v.size()).map(k, k.size())"),
        leaves,
    )


def string_lists(depth: int) -> st.SearchStrategy[str]:
    leaves = _pick(["['a', 'web']", "[]", "object.metadata.?labels.orValue({}).map(k, k)"])
    if depth <= 0:
        return leaves
    return st.one_of(
        st.tuples(leaves, strings(depth - 1, ("x",))).map(lambda t: f"{t[0]}.map(x, {t[1]})"),
        strings(depth - 1).map(lambda s: f"[{s}, 'b']"),
        _pick(["object.spec.containers.map(c, c.name)", "object.spec.containers.map(c, c.?image.orValue(''))"]),
        leaves,
    )


NAMES = st.sampled_from(["app", "team", "tier"])
CONTAINER_PREDICATES = st.sampled_from(
    [
        "c.image.startsWith('nginx')",
        "has(c.resources.limits) && 'cpu' in c.resources.limits",
        "c.?env.orValue([]).exists_one(e, e.name == 'app')",
        "c.env.all(e, e.value != '')",
        "size(c.name) > 3 || c.name == 'web'",
    ]
)
TYPED = st.sampled_from(
    [
        "object.spec.containers.map(c, JSONPatch{op: 'add', path: '/metadata/annotations/' + "
        "jsonpatch.escapeKey('s-' + c.name), value: c.?image.orValue('')})",
        "Object{metadata: Object.metadata{labels: {'a': object.metadata.name}, ?annotations: optional.none()}}",
        "object.spec.containers.filter(c, !has(c.resources)).map(c, {'name': c.name, 'n': size(c.name)})",
        "{'a': 1, 'b': 2}.transformMapEntry(k, v, {k + 'x': v * 2})",
        "object.metadata.?labels.orValue({}).transformMap(k, v, v + '!')",
    ]
)


def pod_loops() -> st.SearchStrategy[str]:
    """What mutation policies do: scan or rebuild the containers, with errors on the way."""
    predicate = st.one_of(
        CONTAINER_PREDICATES, bools(1), st.lists(CONTAINER_PREDICATES, min_size=2, max_size=3).map(" || ".join)
    )
    return st.one_of(
        st.tuples(_pick(["all", "exists", "exists_one", "filter"]), predicate).map(
            lambda t: f"object.spec.containers.{t[0]}(c, {t[1]})"
        ),
        st.tuples(predicate, TYPED).map(lambda t: f"object.spec.containers.exists(c, {t[0]}) ? {t[1]} : {t[1]}"),
        st.tuples(predicate, strings(1)).map(
            lambda t: (
                f"object.spec.containers.map(c, {t[0]}, JSONPatch{{op: 'add', path: '/a/' + c.name, value: {t[1]}}})"
            )
        ),
    )


def loop_errors() -> st.SearchStrategy[str]:
    """Elements whose errors name them: which one wins, and whether another element decides first."""
    return st.tuples(
        _pick(["[1, 0, 2]", "[2, 3]", "[0]", "{'a': 1, 'b': 0}.map(k, k.size() - 1)"]),
        _pick(["all", "exists", "exists_one", "filter", "map"]),
        st.one_of(LOOP_FAILING, bools(1, ("x",))),
    ).map(lambda t: f"{t[0]}.{t[1]}(x, {t[2]})")


def expressions() -> st.SearchStrategy[str]:
    return st.one_of(bools(3), ints(3), strings(3), int_lists(2), string_lists(2), TYPED, pod_loops(), loop_errors())


# The rules generated expressions reach only by chance, each with a row that breaks when the rule does.
SEMANTICS = [
    ("&& keeps the first of two errors", "object.missing.x && object.other.y"),
    ("&& false absorbs an earlier error", "object.missing.x && false"),
    ("|| true absorbs an earlier error", "[true][3] || true"),
    ("a non-bool operand is an error, after a decided one it is not", "dyn(1) && false"),
    ("a non-bool operand before an error wins", "dyn('s') || object.missing.x"),
    ("?: wants a bool condition", "dyn(1) ? 1 : 2"),
    ("?: evaluates one branch", "true ? 1 : 1 / 0"),
    ("! wants a bool", "!dyn('x')"),
    ("all keeps the first element's error", "[1, 0, 2].all(x, [true][x])"),
    ("exists: a later true absorbs errors", "[5, 0].exists(x, [true][x])"),
    ("all: a non-bool element", "[1, 2].all(x, dyn(x))"),
    ("exists_one lets errors through", "[0, 1].exists_one(x, [true][x])"),
    ("exists_one: a non-bool element", "[0, 1].exists_one(x, dyn(x))"),
    ("filter: a non-bool element", "[0, 1].filter(x, dyn(x))"),
    ("map with a non-bool filter", "[0, 1].map(x, dyn(x), x)"),
    ("int overflow", "9223372036854775807 + 1"),
    ("int overflow in a loop", "[9223372036854775807].map(x, x * 2)"),
    ("negation overflow", "-(-9223372036854775807 - 1)"),
    ("uint underflow", "0u - 1u"),
    ("division by zero", "[1].map(x, x / 0)"),
    ("int64 min / -1", "(-9223372036854775807 - 1) / -1"),
    ("optional chain on a missing key", "{'a': {'b': 1}}.?a.?c.orValue(7)"),
    ("a plain step after an optional one", "{'k': dyn(null)}.?k.x.hasValue()"),
    ("optional index out of range", "[1, 2][?5].hasValue()"),
    # a literal key on an optional (``x.?labels["app"]``) is generated as index_optional, no subscript
    ("a literal key after an optional step", "object.metadata.?labels['app'].orValue('none')"),
    ("a literal key after an optional step on a name", "object.metadata.?name['x'].hasValue()"),
    ("a literal key after an absent optional step", "object.?status['phase'].orValue('-')"),
    ("a literal key after an optional index", "{'a': {'b': 1}}[?'a']['b'].value()"),
    ("a literal key after a missing optional index", "{'a': {'b': 1}}[?'z']['b'].hasValue()"),
    ("a literal key missing after an optional step", "{'a': {'b': 1}}.?a['c'].hasValue()"),
    # ``x.?f`` and a literal ``[?'k']`` on a map or a present optional of one are generated inline
    ("an optional step on null (no call: the fallback)", "dyn(null).?a.hasValue()"),
    ("an optional step on a string", "dyn('s').?a.orValue('-')"),
    ("a literal optional key on a list", "dyn([1])[?'a'].hasValue()"),
    ("a literal optional key on an optional of a list", "optional.of([1])[?'a'].hasValue()"),
    ("a literal key after an optional step holding an int", "{'a': 1}.?a['b'].hasValue()"),
    ("a literal optional key after an absent optional", "{'a': 1}.?z[?'b'].orValue(5)"),
    ("a literal optional key present", "{'a': {'b': 2}}.?a[?'b'].value()"),
    ("an optional step on a typed construction", "JSONPatch{op: 'add'}.?op.orValue('')"),
    ("or on a non-optional", "optional.none().or(dyn(1))"),
    ("optMap over none", "optional.none().optMap(v, v + 1).hasValue()"),
    ("optFlatMap must return an optional", "optional.of(1).optFlatMap(v, v + 1)"),
    ("optional list and map entries", "[?optional.none(), ?optional.of(2)] + [size({?'a': optional.none(), 'b': 1})]"),
    ("a repeated map key", "{'a': 1, 'a': 2}"),
    ("a repeated key from a loop", "[1, 1].map(x, 'k').transformMapEntry(i, k, {k: i})"),
    ("a map key of a bad type", "{[1]: 2}"),
    ("map iteration order", "{'b': 1, 'a': 2, 'c': 3}.map(k, k)"),
    ("two-variable loops over a map", "{'b': 1, 'a': 2}.all(k, v, k.size() == v)"),
    ("sortBy keeps ties in order", "[3, 1, 2, 1].sortBy(x, x % 2)"),
    ("cel.bind shadows a loop variable", "[1, 2].map(x, cel.bind(x, x * 10, x + 1))"),
    ("a loop variable shadows a variable", "[1].map(object, object + 1)"),
    ("has() on a non-map", "has(object.metadata.name.x)"),
    ("selection on a list", "object.spec.containers.name"),
    ("index with a double", "[1, 2][1.0] + {1: 5}[1.0]"),
    ("string index of a list", "[1]['a']"),
    ("in on a map with a double", "1.0 in {1: 'a'}"),
    ("a long string comparison costs", "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' < 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaab'"),
    ("string concatenation costs its length", "[1, 2, 3].map(x, 'abcdefghijklmnopqrstuvwxyz' + string(x)).join('')"),
    ("typed construction with an optional field", "JSONPatch{op: 'add', ?path: optional.of('/a'), value: 1}"),
    ("typed construction, optional field not optional", "Object{?a: dyn(1)}"),
    ("== true is no int comparison", "dyn(1) == true"),
    ("!= false is no int comparison", "dyn(0) != false"),
    ("== null on a value", "object.metadata.name == null"),
    ("in a string list: an unhashable element", "dyn([1]) in ['a', 'b'] || dyn({'a': 1}) in ['a']"),
    ("< and <= on equal ints", "[1 < 1, 2 <= 1, 1 <= 1, 2 > 2, 1 >= 2]"),
    ("a repeated key known only at run time", "{object.metadata.name: 1, 'web': 2}"),
    ("a repeated literal key with a run-time value", "{'a': object.metadata.name, 'a': 'x'}"),
    ("an optional entry, then the same key", "{?'web': optional.of(1), object.metadata.name: 2}"),
    ("a key, then the same in an optional entry", "{object.metadata.name: 1, ?'web': optional.of(2)}"),
    ("a map key of a bad type at run time", "{dyn([1]): 2}"),
    ("a double map key at run time", "{dyn(1.5): 2}"),
]


@pytest.mark.parametrize("expression", [row[1] for row in SEMANTICS], ids=[row[0] for row in SEMANTICS])
def test_each_semantic_rule_agrees_with_the_planner(expression: str) -> None:
    pod = {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
    check_same_as_reference(expression, "kyverno", {"object": pod})


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(expression=expressions(), pod=pods())
def test_generated_expressions_agree_with_the_planner(expression: str, pod: dict[str, Any]) -> None:
    check_same_as_reference(expression, "kyverno", {"object": pod})


# --- what the generator leaves to the planner -----------------------------------------------------------


def nested_loops(depth: int) -> str:
    names = [f"v{i}" for i in range(depth)]
    body = " + ".join(names) + " > 0 && dyn(v0) != 'x'"
    for name in reversed(names):
        body = f"[1, 2].all({name}, {body})"
    return body


NESTED = [
    ("loops nested past the compiler's block limit", nested_loops(9)),
    (
        "a conditional chain deeper than the indentation limit",
        " : ".join(f"{i} == object.n ? {i}" for i in range(60)) + " : -1",
    ),
    (
        "logic nested inside loops",
        "[1, 2].all(a, [3].exists(b, (a > 0 && (b < 0 || (a == 1 ? b == 3 : [a].all(c, c == b + a - 2))))))",
    ),
    (
        "a binding read by a planner closure",
        "cel.bind(x, 5, " + nested_loops(9).replace("v0) != 'x'", "v0) != x") + ")",
    ),
]


@pytest.mark.parametrize("expression", [row[1] for row in NESTED], ids=[row[0] for row in NESTED])
def test_deep_nesting_leaves_subtrees_to_the_planner_and_agrees(expression: str) -> None:
    check_same_as_reference(expression, "kyverno", {"object": {"n": 7}})


def test_loops_too_deep_for_one_function_call_planner_closures() -> None:
    program = cel.Environment("kyverno").compile(nested_loops(9))
    assert isinstance(program, CompiledRunner) and program.python_source is not None
    assert program.fallbacks >= 1
    assert program.evaluate(cel.Activation()) is True


def test_an_expression_too_large_to_be_worth_compiling_runs_on_the_planner() -> None:
    elements = pycode.MAX_NODES // 2 + 1  # object.n is two nodes
    source = "size([" + ", ".join(["object.n"] * elements) + "])"
    program = cel.Environment("kyverno").compile(source)
    assert isinstance(program, CompiledRunner) and not program.generated and program.python_source is None
    assert program.evaluate(cel.Activation(object={"n": 1})) == elements
    check_same_as_reference(source, "kyverno", {"object": {"n": 1}})


POLICY_EXPRESSIONS = [
    'has(object.metadata.labels) && object.metadata.labels["app"] == "web"',
    'object.spec.containers.exists(c, c.image.startsWith("nginx"))',
    'object.metadata.?annotations[?"skip"].orValue("") == "true"',
    "object.spec.containers.filter(c, !has(c.resources.limits.cpu)).map(c, "
    'JSONPatch{op: "add", path: "/metadata/annotations/no-cpu-limit-" + c.name, value: "true"})',
    "Object{spec: Object.spec{containers: object.spec.containers.map(c, Object.spec.containers{name: c.name})}}",
    'request.operation == "UPDATE" || variables.team in ["a", "b"]',
]


@pytest.mark.parametrize("expression", POLICY_EXPRESSIONS)
def test_typical_policy_expressions_are_compiled_whole(expression: str) -> None:
    program = cel.Environment("kyverno", variables={"team": types.DYN}).compile(expression)
    assert isinstance(program, CompiledRunner)
    assert program.python_source is not None and program.fallbacks == 0


def test_a_variable_missing_from_the_activation_fails_as_on_the_planner() -> None:
    """The planner's ``no such attribute`` (an activation built without a declared variable)."""
    outcomes = []
    for engine in ("interpreted", "compiled"):
        activation = cel.Activation(object={"a": 1})
        del activation.vars["object"]
        with pytest.raises(cel.CelEvaluationError) as raised:
            cel.Environment("kyverno", backend=engine).compile("object.a == 1").evaluate(activation)
        outcomes.append(str(raised.value))
    assert outcomes == ["no such attribute: object"] * 2
