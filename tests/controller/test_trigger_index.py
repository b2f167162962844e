"""The controller's triggers are indexed like the webhook's requests (issue 16, item 3): a watch
event visits only the mutateExisting policies whose rules name its resource and operation."""

from __future__ import annotations

from typing import Any

from celmut.compile.pipeline import compile_documents
from celmut.controller.triggers import OwnWrites, TriggerHandler
from celmut.service.assembly import EngineSettings, assemble_engine
from celmut.sources.documents import Document


def _policy(name: str, resource: str, operations: list[str]) -> dict[str, Any]:
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": operations, "resources": [resource]}
    spec = {
        "evaluation": {"mutateExisting": {"enabled": True}},
        "matchConstraints": {"resourceRules": [rule]},
        "targetMatchConstraints": {"resourceRules": [{**rule, "resources": ["configmaps"]}]},
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}],
    }
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": name}, "spec": spec}


def test_a_trigger_visits_only_the_policies_naming_its_resource_and_operation() -> None:
    documents = [
        Document(f"{name}.yaml", 0, _policy(name, resource, operations))
        for name, resource, operations in [
            ("on-pod-create", "pods", ["CREATE"]),
            ("on-pod-update", "pods", ["UPDATE"]),
            ("on-secret", "secrets", ["CREATE", "UPDATE"]),
        ]
    ]
    compilation = compile_documents(documents)
    assert not compilation.errors
    engine = assemble_engine(compilation, EngineSettings(report_unselected=False))
    handler = TriggerHandler("v1", "pods", lambda: None, lambda *_: None, OwnWrites(), lambda: True, lambda _: None)
    assert [p.name for p in handler.candidates(engine, "CREATE")] == ["on-pod-create"]
    assert [p.name for p in handler.candidates(engine, "UPDATE")] == ["on-pod-update"]
    assert handler.candidates(engine, "DELETE") == ()
