"""Run Kyverno CLI test files (``kyverno-test.yaml``, ``cli.kyverno.io/v1alpha1`` ``Test``).

A test names policies, resources, optional exceptions, clusterResources, targetResources and a
values file, and lists expected results: for a policy and resources (``ns/name`` or ``name``), a
``result`` of pass, skip, fail or error, and optionally ``patchedResources`` — the expected objects,
compared the way Kyverno does (tidy both: drop nulls, empty maps and lists; then equal).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from celmut.compile.pipeline import read_paths
from celmut.runtime.mutate_existing import TargetResult
from celmut.runtime.results import PolicyOutcome
from celmut.service.offline import OfflineCluster, ResourceRun
from celmut.sources.documents import DocumentError, describe_type, kubernetes_objects, load_documents, load_single
from celmut.sources.kyverno_values import load_values

TEST_FILE_NAMES = ("kyverno-test.yaml", "kyverno-test.yml")


@dataclass
class ResultRow:
    test: str
    policy: str
    resource: str
    expected: str
    actual: str
    reason: str = ""

    @property
    def passed(self) -> bool:
        return self.expected == self.actual


@dataclass
class TestRun:
    path: Path
    name: str
    rows: list[ResultRow] = field(default_factory=list)
    error: str = ""

    @property
    def passed(self) -> bool:
        return not self.error and all(row.passed for row in self.rows)


def find_test_files(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.name in TEST_FILE_NAMES)
        else:
            raise DocumentError(str(path), "no such file or directory")
    return found


def tidy(value: Any) -> Any:
    """Kyverno's tidy: drop nulls, empty maps and empty lists, recursively."""
    if isinstance(value, dict):
        out = {k: tidy(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [v for v in (tidy(v) for v in value) if v not in (None, {}, [])]
    return value


def _ref(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    return str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _matches_ref(obj: dict[str, Any], kind: str, ref: str) -> bool:
    obj_kind, namespace, name = _ref(obj)
    ref_namespace, _, ref_name = ref.rpartition("/")
    return (not kind or obj_kind == kind) and name == ref_name and (not ref_namespace or ref_namespace == namespace)


def _status(outcomes: list[PolicyOutcome]) -> tuple[str, str]:
    statuses = [o.status for o in outcomes]
    if "error" in statuses:
        return "error", next(o.reason for o in outcomes if o.status == "error")
    if "applied" in statuses or "unchanged" in statuses:
        return "pass", ""
    return "skip", "; ".join(o.reason for o in outcomes if o.reason)


def run_test_file(path: Path, backend: str | None = None) -> TestRun:
    base = path.parent
    try:
        spec = load_single(path)
        if not isinstance(spec, dict):
            raise DocumentError(str(path), f"a Test must be a map, not {describe_type(spec)}")
    except DocumentError as ex:
        return TestRun(path, path.name, error=str(ex))
    metadata = spec.get("metadata")
    named = metadata.get("name") if isinstance(metadata, dict) else None
    run = TestRun(path, str(named or spec.get("name") or path.name))

    def files(key: str) -> list[str]:
        value = spec.get(key) or []
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise DocumentError(str(path), f"{key}: must be a file name or a list of file names")
        return [str(base / item) for item in items]

    read_errors: list[Exception] = []
    try:
        policies, read_errors = read_paths(*files("policies"), *files("exceptions"))
        resources = kubernetes_objects(load_documents(*files("resources")))
        cluster = load_documents(*files("clusterResources"), *files("targetResources"))
        kubernetes_objects(cluster)
        values_files = files("variables") or files("values")
        values = load_values(values_files[0]) if values_files else None
        results = spec.get("results") or []
        if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
            raise DocumentError(str(path), "results: must be a list of maps")
    except DocumentError as ex:
        run.error = "; ".join(str(e) for e in [*read_errors, ex])
        return run
    offline = OfflineCluster.build(policies, cluster, values, backend, read_errors)
    if offline.compilation.errors:
        run.error = "; ".join(str(e) for e in offline.compilation.errors)
        return run
    runs = offline.admit(resources)
    scanned = offline.scan()
    for expected in results:
        run.rows += _check(run.name, base, expected, runs, scanned)
    return run


def _check(
    test: str, base: Path, expected: dict[str, Any], runs: list[ResourceRun], scanned: list[TargetResult]
) -> list[ResultRow]:
    policy = str(expected.get("policy", ""))
    kind = str(expected.get("kind", ""))
    want = str(expected.get("result", "pass"))
    patched_file = expected.get("patchedResources") or expected.get("patchedResource")
    patched: list[dict[str, Any]] = []
    patched_error = ""
    if patched_file:  # as Kyverno: an unreadable file is a failed row ("Resource error"), the others go on
        try:
            patched = kubernetes_objects(load_documents(base / str(patched_file)))
        except DocumentError as ex:
            patched_error = f"patchedResources: {ex}"
    refs = expected.get("resources") or ([expected["resource"]] if expected.get("resource") else [])
    refs = [refs] if isinstance(refs, str) else refs
    rows = []
    for ref in refs:
        actual, reason, final = _actual(policy, kind, str(ref), runs, scanned)
        if patched_error:
            actual, reason = "fail", patched_error
        elif actual == "pass" and patched and final is not None:
            expected_doc = next((d for d in patched if _ref(d) == _ref(final)), None)
            if expected_doc is None:
                actual, reason = "fail", "no document for this resource in patchedResources"
            elif tidy(expected_doc) != tidy(final):
                actual, reason = "fail", "the patched resource differs from patchedResources"
        rows.append(ResultRow(test, policy, f"{kind} {ref}".strip(), want, actual, reason))
    return rows


def _actual(
    policy: str, kind: str, ref: str, runs: list[ResourceRun], scanned: list[TargetResult]
) -> tuple[str, str, dict[str, Any] | None]:
    def named(name: str) -> bool:
        return name == policy or name.startswith(f"{policy} (autogen")

    for target in [t for r in runs for t in r.targets] + scanned:
        if named(target.policy) and _matches_ref(target.target, kind, ref):
            status, reason = _status([target.outcome])
            return status, reason, target.mutated if target.mutated is not None else target.target
    for run in runs:
        if _matches_ref(run.resource, kind, ref):
            if not run.result.allowed and any(named(o.policy) for o in run.result.outcomes if o.status == "error"):
                return "error", run.result.message, None
            status, reason = _status([o for o in run.result.outcomes if named(o.policy)])
            return status, reason, run.result.object
    return "skip", "resource not found in the test's resources or targets", None
