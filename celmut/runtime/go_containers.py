"""Go's container types where Python needs a type of its own to tell them apart: subclasses of
``list``, ``dict`` and ``tuple``.

They live apart from the modules that use them (:mod:`celmut.runtime.go_values`,
:mod:`celmut.runtime.smd`) because those are compiled by mypyc, which cannot compile a subclass of a
built-in type as a native class; the compiled code reads these as ordinary Python classes.
"""

from __future__ import annotations

from typing import Any


class RefValList(list[Any]):
    """A ``[]ref.Val``: a list the expression built, nested in another built list or map."""


class RefValMap(dict[Any, Any]):
    """A ``map[ref.Val]ref.Val``: a map the expression built, nested in another built list or map."""


class GoStrings(list[str]):
    """A Go ``[]string`` (what ``split`` returns): structured-merge-diff takes only ``[]any`` for a list."""


class PathElement(tuple[tuple[str, Any], ...]):
    """An associative list item's ``PathElement``: its key fields and values (a set's item: one pair
    named ""), hashable when the values are."""
