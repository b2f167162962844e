"""Compile stage: policy models (and, later, presets) into CEL programs, checked up front."""

from celmut.compile.compiled import CompiledException, CompiledPolicy
from celmut.compile.policies import CompiledPolicySet, compile_policy_set

__all__ = ["CompiledException", "CompiledPolicy", "CompiledPolicySet", "compile_policy_set"]
