"""Objects printed for pipelines, the way kubectl prints them, and diffs printed for people.

* ``yaml`` — a ``---``-separated stream, which ``kubectl apply -f -`` reads;
* ``json`` — one object for one resource, else a ``v1`` ``List`` of them, as ``kubectl get -o
  json`` prints (a bare JSON array is not a Kubernetes object: ``kubectl create -f -`` refuses it);
* ``name`` — ``kind.group/name`` lines, as ``kubectl get -o name`` prints them
  (``k8s.io/cli-runtime/pkg/printers/name.go``: the lower-cased ``GroupKind`` and the name);
* :func:`unified_diff` — the change to one object as a unified diff of its YAML, like ``kubectl diff``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from typing import Any

import orjson
import yaml

from celmut.cli.console import Palette
from celmut.sources.yaml_dumper import ObjectDumper

OBJECT_FORMATS = ("yaml", "json", "name")


def as_list(objects: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The ``v1`` ``List`` kubectl prints for several objects."""
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": list(objects)}


def kubectl_name(obj: dict[str, Any]) -> str:
    """``pod/web``, ``deployment.apps/web``: kubectl's ``-o name`` for one object."""
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    kind = str(obj.get("kind") or "").lower()
    meta = _metadata(obj)
    name = meta.get("name") or meta.get("generateName") or ""
    return f"{kind}.{group}/{name}" if group else f"{kind}/{name}"


def _metadata(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def to_json(data: Any) -> str:
    """Indented JSON (UTF-8 text, as kubectl prints it) by orjson, ~10x the standard library; an
    integer outside 64 bits, which orjson refuses, falls back to :mod:`json` with the same layout."""
    try:
        return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONEncodeError:
        return json.dumps(data, indent=2, ensure_ascii=False)


def render(objects: Sequence[dict[str, Any]], fmt: str) -> str:
    """The objects in one of :data:`OBJECT_FORMATS`, ending with a newline (or empty)."""
    if fmt == "yaml":
        return yaml.dump_all(objects, Dumper=ObjectDumper, sort_keys=False, default_flow_style=False) if objects else ""
    if fmt == "json":
        return to_json(objects[0] if len(objects) == 1 else as_list(objects)) + "\n"
    if fmt == "name":
        return "".join(f"{kubectl_name(obj)}\n" for obj in objects)
    raise ValueError(f"unknown output format {fmt!r}")


def diff_label(obj: dict[str, Any]) -> str:
    """kubectl diff's file name for an object: ``group.version.Kind.namespace.name`` (``v1.Pod.shop.web``)."""
    meta = _metadata(obj)
    parts = [str(obj.get("apiVersion") or "").replace("/", "."), str(obj.get("kind") or "")]
    parts += [str(meta.get("namespace") or ""), str(meta.get("name") or meta.get("generateName") or "")]
    return ".".join(p for p in parts if p)


def unified_diff(
    before: dict[str, Any], after: dict[str, Any], colors: Palette, *, labels: tuple[str, str] = ("input", "mutated")
) -> str:
    """The unified diff from ``before`` to ``after`` (their YAML), '' when they are equal; the file
    names are ``<labels[0]>/<diff_label>`` and ``<labels[1]>/<diff_label>``."""
    label = diff_label(after)
    old = yaml.safe_dump(before, sort_keys=False, default_flow_style=False).splitlines(keepends=True)
    new = yaml.safe_dump(after, sort_keys=False, default_flow_style=False).splitlines(keepends=True)
    lines = list(difflib.unified_diff(old, new, f"{labels[0]}/{label}", f"{labels[1]}/{label}"))
    if not lines:
        return ""
    out = []
    for line in lines:
        line = line if line.endswith("\n") else line + "\n"
        if line.startswith(("---", "+++")):
            out.append(colors.bold(line.rstrip("\n")) + "\n")
        elif line.startswith("@@"):
            out.append(colors.cyan(line.rstrip("\n")) + "\n")
        elif line.startswith("-"):
            out.append(colors.red(line.rstrip("\n")) + "\n")
        elif line.startswith("+"):
            out.append(colors.green(line.rstrip("\n")) + "\n")
        else:
            out.append(line)
    return "".join(out)
