"""Choosing the CEL engine: ``auto`` (the default), ``celpy``, ``cpp`` or ``planner``.

* ``celpy`` — celmut on cel-python, each checked expression compiled to one Python function
  (:mod:`celmut.cel.backends.pycode`; always available).
* ``planner`` — the same engine with the checked tree planned into closures instead of compiled
  (:mod:`celmut.cel.planner`): the reference the compiled code is tested against, slower; for
  telling a suspected code-generation difference apart from anything else.
* ``cpp`` — Google's CEL C++ runtime through cel-expr-python (the ``fast`` extra,
  ``pip install 'celmut[fast]'``), with cel-python for what it cannot run the same way
  (see :mod:`celmut.cel.backends.cpp_backend`).
* ``auto`` — the engine that is faster for policy workloads, measured (``benchmarks/engine_bench.py``,
  interleaved, thread CPU time): ``celpy``. The CEL of an admission through 20 policies on Pods
  (15 skipped by a condition that reads a label and scans the containers, 5 patching) takes ~60 µs
  compiled, ~150 µs on the planner; whole admissions run ~4–5× faster than on cpp, because typical
  policy expressions are a few field reads, where Python code on decoded JSON beats the fixed cost
  of crossing into cel-cpp. ``cpp`` wins only where evaluation dominates (tight arithmetic loops,
  ~5×) and must be chosen explicitly.

The choice comes from the caller (``--cel-engine`` on every CLI command) or, when none is given, from
the ``CELMUT_CEL_ENGINE`` environment variable; :class:`~celmut.cel.environment.Environment` asks
:func:`default_engine` when it is constructed without an engine.
"""

from __future__ import annotations

import os
from functools import cache

from celmut.cel.backends.base import Backend
from celmut.errors import ConfigurationError

ENV_VAR = "CELMUT_CEL_ENGINE"
CHOICES = ("auto", "celpy", "cpp", "planner")
AUTO = "celpy"  # what auto means, from measurement (see the module docstring)


class BackendUnavailable(ConfigurationError):
    """The requested engine cannot be used here (unknown name, or cel-expr-python missing)."""


@cache
def cpp_available() -> bool:
    try:
        import cel_expr_python.cel  # noqa: F401
    except ImportError:
        return False
    return True


@cache
def _backend(name: str) -> Backend:
    if name == "celpy":
        from celmut.cel.backends.celpy_backend import CelpyBackend

        return CelpyBackend()
    if name == "planner":
        from celmut.cel.backends.celpy_backend import PlannerBackend

        return PlannerBackend()
    from celmut.cel.backends.cpp_backend import CppBackend

    return CppBackend()


def resolve(name: str | None = None) -> str:
    """The concrete engine name (``celpy``, ``cpp`` or ``planner``) for a choice; None reads
    ``CELMUT_CEL_ENGINE``."""
    choice = (name or os.environ.get(ENV_VAR) or "auto").strip().lower()
    if choice not in CHOICES:
        raise BackendUnavailable(f"unknown CEL engine {choice!r}; choose one of {', '.join(CHOICES)}")
    if choice == "auto":
        return AUTO
    if choice == "cpp" and not cpp_available():
        raise BackendUnavailable("the cpp CEL engine needs cel-expr-python: pip install 'celmut[fast]'")
    return choice


def backend(name: str | None = None) -> Backend:
    """The engine for a choice (shared instances); None reads ``CELMUT_CEL_ENGINE``, default ``auto``."""
    return _backend(resolve(name))


def default_backend() -> Backend:
    return backend(None)
