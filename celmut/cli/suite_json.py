"""A Kyverno Test's JSON documents (``jsonPayload``, ``jsonPayloads``): run and checked as ``kyverno test`` does.

Each document is mutated by the Test's MutatingPolicies in the order its policy files declare them
(:func:`celmut.runtime.documents.mutate_document`): JSON-mode policies apply, Kubernetes-mode ones are
skipped (``processor/json.go``), except on the older single ``jsonPayload``, which every
MutatingPolicy mutates, its matchConstraints aside (the processor that added
test/cli/test-mutating-policy/json-payload and non-k8s-json). A result without ``resources``
checks every document, as ``printTestResult`` checks every result then. A result names documents by
their exact declared paths (``resources: [nested/input.json]``); its ``patchedResources`` is the
complete document expected after that policy, compared as JSON values, integers exactly (``commands/test/json.go``
``compareJSONDocument``). When a policy fails on a document, no snapshot of that document is
available (Kyverno clears them): a result expecting one fails; ``result: error`` is how a test expects
the failure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from celmut.compile.compiled import CompiledException, CompiledPolicy
from celmut.runtime.documents import DocumentOutcome, DocumentResult, mutate_document
from celmut.sources.documents import MAX_FILE_BYTES, Document, DocumentError, load_single

JSON_SUFFIXES = (".json",)


def load_document(path: Path) -> Any:
    """The one JSON value of a ``.json`` file (``null`` included, integers exact), or the one YAML
    document of another file; a DocumentError names the file."""
    if path.suffix not in JSON_SUFFIXES:
        return load_single(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise DocumentError(str(path), f"file is over the {MAX_FILE_BYTES}-byte limit")
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DocumentError(str(path), "no such file") from None
    except (OSError, UnicodeDecodeError) as ex:
        raise DocumentError(str(path), f"cannot read: {ex}") from None
    except json.JSONDecodeError as ex:
        raise DocumentError(str(path), f"not a JSON document: {ex.msg} at line {ex.lineno} column {ex.colno}") from None


def in_file_order(policies: Sequence[CompiledPolicy], documents: Sequence[Document]) -> list[CompiledPolicy]:
    """The MutatingPolicies in the order their documents were given (compilation sorts by name; a
    document run chains policies in the order the files declare them)."""
    order: dict[tuple[str, str], int] = {}
    for index, document in enumerate(documents):
        content = document.content if isinstance(document.content, dict) else {}
        name = str((content.get("metadata") or {}).get("name") or "")
        order.setdefault((str(content.get("kind") or ""), name), index)
    mutating = [p for p in policies if p.kind != "MutatingAdmissionPolicy" and not p.autogen]
    return sorted(mutating, key=lambda p: order.get((p.kind, p.name), len(order)))


@dataclass(frozen=True)
class PayloadRun:
    """One document: where it was declared, and what the policies did to it."""

    declared: str
    result: DocumentResult

    def outcome(self, policy_name: str) -> DocumentOutcome | None:
        return next((o for o in self.result.outcomes if o.policy.name == policy_name), None)

    def snapshot(self, outcome: DocumentOutcome) -> tuple[bool, Any]:
        """(available, document after ``outcome``'s policy): none once the run failed."""
        if self.result.error or outcome.status == "error":
            return False, None
        return True, outcome.document


def run_payloads(
    declared: Sequence[str],
    base: Path,
    policies: Sequence[CompiledPolicy],
    exceptions: Sequence[CompiledException],
    *,
    kubernetes_mode: bool = False,
) -> dict[str, PayloadRun]:
    """Each declared document, loaded and mutated; a DocumentError for one that cannot be read."""
    runs: dict[str, PayloadRun] = {}
    for name in declared:
        document = load_document(base / name)
        runs[name] = PayloadRun(name, mutate_document(policies, document, exceptions, kubernetes_mode=kubernetes_mode))
    return runs


def status(outcome: DocumentOutcome) -> str:
    """Kyverno's rule status for a document outcome: pass, skip or error."""
    return {"applied": "pass", "unchanged": "pass", "skipped": "skip"}.get(outcome.status, "error")
