"""The controller-at-scale workload, shared by the fake and real-cluster benchmarks (not run on its own:
``controller_memory_bench.py`` and ``controller_cluster_bench.py`` use it).

Small Pods (2 containers, ~1.5 KB of JSON) spread over namespaces, and three MutatingPolicies: one
mutateExisting (triggered by Namespace CREATE/UPDATE, targets Pods, adds a label, background reports on,
as Kyverno's chainsaw ``mutating-policies/reporting/mutate-existing`` writes one) and the two admission
policies of ``policies/examples`` (reported by the background scan, as Kyverno's reports controller does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
LABEL = "celmut-bench/patched"

MUTATE_EXISTING_POLICY: dict[str, Any] = {
    "apiVersion": "policies.kyverno.io/v1",
    "kind": "MutatingPolicy",
    "metadata": {"name": "label-pods-of-namespace"},
    "spec": {
        "evaluation": {"mutateExisting": {"enabled": True}},
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["namespaces"],
                }
            ]
        },
        "targetMatchConstraints": {
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}
            ]
        },
        "mutations": [
            {
                "patchType": "ApplyConfiguration",
                "applyConfiguration": {
                    "expression": f'Object{{metadata: Object.metadata{{labels: {{"{LABEL}": "true"}}}}}}'
                },
            }
        ],
    },
}


def policies() -> list[dict[str, Any]]:
    """The three policies: the mutateExisting one and the two examples."""
    examples = sorted((ROOT / "policies" / "examples").glob("*.yaml"))
    return [MUTATE_EXISTING_POLICY] + [yaml.safe_load(path.read_text()) for path in examples]


def write_policies(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for document in policies():
        (directory / f"{document['metadata']['name']}.yaml").write_text(yaml.safe_dump(document))
    return directory


def namespace_name(index: int) -> str:
    return f"bench-{index:02d}"


def namespace(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace_name(index), "labels": {"team": f"team-{index:02d}"}},
    }


def small_pod(index: int, namespaces: int) -> dict[str, Any]:
    """Pod ``index``: 2 containers, a few labels, ~1.5 KB of JSON once stored (uid, timestamps, status)."""
    workload = f"web-{index // 50:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{workload}-{index:06d}",
            "namespace": namespace_name(index % namespaces),
            "labels": {"app": "web", "workload": workload},
        },
        "spec": {
            "automountServiceAccountToken": False,
            "containers": [
                {
                    "name": "app",
                    "image": "registry.example.com/shop/web:1.4.2",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                },
                {"name": "sidecar", "image": "busybox:1.36", "command": ["sleep", "infinity"]},
            ],
        },
    }
