"""Documents among the policies that celmut does not serve (issue 15, item 1): each is an error naming
the file, the document and why — never skipped silently — as `kyverno apply` refuses a kind it does
not serve ("policy type not supported", cmd/cli/kubectl-kyverno/policy/load.go). CRDs are welcome:
they give custom resources their schema."""

from __future__ import annotations

from typing import Any

import pytest

from celmut.compile.pipeline import compile_documents
from celmut.compile.presets.registry import SERVED_KINDS
from celmut.policy.unsupported import UnsupportedDocument, check, served_summary
from celmut.sources.documents import Document

MPOL = {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": "p"}}
ROWS: list[tuple[str, Any, str]] = [
    ("a ConfigMap", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}, "ConfigMap (v1) c: not a policy"),
    ("a scalar", "hello", "a string: not a Kubernetes object"),
    ("a list", [1, 2], "a list: not a Kubernetes object"),
    ("no kind", {"apiVersion": "v1", "metadata": {"name": "x"}}, "a document: kind is not set"),
    ("a typo'd kind", MPOL | {"kind": "MutatingPolicies"},
     "MutatingPolicies (policies.kyverno.io/v1) p: unknown kind; did you mean MutatingPolicy (policies.kyverno.io)?"),
    ("a typo'd case", MPOL | {"kind": "mutatingpolicy"}, "did you mean MutatingPolicy (policies.kyverno.io)?"),
    ("a typo'd preset kind", {"apiVersion": "pod-mutations.cast.ai/v1", "kind": "PodMutations"},
     "did you mean PodMutation (pod-mutations.cast.ai)?"),
    ("MutatingPolicy under kyverno.io/v1", MPOL | {"apiVersion": "kyverno.io/v1"},
     "a MutatingPolicy has apiVersion policies.kyverno.io/…, not kyverno.io/v1"),
    ("a classic PolicyException (kyverno.io/v2)", {"apiVersion": "kyverno.io/v2", "kind": "PolicyException"},
     "a PolicyException has apiVersion policies.kyverno.io/…, not kyverno.io/v2"),
    ("a classic ClusterPolicy", {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "c"}},
     "ClusterPolicy (kyverno.io/v1) c: classic Kyverno policies (kyverno.io ClusterPolicy/Policy) are not supported"),
    ("a classic namespaced Policy", {"apiVersion": "kyverno.io/v1", "kind": "Policy"}, "Write the rule as a MutatingPolicy"),
    ("a ValidatingPolicy", {"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy"},
     "not a mutation: celmut serves mutating policies only"),
    ("a ValidatingAdmissionPolicy", {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy"},
     "not a mutation"),
    ("a Kyverno CLI Test", {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test"}, "run Test files with celmut test"),
]  # fmt: skip


@pytest.mark.parametrize(("content", "message"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_each_unsupported_document_is_named_with_why(content: Any, message: str) -> None:
    error = check(Document("policies.yaml", 2, content), SERVED_KINDS)
    assert isinstance(error, UnsupportedDocument)
    assert str(error).startswith("policies.yaml#2: ") and message in str(error)


def test_a_crd_among_the_policies_is_a_schema_not_an_error() -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "w"}}
    assert check(Document("crds.yaml", 0, crd), SERVED_KINDS) is None
    compilation = compile_documents([Document("crds.yaml", 0, crd)])
    assert compilation.errors == [] and compilation.unsupported == [] and compilation.other[0].content == crd


def test_the_summary_names_every_policy_kind_and_preset() -> None:
    summary = served_summary(SERVED_KINDS)
    for kind in ("MutatingPolicy", "NamespacedMutatingPolicy", "PolicyException", "MutatingAdmissionPolicy",
                 "MutatingAdmissionPolicyBinding", "PodMutation", "GpuSlicing", "PodPinningPlan", "staticConfig"):  # fmt: skip
        assert kind in summary


def test_skipping_lists_the_documents_instead_of_failing() -> None:
    documents = [Document("mixed.yaml", 0, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})]
    failing = compile_documents(documents)
    skipping = compile_documents(documents, skip_unsupported=True)
    assert [type(e) for e in failing.errors] == [UnsupportedDocument]
    assert skipping.errors == [] and [u.source for u in skipping.unsupported] == ["mixed.yaml"]
