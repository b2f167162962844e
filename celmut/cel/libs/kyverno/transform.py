"""Kyverno's transform library (kyverno/sdk ``extensions/cel/libs/transform``).

listObjToMap(<list> keys, <list> values, <string> keyField, <string> valueField) -> <map>
transform.listObjToMap(…)   (alias)

    Pairs two lists of maps element-wise: the result maps ``keys[i][keyField]`` (which must be a
    string) to ``values[i][valueField]`` (``null`` when absent). The lists must be equally long.

        listObjToMap([{"name": "a"}], [{"v": 1}], "name", "v") == {"a": 1}
"""

from __future__ import annotations

from typing import Any

from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("kyverno.transform")
fn = LIBRARY.function


def _size(keys: Any, values: Any, key_field: Any, value_field: Any) -> int:
    return len(keys) if isinstance(keys, list | tuple) else 0


@fn("listObjToMap", ("list(dyn)", "list(dyn)", "string", "string"), "map(dyn, dyn)", cost=_size)
@fn("transform.listObjToMap", ("list(dyn)", "list(dyn)", "string", "string"), "map(dyn, dyn)", cost=_size)
def list_obj_to_map(keys: Any, values: Any, key_field: Any, value_field: Any) -> dict[str, Any]:
    if not (
        isinstance(keys, list | tuple)
        and isinstance(values, list | tuple)
        and isinstance(key_field, str)
        and isinstance(value_field, str)
    ):
        raise no_such_overload("listObjToMap", keys, values, key_field, value_field)
    if len(keys) != len(values):
        raise CelEvaluationError(
            f"listObjToMap must take lists of equal length. list1: {len(keys)}, list2: {len(values)}"
        )
    result: dict[str, Any] = {}
    for key_object, value_object in zip(keys, values, strict=True):
        if not isinstance(key_object, dict):
            raise CelEvaluationError(f"object cannot be handled as a map, {type(key_object).__name__}")
        key = key_object.get(key_field)
        if not isinstance(key, str):
            raise CelEvaluationError("the passed key name cannot be handled as a string in the key object list")
        if not isinstance(value_object, dict):
            raise CelEvaluationError("object cannot be handled as a map string to any in the value object list")
        result[key] = value_object.get(value_field)
    return result
