"""The CustomResourceDefinitions cluster tests install in the fake API server: the real ones in
crds/, as `kubectl apply -f crds/` and the Helm chart install them."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import yaml

from celmut.kube.policy_source import POLICY_KINDS, WatchedKind

CRD_DIR = Path(__file__).resolve().parents[2] / "crds"


@functools.cache
def _shipped() -> dict[str, dict[str, Any]]:
    """Kind -> the CRD in crds/."""
    found = (yaml.safe_load(path.read_text()) for path in sorted(CRD_DIR.glob("*.yaml")))
    return {doc["spec"]["names"]["kind"]: doc for doc in found}


def crd(spec: WatchedKind, versions: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The shipped CRD of ``spec``'s kind; with ``versions``, serving only those (the first stored),
    like an older release of the CRD."""
    definition = copy.deepcopy(_shipped()[spec.kind])
    if versions is not None:
        by_name = {v["name"]: v for v in definition["spec"]["versions"]}
        definition["spec"]["versions"] = [{**by_name[name], "storage": i == 0} for i, name in enumerate(versions)]
    return definition


def policy_crds() -> list[dict[str, Any]]:
    """CRDs for every custom kind celmut watches (the built-in kinds need none)."""
    return [crd(spec) for spec in POLICY_KINDS if spec.group and not spec.group.endswith("k8s.io")]


def spec_of(kind: str) -> WatchedKind:
    return next(spec for spec in POLICY_KINDS if spec.kind == kind)
