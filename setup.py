"""celmut's build: pyproject.toml holds the metadata; this file adds only the compiled hot path.

With ``CELMUT_MYPYC=1`` (``CELMUT_MYPYC=1 pip wheel .``) the modules listed in celmut/native.py are
compiled by mypyc into extensions shipped beside their sources; without it, and always for an
editable install (``pip install -e .``), the build is pure Python and needs no compiler.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path
from typing import Any

from setuptools import setup

HERE = Path(__file__).resolve().parent
native = runpy.run_path(str(HERE / "celmut" / "native.py"))


def compiled_extensions() -> list[Any]:
    """The mypyc extensions, when asked for, for a build (not the metadata steps, which run before mypy
    is installed) and not for an editable install (its modules are the tree's sources)."""
    if os.environ.get(native["BUILD_VARIABLE"], "") != "1" or "editable_wheel" in sys.argv:
        return []
    if not {"bdist_wheel", "build", "build_ext"} & set(sys.argv[1:]):
        return []
    from mypyc.build import mypycify

    sources = [os.path.join(*name.split(".")) + ".py" for name in native["COMPILED_MODULES"]]
    # opt_level 3 is mypyc's default; debug_level 0 keeps the wheel small (no C debug information).
    return mypycify(sources, opt_level="3", debug_level="0")


setup(ext_modules=compiled_extensions())
