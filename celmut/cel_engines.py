"""The CEL engines' names: one home, so the CEL layer, the CLI's ``--cel-engine``, ``celmut manifests``
and the chart agree, and a command's ``--help`` knows them without loading the CEL layer.

* ``compiled`` (the default) — each checked expression compiled to one Python function when the
  policy loads;
* ``interpreted`` — the checked tree planned into closures: the reference the compiled code is
  tested against (the same values, errors and costs), slower.

Former names are still accepted, each with a one-line deprecation warning (:data:`DEPRECATED`).

>>> normalize("planner", {})
('interpreted', "CEL engine 'planner' is deprecated: it is now called 'interpreted'")
>>> normalize(None, {"CELMUT_CEL_ENGINE": "interpreted"})
('interpreted', None)
"""

from __future__ import annotations

from collections.abc import Mapping

from celmut.errors import ConfigurationError

ENV_VAR = "CELMUT_CEL_ENGINE"
ENGINES = ("compiled", "interpreted")
DEFAULT = "compiled"
#: former name → (the engine it runs, the warning it gives)
DEPRECATED: dict[str, tuple[str, str]] = {
    "auto": ("compiled", "CEL engine 'auto' is deprecated: it is the default engine, 'compiled'"),
    "celpy": ("compiled", "CEL engine 'celpy' is deprecated: it is now called 'compiled'"),
    "planner": ("interpreted", "CEL engine 'planner' is deprecated: it is now called 'interpreted'"),
    # cel-expr-python, Google's CEL C++ runtime: slower than the compiled engine on policy workloads
    # (converting values between Python and C++ cost more than it saved)
    "cpp": ("compiled", "CEL engine 'cpp' was removed (it was slower on policies): using 'compiled'"),
}
CHOICES = (*ENGINES, *DEPRECATED)  # every name accepted, the current ones first


class UnknownCelEngine(ConfigurationError):
    """A CEL engine name that is neither current nor former."""


def normalize(name: str | None, environ: Mapping[str, str]) -> tuple[str, str | None]:
    """The engine ``name`` names and, for a former name, its deprecation warning; None reads
    ``CELMUT_CEL_ENGINE`` from ``environ``, and without it the default. Raises
    :class:`UnknownCelEngine`."""
    choice = (name or environ.get(ENV_VAR) or DEFAULT).strip().lower()
    if choice in ENGINES:
        return choice, None
    if choice in DEPRECATED:
        return DEPRECATED[choice]
    raise UnknownCelEngine(f"unknown CEL engine {choice!r}; choose {' or '.join(ENGINES)}")
