"""Kubernetes' quantity library (``kubernetes.quantity``, k8s.io/apiserver/pkg/cel/library/quantity.go).

Quantities follow ``resource.Quantity`` exactly (see :mod:`celmut.cel.libs.k8s.resource`): binary
suffixes ``Ki Mi Gi Ti Pi Ei``, decimal ``n u m "" k M G T P E``, exponents ``1e3``/``1E-3``, values
rounded up to nanos, and the int64/decimal representation that decides ``isInteger``.

quantity(<string>) -> kubernetes.Quantity
    quantity('1.5G');  quantity('200K') // error: unable to parse quantity's suffix
isQuantity(<string>) -> bool
    isQuantity('1.3Gi') // true;  isQuantity('1,3G') // false
sign(<Quantity>) -> int                 (a global function in Kubernetes, not a method)
    sign(quantity('-50k')) // -1
<Quantity>.isInteger() -> bool,  <Quantity>.asInteger() -> int
    quantity('50k').asInteger() // 50000;  quantity('1000m').isInteger() // false (stored as 1000 × 10⁻³)
<Quantity>.asApproximateFloat() -> double
    quantity('50.703k').asApproximateFloat() // 50703.0
<Quantity>.add(<Quantity> | <int>) -> Quantity,  <Quantity>.sub(<Quantity> | <int>) -> Quantity
    quantity('50k').add(20) == quantity('50020') // true
<Quantity>.compareTo(<Quantity>) -> int,  .isGreaterThan(<Quantity>),  .isLessThan(<Quantity>) -> bool
    quantity('50M').compareTo(quantity('50Mi')) // -1

Equality compares values (``quantity('200M') == quantity('0.2G')``), with one Kubernetes quirk kept
on purpose: ``add`` and ``sub`` return a pointer in Kubernetes, and its ``Equal`` does not accept a
pointer argument, so ``x == q.add(…)`` is false whenever the *right* operand came from ``add``/``sub``
(``q.add(…) == x`` compares normally).
"""

from __future__ import annotations

from typing import Any

from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError
from celmut.cel.libs.k8s import resource
from celmut.cel.libs.k8s.support import string_cost, typed
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("kubernetes.quantity")
fn, method = LIBRARY.function, LIBRARY.method

QTYPE = "kubernetes.Quantity"


@LIBRARY.opaque(QTYPE)
class Quantity:
    """A ``resource.Quantity``; ``derived`` marks results of add/sub (pointers in Kubernetes)."""

    __slots__ = ("derived", "q")

    def __init__(self, q: resource.Quantity, derived: bool = False) -> None:
        self.q = q
        self.derived = derived

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        if other.derived:  # Kubernetes' Equal type-asserts a value, not a pointer (see module docs)
            return False
        return self.q.cmp(other.q) == 0

    def __hash__(self) -> int:  # pragma: no cover - quantities are never map keys
        return hash(self.q.sign())

    def __repr__(self) -> str:
        return f"quantity({self.q.string()!r})"

    def to_plain(self) -> str:
        return self.q.string()


def parse(text: str) -> resource.Quantity:
    try:
        return resource.parse_quantity(text)
    except resource.QuantityError as ex:
        raise CelEvaluationError(str(ex)) from None


@fn("quantity", ("string",), QTYPE, cost=string_cost)
@typed("quantity", str)
def quantity(text: str) -> Quantity:
    return Quantity(parse(text))


@fn("isQuantity", ("string",), "bool", cost=string_cost)
@typed("isQuantity", str)
def is_quantity(text: str) -> bool:
    try:
        resource.parse_quantity(text)
    except resource.QuantityError:
        return False
    return True


@fn("sign", (QTYPE,), "int")
@typed("sign", Quantity)
def sign(value: Quantity) -> int:
    return value.q.sign()


@method("isInteger", QTYPE, (), "bool")
@typed("isInteger", Quantity)
def is_integer(value: Quantity) -> bool:
    return value.q.as_int64() is not None


@method("asInteger", QTYPE, (), "int")
@typed("asInteger", Quantity)
def as_integer(value: Quantity) -> int:
    result = value.q.as_int64()
    if result is None:
        raise CelEvaluationError("cannot convert value to integer")
    return result


@method("asApproximateFloat", QTYPE, (), "double")
@typed("asApproximateFloat", Quantity)
def as_approximate_float(value: Quantity) -> float:
    return value.q.as_approximate_float()


def _operand(name: str, value: Any, other: Any) -> resource.Quantity:
    if isinstance(value, Quantity):
        if isinstance(other, Quantity):
            return other.q
        if type(other) is int:
            return resource.new_quantity(other)
    raise no_such_overload(name, value, other)


@method("add", QTYPE, (QTYPE,), QTYPE)
@method("add", QTYPE, ("int",), QTYPE)
def add(value: Quantity, other: Any) -> Quantity:
    operand = _operand("add", value, other)
    try:
        return Quantity(value.q.add(operand), derived=True)
    except resource.QuantityError as ex:
        raise CelEvaluationError(str(ex)) from None


@method("sub", QTYPE, (QTYPE,), QTYPE)
@method("sub", QTYPE, ("int",), QTYPE)
def sub(value: Quantity, other: Any) -> Quantity:
    operand = _operand("sub", value, other)
    try:
        return Quantity(value.q.sub(operand), derived=True)
    except resource.QuantityError as ex:
        raise CelEvaluationError(str(ex)) from None


@method("compareTo", QTYPE, (QTYPE,), "int")
@typed("compareTo", Quantity, Quantity)
def compare_to(value: Quantity, other: Quantity) -> int:
    return value.q.cmp(other.q)


@method("isGreaterThan", QTYPE, (QTYPE,), "bool")
@typed("isGreaterThan", Quantity, Quantity)
def is_greater_than(value: Quantity, other: Quantity) -> bool:
    return value.q.cmp(other.q) == 1


@method("isLessThan", QTYPE, (QTYPE,), "bool")
@typed("isLessThan", Quantity, Quantity)
def is_less_than(value: Quantity, other: Quantity) -> bool:
    return value.q.cmp(other.q) == -1
