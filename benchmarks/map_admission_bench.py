"""MutatingAdmissionPolicy admission benchmark: one ~6 KB Pod through three MutatingAdmissionPolicies,
the Go round trip on — an ApplyConfiguration built per request (a securityContext per container), a
literal one (an annotation), and a JSONPatch writing a quantity. Prints the p50 µs per admission;
never asserts on time.

What it measures is the MutatingAdmissionPolicy path end to end: the typed conversion of each
ApplyConfiguration, the merge, the conversion to the Pod's Go type, and the strict decoding of the
JSONPatch's result. It imports only what every celmut version has, so the same file times another
checkout side by side (ratios; run each alternately in one session on a busy machine):

    python benchmarks/map_admission_bench.py [--requests N]
    PYTHONPATH=OTHER_CHECKOUT python benchmarks/map_admission_bench.py [--requests N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import realistic_pod

from celmut.compile.pipeline import compile_documents
from celmut.runtime import AdmissionInput
from celmut.service.assembly import EngineSettings, assemble_engine
from celmut.sources.documents import Document

MUTATIONS = {
    "security-context": {
        "patchType": "ApplyConfiguration",
        "applyConfiguration": {
            "expression": "Object{spec: Object.spec{containers: object.spec.containers.map(c, Object.spec.containers{"
            "name: c.name, securityContext: Object.spec.containers.securityContext{allowPrivilegeEscalation: false}})}}"
        },
    },
    "annotation": {
        "patchType": "ApplyConfiguration",
        "applyConfiguration": {"expression": 'Object{metadata: Object.metadata{annotations: {"web": "nginx"}}}'},
    },
    "cpu-limit": {
        "patchType": "JSONPatch",
        "jsonPatch": {
            "expression": '[JSONPatch{op: "add", path: "/spec/containers/0/resources/limits", value: {"cpu": "1.5"}}]'
        },
    },
}


def documents() -> list[dict[str, Any]]:
    api = "admissionregistration.k8s.io/v1"
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]
    out: list[dict[str, Any]] = []
    for name, mutation in MUTATIONS.items():
        spec = {"failurePolicy": "Fail", "reinvocationPolicy": "Never", "matchConstraints": {"resourceRules": rules}}
        out.append({"apiVersion": api, "kind": "MutatingAdmissionPolicy", "metadata": {"name": name},
                    "spec": {**spec, "mutations": [mutation]}})  # fmt: skip
        out.append({"apiVersion": api, "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": name},
                    "spec": {"policyName": name}})  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args()
    compilation = compile_documents(Document("bench.yaml", i, d) for i, d in enumerate(documents()))
    assert not compilation.errors, compilation.errors
    engine = assemble_engine(compilation, EngineSettings())
    pod = realistic_pod()
    for container in pod["spec"]["containers"]:
        container.setdefault("resources", {})

    def admit() -> Any:
        return engine.admit(AdmissionInput.from_object(pod))

    result = admit()
    assert result.allowed and len(result.patch) >= 3, (result.message, result.patch)
    for _ in range(200):
        admit()
    samples = []
    for _ in range(args.requests):
        started = time.perf_counter()
        admit()
        samples.append((time.perf_counter() - started) * 1e6)
    print(f"3 MutatingAdmissionPolicies on a Pod, {args.requests} requests: p50 {statistics.median(samples):,.0f} µs")


if __name__ == "__main__":
    main()
