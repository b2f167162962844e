"""Kyverno's global context library (kyverno/sdk ``extensions/cel/libs/globalcontext``).

Reads GlobalContextEntry data (``kyverno.io/v2alpha1``) through
:attr:`Services.global_context <celmut.cel.lookups.Services>`; without one the call fails with
:class:`~celmut.cel.lookups.LookupUnavailable`. ``globalContext.get`` is the camelCase alias.

globalContext.Get(<string> entry[, <string> projection]) -> <dyn>

    The entry's data, or the named projection of it; ``null`` when the entry does not exist.

        globalContext.Get("team-cluster-values", "").team
"""

from __future__ import annotations

from typing import Any

from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError, describe
from celmut.cel.libs.kyverno.json import to_cel_value
from celmut.cel.lookups import LookupFailed, LookupUnavailable, before_blocking
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("kyverno.globalcontext")
fn = LIBRARY.function


def get_entry(ctx: Any, function: str, entry: Any, projection: Any = "") -> Any:
    if not isinstance(entry, str) or not isinstance(projection, str):
        raise no_such_overload(function, entry, projection)
    provider = ctx.services.global_context
    if provider is None:
        raise LookupUnavailable(f"{function}: no global context is configured (GlobalContextEntry data is unavailable)")
    before_blocking(function)
    try:
        return to_cel_value(provider.get(entry, projection))
    except LookupUnavailable:
        raise
    except Exception as ex:  # a provider may fail in any way; report it as a lookup failure
        detail = ex.message if isinstance(ex, CelEvaluationError) else (str(ex) or type(ex).__name__)
        raise LookupFailed(f"{function}({describe(entry)}): failed to get global reference: {detail}") from ex


def _declare(name: str) -> None:
    @fn(name, ("string",), "dyn", context=True, pure=False)
    @fn(name, ("string", "string"), "dyn", context=True, pure=False)
    def get(ctx: Any, entry: Any, projection: Any = "") -> Any:
        return get_entry(ctx, name, entry, projection)


_declare("globalContext.Get")
_declare("globalContext.get")
