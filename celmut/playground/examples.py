"""The catalog: examples (the repository's ready policies and presets, each with resources to try them
on), and every shipped policy and preset on its own.

Each example names files of a checkout (``policies/``, ``presets/``, ``examples/``); those found under
the root (``--examples DIR``; by default the checkout this package runs from, else the current
directory) are listed, with the text of each pane. The policies and presets are the YAML files under
``policies/`` and ``presets/``, each with the comment it opens with (what it does) and the kinds and
names it holds, for the page's search (and the compiled spot presets of ``examples/spot-presets/``,
alternatives to each other); choosing one fills the policies pane only. The page asks for
an entry by its id only, so a request never names a path on the server.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from celmut.compile.presets.base import GENERATED_BY
from celmut.limits import MAX_REQUEST_BYTES
from celmut.sources.documents import DocumentError, parse_text

# the compiled spot presets are alternatives to each other, kept apart from policies/ (which loads as a set)
CATALOG_FOLDERS = ("policies", "examples/spot-presets", "presets")
MAX_CATALOG_FILES = 200
_COMMENT = re.compile(r"^#\s?(.*)$")


@dataclass(frozen=True)
class Example:
    id: str
    title: str
    policies: tuple[str, ...]
    resources: tuple[str, ...]
    cluster: tuple[str, ...] = ()
    operation: str = "CREATE"


CATALOGUE: tuple[Example, ...] = (
    Example(
        "team-label",
        "Team label from the namespace (policies/examples/add-managed-by-label.yaml)",
        ("policies/examples/add-managed-by-label.yaml",),
        ("examples/resources/pod.yaml",),
        ("examples/cluster.yaml",),
    ),
    Example(
        "security-context",
        "Default security context, autogen on a Deployment (policies/examples/default-security-context.yaml)",
        ("policies/examples/default-security-context.yaml",),
        ("examples/resources/pod.yaml", "examples/resources/deployment.yaml"),
    ),
    Example(
        "spot-all-except-kube-system",
        "Spot preset: all except kube-system (presets/spot-all-except-kube-system.yaml)",
        ("presets/spot-all-except-kube-system.yaml",),
        ("examples/preset-pods/spot-pods.yaml",),
        ("examples/preset-cluster.yaml",),
    ),
    Example(
        "spot-custom",
        "Spot preset: the CAST AI custom rules (examples/spot-custom-values.yaml)",
        ("examples/spot-custom-values.yaml",),
        ("examples/preset-pods/spot-pods.yaml",),
        ("examples/preset-cluster.yaml",),
    ),
    Example(
        "spot-partial-workload",
        "Spot preset partialSpot on a Deployment of 10 replicas, run as its pods (presets/spot-partial.yaml)",
        ("presets/spot-partial.yaml",),
        ("examples/workloads/web-deployment.yaml",),
        ("examples/cluster.yaml",),
    ),
    Example(
        "gpu-slicing",
        "GPU slicing preset (presets/gpu-slicing.yaml)",
        ("presets/gpu-slicing.yaml",),
        ("examples/preset-pods/gpu-pods.yaml",),
        ("examples/preset-cluster.yaml",),
    ),
    Example(
        "pod-pinning",
        "Pod pinning plan preset (examples/pinning-plan.yaml)",
        ("examples/pinning-plan.yaml",),
        ("examples/preset-pods/statefulset-pods.yaml",),
        ("examples/preset-cluster.yaml",),
    ),
)


def default_root() -> Path:
    """The checkout this package runs from when it has the example folders, else the current directory."""
    checkout = Path(__file__).resolve().parents[2]
    return checkout if (checkout / "policies").is_dir() and (checkout / "examples").is_dir() else Path.cwd()


def _text(root: Path, paths: tuple[str, ...]) -> str | None:
    """The files joined as one YAML stream, or None when one is missing or too large."""
    parts: list[str] = []
    for relative in paths:
        path = root / relative
        try:
            if path.stat().st_size > MAX_REQUEST_BYTES:
                return None
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        parts.append(text if text.endswith("\n") else text + "\n")
    return "---\n".join(parts)


def available(root: Path) -> list[dict[str, Any]]:
    """The examples whose files are all under ``root``, each with the state of the page it loads."""
    out: list[dict[str, Any]] = []
    for example in CATALOGUE:
        policies, resources = _text(root, example.policies), _text(root, example.resources)
        cluster = _text(root, example.cluster) if example.cluster else ""
        if policies is None or resources is None or cluster is None:
            continue
        state = {"policies": policies, "resources": resources, "cluster": cluster, "operation": example.operation}
        out.append({"id": example.id, "title": example.title, "state": state})
    return out


def catalog(root: Path) -> list[dict[str, Any]]:
    """The examples, then every policy and preset file under ``policies/`` and ``presets/``: ``id``,
    ``group`` (Examples, Policies, Presets), ``title``, ``description`` and ``state`` (the panes it fills)."""
    out = [
        {**example, "group": "Examples", "description": "", "id": f"example:{example['id']}"}
        for example in available(root)
    ]
    for folder in CATALOG_FOLDERS:
        base = root / folder
        if not base.is_dir():
            continue
        files = sorted(p for p in base.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
        for path in files[:MAX_CATALOG_FILES]:
            entry = _file_entry(root, path, "Presets" if folder == "presets" else "Policies")
            if entry is not None:
                out.append(entry)
    return out


def _file_entry(root: Path, path: Path, group: str) -> dict[str, Any] | None:
    relative = path.relative_to(root).as_posix()
    text = _text(root, (relative,))
    if text is None:
        return None
    leading = itertools.takewhile(lambda line: line.startswith("#"), text.splitlines())
    description = " ".join(found[1].strip() for line in leading if (found := _COMMENT.match(line)))[:400]
    try:
        documents = parse_text(text, relative)
    except DocumentError:
        return None
    names = []
    for document in documents:
        if isinstance(document, dict):
            kind = str(document.get("kind") or ("spot webhook values" if "staticConfig" in document else "document"))
            name = str(
                (document.get("metadata") or {}).get("name") or (document.get("staticConfig") or {}).get("preset", "")
            )
            names.append(f"{kind} {name}".strip())
            origin = ((document.get("metadata") or {}).get("annotations") or {}).get(GENERATED_BY)
            if origin and not description:
                description = f"Compiled from the {origin}"
    return {
        "id": f"file:{relative}",
        "group": group,
        "title": f"{relative}: {', '.join(names)}" if names else relative,
        "description": description,
        "state": {"policies": text},
    }
