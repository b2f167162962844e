"""The page as a Kyverno CLI test: ``kyverno-test.yaml`` and its files, zipped, for ``celmut test`` and
``kyverno test`` alike.

The panes are written as they are (``policies.yaml``, ``resources.yaml``, ``cluster.yaml``,
``context.yaml``, ``userinfo.yaml``); the operation, when not CREATE, as the Test's inline ``values``
(``globalValues: {request.operation: …}``); the expected results are what the run found, one per
policy and resource the policy matched, in the Test's format (kyverno
``cmd/cli/kubectl-kyverno/apis/v1alpha1/test_result.go``): ``pass`` when it applied or changed
nothing, ``skip`` when a matchCondition was false or an exception applied (and for a
MutatingAdmissionPolicy that changed nothing, as Kyverno reports it), ``error`` when it failed;
``patchedResources: patched.yaml`` holds each object as admitted, for the ``pass`` results. A policy
that does not match a resource gets no result (Kyverno reports it Excluded).

A Test has no old objects: a page with some is refused, rather than exported as a test that checks
something else.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Sequence
from typing import Any

import yaml

from celmut.playground.inputs import PaneError, PaneProblem
from celmut.playground.session import State, load
from celmut.runtime.results import PolicyOutcome

# How a policy does not take part in a resource's admission (kyverno test: Excluded, no result).
NOT_MATCHED = {"matchConstraints", "namespace", "controlledReplicaSet", "backgroundRequest", "noBinding", "noObject"}
TEST_FILE = "kyverno-test.yaml"
PATCHED_FILE = "patched.yaml"
_NAME = re.compile(r"[^a-z0-9-]+")


def export(state: State, name: str = "playground") -> tuple[bytes, list[str]]:
    """The zip of the test directory ``<name>/``, and its file names; raises :class:`PaneError`."""
    if state.old_objects.strip():
        problem = "a Kyverno test has no old objects: clear this pane to export (the operation stays)"
        raise PaneError([PaneProblem("oldObjects", problem)])
    loaded = load(state)
    directory = _NAME.sub("-", name.lower()).strip("-") or "playground"
    files: dict[str, str] = {"policies.yaml": state.policies, "resources.yaml": state.resources}
    test: dict[str, Any] = {
        "apiVersion": "cli.kyverno.io/v1alpha1",
        "kind": "Test",
        "metadata": {"name": directory},
        "policies": ["policies.yaml"],
        "resources": ["resources.yaml"],
    }
    for pane, file, key in (
        (state.cluster, "cluster.yaml", "clusterResources"),
        (state.context, "context.yaml", "context"),
        (state.user_info, "userinfo.yaml", "userinfo"),
    ):
        if pane.strip():
            files[file] = pane
            test[key] = [file] if key == "clusterResources" else file
    if state.operation != "CREATE":
        test["values"] = {"globalValues": {"request.operation": state.operation}}
    results: list[dict[str, Any]] = []
    patched: list[dict[str, Any]] = []
    for resource in loaded.resources:
        (run,) = loaded.offline.admit([resource], state.operation, [None])
        result = run.result
        ref = _reference(resource)
        for policy, outcomes in _by_policy(result.outcomes):
            evaluated = [o for o in outcomes if not (o.status == "skipped" and o.cause in NOT_MATCHED)]
            if not evaluated:
                continue
            expected: dict[str, Any] = {"policy": policy}
            flag = "isMutatingAdmissionPolicy" if evaluated[0].kind == "MutatingAdmissionPolicy" else "isMutatingPolicy"
            expected[flag] = True
            expected["kind"] = str(resource.get("kind", ""))
            expected["resources"] = [ref]
            status = _status(evaluated)
            if status == "pass" and result.allowed and result.object is not None:
                expected["patchedResources"] = PATCHED_FILE
                if result.object not in patched:
                    patched.append(result.object)
            expected["result"] = status
            results.append(expected)
    test["results"] = results
    if patched:
        files[PATCHED_FILE] = yaml.safe_dump_all(patched, sort_keys=False)
    files = {TEST_FILE: yaml.safe_dump(test, sort_keys=False), **files}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for file, text in files.items():
            archive.writestr(f"{directory}/{file}", text)
    return buffer.getvalue(), [f"{directory}/{f}" for f in files]


def _reference(obj: dict[str, Any]) -> str:
    """``namespace/name`` as a Test names a resource (``name`` for a cluster-scoped one)."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    return f"{meta['namespace']}/{name}" if meta.get("namespace") else name


def _by_policy(outcomes: Sequence[PolicyOutcome]) -> list[tuple[str, list[PolicyOutcome]]]:
    """The outcomes per policy name, autogen variants with their policy (``ns/p (autogen x)`` → p)."""
    grouped: dict[str, list[PolicyOutcome]] = {}
    for outcome in outcomes:
        grouped.setdefault(outcome.policy.partition(" (autogen")[0].rpartition("/")[2], []).append(outcome)
    return list(grouped.items())


def _status(outcomes: Sequence[PolicyOutcome]) -> str:
    """kyverno test's result for a policy on a resource (what ``celmut test`` compares against)."""
    if any(o.status == "error" or o.cause == "error" for o in outcomes):
        return "error"
    if all(o.kind == "MutatingAdmissionPolicy" and o.status == "unchanged" for o in outcomes):
        return "skip"
    if any(o.status in ("applied", "unchanged") for o in outcomes):
        return "pass"
    return "skip"
