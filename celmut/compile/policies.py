"""Compile validated policy models into :class:`CompiledPolicy` objects, every expression up front.

* MutatingPolicy / NamespacedMutatingPolicy → the Kyverno CEL environment. Each variable sees only
  the variables declared before it; match conditions, mutations, targets and audit annotations see
  them all. Autogen variants are compiled too and follow their policy.
* MutatingAdmissionPolicy (+ bindings) → the Kubernetes CEL environment, where match conditions do
  not see variables and a bare ``[]`` is not a list of JSONPatch.
* PolicyException → the Kyverno environment.

A policy with any error is rejected whole (a :class:`PolicyError` listing every field); the rest of
the set still compiles. Type names of typed constructions are checked at admission, as the API
server and Kyverno do (:mod:`celmut.runtime.typenames`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from celmut import cel
from celmut.cel import ast
from celmut.cel import types as t
from celmut.cel.backends.base import Program
from celmut.compile import autogen, expressions
from celmut.compile.compiled import (
    CompiledBinding,
    CompiledException,
    CompiledExpression,
    CompiledMutation,
    CompiledPolicy,
    CompiledPolicySet,
    CompiledTarget,
)
from celmut.compile.result_shapes import Shape, result_shape
from celmut.policy.admission_policy import MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding
from celmut.policy.errors import FieldError, PolicyError
from celmut.policy.exception import PolicyException
from celmut.policy.loader import PolicySet
from celmut.policy.mutating_policy import MutatingPolicy, Mutation, NamedExpression


class _Compiler:
    """Compiles the expressions of one policy in one environment, collecting field errors."""

    def __init__(self, profile: str, backend: str | None = None) -> None:
        self.base = cel.Environment(profile, backend=backend)
        self.env = self.base
        self.errors: list[FieldError] = []
        self.variable_types: dict[str, t.CelType] = {}
        self.variable_shapes: dict[str, Shape] = {}  # which lists and maps each variable builds
        self.programs: list[tuple[Program, str]] = []  # every program compiled, with its field path

    def expression(
        self,
        source: str,
        path: str,
        expect: expressions.ResultCheck | None = None,
        env: cel.Environment | None = None,
        kyverno: str = "",
    ) -> Program | None:
        program = expressions.compile_expression(env or self.env, source, path, self.errors, expect, kyverno)
        if program is not None:
            self.programs.append((program, path))
        return program

    def variables(self, variables: Iterable[NamedExpression]) -> dict[str, Program]:
        programs: dict[str, Program] = {}
        for variable in variables:
            env = self.base.with_variables(self.variable_types)
            program = self.expression(variable.expression, variable.path, env=env)
            self.variable_types[variable.name] = program.result_type if program is not None else t.DYN
            if program is not None:
                programs[variable.name] = program
                self.variable_shapes[variable.name] = result_shape(program.checked.expr, self.variable_shapes)
        self.env = self.base.with_variables(self.variable_types)
        return programs

    def named(
        self,
        items: Iterable[NamedExpression],
        expect: expressions.ResultCheck | None,
        env: cel.Environment | None = None,
        kyverno: str = "",
    ) -> tuple[CompiledExpression, ...]:
        out = []
        for item in items:
            program = self.expression(item.expression, item.path, expect, env, kyverno)
            if program is not None:
                out.append(CompiledExpression(item.name, program, item.path))
        return tuple(out)

    def mutations(self, mutations: Iterable[Mutation], *, kubernetes: bool) -> tuple[CompiledMutation, ...]:
        out = []
        for mutation in mutations:
            if mutation.patch_type == "JSONPatch":
                expect = expressions.expect_json_patches(strict_empty_list=kubernetes)
                kyverno = "" if kubernetes else expressions.KYVERNO_JSON_PATCHES
            else:
                expect = expressions.expect_object
                kyverno = "" if kubernetes else expressions.KYVERNO_OBJECT
            program = self.expression(mutation.expression, mutation.path, expect, kyverno=kyverno)
            if program is None:
                continue
            shape = (
                result_shape(program.checked.expr, self.variable_shapes) if mutation.patch_type != "JSONPatch" else None
            )
            out.append(CompiledMutation(mutation.patch_type, program, mutation.path, shape))
        return tuple(out)


def _forbid_http(compiler: _Compiler) -> None:
    """Kyverno forbids ``http.*`` in namespaced policies (no --allowHTTPInNamespacedPolicies)."""
    for program, path in compiler.programs:
        for node in program.checked.expr.walk():
            if isinstance(node, ast.Call) and node.function.startswith("http."):
                message = "http.* is not allowed in a NamespacedMutatingPolicy"
                compiler.errors.append(FieldError(path, message, node.line, node.column, program.source))


def compile_mutating_policy(policy: MutatingPolicy, backend: str | None = None) -> list[CompiledPolicy]:
    """The policy and its autogen variants; raises :class:`PolicyError` listing every problem."""
    compiled = [_compile_mpol(policy, "", backend)]
    if policy.is_json_mode:  # a document policy has no Pod controllers to follow
        return compiled
    for variant, variant_policy in autogen.autogen_variants(policy).items():
        compiled.append(_compile_mpol(variant_policy, variant, backend))
    return compiled


def _compile_mpol(policy: MutatingPolicy, variant: str, backend: str | None) -> CompiledPolicy:
    compiler = _Compiler("kyverno", backend)
    variables = compiler.variables(policy.variables)
    match_conditions = compiler.named(
        policy.match_conditions, expressions.expect_bool, kyverno=expressions.KYVERNO_BOOL
    )
    mutations = compiler.mutations(policy.mutations, kubernetes=False)
    target = None
    if policy.target_match_constraints is not None:
        tmc = policy.target_match_constraints
        target_expression = None
        if tmc.expression:
            program = compiler.expression(
                tmc.expression, tmc.expression_path, expressions.expect_map, kyverno=expressions.KYVERNO_MAP
            )
            if program is not None:
                target_expression = CompiledExpression("targetMatchConstraints", program, tmc.expression_path)
        target = CompiledTarget(tmc.match, target_expression)
    target_conditions = compiler.named(
        policy.target_match_conditions, expressions.expect_bool, kyverno=expressions.KYVERNO_BOOL
    )
    audit = tuple(
        CompiledExpression(a.key, program, a.path)
        for a in policy.audit_annotations
        if (
            program := compiler.expression(
                a.value_expression, a.path, expressions.expect_string, kyverno=expressions.KYVERNO_STRING_OR_NULL
            )
        )
        is not None
    )
    if policy.is_namespaced:
        _forbid_http(compiler)
    if compiler.errors:
        errors = compiler.errors
        if variant:
            errors = [dataclasses.replace(e, path=f"status.autogen.configs.{variant}.{e.path}") for e in errors]
        raise PolicyError(policy.source, policy.kind, policy.name, errors)
    return CompiledPolicy(
        kind=policy.kind,
        name=policy.name,
        namespace=policy.namespace,
        source=policy.source,
        semantics="kyverno",
        match=policy.match_constraints,
        match_conditions=match_conditions,
        variables=variables,
        mutations=mutations,
        failure_policy=policy.failure_policy,
        reinvocation_policy=policy.reinvocation_policy,
        # a JSON-mode policy never enters the Kubernetes plane, whatever its admission defaults say
        admission=policy.evaluation.admission and not policy.is_json_mode,
        mutate_existing=policy.evaluation.mutate_existing,
        skip_background_requests=policy.evaluation.skip_background_requests,
        use_server_side_apply=policy.evaluation.use_server_side_apply,
        target=target,
        target_match_conditions=target_conditions,
        audit_annotations=audit,
        autogen=variant,
        timeout_seconds=policy.timeout_seconds,
        restart_policy=policy.restart_policy,
        record_provenance=policy.record_provenance,
        json_mode=policy.is_json_mode,
        definition=policy,
    )


def compile_admission_policy(
    policy: MutatingAdmissionPolicy, bindings: Iterable[MutatingAdmissionPolicyBinding], backend: str | None = None
) -> CompiledPolicy:
    compiler = _Compiler("kubernetes", backend)
    match_conditions = compiler.named(policy.match_conditions, expressions.expect_bool, env=compiler.base)
    variables = compiler.variables(policy.variables)
    mutations = compiler.mutations(policy.mutations, kubernetes=True)
    if compiler.errors:
        raise PolicyError(policy.source, "MutatingAdmissionPolicy", policy.name, compiler.errors)
    compiled_bindings = tuple(
        CompiledBinding(
            name=b.name,
            match=b.match_resources,
            param_name=b.param_ref.name if b.param_ref else "",
            param_namespace=b.param_ref.namespace if b.param_ref else "",
            param_selector=b.param_ref.selector if b.param_ref else None,
            param_not_found_action=b.param_ref.parameter_not_found_action if b.param_ref else "Deny",
        )
        for b in sorted(bindings, key=lambda b: b.name)
    )
    return CompiledPolicy(
        kind="MutatingAdmissionPolicy",
        name=policy.name,
        namespace="",
        source=policy.source,
        semantics="kubernetes",
        match=policy.match_constraints,
        match_conditions=match_conditions,
        variables=variables,
        mutations=mutations,
        failure_policy=policy.failure_policy,
        reinvocation_policy=policy.reinvocation_policy,
        bindings=compiled_bindings,
        param_kind=(policy.param_kind.api_version, policy.param_kind.kind) if policy.param_kind else None,
        record_provenance=policy.record_provenance,
        definition=policy,
    )


def compile_exception(exception: PolicyException, backend: str | None = None) -> CompiledException:
    compiler = _Compiler("kyverno", backend)
    conditions = compiler.named(exception.match_conditions, expressions.expect_bool)
    if compiler.errors:
        raise PolicyError(exception.source, "PolicyException", exception.name, compiler.errors)
    return CompiledException(
        name=exception.name,
        namespace=exception.namespace,
        policy_refs=tuple((ref.name, ref.kind) for ref in exception.policy_refs),
        match_conditions=conditions,
        images=exception.images,
        allowed_values=exception.allowed_values,
        priority=exception.priority,
        expires_at=exception.expires_at,
        report_result=exception.report_result,
    )


def compile_policy_set(policies: PolicySet, backend: str | None = None) -> CompiledPolicySet:
    """Compile everything in ``policies``; rejected policies are reported in ``errors``."""
    result = CompiledPolicySet(errors=list(policies.errors))
    for mpol in policies.mutating_policies:
        result.warnings.extend(f"{mpol.source}: {mpol.kind} {mpol.name}: {w}" for w in mpol.warnings)
        try:
            result.policies.extend(compile_mutating_policy(mpol, backend))
        except PolicyError as ex:
            result.errors.append(ex)
    bindings_by_policy: dict[str, list[MutatingAdmissionPolicyBinding]] = {}
    for binding in policies.bindings:
        bindings_by_policy.setdefault(binding.policy_name, []).append(binding)
    known = {p.name for p in policies.admission_policies}
    for binding in policies.bindings:
        if binding.policy_name not in known:
            result.warnings.append(
                f"{binding.source}: MutatingAdmissionPolicyBinding {binding.name} refers to unknown policy "
                f"{binding.policy_name!r}"
            )
    for map_policy in policies.admission_policies:
        bindings = bindings_by_policy.get(map_policy.name, [])
        if not bindings:
            result.warnings.append(
                f"{map_policy.source}: MutatingAdmissionPolicy {map_policy.name} has no binding and will not apply"
            )
        try:
            result.policies.append(compile_admission_policy(map_policy, bindings, backend))
        except PolicyError as ex:
            result.errors.append(ex)
    for exception in policies.exceptions:
        try:
            result.exceptions.append(compile_exception(exception, backend))
        except PolicyError as ex:
            result.errors.append(ex)
    result.sort()
    return result
