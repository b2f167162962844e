"""Helpers shared by the Kubernetes library modules: argument type checks and cost formulas."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from celmut.cel.values import no_such_overload

STRING_TRAVERSAL_FACTOR = 0.1  # cel-go common.StringTraversalCostFactor
REGEX_LENGTH_FACTOR = 0.25  # cel-go common.RegexStringLengthCostFactor


def string_cost(text: Any, *_: Any) -> int:
    """Kubernetes charges string parsing one traversal: a tenth of a unit per character."""
    return math.ceil(len(text) * STRING_TRAVERSAL_FACTOR) if isinstance(text, str) else 0


def regex_cost(text: Any, pattern_size: int) -> int:
    """Kubernetes' regex cost: ceil((1 + len(text)) * 0.1) * ceil(len(pattern) * 0.25)."""
    if not isinstance(text, str):
        return 0
    return math.ceil((1 + len(text)) * STRING_TRAVERSAL_FACTOR) * math.ceil(pattern_size * REGEX_LENGTH_FACTOR)


def typed(name: str, *kinds: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Check argument types at run time (a ``dyn`` argument reaches the implementation unchecked
    when all overloads share it) and report a mismatch as CEL's "no such overload"."""

    def wrap(impl: Callable[..., Any]) -> Callable[..., Any]:
        if len(kinds) == 1:  # most functions check their receiver only: no loop
            (kind,) = kinds
            exact_int = kind is int

            @functools.wraps(impl)
            def checked_first(*args: Any) -> Any:
                if args and (not isinstance(args[0], kind) or (exact_int and type(args[0]) is not int)):
                    raise no_such_overload(name, *args)
                return impl(*args)

            return checked_first

        @functools.wraps(impl)
        def checked(*args: Any) -> Any:
            for arg, kind in zip(args, kinds, strict=False):
                if not isinstance(arg, kind) or (kind is int and type(arg) is not int):
                    raise no_such_overload(name, *args)
            return impl(*args)

        return checked

    return wrap
