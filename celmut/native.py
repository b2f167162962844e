"""Which build of celmut's hot path runs — compiled ahead of time with mypyc, or pure Python — and why.

:data:`COMPILED_MODULES` is the one list of the modules the compiled build compiles: ``setup.py``
reads it (``CELMUT_MYPYC=1 pip wheel .``), the switch below and ``celmut version`` use it. Each
compiled module is an extension installed beside its ``.py`` source, which Python's import system
prefers; ``CELMUT_PURE=1`` puts a finder first on ``sys.meta_path`` that finds celmut's modules as
their source only, so one install runs either build (the differential tests compare the two).

This module imports the standard library only: ``setup.py`` runs it before celmut is installed.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

#: The environment variable that forces the pure-Python modules when compiled ones are installed.
PURE_VARIABLE = "CELMUT_PURE"
#: The environment variable that makes ``setup.py`` compile :data:`COMPILED_MODULES` (off: a pure wheel).
BUILD_VARIABLE = "CELMUT_MYPYC"

#: What the compiled build compiles: the modules an admission spends its per-request time in, found by
#: profiling ``benchmarks/serve_loop_bench.py`` (``benchmarks/instructions_bench.py --baseline DIR``
#: counts what they save: docs/development/compiled-build.md). Add a module only with the figure that shows it pays.
#: Left out, measured or read: ``celmut.cel.activation`` (its activations are weakly referenced, which
#: mypyc's native classes do not allow) and ``celmut.runtime.no_annotations`` (a dict subclass).
COMPILED_MODULES: tuple[str, ...] = (
    "celmut.jsonutil",
    # the CEL layer's per-evaluation work: the cost budget, the evaluation context, the compiled
    # engine's entry point and the helpers its generated code calls
    "celmut.cel.costs",
    "celmut.cel.evalcontext",
    "celmut.cel.backends.runners",
    "celmut.cel.backends.pycode_runtime",
    # the runtime: candidates, conditions, mutations, JSON Patch and merge, the patch, attribution
    "celmut.runtime.candidates",
    "celmut.runtime.context",
    "celmut.runtime.engine",
    "celmut.runtime.evaluate",
    "celmut.runtime.jsonpatch_v4",
    "celmut.runtime.matching",
    "celmut.runtime.merge",
    "celmut.runtime.mutation_step",
    "celmut.runtime.mutations",
    "celmut.runtime.patch",
    "celmut.runtime.provenance",
    "celmut.runtime.request",
    "celmut.runtime.results",
    "celmut.runtime.schemas",
    "celmut.runtime.semantics",
    "celmut.runtime.shared",
    # the typed conversion of an ApplyConfiguration (per request when its configuration is not a literal)
    "celmut.runtime.smd",
    "celmut.runtime.typed",
    "celmut.runtime.go_convert",
    "celmut.runtime.go_values",
    "celmut.runtime.typenames",
    # the webhook's per-request work: the review, the admission, its audit annotations and metrics
    "celmut.server.admission",
    "celmut.server.audit",
    "celmut.server.policy_metrics",
    "celmut.server.review",
)


def pure_requested(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """Whether ``CELMUT_PURE`` asks for the pure-Python modules (any value but empty or ``0``)."""
    return environ.get(PURE_VARIABLE, "") not in ("", "0")


class SourceOnlyFinder(importlib.abc.MetaPathFinder):
    """Finds celmut's modules as ``.py`` (or cached bytecode) only, never a compiled extension beside them."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("celmut.") or path is None:
            return None  # ``celmut`` itself is found as usual: this finder is installed from it
        for directory in path:
            finder = importlib.machinery.FileFinder(
                directory,
                (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES),
                (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
            )
            spec = finder.find_spec(fullname, target)
            if spec is not None and spec.loader is not None:
                return spec
        return None


def prefer_source() -> None:
    """Import celmut's modules from their source from now on (idempotent)."""
    if not any(isinstance(finder, SourceOnlyFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, SourceOnlyFinder())


def _package_root() -> Path:
    return Path(__file__).resolve().parent


def installed_extensions(root: Path | None = None) -> tuple[str, ...]:
    """The modules of :data:`COMPILED_MODULES` that have an extension for this Python beside their source."""
    root = root or _package_root()
    found = []
    for name in COMPILED_MODULES:
        relative = Path(*name.split(".")[1:])
        stem = root / relative
        if any(stem.with_name(stem.name + suffix).is_file() for suffix in importlib.machinery.EXTENSION_SUFFIXES):
            found.append(name)
    return tuple(found)


def _loaded_from_extension(module: ModuleType) -> bool:
    origin = getattr(module, "__file__", None) or ""
    return origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


@dataclass(frozen=True)
class Build:
    """Which build runs: ``kind`` is ``compiled`` or ``pure``; ``reason`` says why, for people."""

    kind: str
    reason: str
    compiled_modules: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.kind} ({self.reason})"


def current_build(environ: dict[str, str] | os._Environ[str] = os.environ) -> Build:
    """The build this process runs (or, for modules not imported yet, will run)."""
    installed = installed_extensions()
    loaded = [sys.modules[name] for name in COMPILED_MODULES if name in sys.modules]
    running = tuple(m.__name__ for m in loaded if _loaded_from_extension(m))
    if pure_requested(environ) or any(isinstance(f, SourceOnlyFinder) for f in sys.meta_path):
        if running:  # imported before the switch was read: cannot happen through ``import celmut``
            return Build("compiled", f"{PURE_VARIABLE} was set after the compiled modules were imported", running)
        if installed:
            unused = f"the {len(installed)} compiled modules installed are not used"
            return Build("pure", f"{PURE_VARIABLE} is set: {unused}", ())
        return Build("pure", f"{PURE_VARIABLE} is set; this install has no compiled modules", ())
    if not installed:
        return Build("pure", f"this install has no compiled modules for {_python_tag()}", ())
    if loaded and len(running) < len(loaded):
        pure = sorted(m.__name__ for m in loaded if not _loaded_from_extension(m))
        return Build("compiled", f"partly: {', '.join(pure)} run as source", running or installed)
    if len(installed) < len(COMPILED_MODULES):
        return Build("compiled", f"mypyc, {len(installed)} of {len(COMPILED_MODULES)} modules", installed)
    return Build("compiled", f"mypyc, {len(installed)} modules", installed)


def _python_tag() -> str:
    return f"{sys.implementation.name} {sys.version_info.major}.{sys.version_info.minor}"
