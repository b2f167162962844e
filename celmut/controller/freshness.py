"""Which copy of a target is the newest: the controller never writes from a copy it knows is stale.

A PATCH pins the resourceVersion of the copy it was computed from, so a stale copy costs a 409 and a
read, and finds nothing left to change when this controller wrote the newer version itself. Copies come
from a sweep's listing (a paginated list is one snapshot: its later pages are older than the writes made
while it was read), from the watch, and from the controller's own writes; they are ordered by
resourceVersion (:mod:`celmut.controller.resource_versions`). When versions order nothing, the copy in
hand is kept, and a wrong guess costs a 409, as before.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from celmut.controller.reconcile import TargetKey, Work
from celmut.controller.resource_versions import is_newer
from celmut.kube.lookup import CacheSet


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
