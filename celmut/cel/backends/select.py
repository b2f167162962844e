"""Choosing the CEL engine: ``compiled`` (the default) or ``interpreted`` (:mod:`celmut.cel_engines`).

* ``compiled`` — each checked expression compiled to one Python function when the policy loads
  (:mod:`celmut.cel.backends.pycode`), from the interpreted engine's plan.
* ``interpreted`` — the checked tree planned into closures (:mod:`celmut.cel.planner`): the reference
  the compiled code is tested against (same values, errors and costs), slower; for telling a
  suspected code-generation difference apart from anything else.

The choice comes from the caller (``--cel-engine`` on every CLI command, ``backend=`` in the Python
API) or, when none is given, from the ``CELMUT_CEL_ENGINE`` environment variable;
:class:`~celmut.cel.environment.Environment` asks :func:`default_backend` when it is constructed
without an engine. A former name (``celpy``, ``planner``, ``auto``, the removed ``cpp``) runs the
engine it maps to and logs its deprecation warning once per process.
"""

from __future__ import annotations

import logging
import os
from functools import cache

from celmut.cel.backends.base import Backend
from celmut.cel_engines import CHOICES, DEFAULT, ENGINES, ENV_VAR, UnknownCelEngine, normalize

__all__ = ["CHOICES", "DEFAULT", "ENGINES", "ENV_VAR", "UnknownCelEngine", "backend", "default_backend", "resolve"]

log = logging.getLogger(__name__)


@cache
def warn_once(message: str) -> None:
    """Log a deprecation warning once per process (a policy set creates many environments)."""
    log.warning(message)


def resolve(name: str | None = None) -> str:
    """The engine a choice names (``compiled`` or ``interpreted``), warning once when it is a former
    name; None reads ``CELMUT_CEL_ENGINE``. Raises :class:`UnknownCelEngine`."""
    engine, deprecation = normalize(name, os.environ)
    if deprecation is not None:
        warn_once(deprecation)
    return engine


@cache
def _backend(engine: str) -> Backend:
    from celmut.cel.backends import runners

    return runners.CompiledBackend() if engine == "compiled" else runners.InterpretedBackend()


def backend(name: str | None = None) -> Backend:
    """The engine for a choice (shared instances); None reads ``CELMUT_CEL_ENGINE``, default
    ``compiled``."""
    return _backend(resolve(name))


def default_backend() -> Backend:
    return backend(None)
