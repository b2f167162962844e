"""The inputs of an evaluation: CEL variables for one request, shared by all its expressions.

Kubernetes objects arrive as decoded JSON, which already *is* celmut's CEL value model, so there is
no per-expression conversion: an :class:`Activation` is built once per request and every expression
of every policy reads the same dictionaries. ``variables`` is lazy: each policy variable is evaluated
on first reference and memoised for the activation (errors too), as Kyverno does.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any, Protocol

import orjson

from celmut.cel.errors import CelCostError, CelError, CelEvaluationError, CelInputError
from celmut.cel.evalcontext import Budget
from celmut.cel.libs.k8s import authz
from celmut.cel.lookups import NO_SERVICES, Services
from celmut.limits import MAX_REQUEST_BYTES

# The API server refuses request bodies over 3 MiB; celmut refuses larger CEL inputs likewise.
DEFAULT_MAX_INPUT_BYTES = MAX_REQUEST_BYTES


class Evaluable(Protocol):
    def evaluate(self, activation: Activation) -> Any: ...


class _Failure:
    __slots__ = ("error",)

    def __init__(self, error: CelError) -> None:
        self.error = error


class LazyVariables:
    """``variables.<name>``: evaluated on first use, memoised (values and errors) per activation."""

    __slots__ = ("_activation", "_programs", "_values")

    def __init__(
        self, programs: Mapping[str, Evaluable], activation: Activation, values: Mapping[str, Any] | None = None
    ) -> None:
        self._programs = programs
        # A weak reference: the activation owns its variables, and a strong one both ways would make
        # every activation cyclic garbage, freed only by the cyclic GC (tens of ms of pause per few
        # hundred webhook requests) instead of by reference counting.
        self._activation = weakref.ref(activation)
        self._values: dict[str, Any] = dict(values or {})

    def cel_select(self, name: str) -> Any:
        if name in self._values:
            value = self._values[name]
            if isinstance(value, _Failure):
                raise value.error
            return value
        program = self._programs.get(name)
        if program is None:
            raise CelEvaluationError(f"no such variable: {name}")
        activation = self._activation()
        if activation is None:
            raise CelEvaluationError(f"variable {name!r}: its evaluation context has ended")
        try:
            value = program.evaluate(activation)
        except CelEvaluationError as ex:
            message = f"variable {name!r}: {ex.message}"
            kind = CelCostError if isinstance(ex, CelCostError) else CelEvaluationError  # a limit stays a limit
            # Memoised without a traceback: a raised error's frames hold this object, and a cycle
            # through them would keep every value of the request until a full garbage collection.
            self._values[name] = _Failure(kind(message))
            raise kind(message) from None
        self._values[name] = value
        return value

    def cel_has(self, name: str) -> bool:
        return name in self._values or name in self._programs

    def evaluated(self) -> dict[str, Any]:
        """The variables evaluated so far (for reports and debugging)."""
        return {k: val for k, val in self._values.items() if not isinstance(val, _Failure)}


def admission_request(
    *,
    operation: str = "CREATE",
    object: Any = None,
    old_object: Any = None,
    kind: Mapping[str, str] | None = None,
    resource: Mapping[str, str] | None = None,
    sub_resource: str = "",
    name: str = "",
    namespace: str = "",
    user_info: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    uid: str = "",
    options: Any = None,
) -> dict[str, Any]:
    """An ``admission.k8s.io/v1`` AdmissionRequest with every field present, as CEL sees it."""
    kind_map = {"group": "", "version": "", "kind": "", **(kind or {})}
    resource_map = {"group": "", "version": "", "resource": "", **(resource or {})}
    user = {"username": "", "uid": "", "groups": [], "extra": {}, **(user_info or {})}
    return {
        "uid": uid,
        "kind": kind_map,
        "resource": resource_map,
        "subResource": sub_resource,
        "requestKind": dict(kind_map),
        "requestResource": dict(resource_map),
        "requestSubResource": sub_resource,
        "name": name,
        "namespace": namespace,
        "operation": operation,
        "userInfo": user,
        "object": object,
        "oldObject": old_object,
        "dryRun": dry_run,
        "options": options,
    }


def normalize_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """Fill the fields an AdmissionRequest may omit, so CEL can select any of them."""
    if _REQUEST_KEYS.issubset(request.keys()) and isinstance(request, dict):
        return request
    base = admission_request()
    merged = {**base, **{k: val for k, val in request.items() if val is not None or k in ("object", "oldObject")}}
    for key in ("kind", "resource", "requestKind", "requestResource", "userInfo"):
        merged[key] = {**base[key], **(request.get(key) or {})}
    return merged


_REQUEST_KEYS = frozenset(admission_request().keys())


def approximate_size(value: Any, limit: int) -> int:
    """The size in bytes of a JSON-like value, encoded (compactly); values JSON cannot encode are
    estimated by walking them, stopping past ``limit``. Keys are almost always strings: orjson is tried
    without ``OPT_NON_STR_KEYS`` first (which doubles its time: 3 vs 6 µs for a 4 KB Pod), the same bytes."""
    try:
        return len(orjson.dumps(value))
    except TypeError:
        pass
    try:
        return len(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))
    except TypeError:
        return _walked_size(value, limit)


def _walked_size(value: Any, limit: int) -> int:
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 2
            for key, val in item.items():
                total += len(key) + 4 if isinstance(key, str) else 8
                stack.append(val)
        elif isinstance(item, list | tuple):
            total += 2
            stack.extend(item)
        elif isinstance(item, bytes):
            total += len(item) * 4 // 3 + 2  # base64, as JSON carries bytes
        else:
            total += 8
        if total > limit:
            return total
    return total


class _Variables(dict[str, Any]):
    """An activation's variables. ``authorizer`` and ``authorizer.requestResource`` are built from
    ``request`` the first time an expression reads one: most policies never do (Kyverno's never can),
    and building them for every policy of every admission cost ~10% of the request."""

    def __missing__(self, key: str) -> Any:
        if key not in authz.REQUEST_VARIABLES:
            raise KeyError(key)
        self.update(authz.request_variables(self["request"]))
        return self[key]


class Activation:
    """The variables of one evaluation context (one admission request, one target, one CLI run)."""

    def __init__(
        self,
        *,
        object: Any = None,
        old_object: Any = None,
        request: Mapping[str, Any] | None = None,
        namespace_object: Any = None,
        params: Any = None,
        exceptions: Mapping[str, Any] | None = None,
        variables: Mapping[str, Evaluable] | None = None,
        variable_values: Mapping[str, Any] | None = None,
        services: Services | None = None,
        budget: Budget | None = None,
        max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES,
        input_size: int | None = None,
    ) -> None:
        if input_size is None:
            input_size = approximate_size([object, old_object], max_input_bytes)
        if input_size > max_input_bytes:
            raise CelInputError(f"input of about {input_size} bytes exceeds the limit of {max_input_bytes} bytes")
        if request is None:
            request = admission_request(object=object, old_object=old_object)
        else:
            request = normalize_request(request)
        self.services = services or NO_SERVICES
        self.budget = budget or Budget.with_timeout()
        self.vars: dict[str, Any] = _Variables(
            object=object,
            oldObject=old_object,
            request=request,
            namespaceObject=namespace_object,
            params=params,
            exceptions={"allowedImages": [], "allowedValues": [], **(exceptions or {})},
        )
        self.variables = LazyVariables(variables or {}, self, variable_values)
        self.vars["variables"] = self.variables

    def derive(
        self,
        *,
        object: Any = None,
        params: Any = None,
        exceptions: Mapping[str, Any] | None = None,
        variables: Mapping[str, Evaluable] | None = None,
    ) -> Activation:
        """A new activation for another policy of the same request: this one's request, oldObject,
        namespaceObject, services and budget (already normalised and size-checked: per request, not
        per policy), with its own ``object``, params, exceptions and variables."""
        derived = Activation.__new__(Activation)
        derived.services = self.services
        derived.budget = self.budget
        shared = self.vars
        derived.vars = _Variables(
            object=object,
            oldObject=shared["oldObject"],
            request=shared["request"],
            namespaceObject=shared["namespaceObject"],
            params=params,
            exceptions={"allowedImages": [], "allowedValues": [], **(exceptions or {})},
        )
        derived.variables = LazyVariables(variables or {}, derived)
        derived.vars["variables"] = derived.variables
        return derived

    @property
    def object(self) -> Any:
        return self.vars["object"]

    def with_object(self, obj: Any) -> None:
        """Point ``object`` at the object as patched so far; ``request.object`` keeps the original."""
        self.vars["object"] = obj
