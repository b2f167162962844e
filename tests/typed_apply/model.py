"""What a typed-apply case is, the objects and custom resource definition the cases use, the policies
they become, and how an answer is judged.

Shared by the differential tests (tests/runtime/test_typed_apply.py: every case through celmut as a
MutatingAdmissionPolicy and as a Kyverno MutatingPolicy, and the answers recorded on a real API
server replayed) and by benchmarks/typed_apply_real.py, which runs the same policies, on the same
objects, through a native MutatingAdmissionPolicy on a real kube-apiserver and records its answers.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import yaml

from celmut.runtime import AdmissionEngine, AdmissionInput, AdmissionResult
from tests.runtime.helpers import engine

GROUP = "typed-apply.celmut.io"
# A structural schema with a field of every kind the cases need. kube-apiserver refuses a list-map
# key without a default unless it is required (apiextensions validation), so ``items[].name`` is.
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"typedapplycases.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "typedapplycases", "singular": "typedapplycase", "kind": "TypedApplyCase"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "count": {"type": "integer"},
                                    "small": {"type": "integer", "format": "int32"},
                                    "ratio": {"type": "number"},
                                    "title": {"type": "string"},
                                    "enabled": {"type": "boolean"},
                                    "size": {"x-kubernetes-int-or-string": True},
                                    "blob": {"type": "string", "format": "byte"},
                                    "when": {"type": "string", "format": "date-time"},
                                    "note": {"type": "string", "nullable": True},
                                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                    "items": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name"],
                                        "items": {
                                            "type": "object",
                                            "required": ["name"],
                                            "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                                        },
                                    },
                                    "ports": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["port", "protocol"],
                                        "items": {
                                            "type": "object",
                                            "required": ["port"],
                                            "properties": {
                                                "port": {"type": "integer"},
                                                "protocol": {"type": "string", "default": "TCP"},
                                            },
                                        },
                                    },
                                    "tags": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "set",
                                        "items": {"type": "string"},
                                    },
                                    "args": {"type": "array", "items": {"type": "string"}},
                                    "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                    "selector": {
                                        "type": "object",
                                        "x-kubernetes-map-type": "atomic",
                                        "properties": {"app": {"type": "string"}},
                                    },
                                    "nested": {"type": "object", "properties": {"depth": {"type": "integer"}}},
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}
# resource → (API group, version, kind)
RESOURCES = {
    "deployments": ("apps", "v1", "Deployment"),
    "configmaps": ("", "v1", "ConfigMap"),
    "pods": ("", "v1", "Pod"),
    "services": ("", "v1", "Service"),
    "typedapplycases": (GROUP, "v1", "TypedApplyCase"),
}
SEMANTICS = ["MutatingAdmissionPolicy", "MutatingPolicy"]


def base_object(resource: str) -> dict[str, Any]:
    """The object a case mutates unless it brings its own."""
    group, version, kind = RESOURCES[resource]
    head = {"apiVersion": f"{group}/{version}" if group else version, "kind": kind}
    meta = {"name": "typed", "namespace": "default", "labels": {"app": "typed"}}
    if resource == "deployments":
        template = {"metadata": {"labels": {"app": "typed"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
        spec: dict[str, Any] = {"replicas": 1, "selector": {"matchLabels": {"app": "typed"}}, "template": template}
    elif resource == "pods":
        spec = {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}
    elif resource == "services":
        spec = {"ports": [{"port": 80}]}
    elif resource == "typedapplycases":
        spec = {"count": 1, "items": [{"name": "a", "port": 1}]}
    else:
        return {**head, "metadata": meta, "data": {"k": "v"}}
    return {**head, "metadata": meta, "spec": spec}


@dataclass(frozen=True)
class Case:
    """One mutation on one object. ``expect`` is kube-apiserver v1.36's answer for a native
    MutatingAdmissionPolicy: ``("ok", path, value)`` (admitted: ``value`` at the dotted ``path``),
    ``("invalid", path, value)`` (admitted as that, then refused by the object's own validation, after
    admission) or ``("error", reason)`` (denied; ``reason`` is exactly what follows the policy's name).
    ``kyverno``: the MutatingPolicy answer where it differs (Kyverno merges the same way but has no Go
    type to convert to). ``varies``: kube-apiserver lists several typed-conversion errors in Go's
    random map order (celmut: the patch's order)."""

    id: str
    family: str
    upstream: str
    resource: str
    expression: str
    expect: tuple[Any, ...]
    kyverno: tuple[Any, ...] | None = None
    obj: dict[str, Any] | None = None
    variables: tuple[tuple[str, str], ...] = ()
    varies: bool = False
    also: tuple[str, ...] = ()  # other reasons Go's random order may give (a ``varies`` case)

    @property
    def patch_type(self) -> str:
        return "JSONPatch" if self.expression.startswith("[JSONPatch{") else "ApplyConfiguration"

    def expected(self, semantics: str) -> tuple[Any, ...]:
        return self.kyverno if semantics == "MutatingPolicy" and self.kyverno is not None else self.expect

    def object(self) -> dict[str, Any]:
        return copy.deepcopy(self.obj) if self.obj is not None else base_object(self.resource)


def _mutation(case: Case) -> dict[str, Any]:
    if case.patch_type == "JSONPatch":
        return {"patchType": "JSONPatch", "jsonPatch": {"expression": case.expression}}
    return {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": case.expression}}


def _rules(case: Case) -> list[dict[str, Any]]:
    group, version, _ = RESOURCES[case.resource]
    return [{"apiGroups": [group], "apiVersions": [version], "operations": ["CREATE"], "resources": [case.resource]}]


def map_documents(case: Case, name: str = "map", selector: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The case as a MutatingAdmissionPolicy ``name`` (``failurePolicy: Fail``) and its binding."""
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "reinvocationPolicy": "Never",
        "matchConstraints": {"resourceRules": _rules(case)},
        "mutations": [_mutation(case)],
    }
    if case.variables:
        spec["variables"] = [{"name": n, "expression": e} for n, e in case.variables]
    binding_spec: dict[str, Any] = {"policyName": name}
    if selector is not None:
        binding_spec["matchResources"] = {"objectSelector": selector}
    api = "admissionregistration.k8s.io/v1"
    return [
        {"apiVersion": api, "kind": "MutatingAdmissionPolicy", "metadata": {"name": name}, "spec": spec},
        {"apiVersion": api, "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": name}, "spec": binding_spec},
    ]


def mpol_document(case: Case) -> dict[str, Any]:
    """The case as a Kyverno MutatingPolicy."""
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "autogen": {"podControllers": {"controllers": []}},
        "matchConstraints": {"resourceRules": _rules(case)},
        "mutations": [_mutation(case)],
    }
    if case.variables:
        spec["variables"] = [{"name": n, "expression": e} for n, e in case.variables]
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": "mpol"},
        "spec": spec,
    }


def case_engine(semantics: str, case: Case) -> AdmissionEngine:
    documents = map_documents(case) if semantics == "MutatingAdmissionPolicy" else [mpol_document(case)]
    return engine(yaml.safe_dump_all(documents), cluster=[CRD])


def run(semantics: str, case: Case) -> AdmissionResult:
    return case_engine(semantics, case).admit(AdmissionInput.from_object(case.object()))


def at(obj: Any, path: str) -> Any:
    for step in path.split("."):
        obj = obj[int(step)] if isinstance(obj, list) else obj[step]
    return obj


def reason(result: AdmissionResult) -> str:
    """Why the request was denied: the failed mutation's message, without the policy's name."""
    errors = [outcome.reason for outcome in result.outcomes if outcome.status == "error"]
    return errors[0] if errors else result.message


def check(result: AdmissionResult, case: Case, semantics: str) -> None:
    """``result`` is what ``case`` expects of ``semantics`` (see :class:`Case`); a ``varies`` case's
    errors in any order (the C++ engine hands an Object's fields back in its own order)."""
    expected = case.expected(semantics)
    if expected[0] == "error":
        assert not result.allowed, f"admitted, but the API server refuses it: {expected[1]}"
        if case.varies:
            assert same_reason(reason(result), [expected[1], *case.also]), reason(result)
        else:
            assert reason(result) == expected[1]
    else:
        assert result.allowed, result.message
        value = at(result.object, expected[1])
        assert value == expected[2] and type(value) is type(expected[2]), value


def _lines(message: str) -> tuple[str, frozenset[str]]:
    """A message with its ``errors:`` lines as a set (Go lists them in random map order)."""
    head, _, rest = message.partition("errors:\n")
    return head, frozenset(line.strip() for line in rest.splitlines())


def same_reason(mine: str, theirs: list[str]) -> bool:
    """``mine`` is one of the API server's ``theirs``, its lines in any order."""
    return mine in theirs or any(_lines(mine) == _lines(other) for other in theirs)


def agrees(result: AdmissionResult, answer: dict[str, Any]) -> bool:
    """Whether celmut's ``result`` is the API server's recorded ``answer``: the same outcome (a request
    its admission let through is admitted, whatever the object's validation said after) and, for a
    denial, the same reason; for an admission, the same value at each recorded field."""
    if answer["outcome"] == "denied":
        return not result.allowed and same_reason(reason(result), answer["reasons"])
    if not result.allowed:
        return False
    try:
        return all(at(result.object, path) == value for path, value in answer.get("fields", {}).items())
    except (KeyError, IndexError, TypeError):
        return False
