"""Choosing the CEL engine: ``auto`` (the default), ``celpy`` or ``planner``.

* ``celpy`` — celmut on cel-python, each checked expression compiled to one Python function
  (:mod:`celmut.cel.backends.pycode`).
* ``planner`` — the same engine with the checked tree planned into closures instead of compiled
  (:mod:`celmut.cel.planner`): the reference the compiled code is tested against, slower; for
  telling a suspected code-generation difference apart from anything else.
* ``auto`` — ``celpy``.
* ``cpp`` — removed (Google's CEL C++ runtime through cel-expr-python lost to the conversions between
  Python and C++ values on policy workloads); still accepted, it runs ``celpy`` with a warning.

The choice comes from the caller (``--cel-engine`` on every CLI command) or, when none is given, from
the ``CELMUT_CEL_ENGINE`` environment variable; :class:`~celmut.cel.environment.Environment` asks
:func:`default_backend` when it is constructed without an engine.
"""

from __future__ import annotations

import logging
import os
from functools import cache

from celmut.cel.backends.base import Backend
from celmut.errors import ConfigurationError

log = logging.getLogger(__name__)

ENV_VAR = "CELMUT_CEL_ENGINE"
CHOICES = ("auto", "celpy", "planner", "cpp")
AUTO = "celpy"
REMOVED = {"cpp": "the cpp CEL engine was removed: it lost to the compiled Python engine on policy workloads"}


class BackendUnavailable(ConfigurationError):
    """The requested engine is unknown."""


@cache
def _backend(name: str) -> Backend:
    if name == "celpy":
        from celmut.cel.backends.celpy_backend import CelpyBackend

        return CelpyBackend()
    from celmut.cel.backends.celpy_backend import PlannerBackend

    return PlannerBackend()


@cache
def _warn(message: str) -> None:
    log.warning(message)  # once per process


def resolve(name: str | None = None) -> str:
    """The concrete engine name (``celpy`` or ``planner``) for a choice; None reads
    ``CELMUT_CEL_ENGINE``."""
    choice = (name or os.environ.get(ENV_VAR) or "auto").strip().lower()
    if choice not in CHOICES:
        raise BackendUnavailable(f"unknown CEL engine {choice!r}; choose one of {', '.join(CHOICES)}")
    if choice in REMOVED:
        _warn(f"{REMOVED[choice]}; using {AUTO}")
        return AUTO
    return AUTO if choice == "auto" else choice


def backend(name: str | None = None) -> Backend:
    """The engine for a choice (shared instances); None reads ``CELMUT_CEL_ENGINE``, default ``auto``."""
    return _backend(resolve(name))


def default_backend() -> Backend:
    return backend(None)
