"""The flags of ``image.GetMetadata`` in the cluster (``serve``, ``controller``): which registries,
how long, and whether the pods' ``imagePullSecrets`` are read (chart: ``imageData.*``)."""

from __future__ import annotations

import argparse
import sys
from types import SimpleNamespace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `celmut --help` must not load the CEL layer (tests/test_startup.py)
    from celmut.cel.lookups import RegistryPolicy

# celmut.cel.lookups.RegistryPolicy's defaults (tests/install/test_chart.py compares them)
_DEFAULTS = SimpleNamespace(timeout_seconds=3.0, cache_seconds=300.0, cache_entries=512)


def add_image_data(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "image data (image.GetMetadata)",
        "Read from the registry's OCI distribution API (manifest and config), only from the registries "
        "allowed here; anonymous unless --image-pull-secrets.",
    )
    group.add_argument(
        "--image-registry-allow",
        action="append",
        default=[],
        metavar="HOST",
        help="a registry host[:port] (ghcr.io, index.docker.io for Docker Hub) or pattern (*.gcr.io) "
        "image.GetMetadata may read; repeatable (none: every read is denied)",
    )
    group.add_argument(
        "--image-registry-insecure",
        action="append",
        default=[],
        metavar="HOST",
        help="an allowed registry spoken to over plain HTTP (a local test registry); repeatable",
    )
    group.add_argument(
        "--image-timeout",
        type=float,
        default=_DEFAULTS.timeout_seconds,
        metavar="SECONDS",
        help="time for one image's manifest and config (default %(default)s; keep it under --timeout)",
    )
    group.add_argument(
        "--image-cache-seconds",
        type=float,
        default=_DEFAULTS.cache_seconds,
        metavar="SECONDS",
        help="how long image data is reused (default %(default)s)",
    )
    group.add_argument(
        "--image-cache-entries",
        type=int,
        default=_DEFAULTS.cache_entries,
        metavar="N",
        help="images cached at most (default %(default)s)",
    )
    group.add_argument(
        "--image-pull-secrets",
        action="store_true",
        help="authenticate with the pod's imagePullSecrets (needs RBAC to read Secrets; off by default)",
    )


def registry_policy(args: argparse.Namespace) -> RegistryPolicy | None:
    """The registry policy the flags give; None (after printing why) when a value is unusable."""
    if args.image_timeout <= 0 or args.image_cache_seconds < 0 or args.image_cache_entries < 0:
        print("error: --image-timeout must be positive, the image cache sizes not negative", file=sys.stderr)
        return None
    unknown = [h for h in args.image_registry_insecure if h not in args.image_registry_allow]
    if unknown:
        print(f"error: --image-registry-insecure {unknown[0]!r} is not in --image-registry-allow", file=sys.stderr)
        return None
    from celmut.cel.lookups import RegistryPolicy

    return RegistryPolicy(
        allow=tuple(args.image_registry_allow),
        insecure=tuple(args.image_registry_insecure),
        timeout_seconds=args.image_timeout,
        cache_seconds=args.image_cache_seconds,
        cache_entries=args.image_cache_entries,
        pull_secrets=args.image_pull_secrets,
    )
