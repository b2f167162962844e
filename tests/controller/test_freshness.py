"""Which copy of a target is the newest (resourceVersions ordered as KEP-5504 allows)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from celmut.compile.compiled import CompiledPolicy
from celmut.compile.pipeline import compile_paths
from celmut.controller.freshness import with_newer_copy
from celmut.controller.reconcile import Task, listed_object
from celmut.controller.resource_versions import newer_version

from .support import add_label, policy, write_policies


@pytest.mark.parametrize(
    ("candidate", "than", "newer"),
    [
        ("10", "9", True),  # longer is greater: compared as integers, not as strings
        ("9", "10", False),
        ("123", "122", True),  # equal length: digit by digit
        ("122", "122", False),  # the same version is not newer
        ("0", "1", False),  # "0" is never a stored object's version (list/watch's "any")
        ("012", "11", False),  # leading zeros: not well formed, orders nothing
        ("", "5", False),
        ("abc", "5", False),  # another API server's opaque version: the copy in hand is kept
        ("5", "abc", False),
        ("١٢", "5", False),  # digits outside ASCII are not a resourceVersion
    ],
)
def test_resource_versions_are_ordered_as_kubernetes_compare_resource_version(
    candidate: str, than: str, newer: bool
) -> None:
    """k8s.io/apimachinery/pkg/util/resourceversion CompareResourceVersion (KEP-5504, GA in 1.35)."""
    assert newer_version(candidate, than) is newer


def pod(version: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "resourceVersion": version}}


@pytest.fixture
def compiled(tmp_path: Path) -> CompiledPolicy:
    (only,) = compile_paths(str(write_policies(tmp_path, policy("labels", add_label("x"))))).compiled.policies
    return only


def test_work_takes_a_newer_copy_and_keeps_a_newer_one_it_has(compiled: CompiledPolicy) -> None:
    work = {"a": Task(compiled, obj=pod("9")), "b": Task(compiled, obj=pod("12")), "c": Task(compiled)}
    updated = with_newer_copy(work, pod("11"))
    assert {name: task.obj and task.obj["metadata"]["resourceVersion"] for name, task in updated.items()} == {
        "a": "11",  # older: replaced
        "b": "12",  # newer than the delivered one: kept
        "c": None,  # queued without a copy: its worker reads the target
    }
    assert listed_object(updated) == pod("12")
    assert with_newer_copy(work, pod("8")) is work  # nothing older: the same work
