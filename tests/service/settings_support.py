"""Tests build a surface's config from keyword arguments as they would pass flags: the shared ones
(:class:`~celmut.service.settings.ServiceSettings` fields, and the engine's own) go into ``service``."""

from __future__ import annotations

import dataclasses
from typing import Any

from celmut.runtime.options import EngineSettings
from celmut.service.settings import ServiceSettings

_SHARED = {f.name for f in dataclasses.fields(ServiceSettings)}
_ENGINE = {f.name for f in dataclasses.fields(EngineSettings)}


def take_service(options: dict[str, Any], base: ServiceSettings | None = None) -> ServiceSettings:
    """Remove the shared settings from ``options``; ``base`` (default: a surface's defaults) with them."""
    base = base or ServiceSettings()
    shared = {name: options.pop(name) for name in list(options) if name in _SHARED}
    engine = {name: options.pop(name) for name in list(options) if name in _ENGINE}
    if "policy_paths" in shared:
        shared["policy_paths"] = tuple(shared["policy_paths"])
    return dataclasses.replace(base, engine=dataclasses.replace(base.engine, **engine), **shared)
