"""The chart's values.schema.json refuses what it does not know (issue 29), with real Helm: a misspelt
or unknown key fails ``helm lint`` and ``helm template`` naming it, CAST AI's pod mutator values say
what celmut does instead, and the schema stays complete — every value of values.yaml is in it and every
object with fixed keys is closed (``additionalProperties: false``).

Adding a chart value: add the key to values.yaml and under the ``properties`` of its parent object in
values.schema.json; :func:`test_every_value_is_in_the_schema` names a key that is missing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from . import helm as helm_tool
from .test_chart import container, option

SCHEMA = json.loads((helm_tool.CHART / "values.schema.json").read_text())
VALUES = yaml.safe_load((helm_tool.CHART / "values.yaml").read_text())
# Values whose keys are the user's (maps of labels, Kubernetes structs passed through): not followed.
FREE_FORM = {
    "resources", "controller.resources", "affinity", "controller.affinity", "global", "kyverno-crds",
    "nodeSelector", "controller.nodeSelector", "podAnnotations", "podLabels", "webhook.namespaceSelector.matchLabels",
    "gpuSlicing.workloadTypes", "podMutations[].spec", "podMutations[].labels", "podMutations[].annotations",
    "serviceMonitor.labels", "serviceMonitor.tlsConfig", "grafanaDashboard.labels", "grafanaDashboard.annotations",
}  # fmt: skip


def _objects(schema: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every object schema with its values path (``webhook.connections``, ``podMutations[]``)."""
    found: list[tuple[str, dict[str, Any]]] = []
    if schema.get("type") == "object" or "properties" in schema:
        found.append((path, schema))
    for key, child in (schema.get("properties") or {}).items():
        found += _objects(child, f"{path}.{key}" if path else key)
    if isinstance(schema.get("items"), dict):
        found += _objects(schema["items"], f"{path}[]")
    return found


def _value_paths(value: Any, path: str = "") -> list[str]:
    paths: list[str] = []
    if isinstance(value, dict):
        for key, child in value.items():
            child_path = f"{path}.{key}" if path else key
            paths.append(child_path)
            if child_path not in FREE_FORM:
                paths += _value_paths(child, child_path)
    return paths


def _schema_at(path: str) -> dict[str, Any] | None:
    node: dict[str, Any] | None = SCHEMA
    for key in path.split("."):
        node = ((node or {}).get("properties") or {}).get(key)
        if node is None:
            return None
    return node


def test_every_value_is_in_the_schema() -> None:
    assert [path for path in _value_paths(VALUES) if _schema_at(path) is None] == []


def test_every_object_with_fixed_keys_is_closed() -> None:
    open_objects = [
        path or "<root>"
        for path, schema in _objects(SCHEMA)
        if "properties" in schema and schema.get("additionalProperties", True) is not False
    ]
    assert open_objects == []


def _helm(helm: Path, command: str, *settings: str) -> subprocess.CompletedProcess[str]:
    args = [str(helm), command]
    args += ["x", str(helm_tool.CHART)] if command == "template" else [str(helm_tool.CHART), "--strict"]
    for setting in settings:
        args += ["--set", setting]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", ["lint", "template"])
@pytest.mark.parametrize(
    ("settings", "messages"),
    [
        (["replicaCount=3"], ["at '': additional properties 'replicaCount' not allowed"]),
        (["webhook.timeoutSecond=5"], ["at '/webhook': additional properties 'timeoutSecond' not allowed"]),
        (["controller.allowImmediateRestarts=true"],
         ["at '/controller': additional properties 'allowImmediateRestarts' not allowed"]),
        (["certManager.issuerRef.nme=ca"], ["at '/certManager/issuerRef': additional properties 'nme' not allowed"]),
        (["castai.apiKey=secret"], ["at '/castai/apiKey': value must be 'unset: celmut calls no CAST AI API"]),
        (["castai.clusterID=abc"], ["does not register the cluster with CAST AI; remove castai.clusterID"]),
        (["castai.apiUrl=https://api.eu.cast.ai"],
         ["celmut fetches no mutations from the CAST AI API", "remove castai.apiUrl"]),
        (["mutator.processingDelay=30s"],
         ["celmut mutates each pod in its admission request, without delay", "remove mutator.processingDelay"]),
        (["castai.agentVersion=1"], ["at '/castai': additional properties 'agentVersion' not allowed"]),
    ],
    ids=["unknown top-level", "misspelt webhook key", "misspelt controller key", "misspelt nested key",
         "castai.apiKey", "castai.clusterID", "castai.apiUrl", "mutator.processingDelay", "other castai key"],
)  # fmt: skip
def test_unknown_and_cast_ai_values_fail_naming_them(
    helm: Path, command: str, settings: list[str], messages: list[str]
) -> None:
    result = _helm(helm, command, *settings)
    assert result.returncode != 0, result.stdout[-2000:]
    for message in messages:
        assert message in result.stdout + result.stderr, result.stdout + result.stderr


@pytest.mark.parametrize(("setting", "expected"), [(None, False), ("controller.allowImmediateRestart=true", True)])
def test_immediate_restart_reaches_the_controller_only_when_enabled(
    helm: Path, setting: str | None, expected: bool
) -> None:
    rendered = helm_tool.template(helm, None, *(["--set", setting] if setting else []))
    args = container(rendered, "celmut-controller")["args"]
    assert ("--allow-immediate-restart" in args) is expected
    assert option(args, "--evictions-per-minute") == ["60"]
