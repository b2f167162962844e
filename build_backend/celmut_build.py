"""celmut's PEP 517 build backend: setuptools', plus what a compiled build needs in its build environment.

``CELMUT_MYPYC=1`` asks ``setup.py`` for the mypyc-compiled hot path. mypyc type-checks what it
compiles against celmut's dependencies, so such a build also installs mypy, the project's runtime
dependencies, the tracing extra's (celmut.service imports OpenTelemetry's types) and the stubs
``mypy --strict`` uses. A pure build (the default, and every editable
install) needs setuptools only, as before.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (the backend's hooks, re-exported unchanged)

HERE = Path(__file__).resolve().parent.parent
#: Beyond the runtime dependencies: the compiler and the stubs the type check needs (pyproject's dev extra).
COMPILE_REQUIRES = ["mypy>=1.11", "types-PyYAML>=6.0"]


def _compiling() -> bool:
    return os.environ.get("CELMUT_MYPYC", "") == "1"


#: The extras whose packages celmut's typed modules import (mypy follows every import of what it compiles).
TYPED_EXTRAS = ("tracing",)


def _compile_requires() -> list[str]:
    project = tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = [r for extra in TYPED_EXTRAS for r in project["optional-dependencies"][extra]]
    return [*COMPILE_REQUIRES, *project["dependencies"], *extras]


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    requires = _setuptools.get_requires_for_build_wheel(config_settings)
    return [*requires, *_compile_requires()] if _compiling() else requires
