"""Kubernetes Events about objects celmut read or changed (core/v1, as kubectl describe shows them)."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from celmut.kube.client import Cluster

MAX_MESSAGE = 1024  # the API server's limit on an Event message


def event_for(
    obj: dict[str, Any], *, reason: str, message: str, component: str, warning: bool = False, name: str = ""
) -> dict[str, Any]:
    """An Event about ``obj``; cluster-scoped objects get theirs in ``default``, as Kubernetes does.

    ``name``: a fixed Event name (a second create of it is refused with AlreadyExists: one Event however
    many processes report the same thing); default a unique one."""
    meta = obj.get("metadata") or {}
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": name or f"{meta.get('name') or 'object'}.{uuid.uuid4().hex[:16]}",
            "namespace": meta.get("namespace") or "default",
        },
        "involvedObject": {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "name": meta.get("name"),
            "namespace": meta.get("namespace") or "",
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "type": "Warning" if warning else "Normal",
        "reason": reason,
        "message": message[:MAX_MESSAGE],
        "source": {"component": component},
        "reportingComponent": component,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


def post_event(cluster: Cluster, obj: dict[str, Any], **details: Any) -> None:
    """Record an Event about ``obj`` (see :func:`event_for`); raises ClusterError on failure."""
    event = event_for(obj, **details)
    cluster.create("v1", "events", event["metadata"]["namespace"], event)
