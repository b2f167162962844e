"""Build compiled policy sets from YAML text and admit objects through the engine."""

from __future__ import annotations

from typing import Any

import yaml

from celmut import cel
from celmut.compile.compiled import CompiledPolicySet
from celmut.compile.policies import compile_policy_set
from celmut.policy import PolicySet, load_policy_documents
from celmut.runtime import AdmissionEngine, AdmissionInput, AdmissionOptions, AdmissionResult
from celmut.runtime.schemas import SchemaRegistry
from celmut.service.static_resources import StaticResources
from celmut.sources.documents import Document


def parse(text: str) -> PolicySet:
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    return load_policy_documents(Document("policies.yaml", i, d) for i, d in enumerate(docs))


def compile_text(text: str) -> CompiledPolicySet:
    compiled = compile_policy_set(parse(text))
    assert not compiled.errors, [str(e) for e in compiled.errors]
    return compiled


def engine(text: str, cluster: list[dict[str, Any]] = (), **options: Any) -> AdmissionEngine:  # type: ignore[assignment]
    registry = SchemaRegistry([obj for obj in cluster if obj.get("kind") == "CustomResourceDefinition"])
    services = cel.Services(resources=StaticResources(cluster))
    options.setdefault("timeout_seconds", None)  # outcomes never depend on the machine's load (cost bounds CEL)
    return AdmissionEngine(compile_text(text), options=AdmissionOptions(services=services, schemas=registry, **options))


def admit(
    text_or_engine: str | AdmissionEngine, obj: dict[str, Any] | None, operation: str = "CREATE", **kwargs: Any
) -> AdmissionResult:
    eng = engine(text_or_engine) if isinstance(text_or_engine, str) else text_or_engine
    return eng.admit(AdmissionInput.from_object(obj, operation, **kwargs))


def pod(name: str = "web", namespace: str = "default", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}], **spec},
    }


def mpol(name: str, mutations: str, *, extra: str = "", resources: str = "pods", operations: str = "[CREATE]") -> str:
    """A MutatingPolicy for core/v1 resources with the given mutations YAML (indented by 4)."""
    return f"""
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {{name: {name}}}
spec:
  autogen: {{podControllers: {{controllers: []}}}}
  matchConstraints:
    resourceRules: [{{apiGroups: [''], apiVersions: [v1], operations: {operations}, resources: [{resources}]}}]
{extra}
  mutations:
{mutations}
"""


def map_policy(
    mutations: str,
    *,
    failure: str = "Fail",
    reinvocation: str = "Never",
    group: str = "",
    version: str = "v1",
    resource: str = "pods",
) -> str:
    """A MutatingAdmissionPolicy ``map`` on CREATE of one resource with the given mutations YAML, and its
    binding ``map-binding``."""
    return f"""
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {{name: map}}
spec:
  failurePolicy: {failure}
  reinvocationPolicy: {reinvocation}
  matchConstraints:
    resourceRules: [{{apiGroups: ['{group}'], apiVersions: [{version}], operations: [CREATE], resources: [{resource}]}}]
  mutations:
{mutations}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {{name: map-binding}}
spec: {{policyName: map}}
"""


def jsonpatch(expression: str) -> str:
    return f"""  - patchType: JSONPatch
    jsonPatch:
      expression: {yaml.safe_dump(expression, default_style="'").strip()}
"""


def applyconfig(expression: str) -> str:
    return f"""  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: {yaml.safe_dump(expression, default_style="'").strip()}
"""
