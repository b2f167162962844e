"""One declaration per CEL function overload: name, receiver, argument and result types, implementation.

Libraries declare their functions with :meth:`Library.function` (global) and :meth:`Library.method`
(member) decorators; the declared types drive the checker and runtime dispatch. Implementations are
plain Python functions over celmut values (see :mod:`celmut.cel.values`); they raise
:class:`~celmut.cel.errors.CelEvaluationError` for CEL errors. Overload ids follow cel-go's
``receiver_function_argtypes`` convention.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from celmut.cel import types as t
from celmut.cel import values as v

Guard = Callable[[Any], bool]


@dataclass(frozen=True)
class Overload:
    id: str
    function: str
    params: tuple[t.CelType, ...]  # receiver first for member overloads
    result: t.CelType
    impl: Callable[..., Any]
    member: bool
    needs_context: bool = False  # impl(context, *args): lookups, clocks, budgets
    variadic: bool = False  # the last parameter repeats (math.greatest(1, 2, 3))
    pure: bool = True  # same inputs, same output, no I/O: may be folded at compile time
    cost: Callable[..., int] | None = None  # extra cost units from the arguments
    guards: tuple[Guard, ...] = ()
    since: int = 0  # the library version that introduced it (cel-go's ``if lib.version >= N``)
    fallback: bool = False  # checked only when no other overload matches, for arguments they take

    def accepts(self, args: tuple[Any, ...]) -> bool:
        guards = self.guards
        if self.variadic:
            if len(args) < len(guards) - 1:
                return False
            fixed = len(guards) - 1
            return all(g(a) for g, a in zip(guards[:fixed], args, strict=False)) and all(
                guards[-1](a) for a in args[fixed:]
            )
        if len(args) != len(guards):
            return False
        return all(g(a) for g, a in zip(guards, args, strict=True))


def assignable_overloads(overloads: Iterable[Overload], arg_types: list[t.CelType]) -> list[Overload]:
    """The overloads the checker's argument types do not rule out (dyn keeps every candidate;
    variadic ones and those of another arity are kept for the runtime to decide)."""
    kept = []
    for overload in overloads:
        if overload.variadic or len(overload.params) != len(arg_types):
            kept.append(overload)
            continue
        bindings: t.Bindings = {}
        if all(t.is_assignable(p, a, bindings) for p, a in zip(overload.params, arg_types, strict=True)):
            kept.append(overload)
    return kept


@dataclass
class Library:
    """A named set of overloads and library types, e.g. ``cel.lib.ext.strings``.

    A versioned library declares each overload with the version that introduced it (``since=3``);
    a profile takes the library :meth:`at` the version the real system configures, as cel-go's
    ``ext.Strings(ext.StringsVersion(2))`` adds only the functions of versions up to 2.
    """

    name: str
    overloads: list[Overload] = field(default_factory=list)
    opaque_types: dict[str, type] = field(default_factory=dict)
    constants: dict[str, Any] = field(default_factory=dict)  # identifiers such as ``net.IP`` types
    version: int | None = None  # set on the view :meth:`at` returns; None: every version declared

    def at(self, version: int) -> Library:
        """The library as configured at ``version``: the overloads introduced up to it."""
        return Library(
            self.name,
            [o for o in self.overloads if o.since <= version],
            self.opaque_types,
            self.constants,
            version,
        )

    def with_impl(self, function: str, impl: Callable[..., Any]) -> Library:
        """The same library with every overload of ``function`` implemented by ``impl`` (a
        behaviour that depends on what the profile targets, such as a vendored formatter)."""
        overloads = [replace(o, impl=impl) if o.function == function else o for o in self.overloads]
        return Library(self.name, overloads, self.opaque_types, self.constants, self.version)

    @property
    def latest(self) -> int:
        """The highest version any overload declares."""
        return max((o.since for o in self.overloads), default=0)

    def function(
        self,
        name: str,
        params: Iterable[str],
        result: str,
        *,
        id: str | None = None,
        context: bool = False,
        variadic: bool = False,
        pure: bool = True,
        cost: Callable[..., int] | None = None,
        since: int = 0,
        fallback: bool = False,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Declare a global overload ``name(params) -> result`` (``fallback``: type-checked only when no
        other overload of ``name`` matches, so it never widens their result types)."""
        return self._declare(name, list(params), result, False, id, context, variadic, pure, cost, since, fallback)

    def method(
        self,
        name: str,
        receiver: str,
        params: Iterable[str],
        result: str,
        *,
        id: str | None = None,
        context: bool = False,
        variadic: bool = False,
        pure: bool = True,
        cost: Callable[..., int] | None = None,
        since: int = 0,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Declare a member overload ``receiver.name(params) -> result``."""
        return self._declare(name, [receiver, *params], result, True, id, context, variadic, pure, cost, since)

    def opaque(self, name: str) -> Callable[[type], type]:
        """Register a Python class as the CEL library type ``name``."""

        def register(cls: type) -> type:
            self.opaque_types[name] = cls
            v.register_opaque(name, cls)
            return cls

        return register

    def _declare(
        self,
        name: str,
        params: list[str],
        result: str,
        member: bool,
        overload_id: str | None,
        context: bool,
        variadic: bool,
        pure: bool,
        cost: Callable[..., int] | None,
        since: int,
        fallback: bool = False,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        param_types = tuple(t.parse_type(p) for p in params)
        if overload_id is None:
            overload_id = _overload_id(name, param_types, member)

        def register(impl: Callable[..., Any]) -> Callable[..., Any]:
            self.overloads.append(
                Overload(
                    id=overload_id,
                    function=name,
                    params=param_types,
                    result=t.parse_type(result),
                    impl=impl,
                    member=member,
                    needs_context=context,
                    variadic=variadic,
                    pure=pure,  # every impure function says pure=False (context=True alone may only charge costs)
                    cost=cost,
                    guards=tuple(guard_for(p) for p in param_types),
                    since=since,
                    fallback=fallback,
                )
            )
            return impl

        return register


def _overload_id(name: str, params: tuple[t.CelType, ...], member: bool) -> str:
    def word(ct: t.CelType) -> str:
        return str(ct).replace("(", "_").replace(")", "").replace(", ", "_").replace(".", "_")

    base = name.replace(".", "_")
    if member and params:
        return "_".join([word(params[0]), base, *(word(p) for p in params[1:])])
    return "_".join([base, *(word(p) for p in params)])


# --- runtime guards derived from declared types -----------------------------------------------------


def _is_int(x: Any) -> bool:
    return type(x) is int


def _is_uint(x: Any) -> bool:
    return isinstance(x, v.UintType)


def _is_double(x: Any) -> bool:
    return type(x) is float


def _is_bool(x: Any) -> bool:
    return type(x) is bool


def _is_string(x: Any) -> bool:
    return isinstance(x, str)


def _is_bytes(x: Any) -> bool:
    return isinstance(x, bytes)


def _is_list(x: Any) -> bool:
    return isinstance(x, list | tuple)


def _is_map(x: Any) -> bool:
    return isinstance(x, dict)


def _is_null(x: Any) -> bool:
    return x is None


def _is_timestamp(x: Any) -> bool:
    return type(x) is v.Timestamp


def _is_duration(x: Any) -> bool:
    return type(x) is v.Duration


def _is_optional(x: Any) -> bool:
    return isinstance(x, v.OptionalValue)


def _is_type(x: Any) -> bool:
    return isinstance(x, v.TypeValue)


def _any(x: Any) -> bool:
    return True


_PRIMITIVE_GUARDS: dict[str, Guard] = {
    "int": _is_int,
    "uint": _is_uint,
    "double": _is_double,
    "bool": _is_bool,
    "string": _is_string,
    "bytes": _is_bytes,
    "null_type": _is_null,
    "timestamp": _is_timestamp,
    "duration": _is_duration,
    "dyn": _any,
    "list": _is_list,
    "map": _is_map,
    "optional_type": _is_optional,
    "type": _is_type,
    "param": _any,
}


def guard_for(ct: t.CelType) -> Guard:
    """A runtime predicate for a declared parameter type (element types are not checked)."""
    guard = _PRIMITIVE_GUARDS.get(ct.kind)
    if guard is not None:
        return guard
    if ct.kind == "struct":
        if ct.name == "Object":
            return _is_map
        name = ct.name
        return lambda x: isinstance(x, v.StructValue) and x.type_name == name
    name = ct.name

    def is_opaque(x: Any) -> bool:
        cls = v.opaque_class(name)
        return cls is not None and isinstance(x, cls)

    return is_opaque
