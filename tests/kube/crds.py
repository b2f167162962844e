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


def kyvernos_crd(kind: str = "MutatingPolicy") -> dict[str, Any]:
    """The CRD of ``kind`` as Kyverno's chart installs it (charts/kyverno/charts/crds templates:
    kyverno.crds.labels, Helm's ownership annotations of the release ``kyverno``)."""
    shipped_only = ("GlobalContextEntry", "PolicyReport", "ClusterPolicyReport")  # not policy kinds celmut watches
    definition = copy.deepcopy(_shipped()[kind]) if kind in shipped_only else crd(spec_of(kind))
    definition["metadata"]["labels"] = {
        "app.kubernetes.io/part-of": "kyverno",
        "app.kubernetes.io/component": "crds",
        "app.kubernetes.io/managed-by": "Helm",
    }
    definition["metadata"]["annotations"] = {
        "meta.helm.sh/release-name": "kyverno",
        "meta.helm.sh/release-namespace": "kyverno",
    }
    return definition


def crds_next_to_kyverno() -> list[dict[str, Any]]:
    """The CRDs celmut watches, Kyverno's policy kinds as Kyverno installed them (Kyverno came first)."""
    kyvernos = {"MutatingPolicy", "NamespacedMutatingPolicy", "PolicyException"}
    reports = [kyvernos_crd("PolicyReport"), kyvernos_crd("ClusterPolicyReport")]  # its chart ships them too
    return [kyvernos_crd("GlobalContextEntry"), *reports] + [
        kyvernos_crd(d["spec"]["names"]["kind"]) if d["spec"]["names"]["kind"] in kyvernos else d for d in policy_crds()
    ]


def kyvernos_webhooks() -> dict[str, Any]:
    """Kyverno's resource webhook configuration while it serves a MutatingPolicy (pkg/controllers/webhook:
    label webhook.kyverno.io/managed-by=kyverno, path /mpol/<name>): how celmut detects Kyverno."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {
            "name": "kyverno-resource-mutating-webhook-cfg",
            "labels": {"webhook.kyverno.io/managed-by": "kyverno"},
        },
        "webhooks": [
            {
                "name": "mpol.mutate.kyverno.svc-fail",
                "clientConfig": {"service": {"name": "kyverno-svc", "namespace": "kyverno", "path": "/mpol/kyvernos"}},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "rules": [],
            }
        ],
    }


def report_crds() -> list[dict[str, Any]]:
    """The shipped wgpolicyk8s.io PolicyReport and ClusterPolicyReport CRDs."""
    return [copy.deepcopy(_shipped()[kind]) for kind in ("PolicyReport", "ClusterPolicyReport")]
