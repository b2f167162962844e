"""What the page's editor completes inside CEL, read from celmut's CEL environments, never listed by
hand: per profile (``kyverno`` for a MutatingPolicy, ``kubernetes`` for a MutatingAdmissionPolicy) the
variables in scope, the macros, and every function with the signature of each overload, as
:mod:`celmut.cel.profiles` declares them (the libraries at the versions each system configures);
and the fields of ``request``.

Operators (``_+_``, ``!_``, ``@in``) are functions of the environment too, written as syntax: they are
left out.
"""

from __future__ import annotations

import functools
from typing import Any

from celmut.cel import profiles
from celmut.cel import types as t
from celmut.cel.declarations import Overload

# Macros that stand alone (``has(x.y)``, ``cel.bind(v, init, body)``); every other one follows a
# receiver (``list.all(x, p)``), as the CEL specification defines them.
GLOBAL_MACROS = frozenset({"has", "cel.bind"})
# request.userInfo's fields (authentication.k8s.io/v1 UserInfo), request.kind's and request.resource's.
_PARTS: dict[str, dict[str, str]] = {
    "userInfo": {"username": "string", "uid": "string", "groups": "list(string)", "extra": "map(string, list(string))"},
    "kind": {"group": "string", "version": "string", "kind": "string"},
    "requestKind": {"group": "string", "version": "string", "kind": "string"},
    "resource": {"group": "string", "version": "string", "resource": "string"},
    "requestResource": {"group": "string", "version": "string", "resource": "string"},
}


def _is_operator(name: str) -> bool:
    return name.startswith(("_", "!", "-", "@")) or name.endswith("_")


def signature(overload: Overload) -> str:
    """``string.startsWith(string) -> bool``, ``math.greatest(int, ...) -> int``."""
    params = [str(p) for p in overload.params]
    receiver = f"{params.pop(0)}." if overload.member and params else ""
    if overload.variadic and params:
        params[-1] += ", ..."
    return f"{receiver}{overload.function}({', '.join(params)}) -> {overload.result}"


def _receiver_kind(cel_type: t.CelType) -> str:
    return "dyn" if cel_type.kind == "param" else cel_type.kind


def _function(name: str, overloads: list[Overload]) -> dict[str, Any]:
    member = overloads[0].member
    described = []
    for overload in overloads:
        entry: dict[str, Any] = {"signature": signature(overload), "result": str(overload.result)}
        if overload.member and overload.params:
            entry["receiver"] = _receiver_kind(overload.params[0])
        described.append(entry)
    return {"name": name, "member": member, "overloads": described}


@functools.cache
def environment() -> dict[str, Any]:
    """The whole description the page asks for once (``GET /api/cel``)."""
    described: dict[str, Any] = {}
    for name, profile in profiles.PROFILES.items():
        functions: list[dict[str, Any]] = []
        for function, overloads in sorted(profile.functions().items()):
            if _is_operator(function):
                continue
            for member in (False, True):  # a name may be a function and a method (string(x), x.string())
                kept = [o for o in overloads if o.member is member]
                if kept:
                    functions.append(_function(function, kept))
        macros = [{"name": m, "member": m not in GLOBAL_MACROS} for m in sorted(profile.macros)]
        variables = [{"name": v, "type": str(cel_type)} for v, cel_type in profile.variables.items() if "." not in v]
        described[name] = {
            "description": profile.description,
            "variables": variables,
            "macros": macros,
            "functions": functions,
        }
    request = {field: str(cel_type) for field, cel_type in profiles.ADMISSION_REQUEST_FIELDS.items()}
    return {"profiles": described, "request": request, "requestParts": _PARTS}
