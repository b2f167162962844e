"""Every example document the repository ships is valid for the cluster: custom resources against
celmut's CRDs, built-in kinds against the Kubernetes schemas (both strict: an unknown field fails).

Covered: policies/, examples/, presets/ and the YAML blocks of the README and the documentation. The spot presets are Helm
values files (a top-level ``staticConfig``), not resources; they are checked by the chart tests. Kyverno CLI
test files run in tests/docs/test_examples.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from celmut.install.crds import all_crds
from tests.docs.examples import YAML, blocks, pages

from .structural import validate

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES = "1.35"  # built-in kinds, including admissionregistration v1beta1 MutatingAdmissionPolicy
CRDS = {(crd.group, crd.kind): crd.to_dict() for crd in all_crds()}


def _documents() -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for folder in ("policies", "examples", "presets"):
        for path in sorted((ROOT / folder).rglob("*.y*ml")):
            for index, doc in enumerate(yaml.safe_load_all(path.read_text())):
                if doc is not None:
                    found.append((f"{path.relative_to(ROOT)}#{index}", doc))
    for page in pages():
        for block in blocks(page):
            if block.language in YAML:
                for index, doc in enumerate(yaml.safe_load_all(block.text)):
                    if doc is not None:
                        found.append((f"{block.where}#{index}", doc))
    return found


DOCUMENTS = _documents()
# A Kyverno CLI test file (cli.kyverno.io) is read by `celmut test`, never sent to a cluster.
RESOURCES = [
    (where, doc)
    for where, doc in DOCUMENTS
    if "staticConfig" not in doc and not str(doc.get("apiVersion", "")).startswith("cli.kyverno.io/")
]


def test_every_example_is_either_a_resource_or_a_spot_values_file() -> None:
    for where, doc in DOCUMENTS:
        assert "kind" in doc or set(doc) <= {"staticConfig", "celmutNamespace"}, where
    assert any("README" in where for where, _ in RESOURCES)  # the README's blocks were found
    assert any(where.startswith("docs/") for where, _ in RESOURCES)  # and the documentation's


@pytest.mark.parametrize(("where", "doc"), RESOURCES, ids=[where for where, _ in RESOURCES])
def test_example_is_valid_for_the_cluster(where: str, doc: dict[str, Any]) -> None:
    group = str(doc.get("apiVersion", "")).rpartition("/")[0]
    crd = CRDS.get((group, str(doc.get("kind"))))
    if crd is not None:
        assert validate(crd, doc) == []
    else:
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)
