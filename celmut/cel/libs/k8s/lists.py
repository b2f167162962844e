"""Kubernetes' list library (``kubernetes.lists``, k8s.io/apiserver/pkg/cel/library/lists.go).

Version 0, as the Kubernetes base environment enables it (``includes`` is not part of it).
The functions are declared per element type, as Kubernetes does; when the checker cannot pick
one overload (a ``dyn`` list), Kubernetes picks it at run time from the list's *first* element,
and so does this library: ``dyn([1.0, 2.0]).sum()`` is ``3.0`` and ``[].sum()`` is ``0``. Elements
are then combined with CEL's own ``+`` and ordering, so ``dyn([1, 2.0]).sum()`` is an error
(no ``int + double``) and overflow is an error. An ordering comparison that fails (``1`` against
``'a'``) counts as "not greater", as in Kubernetes.

<list(T)>.isSorted() -> bool            T: int uint double bool duration timestamp string bytes
    [1, 2, 3].isSorted() // true;  [2.0, 1.0].isSorted() // false;  [].isSorted() // true
<list(T)>.sum() -> T                    T: int uint double duration
    [1, 3].sum() // 4;  [duration('1m'), duration('1s')].sum() // duration('61s');  [].sum() // 0
<list(T)>.min() -> T,  <list(T)>.max() -> T     T as for isSorted
    [1, 3].min() // 1;  [1, 3].max() // 3;  [].min() // error: min called on empty list
<list(A)>.indexOf(A) -> int,  <list(A)>.lastIndexOf(A) -> int
    [1, 2, 2, 3].indexOf(2) // 1;  ['a', 'b', 'b', 'c'].lastIndexOf('b') // 2;  [1.0].indexOf(1.1) // -1
"""

from __future__ import annotations

from typing import Any

from celmut.cel import costs
from celmut.cel import values as v
from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.libs import core
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("kubernetes.lists")
fn, method = LIBRARY.function, LIBRARY.method

# Kubernetes' declaration order, which is also its run-time dispatch order.
COMPARABLE = ("int", "uint", "double", "bool", "duration", "timestamp", "string", "bytes")
SUMMABLE = ("int", "uint", "double", "duration")
_ZEROS: dict[str, Any] = {"int": 0, "uint": v.UintType(0), "double": 0.0, "duration": v.Duration(0)}


def element_kind(value: Any) -> str | None:
    """The comparable CEL type of a list element, or None."""
    kind = type(value)
    if kind is int:
        return "int"
    if kind is float:
        return "double"
    if kind is bool:
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, v.UintType):
        return "uint"
    if kind is v.Timestamp:
        return "timestamp"
    if kind is v.Duration:
        return "duration"
    return None


def _list_cost(items: Any, *_: Any) -> int:
    """Kubernetes' ``traversalCost`` of the list (library/cost.go): a tenth per string byte, one per
    other leaf — plus one per container, counted once per distinct object
    (:func:`celmut.cel.costs.traversal_cost`)."""
    return costs.traversal_cost(items) if isinstance(items, list | tuple) else 0


def _checked(name: str, items: Any, kinds: tuple[str, ...]) -> Any:
    """The list itself, after Kubernetes' run-time overload check on its first element."""
    if not isinstance(items, list | tuple):
        raise no_such_overload(name, items)
    if items and element_kind(items[0]) not in kinds:
        raise no_such_overload(name, items)
    return items


def _compare(name: str, a: Any, b: Any) -> int:
    """``a.Compare(b)``; a failed comparison (other type, NaN) is reported as 0 ("not ordered")."""
    if element_kind(b) is None:
        raise no_such_overload(name, b)
    try:
        result = v.compare(a, b, "compare")
    except CelEvaluationError:
        return 0
    return 0 if result == 2 else result


def is_sorted(items: Any) -> bool:
    items = _checked("isSorted", items, COMPARABLE)
    return all(_compare("isSorted", items[i - 1], items[i]) != 1 for i in range(1, len(items)))


def _extreme(name: str, prefer: int) -> Any:
    def extreme(items: Any) -> Any:
        items = _checked(name, items, COMPARABLE)
        if not items:
            raise CelEvaluationError(f"{name} called on empty list")
        result = items[0]
        for item in items[1:]:
            if _compare(name, result, item) == prefer:
                result = item
        return result

    extreme.__name__ = name
    return extreme


list_min = _extreme("min", 1)
list_max = _extreme("max", -1)


def _summer(zero_kind: str) -> Any:
    def sum_(items: Any) -> Any:
        items = _checked("sum", items, SUMMABLE)
        if not items:
            return _ZEROS[zero_kind]
        total = _ZEROS[element_kind(items[0]) or zero_kind]
        for item in items:
            total = core.add(total, item)
        return total

    return sum_


for _kind in COMPARABLE:
    for _name, _impl in (("isSorted", is_sorted), ("min", list_min), ("max", list_max)):
        method(_name, f"list({_kind})", (), "bool" if _name == "isSorted" else _kind, cost=_list_cost)(_impl)
for _kind in SUMMABLE:
    method("sum", f"list({_kind})", (), _kind, cost=_list_cost)(_summer(_kind))


@method("indexOf", "list(A)", ("A",), "int", cost=_list_cost)
def index_of(items: Any, target: Any) -> int:
    if not isinstance(items, list | tuple):
        raise no_such_overload("indexOf", items, target)
    for index, item in enumerate(items):
        if v.equals(item, target):
            return index
    return -1


@method("lastIndexOf", "list(A)", ("A",), "int", cost=_list_cost)
def last_index_of(items: Any, target: Any) -> int:
    if not isinstance(items, list | tuple):
        raise no_such_overload("lastIndexOf", items, target)
    for index in range(len(items) - 1, -1, -1):
        if v.equals(items[index], target):
            return index
    return -1
