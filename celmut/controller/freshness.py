"""Which copy of a target is the newest: the controller never writes from a copy it knows is stale.

A PATCH pins the resourceVersion of the copy it was computed from, so a stale copy costs a 409 and a
read, and finds nothing left to change when this controller wrote the newer version itself. Copies come
from a sweep's listing (a paginated list is one snapshot: its later pages are older than the writes made
while it was read), from the watch, and from the controller's own writes. Since Kubernetes 1.35 (KEP-5504,
"Comparable Resource Version", GA) a client may order two resourceVersions of objects of the same
resource: well-formed ones are decimal integers without leading zeros, compared by length then digit by
digit (k8s.io/apimachinery/pkg/util/resourceversion ``CompareResourceVersion``). A version that is not
well formed (another API server's) orders nothing: the copy in hand is kept, and a wrong guess costs a
409, as before.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # reconcile.py orders its listed copies with this module
    from celmut.controller.reconcile import TargetKey, Work
    from celmut.kube.lookup import CacheSet


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


def with_newer_copy(work: Work, obj: dict[str, Any]) -> Work:
    """``work`` with ``obj`` in place of each listed copy it carries that is older than ``obj``: a queued
    target takes the newest version the watch delivered or the controller wrote. Work queued without a
    copy stays so (its worker reads the target when it comes to it)."""
    if not any(task.obj is not None and is_newer(obj, task.obj) for task in work.values()):
        return work
    return {
        name: dataclasses.replace(task, obj=obj) if task.obj is not None and is_newer(obj, task.obj) else task
        for name, task in work.items()
    }


def newest_known(caches: CacheSet, key: TargetKey, listed: dict[str, Any]) -> dict[str, Any] | None:
    """The copy of ``key`` to evaluate instead of ``listed``: ``listed`` unless the target's watched cache
    holds a newer version — then that one, or None when the cache keeps only metadata (the newer version is
    known, not at hand: the caller reads it rather than send a PATCH bound to fail)."""
    cache = caches.existing(key.api_version, key.resource)
    if cache is None or not cache.synced.is_set():
        return listed
    cached = cache.get(key.namespace, key.name)
    if cached is None or not is_newer(cached, listed):
        return listed
    return None if cache.metadata_only else cached
