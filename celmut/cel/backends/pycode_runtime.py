"""What generated code may call: the namespace its module is executed in.

Generated code inlines the common case (a map lookup, an int comparison, a loop) and calls these for
everything else, so each rare path (a missing key, a value of an unexpected type, an optional) is the
same function the planner uses, with the same error text. The namespace also replaces Python's
builtins with the few the generated code needs: even a defect in the generator could not reach
``__import__``, ``open`` or ``eval`` from a policy.
"""

from __future__ import annotations

import builtins
from typing import Any

from celmut.cel import calls, comprehensions, costs, selection
from celmut.cel import values as v
from celmut.cel.activation import LazyVariables
from celmut.cel.errors import CelCostError, CelError, CelEvaluationError, describe


def no_attribute(name: str) -> CelEvaluationError:
    """A variable the activation does not have (the planner's message)."""
    return CelEvaluationError(f"no such attribute: {name}")


def select_variable_path(variables: dict[str, Any], name: str, path: tuple[str, ...]) -> Any:
    """``name.a.b`` after the inline lookup failed somewhere: the exact error, or the value of a
    step that is no plain map (``variables.x``, an optional, a library object)."""
    try:
        value = variables[name]
    except KeyError:
        raise no_attribute(name) from None
    return selection.select_path(value, path)


def index_key(container: Any, key: str) -> Any:
    """``container["key"]`` after the inline lookup failed: the planner's messages (a plain map says
    ``no such key: key``, anything else what :func:`selection.index_value` says)."""
    if type(container) is dict:
        raise CelEvaluationError(f"no such key: {key}")
    return selection.index_value(container, key)


def bad_range(macro: str, value: Any) -> CelEvaluationError:
    return CelEvaluationError(
        f"{macro}(): expression of type '{v.type_name(value)}' cannot be the range of a comprehension"
    )


def repeated_key(key: Any) -> CelEvaluationError:
    return CelEvaluationError(f"Failed with repeated key: {describe(key)}")


def existing_key(key: Any) -> CelEvaluationError:
    return CelEvaluationError(f"insert failed: key {describe(key)} already exists")


_BUILTINS_USED: tuple[str, ...] = ("type", "len", "isinstance", "enumerate", "str", "int", "list", "tuple", "dict")
_BUILTINS_USED += ("KeyError", "TypeError")
SAFE_BUILTINS: dict[str, Any] = {name: getattr(builtins, name) for name in _BUILTINS_USED}

NAMESPACE: dict[str, Any] = {
    "__builtins__": SAFE_BUILTINS,
    "_CelError": CelError,
    "_EvalError": CelEvaluationError,
    "_CostError": CelCostError,
    "_IMPL_ERRORS": calls.IMPL_ERRORS,
    "_impl_error": calls.impl_error,
    "_charge_result": calls.charge_result,
    "_dispatch": calls.dispatch,
    "_ordered": calls.ordered,
    "_nso": v.no_such_overload,
    "_no_attribute": no_attribute,
    "_select_var_path": select_variable_path,
    "_select_field": selection.select_field,
    "_select_path": selection.select_path,
    "_select_if_present": selection.select_if_present,
    "_test_field": selection.test_field,
    "_index_value": selection.index_value,
    "_index_optional": selection.index_optional,
    "_index_key": index_key,
    "_equals": costs.equals,
    "_contains": costs.contains,
    "_alloc_bytes": costs.allocation_bytes,
    "_require_key": v.require_map_key,
    "_Struct": v.StructValue,
    "_new_dict": dict.__new__,
    "_Optional": v.OptionalValue,
    "_NONE": v.NONE,
    "_Lazy": LazyVariables,
    "_bad_range": bad_range,
    "_repeated_key": repeated_key,
    "_existing_key": existing_key,
    "_sorted_by": comprehensions.finish_sort_by,
}
