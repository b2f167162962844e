"""resourceVersions ordered as Kubernetes allows since 1.35 (KEP-5504, "Comparable Resource Version", GA):
well-formed ones are decimal integers without leading zeros, compared by length then digit by digit
(k8s.io/apimachinery/pkg/util/resourceversion ``CompareResourceVersion``), and only between objects of
one resource. A version that is not well formed (another API server's) orders nothing.
"""

from __future__ import annotations

from typing import Any


def version_of(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _well_formed(version: str) -> bool:
    return version.isascii() and version.isdigit() and version[0] != "0"


def newer_version(candidate: str, than: str) -> bool:
    """Whether resourceVersion ``candidate`` is known to be newer than ``than`` (same resource)."""
    if not (_well_formed(candidate) and _well_formed(than)):
        return False
    return (len(candidate), candidate) > (len(than), than)


def is_newer(candidate: dict[str, Any], than: dict[str, Any]) -> bool:
    """Whether object ``candidate`` is a known newer version than ``than`` (same resource)."""
    return newer_version(version_of(candidate), version_of(than))
