"""Cost of the CEL operations whose work grows with their operands: sizes, equality, membership.

cel-go charges every evaluated step (``interpreter/runtimecost.go``): ``_==_``/``_!=_`` and string
ordering ``ceil(min(size(a), size(b)) * 0.1)``, ``in`` on a list its length, string ``+`` a tenth of
the result; Kubernetes' library charges list functions by ``traversalCost`` — one unit per scalar, a
tenth per string byte, summed over containers (``staging/src/k8s.io/apiserver/pkg/cel/library/
cost.go``). Go's shallow sizes suffice there because Go compares fast; celmut's values are Python
objects that may *share* subtrees (a policy variable used eight times by the next one), so the tree
an operation walks can be exponentially larger than the memory it occupies. Hence:

* :func:`traversal_cost` is Kubernetes' ``traversalCost`` plus one unit per container (so nested
  empty lists cannot hide work), measured once per distinct object: the walk is linear in the
  objects that exist, never in the tree they unfold to, and big integers hold the unfolded count.
* :class:`Equality` compares as :func:`celmut.cel.values.equals` does, charging one unit per value
  visited (and a tenth per string character) as it goes, so a budget or the deadline stops it
  mid-way. Identical objects are equal unless they hold a NaN (``[nan] == [nan]`` is false), and
  each pair of containers is compared once per operation, so two separately built copies of a
  shared structure compare in linear time.
* :func:`measure` gives the unfolded size in bytes of a value's JSON (to refuse a string, a
  patch or a response before building it) and whether it holds a NaN.

Values built by an evaluation are also *allocation*: :meth:`EvalContext.allocate
<celmut.cel.evalcontext.EvalContext.allocate>` charges their bytes to the request, and no string a
request builds may exceed :data:`MAX_STRING_BYTES`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

from celmut.cel import values as v
from celmut.cel.errors import CelCostError
from celmut.cel.evalcontext import EvalContext
from celmut.limits import MAX_REQUEST_BYTES

# Kubernetes' worst-case size of any string, list or object in its cost estimates: the API server's
# request limit (k8s.io/apiserver/pkg/apis/cel/config.go MaxRequestSizeBytes = 3 MiB). No value a
# request can use is larger, so celmut refuses to build a larger string.
MAX_STRING_BYTES = MAX_REQUEST_BYTES
_CHUNK = 1024  # units accumulated before charging (a charge also checks the deadline)
_MAX_REMEMBERED_PAIRS = 1 << 16  # the pair memo of one operation stays a few MB
_SCALARS = (str, int, float, bool, bytes)
_CONTAINERS = (dict, list, tuple, v.StructValue)
_SIZE_PER_ELEMENT = 8  # a pointer in a list; bytes charged per element a list holds
_SIZE_PER_ENTRY = 64  # a dict slot, hash and key pointer


def is_container(value: Any) -> bool:
    return isinstance(value, _CONTAINERS)  # a tuple of types: ``A | B`` would build a union per call


def string_cost(length: int) -> int:
    """cel-go's string traversal factor: ``ceil(length * 0.1)``."""
    return -(-length // 10)


# --- sizes ------------------------------------------------------------------------------------------


class Measure:
    """The unfolded sizes of values, computed once per distinct container (memoised by identity, so
    a shared subtree is measured once). Keep one for the values of one operation: the memo relies on
    the measured objects staying alive while it is used."""

    __slots__ = ("_memo",)

    def __init__(self) -> None:
        self._memo: dict[int, tuple[int, int, bool]] = {}

    def cost(self, value: Any) -> int:
        """Kubernetes' ``traversalCost``, plus one per container."""
        return self._of(value)[0]

    def nbytes(self, value: Any) -> int:
        """About the length of the value's JSON, unfolded."""
        return self._of(value)[1]

    def has_nan(self, value: Any) -> bool:
        return self._of(value)[2]

    def _of(self, value: Any) -> tuple[int, int, bool]:
        if not isinstance(value, _CONTAINERS):
            return _leaf(value)
        found = self._memo.get(id(value))
        if found is not None:
            return found
        memo = self._memo
        stack: list[tuple[Any, bool]] = [(value, False)]
        while stack:
            node, children_done = stack.pop()
            key = id(node)
            if children_done:
                cost, nbytes, nan = 1, 2, False
                items = node.items() if isinstance(node, dict) else enumerate(node)
                keyed = isinstance(node, dict)
                for name, child in items:
                    if keyed:
                        name_cost, name_bytes, _ = _leaf(name)
                        cost += name_cost
                        nbytes += name_bytes + 2
                    sizes = memo[id(child)] if isinstance(child, _CONTAINERS) else _leaf(child)
                    cost += sizes[0]
                    nbytes += sizes[1] + 1
                    nan = nan or sizes[2]
                memo[key] = (cost, nbytes, nan)
            elif key not in memo:
                stack.append((node, True))
                children = node.values() if isinstance(node, dict) else node
                stack.extend((child, False) for child in children if isinstance(child, _CONTAINERS))
        return memo[id(value)]


def _leaf(value: Any) -> tuple[int, int, bool]:
    cls = type(value)
    if cls is str:
        length = len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
        return length // 10, length + 2, False
    if cls is bytes:
        return len(value) // 10, len(value) * 4 // 3 + 2, False
    if cls is float:
        return 1, 24, math.isnan(value)
    if isinstance(value, v.OptionalValue):
        return (1, 4, False) if not value.present else _leaf(value.value)
    return 1, 20, False


_EXIT = object()  # json_nbytes' stack marker: the children of the node below it are measured


_TREE_DEPTH = 64  # json_nbytes' recursive walk goes no deeper; below, the stack walk measures


class _NotATree(Exception):
    """A container nested past ``_TREE_DEPTH``: measure with the stack walk."""


def json_nbytes(value: Any) -> int:
    """``Measure().nbytes(value)``, counting bytes only: the engine checks every mutation result with
    it, and a walk that builds no (cost, bytes, nan) tuple per node costs about a third. Memoised by
    identity per call, so shared subtrees are measured once (the tree they unfold to never is).

    A mutation result is almost always a small tree: a recursive walk measures it in a fraction of
    the stack walk's time (a container met again, such as a literal built once and placed in every
    item, adds the size it was measured at), and hands over to the stack walk when it nests deeper
    than ``_TREE_DEPTH``."""
    if not isinstance(value, _CONTAINERS):
        return _leaf(value)[1]
    flat = _flat_nbytes(value)
    if flat is not None:
        return flat
    try:
        return _tree_nbytes(value, {}, 0)
    except _NotATree:
        return _shared_nbytes(value)


def _flat_nbytes(value: Any) -> int | None:
    """:func:`json_nbytes` of the commonest mutation result, a list of maps of ASCII strings (a
    JSONPatch list: ``[{op, path, value}, …]``), in one loop without a call per node; None for any
    other shape. Nothing here can unfold: two levels of containers are walked element by element,
    so a map repeated in the list costs its size each time, as the walk of its JSON would."""
    if type(value) is not list:
        return None
    total = 2
    for item in value:
        if type(item) is not v.StructValue and type(item) is not dict:
            return None
        total += 3
        for name, child in item.items():
            if type(child) is not str or type(name) is not str or not (child.isascii() and name.isascii()):
                return None
            total += len(name) + len(child) + 7
    return total


def _tree_nbytes(node: Any, seen: dict[int, int], depth: int) -> int:
    key = id(node)
    known = seen.get(key)
    if known is not None:
        return known
    if depth > _TREE_DEPTH:
        raise _NotATree
    total = 2
    if isinstance(node, dict):
        for name, child in node.items():
            total += len(name) + 5 if type(name) is str and name.isascii() else _leaf(name)[1] + 3
            if type(child) is str and child.isascii():
                total += len(child) + 2
            elif isinstance(child, _CONTAINERS):
                total += _tree_nbytes(child, seen, depth + 1)
            else:
                total += _leaf_nbytes(child)
    else:
        for child in node:
            if type(child) is str and child.isascii():
                total += len(child) + 3
            elif isinstance(child, _CONTAINERS):
                total += 1 + _tree_nbytes(child, seen, depth + 1)
            else:
                total += 1 + _leaf_nbytes(child)
    seen[key] = total
    return total


def _shared_nbytes(value: Any) -> int:
    """:func:`json_nbytes` of any value, each distinct container measured once (an explicit stack)."""
    memo: dict[int, int] = {}
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if node is _EXIT:
            node = stack.pop()
            total = 2
            if isinstance(node, dict):
                for name, child in node.items():
                    total += (len(name) + 5 if type(name) is str and name.isascii() else _leaf(name)[1] + 3) + (
                        memo[id(child)] if isinstance(child, _CONTAINERS) else _leaf_nbytes(child)
                    )
            else:
                for child in node:
                    total += 1 + (memo[id(child)] if isinstance(child, _CONTAINERS) else _leaf_nbytes(child))
            memo[id(node)] = total
        elif id(node) not in memo:
            stack.append(node)
            stack.append(_EXIT)
            children = node.values() if isinstance(node, dict) else node
            stack.extend([child for child in children if isinstance(child, _CONTAINERS)])
    return memo[id(value)]


def _leaf_nbytes(value: Any) -> int:
    cls = type(value)
    if cls is str and value.isascii():
        return len(value) + 2
    if cls is bool or cls is int or value is None:
        return 20
    return _leaf(value)[1]


def traversal_cost(value: Any) -> int:
    """Kubernetes' ``traversalCost`` of one value, plus one per nested container (so that nested
    empty lists cannot hide work; a flat list costs exactly what Kubernetes charges), measured once
    per distinct container."""
    if not isinstance(value, _CONTAINERS):
        return _leaf(value)[0]
    return Measure().cost(value) - 1


# --- equality -----------------------------------------------------------------------------------------


class Equality:
    """CEL heterogeneous equality (:func:`celmut.cel.values.equals`), charged to ``ctx`` as it walks.

    One instance serves one operation (``==``, ``in``, ``distinct``, ``sets.contains`` …): results
    for pairs of containers are remembered for its lifetime, so repeated shared parts are compared
    once. Call :meth:`done` at the end to charge the rest."""

    __slots__ = ("_measure", "_pairs", "ctx", "units")

    def __init__(self, ctx: EvalContext) -> None:
        self.ctx = ctx
        self.units = 0
        self._pairs: dict[tuple[int, int], bool] = {}
        self._measure: Measure | None = None

    def done(self) -> None:
        if self.units:
            units, self.units = self.units, 0
            self.ctx.charge(units)

    def equal(self, a: Any, b: Any) -> bool:
        self.units += 1
        if self.units >= _CHUNK:
            self.done()
        ta, tb = type(a), type(b)
        if ta is tb and (ta is str or ta is bytes):
            self.units += min(len(a), len(b)) // 10
            return bool(a == b)
        if ta is tb and ta in _SCALARS:
            return bool(a == b)
        if not isinstance(a, _CONTAINERS) or not isinstance(b, _CONTAINERS):
            return v.equals(a, b)
        if a is b:
            if self._measure is None:
                self._measure = Measure()
            return not self._measure.has_nan(a)
        pair = (id(a), id(b))
        known = self._pairs.get(pair)
        if known is not None:
            return known
        result = self._containers(a, b, ta, tb)
        if len(self._pairs) < _MAX_REMEMBERED_PAIRS:
            self._pairs[pair] = result
        return result

    def _containers(self, a: Any, b: Any, ta: type, tb: type) -> bool:
        a_list, b_list = isinstance(a, list | tuple), isinstance(b, list | tuple)
        if a_list or b_list:
            if not (a_list and b_list) or len(a) != len(b):
                return False
            equal = self.equal
            return all(equal(x, y) for x, y in zip(a, b, strict=True))
        if (ta is v.StructValue) != (tb is v.StructValue):
            return False
        if ta is v.StructValue and a.type_name != b.type_name:
            return False
        if len(a) != len(b):
            return False
        return all(not (key not in b or not self.equal(value, b[key])) for key, value in a.items())


def equals(ctx: EvalContext, a: Any, b: Any) -> bool:
    """``a == b``, charged: strings a tenth per character, containers one unit per value compared."""
    ta = type(a)
    if ta is str and type(b) is str:
        length = min(len(a), len(b))
        if length > 10:
            ctx.charge(length // 10)
        return bool(a == b)
    if isinstance(a, _CONTAINERS) and isinstance(b, _CONTAINERS):
        comparison = Equality(ctx)
        try:
            return comparison.equal(a, b)
        finally:
            comparison.done()
    return v.equals(a, b)


def contains(ctx: EvalContext, element: Any, container: Any) -> bool:
    """``element in container``: a list costs its length (cel-go ``in_list``) plus the comparisons'
    traversal; a map is a hash lookup."""
    if isinstance(container, list | tuple):
        ctx.charge(len(container))
        if type(element) is str:
            return any(type(item) is str and item == element for item in container)
        if not isinstance(element, _CONTAINERS):
            equal = v.equals
            return any(equal(element, item) for item in container)
        comparison = Equality(ctx)
        try:
            return any(comparison.equal(element, item) for item in container)
        finally:
            comparison.done()
    if isinstance(container, dict):
        if isinstance(element, dict | list | float) and not (type(element) is float and element.is_integer()):
            return False
        if type(element) is float:
            element = int(element)  # cel-spec fields.textproto in/mixed_numbers_and_keys_present
        try:
            return element in container
        except TypeError:
            return False
    raise v.no_such_overload("@in", element, container)


# --- allocation -----------------------------------------------------------------------------------------


def allocation_bytes(value: Any) -> int:
    """About the bytes a freshly built value adds: its own size plus that of its elements, estimated
    from a sample of at most 16 of them (a list of new integers or strings costs several times its
    pointers); elements' own elements are charged where they were built."""
    cls = type(value)
    if cls is str or cls is bytes:
        return len(value) + 48
    if cls is list or cls is tuple:
        count = len(value)
        return 56 + _SIZE_PER_ELEMENT * count + _sampled(value, count)
    if cls is dict or cls is v.StructValue:
        count = len(value)
        return 64 + _SIZE_PER_ENTRY * count + _sampled(list(itertools.islice(value.values(), _SAMPLE)), count)
    return 0


_SAMPLE = 16


def _sampled(items: Any, count: int) -> int:
    if not count:
        return 0
    if count == len(items) <= _SAMPLE:  # the sample is every element: count * total // count
        total = 0
        for item in items:
            total += _element_bytes(item)
        return total
    sample = items[:: max(1, len(items) // _SAMPLE)][:_SAMPLE]
    return count * sum(_element_bytes(x) for x in sample) // len(sample)


def _element_bytes(item: Any) -> int:
    cls = type(item)
    if cls is int:
        return 0 if -5 <= item <= 256 else 28 + 4 * (item.bit_length() // 30)  # CPython caches small ints
    if cls is str or cls is bytes:
        return 0 if len(item) <= 1 else len(item) + 48  # and one-character strings
    if cls is float:
        return 24
    if cls is list or cls is tuple:
        return 56 + _SIZE_PER_ELEMENT * len(item)
    if cls is dict or cls is v.StructValue:
        return 64 + _SIZE_PER_ENTRY * len(item)
    return 0


def check_string_size(length: int, what: str) -> None:
    """Refuse to build a string or bytes value over :data:`MAX_STRING_BYTES`."""
    if length > MAX_STRING_BYTES:
        raise CelCostError(f"{what} would build a value of {length} bytes, over the limit of {MAX_STRING_BYTES} bytes")


def with_context(cost: Callable[..., int]) -> Callable[..., int]:
    """Mark a library cost function that takes the evaluation context first: ``cost(ctx, *args)``
    (it may charge as it measures, and allocate)."""
    cost.takes_context = True  # type: ignore[attr-defined]
    return cost


def takes_context(cost: Callable[..., int] | None) -> bool:
    return cost is not None and getattr(cost, "takes_context", False) is True
