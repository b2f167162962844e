"""Policy sources as models: Kyverno MutatingPolicy/NamespacedMutatingPolicy/PolicyException and
Kubernetes MutatingAdmissionPolicy/binding, parsed and validated with field-path errors."""

from celmut.policy.admission_policy import MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding
from celmut.policy.errors import FieldError, PolicyError
from celmut.policy.exception import PolicyException
from celmut.policy.loader import PolicySet, classify, load_policies, load_policy_documents
from celmut.policy.mutating_policy import MutatingPolicy

__all__ = [
    "FieldError",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
    "MutatingPolicy",
    "PolicyError",
    "PolicyException",
    "PolicySet",
    "classify",
    "load_policies",
    "load_policy_documents",
]
