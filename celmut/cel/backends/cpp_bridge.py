"""The boundary between cel-expr-python (Google's CEL C++ runtime) and celmut's Python libraries.

Every library function cel-cpp does not implement natively is registered in the C++ environment from
celmut's own declarations (:mod:`celmut.cel.declarations`) and calls the same Python implementation
the cel-python engine calls:

* one C++ function per (name, member/global, arity), under a private name —
  ``celmut.fn.<name>(args)`` for global functions and ``celmut.method.<name>(receiver, args)`` for
  member functions — because cel-cpp refuses new overloads of its built-in names from Python
  (``indexOf`` of Kubernetes' list library next to the strings extension's ``indexOf``);
* parameter types are the declared ones mapped to ``cel.Type`` when every overload of the group
  agrees on a position (``string``, ``list``, ``timestamp`` …), else ``any`` (cel-cpp's runtime
  wildcard: its ``dyn`` matches nothing at run time); the result type likewise, which is what lets
  a Python function return a timestamp or a duration (cel-cpp converts by the declared type);
* the Python side dispatches over the group's overloads with the declared guards, exactly as the
  cel-python planner does (same implementation, same ``no such overload`` message, same cost
  charges), and gets the evaluation context (lookups, clocks, budget) from :data:`STATE`, a
  ``ContextVar`` set around each evaluation.

Values crossing the boundary: arguments arrive as plain Python (bytes as ``bytearray``, timestamps
as ``datetime``) and are normalised; results must be plain JSON-like values, or a timestamp/duration
where the declared result says so — exact to the microsecond, which is all ``datetime`` carries (a
value with nanoseconds is redone on cel-python, so results stay exact to the nanosecond). Anything
else (an optional, a library object, a uint or a timestamp inside a container) is
*unrepresentable*: the evaluation is then redone on cel-python.

Cost: a list or map crossing into cel-cpp (a policy variable, a library result) is charged its
unfolded size first (:class:`celmut.cel.costs.Measure`): cel-cpp copies it into a tree, so a value
sharing its parts would otherwise unfold uncharged (and unbounded) inside the C++ runtime.

Errors: cel-cpp turns a Python exception into an error value carrying its message, so the original
:class:`~celmut.cel.errors.CelError` is kept in the evaluation state and the message carries only a
token (``celmut-error#3``); the program re-raises the kept error. Cost errors are re-raised even
when CEL logic would have absorbed the error value, as on cel-python.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel

from celmut.cel import costs
from celmut.cel import types as t
from celmut.cel import values as v
from celmut.cel.activation import Activation
from celmut.cel.calls import IMPL_ERRORS, charge_result, impl_error
from celmut.cel.declarations import Overload
from celmut.cel.errors import CelCostError, CelError, CelEvaluationError, Reschedule
from celmut.cel.evalcontext import EvalContext
from celmut.cel.values import no_such_overload

ANY = cel.Type("any")
ERROR_TOKEN = "celmut-error#"
RERUN_TOKEN = "celmut-rerun"
MAX_VARIADIC_ARITY = 8

# Private function names of the variables bridge (``variables.x`` → ``celmut.variable("x")``).
VARIABLE = "celmut.variable"
VARIABLE_TIMESTAMP = "celmut.variable.timestamp"
VARIABLE_DURATION = "celmut.variable.duration"
HAS_VARIABLE = "celmut.hasVariable"


@dataclass
class BridgeState:
    """What Python functions called from one C++ evaluation need, and what they leave behind."""

    ctx: EvalContext
    activation: Activation
    errors: list[CelError] = field(default_factory=list)
    cost_error: CelCostError | None = None
    rerun: str | None = None  # why the evaluation must be redone on cel-python
    reschedule: Reschedule | None = None  # a function asked to run the request elsewhere (re-raised)


STATE: ContextVar[BridgeState | None] = ContextVar("celmut_cpp_bridge", default=None)


class Unrepresentable(Exception):
    """A Python value cel-cpp cannot hold (optionals, library objects, nested timestamps, uint)."""


def private_name(function: str, member: bool) -> str:
    return f"celmut.{'method' if member else 'fn'}.{function}"


# The overloads a call site may reach (the checker's types narrow them, as the cel-python planner
# does); a call passes the index of its set as a last, extra argument.
_CANDIDATE_SETS: list[tuple[tuple[Overload, ...], bool]] = []
_CANDIDATE_INDEX: dict[tuple[int, ...], int] = {}
_CANDIDATE_LOCK = threading.Lock()


def candidate_set(overloads: list[Overload]) -> int:
    """The index of a call site's candidate overloads (registered once per distinct set)."""
    key = tuple(id(o) for o in overloads)
    index = _CANDIDATE_INDEX.get(key)
    if index is None:
        first = overloads[0]
        direct = len({id(o.impl) for o in overloads}) == 1 and all(
            o.needs_context == first.needs_context and o.cost is first.cost for o in overloads
        )
        with _CANDIDATE_LOCK:
            index = _CANDIDATE_INDEX.get(key)
            if index is None:
                _CANDIDATE_SETS.append((tuple(overloads), direct))
                index = _CANDIDATE_INDEX[key] = len(_CANDIDATE_SETS) - 1
    return index


# --- types --------------------------------------------------------------------------------------------

_SCALARS: dict[str, cel.Type] = {
    "int": cel.Type.INT,
    "uint": cel.Type.UINT,
    "double": cel.Type.DOUBLE,
    "bool": cel.Type.BOOL,
    "string": cel.Type.STRING,
    "bytes": cel.Type.BYTES,
    "null_type": cel.Type.NULL,
    "timestamp": cel.Type.TIMESTAMP,
    "duration": cel.Type.DURATION,
    "list": cel.Type.LIST,
    "map": cel.Type.MAP,
}


def cpp_type(ct: t.CelType) -> cel.Type | None:
    """The cel.Type of a declared parameter or result; None for dyn and type parameters."""
    if ct.kind == "struct":
        return cel.Type.MAP
    return _SCALARS.get(ct.kind)


def representable(ct: t.CelType) -> bool:
    """Whether values of this declared type can cross the boundary at all."""
    if ct.kind in ("opaque", "optional_type", "type", "error"):
        return False
    return all(representable(p) for p in ct.params)


def overload_registrable(overload: Overload) -> bool:
    return all(representable(p) for p in (*overload.params, overload.result))


# --- values -------------------------------------------------------------------------------------------


_TYPE_VALUES = {
    "INT": "int",
    "UINT": "uint",
    "DOUBLE": "double",
    "BOOL": "bool",
    "STRING": "string",
    "BYTES": "bytes",
    "NULL": "null_type",
    "TYPE": "type",
    "TIMESTAMP": "google.protobuf.Timestamp",
    "DURATION": "google.protobuf.Duration",
    "LIST": "list",
    "MAP": "map",
    "optional_type": "optional_type",
}


def type_value(cpp: cel.Type) -> v.TypeValue:
    name = _TYPE_VALUES.get(cpp.name().split("<", 1)[0])
    if name is None:
        raise Unrepresentable(f"type value {cpp.name()}")
    return v.TYPES[name]


def from_cpp(value: Any) -> Any:
    """A plain value from cel-cpp as a celmut value: bytes, timestamps, durations and type values
    anywhere inside; maps with string keys in sorted order (cel-cpp's own order is a per-process
    hash order, so this keeps results deterministic)."""
    cls = type(value)
    if cls is str or cls is bool or cls is int or cls is float or value is None:
        return value
    if cls is dict:
        if all(type(k) is str for k in value):
            return {key: from_cpp(value[key]) for key in sorted(value)}
        return {key: from_cpp(item) for key, item in value.items()}
    if cls is list:
        return [from_cpp(item) for item in value]
    if cls is bytearray:
        return bytes(value)
    if cls is datetime.datetime:
        return v.Timestamp.from_datetime(value)
    if cls is datetime.timedelta:
        return v.Duration.from_timedelta(value)
    if cls is cel.Type:
        return type_value(value)
    raise Unrepresentable(f"Python type {cls.__name__}")


def to_cpp(value: Any) -> Any:
    """A celmut value as something cel-cpp accepts; raises :class:`Unrepresentable`.

    cel-expr-python 0.1.3 cuts strings and bytes at a NUL character on their way in, so those are
    unrepresentable too."""
    cls = type(value)
    if cls is str or cls is bytes:
        if (cls is str and "\x00" in value) or (cls is bytes and b"\x00" in value):
            raise Unrepresentable("string with a NUL character")
        return value
    if cls is bool or cls is int or cls is float or value is None:
        return value
    if isinstance(value, dict):
        return {_key(k): to_cpp(item) for k, item in value.items()}
    if cls is list or cls is tuple:
        return [to_cpp(item) for item in value]
    raise Unrepresentable(v.type_name(value))


def _key(key: Any) -> Any:
    if type(key) in (str, int, bool):
        return key
    raise Unrepresentable(v.type_name(key))


# --- errors -------------------------------------------------------------------------------------------


def _fail(state: BridgeState, error: CelError) -> ValueError:
    if isinstance(error, CelCostError) and state.cost_error is None:
        state.cost_error = error
    state.errors.append(error)
    return ValueError(f"{ERROR_TOKEN}{len(state.errors) - 1}")


def _rerun(state: BridgeState, reason: str) -> ValueError:
    if state.rerun is None:
        state.rerun = reason
    return ValueError(RERUN_TOKEN)


# The seconds cel-go accepts (common/types/timestamp.go minUnixTime, maxUnixTime), less their last second.
_CPP_TIMESTAMP_RANGE = (-62_135_596_800 * 1_000_000_000, 253_402_300_799 * 1_000_000_000)


# --- dispatchers --------------------------------------------------------------------------------------


def _result_check(result_type: cel.Type) -> Callable[[Any, BridgeState], Any]:
    """Convert a Python result for cel-cpp, or ask for a rerun on cel-python when it cannot be."""
    temporal = result_type in (cel.Type.TIMESTAMP, cel.Type.DURATION)
    unsigned = result_type == cel.Type.UINT

    def check(value: Any, state: BridgeState) -> Any:
        cls = type(value)
        if cls is bool or cls is int or cls is float or value is None or (cls is str and "\x00" not in value):
            return value
        if cls is v.UintType:
            if unsigned:
                return int(value)
            raise _rerun(state, "a library function returned a uint where its declaration says dyn")
        if cls is v.Timestamp or cls is v.Duration:
            if not temporal:
                raise _rerun(state, "a library function returned a timestamp or duration where it says dyn")
            if value.ns % 1000:
                # cel-expr-python passes datetime/timedelta, which stop at microseconds
                raise _rerun(state, "a timestamp or duration with nanoseconds cannot enter cel-cpp")
            if cls is v.Timestamp and not _CPP_TIMESTAMP_RANGE[0] < value.ns < _CPP_TIMESTAMP_RANGE[1]:
                # cel-expr-python refuses 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z, both valid
                # in cel-go (cel-spec timestamps.textproto timestamp_range/add_duration_under)
                raise _rerun(state, "a timestamp at an end of the range cannot enter cel-cpp")
            return value.to_datetime() if cls is v.Timestamp else value.to_timedelta()
        if isinstance(value, dict | list | tuple):
            try:
                state.ctx.charge(costs.traversal_cost(value) + 1)  # what converting it unfolds
            except CelError as ex:
                raise _fail(state, ex) from None
        try:
            return to_cpp(value)
        except Unrepresentable as ex:
            raise _rerun(state, f"a library function returned a value of type {ex}") from None

    return check


def _dispatcher(name: str, result_type: cel.Type) -> Callable[..., Any]:
    """The Python side of one registered C++ function: cel-python's dispatch over a call site's
    candidate overloads (the last argument says which set)."""
    check = _result_check(result_type)

    def dispatch(*args: Any) -> Any:
        state = STATE.get()
        if state is None:  # pragma: no cover - only reachable by calling the C++ program directly
            raise ValueError("celmut library function called outside a celmut evaluation")
        overloads, direct = _CANDIDATE_SETS[args[-1]]
        ctx = state.ctx
        try:
            values = tuple(from_cpp(a) for a in args[:-1])
            for overload in overloads:
                if direct or overload.accepts(values):
                    cost = overload.cost
                    if cost is not None:
                        ctx.charge(cost(ctx, *values) if costs.takes_context(cost) else cost(*values))
                    result = overload.impl(ctx, *values) if overload.needs_context else overload.impl(*values)
                    if cost is not None or overload.needs_context:
                        result = charge_result(ctx, name, result)  # as the cel-python planner does
                    break
            else:
                raise no_such_overload(name, *values)
        except CelError as ex:
            raise _fail(state, ex) from None
        except Reschedule as ex:  # through cel-cpp as an error; the backend raises it again after
            state.reschedule = ex
            raise ValueError(RERUN_TOKEN) from None
        except IMPL_ERRORS as ex:
            raise _fail(state, impl_error(name, ex)) from None
        except RecursionError:
            raise _fail(state, CelCostError("expression evaluation is nested too deeply")) from None
        except Exception as ex:  # a defect in a library must not take down the caller
            raise _fail(state, CelEvaluationError(f"internal error in {name}: {type(ex).__name__}: {ex}")) from None
        return check(result, state)

    return dispatch


def _arities(overload: Overload) -> Iterable[int]:
    if overload.variadic:
        return range(len(overload.params) - 1, MAX_VARIADIC_ARITY + 1)
    return (len(overload.params),)


def group_types(overloads: list[Overload], arity: int) -> tuple[list[cel.Type], cel.Type]:
    """Declared types where every overload of the group agrees on them, else ``any``/``dyn``."""
    params = [_agree([cpp_type(_declared_at(o, position)) for o in overloads]) or ANY for position in range(arity)]
    result = _agree([cpp_type(o.result) for o in overloads])
    # Only where cel-cpp needs it to convert (a declared map may still come back as null).
    if result is None or result not in (cel.Type.TIMESTAMP, cel.Type.DURATION, cel.Type.UINT):
        result = cel.Type.DYN
    return params, result


def _agree(types: list[cel.Type | None]) -> cel.Type | None:
    first = types[0]
    if first is None or any(other is None or other != first for other in types[1:]):
        return None
    return first


def _declared_at(overload: Overload, position: int) -> t.CelType:
    return overload.params[min(position, len(overload.params) - 1)]


def function_groups(functions: Mapping[str, list[Overload]]) -> dict[tuple[str, bool, int], list[Overload]]:
    """Overloads by (name, member, arity), in declaration order."""
    groups: dict[tuple[str, bool, int], list[Overload]] = {}
    for name, overloads in functions.items():
        for overload in overloads:
            for arity in _arities(overload):
                groups.setdefault((name, overload.member, arity), []).append(overload)
    return groups


def declarations(functions: Mapping[str, list[Overload]]) -> list[cel.FunctionDecl]:
    """C++ declarations of every function group with at least one registrable overload."""
    by_name: dict[str, list[cel.Overload]] = {}
    for (name, member, arity), overloads in function_groups(functions).items():
        usable = [o for o in overloads if overload_registrable(o)]
        if not usable:
            continue
        params, result = group_types(usable, arity)
        private = private_name(name, member)
        overload_id = f"{private}#{arity}".replace(".", "_")
        impl = _dispatcher(name, result)
        by_name.setdefault(private, []).append(cel.Overload(overload_id, result, [*params, cel.Type.INT], False, impl))
    decls = [cel.FunctionDecl(name, overloads) for name, overloads in by_name.items()]
    for name, result in (
        (VARIABLE, cel.Type.DYN),
        (VARIABLE_TIMESTAMP, cel.Type.TIMESTAMP),
        (VARIABLE_DURATION, cel.Type.DURATION),
    ):
        impl = _variable(result)
        decls.append(
            cel.FunctionDecl(name, [cel.Overload(name.replace(".", "_"), result, [cel.Type.STRING], False, impl)])
        )
    decls.append(
        cel.FunctionDecl(
            HAS_VARIABLE, [cel.Overload("celmut_hasVariable", cel.Type.BOOL, [cel.Type.STRING], False, _has_variable)]
        )
    )
    return decls


def _variable(result_type: cel.Type) -> Callable[[str], Any]:
    """``variables.<name>``: evaluated lazily by whichever engine compiled it, memoised per activation."""
    check = _result_check(result_type)

    def variable(name: str) -> Any:
        state = STATE.get()
        assert state is not None
        try:
            value = state.activation.variables.cel_select(name)
        except CelError as ex:
            raise _fail(state, ex) from None
        return check(value, state)

    return variable


def _has_variable(name: str) -> bool:
    state = STATE.get()
    assert state is not None
    return state.activation.variables.cel_has(name)
