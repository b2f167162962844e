"""The C++ engine: Google's CEL C++ runtime (cel-expr-python) behind the same seam, one front end.

celmut's front end parses and checks each expression once; this engine receives the
:class:`~celmut.cel.checker.CheckResult`, lowers it to CEL text (:mod:`.cpp_lowering`), compiles the
text with ``disable_check=True`` (the checking already happened) in a cel-cpp environment built once
per profile (:func:`cpp_environment`: optional, strings, lists, sets and two-variable comprehensions
in both; bindings, encoders, math and regex in the Kyverno one), and evaluates it. Library functions
cel-cpp lacks, or runs differently, run the same Python implementations as the cel-python engine
(:mod:`.cpp_bridge`; which ones is :data:`.cpp_native.NOT_NATIVE`); results and errors come back
as celmut values and typed errors (:mod:`.cpp_values`).

Fallback: an expression cel-cpp cannot run with the same semantics is planned by the cel-python
engine instead, transparently (the program's ``fallback_reason`` says why). Decided per expression
from the checked tree:

====================================================  ===========================================================
what the expression uses                              why it runs on cel-python
====================================================  ===========================================================
``transformMap`` / ``transformMapEntry``              fail at run time in cel-expr-python 0.1.3 (no
                                                      ``cel.@mapInsert``)
``sortBy``                                            celmut's stable sort with cel-go's errors; cel-cpp's differs
values of library types (quantity, ip, cidr, url,     cel-expr-python exchanges only plain values with Python:
semver, format, image, GVR, http client), or calls    an object of a library type cannot live in cel-cpp
taking or returning them
an optional reaching a Python library function        cel-expr-python 0.1.3 crashes (segfault) passing an
(directly, inside a list, or behind ``dyn``), or      optional to Python and cannot return one inside a container
optionals inside a container in the result
uint values together with Python library calls        they would reach Python as int
a Python library function that only returns bytes     cel-expr-python 0.1.3 cuts bytes and strings coming from
(``base64.decode``, ``gzip.compress``)                Python at the first NUL
``==``, ``!=``, ``in``, ``type()``, ``string()``, or  cel-python keeps the type name (``JSONPatch{…} != {…}``);
a library call, on typed objects (``Object{…}``,      on cel-cpp they are plain maps
``JSONPatch{…}``, also behind ``dyn``)
``variables.?x`` or ``variables`` as a value          only ``variables.x`` and ``has(variables.x)`` are lowered
a macro variable named ``celmut``                     it would shadow the private function names
a variadic Python function with more than 8           the bridge registers fixed arities
arguments
text cel-cpp refuses to compile                       a safety net (no such case is known)
====================================================  ===========================================================

Kyverno's ``x.orValue(y)`` (its macro calls the strict ``__orValueCompat__(x, y)``: an error in
either fails, an empty optional gives ``y``, a value that is no optional ``x`` itself) is lowered,
not a fallback: both are bound with ``cel.bind`` and tested together.

At run time, an evaluation is redone on cel-python when a value cannot cross exactly: a variable or
library result holding an optional, a library object, a NUL character, or a uint or timestamp where
the declaration says ``dyn``; an input string with a NUL character (cel-expr-python 0.1.3 would cut
it); and a map/filter/transformList over inputs above 32 KiB of JSON or a list of over 1,000
elements (cel-expr-python 0.1.3 copies the accumulated list at every iteration: quadratic).

Variables: ``variables.x`` becomes ``celmut.variable("x")``, a Python function that calls
``activation.variables.cel_select`` — lazy and memoised per activation exactly as on cel-python, and
the variable's own program may run on either engine.

Values: cel-expr-python converts a variable's whole value on first use (about 16 ns per byte of
JSON: 70 µs for the containers of a 6 KB Pod). So the lowering hoists field paths
(``object.spec.containers`` becomes a variable) and projects them to what the expression reads
(:mod:`.cpp_projection`: ``[{"image": …}, …]`` for a scan of container images); the
``cel.Activation`` is cached on the request's budget by the identity of the values read, so
expressions of one request that read the same data share it. Results are converted back by their
static type (uint, bytes, timestamps, durations, type values, ``Object``/``JSONPatch`` as
:class:`~celmut.cel.values.StructValue`, optionals); maps come back with sorted keys (cel-cpp's
order is a per-process hash order).

Budget: the static cost of the expression (its node count) is charged per evaluation, and the
deadline is checked then; Python-implemented functions charge their declared costs and check the
deadline as on cel-python; comprehensions are bounded by cel-cpp's fixed limit of 10,000
iterations per evaluation, reported as a :class:`~celmut.cel.errors.CelCostError` naming it; the
size-driven functions (``lists.range``, ``replace``, ``split``, regexes …) are Python and charged;
input size limits apply unchanged (they are checked when the activation is built).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from functools import cache
from typing import Any

import orjson
from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_encoders, ext_math, ext_optional, ext_strings

from celmut.cel import types as t
from celmut.cel.activation import Activation
from celmut.cel.backends import cpp_bridge as bridge
from celmut.cel.backends import cpp_values as values
from celmut.cel.backends.base import BackendOptions, Folded, Program
from celmut.cel.backends.celpy_backend import CelpyBackend
from celmut.cel.backends.cpp_lowering import Fallback, Hoisted, Lowered, lower
from celmut.cel.backends.cpp_projection import project
from celmut.cel.checker import CheckResult
from celmut.cel.declarations import Overload
from celmut.cel.errors import CelError, CelEvaluationError
from celmut.cel.evalcontext import EvalContext
from celmut.cel.selection import select_path, test_field

_ERROR = cel.Type.ERROR
_STRING_OR_DYN = frozenset({"string", "dyn", "param", "error"})

# cel-cpp extensions per profile: Kubernetes has no bindings, encoders, math or regex (celmut's front
# end refuses those functions there anyway).
_KUBERNETES_CONFIG = 'extensions:\n  - name: "lists"\n  - name: "sets"\n  - name: "two-var-comprehensions"\n'
_KYVERNO_CONFIG = _KUBERNETES_CONFIG + '  - name: "regex"\n'


@cache
def cpp_environment(profile_name: str) -> cel.Env:
    """The cel-cpp environment of a profile: built-in extensions plus the bridged Python functions."""
    from celmut.cel.profiles import profile

    kyverno = profile_name == "kyverno"
    extensions: list[Any] = [ext_optional.ExtOptional(), ext_strings.ExtStrings()]
    if kyverno:
        extensions += [ext_bindings.ExtBindings(), ext_encoders.ExtEncoders(), ext_math.ExtMath()]
    config = cel.NewEnvConfigFromYaml(_KYVERNO_CONFIG if kyverno else _KUBERNETES_CONFIG)
    return cel.NewEnv(
        config=config,
        extensions=extensions,
        functions=bridge.declarations(profile(profile_name).functions()),
    )


_MAX_CACHED_ACTIVATIONS = 256
# cel-expr-python 0.1.3 builds the result of map/filter/transformList by copying the list at every
# iteration (quadratic: 1,000 elements ≈ 20 ms, 8,000 ≈ 1.5 s); over inputs larger than this the
# expressions that build lists run on cel-python (also when a hoisted list has over 1,000 elements).
LARGE_INPUT_BYTES = 32 * 1024
LARGE_LIST = 1_000


_local = threading.local()


def _empty_activation(env: Any) -> Any:
    """One empty cel.Activation per thread, for expressions that read no input."""
    made = getattr(_local, "empty", None)
    if made is None or made[0] is not env:
        made = _local.empty = (env, env.Activation({}))
    return made[1]


def hoisted_activation(
    activation: Activation, env: Any, hoisted: tuple[Hoisted, ...], names: tuple[str, ...]
) -> tuple[Any, dict[str, CelError], bool]:
    """The cel.Activation holding the hoisted paths' values, the errors of paths that failed, and
    whether the values are large (over :data:`LARGE_INPUT_BYTES` of JSON).

    Activations are cached on the request's :class:`~celmut.cel.evalcontext.Budget` (one per
    admission request) by the identity of the values, so every expression of a request that reads
    the same subtrees shares one conversion, across policies and until a mutation replaces them.
    """
    vars = activation.vars
    sources: dict[str, Any] = {}
    errors: dict[str, CelError] = {}
    key: list[Any] = [id(env), names]
    for variable in hoisted:
        try:
            value = select_path(vars[variable.root], variable.path)
            if variable.test is not None:
                value = test_field(value, variable.test)
        except CelEvaluationError as ex:
            errors[variable.name] = ex
            key.append(ex.message)
            continue
        sources[variable.name] = value
        key.append(id(value))
    budget = activation.budget
    cache: dict[tuple[Any, ...], tuple[Any, ...]] | None = budget.engine_cache
    if cache is None:
        cache = budget.engine_cache = {}
    frozen = tuple(key)
    entry = cache.get(frozen)
    if entry is None:
        if len(cache) >= _MAX_CACHED_ACTIVATIONS:
            cache.clear()
        data: dict[str, Any] = {}
        for variable in hoisted:
            if variable.name in sources:
                data[variable.name] = project(sources[variable.name], variable.shape)
        nul, size = False, 0
        for value in data.values():
            found, weight = inspect_value(value)
            nul, size = nul or found, size + weight
        large = size > LARGE_INPUT_BYTES or any(type(v) is list and len(v) > LARGE_LIST for v in data.values())
        held = None if nul else env.Activation(data)
        entry = cache[frozen] = (sources, errors, held, large)  # sources keep the ids valid
    if entry[2] is None:
        raise values.NeedsRerun("a string with a NUL character (cel-expr-python 0.1.3 would cut it)")
    return entry[2], entry[1], entry[3]


def inspect_value(value: Any) -> tuple[bool, int]:
    """(whether it holds a string with a NUL character, its JSON size in bytes).

    cel-expr-python 0.1.3 cuts strings short at a NUL on the way in (``"a\\x00b"`` arrives as
    ``"a"``): such inputs are evaluated on cel-python."""
    cls = type(value)
    if cls is str:
        return "\x00" in value, len(value)
    if cls is dict or cls is list:
        try:
            encoded = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:  # not JSON (bytes inside): walk it
            items = value.items() if cls is dict else enumerate(value)
            parts = [inspect_value(part) for pair in items for part in pair]
            return any(found for found, _ in parts), sum(size for _, size in parts)
        return b"\\u0000" in encoded, len(encoded)
    if cls is bytes:
        return b"\x00" in value, len(value)
    return False, 8


class CppProgram:
    """A compiled cel-cpp expression with celmut's program interface."""

    engine_name = "cpp"
    fallback_reason: str | None = None
    folded: Folded | None = None  # cel-cpp builds each evaluation's value (no literal folding here)

    def __init__(
        self,
        expression: Any,
        env: Any,
        lowered: Lowered,
        checked: CheckResult,
        source: str,
        functions: Mapping[str, list[Overload]],
        options: BackendOptions,
    ) -> None:
        self._expression = expression
        self._env = env
        self.text = lowered.text
        self._calls_python = lowered.calls_python
        self._static_cost = lowered.static_cost
        self._hoisted = lowered.hoisted
        self._builds_lists = lowered.builds_lists
        self._hoisted_names = tuple(h.name for h in lowered.hoisted)
        self._convert = values.converter(checked.type, lowered.optional_result)
        self._string_result = not lowered.optional_result and checked.type.kind in _STRING_OR_DYN
        self._bool_result = checked.type.kind == "bool"
        self._checked = checked
        self._functions = functions
        self._options = options
        self._celpy: Program | None = None
        self.source = source
        self.checked = checked
        self.result_type: t.CelType = checked.type
        self.references = checked.references

    def _on_celpy(self) -> Program:
        if self._celpy is None:
            self._celpy = CelpyBackend().program(self._checked, self.source, self._functions, self._options)
        return self._celpy

    def evaluate(self, activation: Activation) -> Any:
        budget = activation.budget
        ctx = EvalContext(
            vars=activation.vars,
            slots=[],
            budget=budget,
            services=activation.services,
            limit=min(budget.per_call_limit, budget.remaining()),
        )
        try:
            ctx.charge(self._static_cost)
            try:
                return self._run(activation, ctx)
            except values.NeedsRerun:
                return self._on_celpy().evaluate(activation)
        except CelError:
            raise
        except Exception as ex:  # a defect in celmut must not take down the caller
            raise CelEvaluationError(f"internal error evaluating expression: {type(ex).__name__}: {ex}") from ex
        finally:
            budget.spent += ctx.cost

    def _run(self, activation: Activation, ctx: EvalContext) -> Any:
        if self._hoisted:
            cpp_act, missing, large = hoisted_activation(activation, self._env, self._hoisted, self._hoisted_names)
            if large and self._builds_lists:
                raise values.NeedsRerun("map/filter over a large input (quadratic in cel-expr-python 0.1.3)")
        else:
            cpp_act, missing = _empty_activation(self._env), None
        state: bridge.BridgeState | None = None
        if self._calls_python:
            state = bridge.BridgeState(ctx, activation)
            token = bridge.STATE.set(state)
            try:
                result = self._expression.eval(cpp_act)
            except RuntimeError as ex:
                if state.reschedule is not None:
                    raise state.reschedule from None
                raise values.runtime_error(ex) from None
            finally:
                bridge.STATE.reset(token)
            if state.reschedule is not None:
                raise state.reschedule
            if state.cost_error is not None:
                raise state.cost_error
            if state.rerun is not None:
                raise values.NeedsRerun(state.rerun)
        else:
            try:
                result = self._expression.eval(cpp_act)
            except RuntimeError as ex:
                raise values.runtime_error(ex) from None
        try:
            plain = result.plain_value()
        except (TypeError, SystemError):  # an optional or another opaque value behind dyn
            raise values.NeedsRerun("an opaque result") from None
        if self._bool_result and (plain is True or plain is False):
            return plain
        if type(plain) is str and (not self._string_result or result.type() == _ERROR):
            if "Non-CEL value type" in plain or bridge.RERUN_TOKEN in plain:
                raise values.NeedsRerun("a value cel-cpp cannot hold")
            raise values.error_from_cpp(plain, state, missing)
        return self._convert(plain, result)


class CppBackend:
    """Compiles checked expressions for cel-cpp; what it cannot run the same way goes to cel-python."""

    name = "cpp"

    def __init__(self) -> None:
        self._celpy = CelpyBackend()

    def program(
        self,
        checked: CheckResult,
        source: str,
        functions: Mapping[str, list[Overload]],
        options: BackendOptions,
    ) -> Program:
        try:
            lowered = lower(checked, functions, options)
        except Fallback as ex:
            return self._fallback(checked, source, functions, options, str(ex))
        env = cpp_environment(options.profile)
        try:
            expression = env.compile(lowered.text, disable_check=True)
        except RuntimeError as ex:
            reason = str(ex).split("\n", 1)[0]
            return self._fallback(checked, source, functions, options, f"cel-cpp refuses the lowered text: {reason}")
        return CppProgram(expression, env, lowered, checked, source, functions, options)

    def _fallback(
        self,
        checked: CheckResult,
        source: str,
        functions: Mapping[str, list[Overload]],
        options: BackendOptions,
        reason: str,
    ) -> Program:
        program = self._celpy.program(checked, source, functions, options)
        program.fallback_reason = reason
        return program
