"""A Kyverno CLI Test (``kyverno-test.yaml``, ``cli.kyverno.io/v1alpha1`` ``Test``) as written, checked.

The fields are the Kyverno CLI's (``cmd/cli/kubectl-kyverno/apis/v1alpha1/test.go``,
``test_result.go``), deprecated ones included (``name``, ``resource``, ``patchedResource``, ``status``),
and a file without ``apiVersion``/``kind`` (the oldest format) is read the same way. Paths are relative
to the test's directory. A field celmut does not use is named in a warning, never dropped silently.

``failOnMissingResources`` on a result (or on the Test, for all of them) is celmut's: Kyverno has no
such field and drops a result whose resource has no document in ``patchedResources``; celmut does the
same unless the field is ``true``, which fails it instead.

:class:`CaseSelector` is ``kyverno test --test-case-selector`` (``test/filter``): comma-separated
``policy=``, ``rule=`` and ``resource=`` globs; a ``resource=`` glob also narrows the resources a
result checks.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from celmut.errors import ConfigurationError
from celmut.sources.documents import DocumentError, describe_type, load_single
from celmut.sources.go_json import json_field_keys

TEST_FILE_NAMES = ("kyverno-test.yaml", "kyverno-test.yml")

# Result flags naming a policy kind celmut does not run, and that kind (test_result.go).
OTHER_KIND_FLAGS = {
    "isValidatingAdmissionPolicy": "ValidatingAdmissionPolicy",
    "isValidatingPolicy": "ValidatingPolicy",
    "isImageValidatingPolicy": "ImageValidatingPolicy",
    "isDeletingPolicy": "DeletingPolicy",
    "isGeneratingPolicy": "GeneratingPolicy",
}
RESULT_FIELDS = {
    "policy", "rule", "result", "status", "kind", "patchedResources", "patchedResource", "generatedResource",
    "generatedResources", "cloneSourceResource", "resources", "resource", "resourceSpecs", "namespace",
    "isMutatingPolicy", "isMutatingAdmissionPolicy", "failOnMissingResources", *OTHER_KIND_FLAGS,
}  # fmt: skip
TEST_FIELDS = {
    "apiVersion", "kind", "metadata", "name", "policies", "resources", "targetResources", "paramResources",
    "variables", "values", "userinfo", "exceptions", "context", "clusterResources", "results",
    "globalContextEntries", "failOnMissingResources", "jsonPayload", "jsonPayloads",
}  # fmt: skip
# Kyverno fields for what celmut does not evaluate: named in a warning when a suite uses them.
NOT_EVALUATED_FIELDS = {
    "checks": "kyverno-json checks are not evaluated by celmut",
    "httpPayloads": "HTTP payloads are not evaluated by celmut",
    "envoyPayloads": "Envoy payloads are not evaluated by celmut",
    "apiCallResponses": "apiCall mocks serve classic policies' context only; MutatingPolicies do not read them",
}


@dataclass(frozen=True)
class ExpectedResult:
    """One item of ``results``."""

    index: int
    policy: str  # ``name`` or ``namespace/name``
    rule: str
    kind: str
    result: str  # pass, fail, skip, warn or error
    resources: tuple[str, ...]  # ``name`` or ``namespace/name``
    resource_specs: tuple[dict[str, str], ...]
    patched: str  # the patchedResources file ("" when none)
    other_kind: str  # the policy kind a flag says celmut does not run ("" otherwise)
    fail_on_missing: bool

    @property
    def policy_name(self) -> str:
        """The policy's name: Kyverno matches responses on the last ``/`` segment only."""
        return self.policy.rpartition("/")[2]


@dataclass
class Suite:
    path: Path
    name: str
    policies: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    target_resources: list[str] = field(default_factory=list)
    param_resources: list[str] = field(default_factory=list)
    cluster_resources: list[str] = field(default_factory=list)
    variables: str = ""
    values: dict[str, Any] | None = None
    userinfo: str = ""
    context: str = ""
    global_context_entries: Any = None
    json_payloads: list[str] = field(default_factory=list)  # JSON documents, by their declared paths
    legacy_json_payload: bool = False  # the single ``jsonPayload``: every MutatingPolicy mutates it
    results: list[ExpectedResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def base(self) -> Path:
        return self.path.parent


def _strings(spec: dict[str, Any], key: str, source: str) -> list[str]:
    value = spec.get(key)
    items = [] if value is None else [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise DocumentError(source, f"{key}: must be a file name or a list of file names")
    return items


def _flag(item: dict[str, Any], key: str, where: str, source: str) -> bool:
    value = item.get(key, False)
    if not isinstance(value, bool):
        raise DocumentError(source, f"{where}.{key}: must be true or false, not {describe_type(value)}")
    return value


def _result(item: Any, index: int, source: str, fail_on_missing: bool) -> ExpectedResult:
    where = f"results[{index}]"
    if not isinstance(item, dict):
        raise DocumentError(source, f"{where}: must be a map, not {describe_type(item)}")
    refs = item.get("resources")
    refs = [item["resource"]] if refs is None and item.get("resource") else refs or []
    refs = [refs] if isinstance(refs, str) else refs
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise DocumentError(source, f"{where}.resources: must be a list of names (name or namespace/name)")
    specs = item.get("resourceSpecs") or []
    if not isinstance(specs, list) or not all(isinstance(s, dict) for s in specs):
        raise DocumentError(source, f"{where}.resourceSpecs: must be a list of maps")
    patched = item.get("patchedResources") or item.get("patchedResource") or ""
    if not isinstance(patched, str):
        raise DocumentError(source, f"{where}.patchedResources: must be a file name")
    others = [kind for flag, kind in OTHER_KIND_FLAGS.items() if _flag(item, flag, where, source)]
    for flag in ("isMutatingPolicy", "isMutatingAdmissionPolicy"):
        _flag(item, flag, where, source)
    return ExpectedResult(
        index=index,
        policy=str(item.get("policy") or ""),
        rule=str(item.get("rule") or ""),
        kind=str(item.get("kind") or ""),
        result=str(item.get("result") or item.get("status") or "pass").lower(),
        resources=tuple(refs),
        resource_specs=tuple({str(k): str(v) for k, v in s.items()} for s in specs),
        patched=patched,
        other_kind=others[0] if others else "",
        fail_on_missing=_flag(item, "failOnMissingResources", where, source) or fail_on_missing,
    )


def load_suite(path: Path) -> Suite:
    """The Test at ``path``; a DocumentError names the file and the field of a wrong shape."""
    source = str(path)
    spec = load_single(path)
    if not isinstance(spec, dict):
        raise DocumentError(source, f"a Test must be a map, not {describe_type(spec)}")
    spec = json_field_keys(spec, TEST_FIELDS | NOT_EVALUATED_FIELDS.keys())
    metadata = spec.get("metadata")
    named = metadata.get("name") if isinstance(metadata, dict) else None
    suite = Suite(path, str(named or spec.get("name") or path.name))
    suite.policies = _strings(spec, "policies", source)
    suite.exceptions = _strings(spec, "exceptions", source)
    suite.resources = _strings(spec, "resources", source)
    suite.target_resources = _strings(spec, "targetResources", source)
    suite.param_resources = _strings(spec, "paramResources", source)
    suite.cluster_resources = _strings(spec, "clusterResources", source)
    for key in ("variables", "userinfo", "context"):
        value = spec.get(key) or ""
        if not isinstance(value, str):
            raise DocumentError(source, f"{key}: must be a file name, not {describe_type(value)}")
        setattr(suite, key, value)
    values = spec.get("values")
    if isinstance(values, str):  # celmut read `values: FILE` before; Kyverno's field is the inline spec
        suite.variables = suite.variables or values
    elif values is not None and not isinstance(values, dict):
        raise DocumentError(source, f"values: must be a map (a Values spec), not {describe_type(values)}")
    else:
        suite.values = values
    suite.global_context_entries = spec.get("globalContextEntries")
    # ``jsonPayload`` (one document, the older field) and ``jsonPayloads``: documents JSON-mode
    # MutatingPolicies mutate; results name them by these exact paths (test.go, JSON document mutation).
    suite.json_payloads = _strings(spec, "jsonPayload", source) + _strings(spec, "jsonPayloads", source)
    suite.legacy_json_payload = bool(spec.get("jsonPayload")) and not spec.get("jsonPayloads")
    fail_on_missing = spec.get("failOnMissingResources", False)
    if not isinstance(fail_on_missing, bool):
        raise DocumentError(source, "failOnMissingResources: must be true or false")
    results = spec.get("results") or []
    if not isinstance(results, list):
        raise DocumentError(source, f"results: must be a list, not {describe_type(results)}")
    results = [json_field_keys(item, RESULT_FIELDS) if isinstance(item, dict) else item for item in results]
    suite.results = [_result(item, i, source, fail_on_missing) for i, item in enumerate(results)]
    for key in spec:
        if key in NOT_EVALUATED_FIELDS and spec[key]:
            suite.warnings.append(f"{source}: {key}: {NOT_EVALUATED_FIELDS[key]}")
        elif key not in TEST_FIELDS and key not in NOT_EVALUATED_FIELDS:
            suite.warnings.append(f"{source}: {key}: not a field of a Kyverno Test; ignored")
    for index, item in enumerate(results):
        for key in sorted(set(item) - RESULT_FIELDS):
            suite.warnings.append(f"{source}: results[{index}].{key}: not a field of a Kyverno test result; ignored")
    return suite


def find_test_files(paths: list[str], file_name: str | None = None) -> list[Path]:
    """The test files given, or found under the directories given (``file_name``, or
    kyverno-test.yaml and .yml); a path that does not exist is a DocumentError."""
    names = (file_name,) if file_name else TEST_FILE_NAMES
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.name in names and p.is_file())
        else:
            raise DocumentError(str(path), "no such file or directory")
    return found


@dataclass(frozen=True)
class CaseSelector:
    """``--test-case-selector``: globs over a result's policy, rule and resources."""

    policy: str = "*"
    rule: str = "*"
    resource: str = "*"

    @classmethod
    def parse(cls, text: str) -> CaseSelector:
        values: dict[str, str] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            if not sep or key.strip() not in ("policy", "rule", "resource"):
                raise ConfigurationError(
                    f"--test-case-selector: {part!r}: expected policy=GLOB, rule=GLOB or resource=GLOB, comma-separated"
                )
            values[key.strip()] = value.strip()
        return cls(**values)

    def selects(self, result: ExpectedResult) -> bool:
        return (
            fnmatch.fnmatchcase(result.policy, self.policy)
            and fnmatch.fnmatchcase(result.rule, self.rule)
            and (self.resource == "*" or bool(self.resources(result)))
        )

    def resources(self, result: ExpectedResult) -> tuple[str, ...]:
        """The result's resources the selector keeps."""
        if self.resource == "*":
            return result.resources
        return tuple(r for r in result.resources if fnmatch.fnmatchcase(r, self.resource))
