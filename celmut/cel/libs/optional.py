"""CEL optional values (cel-go ``OptionalTypes``, version 2).

``optional.of(x)``, ``optional.none()``, ``optional.ofNonZeroValue(x)``, ``opt.hasValue()``,
``opt.value()``, ``opt.or(other)``, ``opt.orValue(default)``, ``optional.unwrap(list)`` /
``list.unwrapOpt()``, and ``list.first()`` / ``list.last()``. ``or`` and ``orValue`` only evaluate
their argument when needed (the planner treats them as special forms); Kyverno's environment has
its own ``orValue`` instead (see :data:`KYVERNO_COMPAT`).
"""

from __future__ import annotations

from typing import Any

from celmut.cel import values as v
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("cel.lib.optional")
fn, method = LIBRARY.function, LIBRARY.method


@fn("optional.of", ("A",), "optional_type(A)")
def of(value: Any) -> v.OptionalValue:
    return v.OptionalValue(value)


@fn("optional.none", (), "optional_type(T)")
def none() -> v.OptionalValue:
    return v.NONE


@fn("optional.ofNonZeroValue", ("A",), "optional_type(A)")
def of_non_zero_value(value: Any) -> v.OptionalValue:
    return v.NONE if v.is_zero(value) else v.OptionalValue(value)


@method("hasValue", "optional_type(A)", (), "bool")
def has_value(opt: v.OptionalValue) -> bool:
    return opt.present


@method("value", "optional_type(A)", (), "A")
def value(opt: v.OptionalValue) -> Any:
    if not opt.present:
        raise CelEvaluationError("optional.none() dereference")
    return opt.value


@method("or", "optional_type(A)", ("optional_type(A)",), "optional_type(A)")
def or_(opt: v.OptionalValue, other: Any) -> Any:  # pragma: no cover - planned as a special form
    if not isinstance(opt, v.OptionalValue) or not isinstance(other, v.OptionalValue):
        raise no_such_overload("or", opt, other)
    return opt if opt.present else other


@method("orValue", "optional_type(A)", ("A",), "A")
def or_value(opt: v.OptionalValue, default: Any) -> Any:  # pragma: no cover - planned as a special form
    return opt.value if opt.present else default


@fn("optional.unwrap", ("list(optional_type(A))",), "list(A)")
@method("unwrapOpt", "list(optional_type(A))", (), "list(A)")
def unwrap(items: list[Any]) -> list[Any]:
    out = []
    for item in items:
        if not isinstance(item, v.OptionalValue):
            raise no_such_overload("optional.unwrap", item)
        if item.present:
            out.append(item.value)
    return out


@method("first", "list(A)", (), "optional_type(A)")
def first(items: list[Any]) -> v.OptionalValue:
    return v.OptionalValue(items[0]) if items else v.NONE


@method("last", "list(A)", (), "optional_type(A)")
def last(items: list[Any]) -> v.OptionalValue:
    return v.OptionalValue(items[-1]) if items else v.NONE


# Kyverno's orValue (pkg/cel/compiler/env.go OrValueCompatEnvOptions): a parse-time macro rewrites
# every x.orValue(y) to __orValueCompat__(x, y), declared (dyn, dyn) -> dyn, so any receiver and
# default type-check and the result is dyn; it replaces cel-go's optional orValue in that profile
# (Profile.functions). Strict in both arguments; evaluated by the planner (and the code generated from its plan).
KYVERNO_COMPAT = Library("kyverno.compat.orValue")
KYVERNO_COMPAT.method("orValue", "dyn", ("dyn",), "dyn")(or_value)
