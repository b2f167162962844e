"""Parameters of a MutatingAdmissionPolicy binding (``paramKind`` + ``paramRef``), as Kubernetes
resolves them: by name (in the binding's namespace, or the request's for namespaced kinds) or by
label selector (the policy then runs once per parameter object). When none is found,
``parameterNotFoundAction: Allow`` skips the binding and ``Deny`` fails it."""

from __future__ import annotations

from typing import Any

from celmut import kinds
from celmut.cel import CelError, Services
from celmut.compile.compiled import CompiledBinding, CompiledPolicy
from celmut.runtime import selectors
from celmut.runtime.failures import ParamError
from celmut.runtime.request import AdmissionInput


def resolve_params(
    policy: CompiledPolicy,
    binding: CompiledBinding,
    request: AdmissionInput,
    services: Services,
    kind_table: kinds.KindTable = kinds.BUILTIN,
) -> list[Any]:
    """The parameter objects to evaluate the policy with (``[None]`` when it takes none)."""
    if policy.param_kind is None:
        return [None]
    if not binding.param_name and binding.param_selector is None:
        raise ParamError(
            f"binding {binding.name}: the policy has paramKind but the binding has no paramRef", allow=False
        )
    if services.resources is None:
        raise ParamError(f"binding {binding.name}: no cluster lookup is configured to read params", allow=False)
    api_version, kind = policy.param_kind
    resource = kind_table.resource_for(api_version, kind)
    namespace = binding.param_namespace
    if not namespace and kind_table.is_namespaced(api_version, kind):
        namespace = request.namespace
    found: list[Any] = []
    try:
        if binding.param_name:
            found = [services.resources.get(api_version, resource, namespace, binding.param_name)]
        else:
            listed = services.resources.list(api_version, resource, namespace)
            found = [
                item
                for item in listed.get("items", [])
                if selectors.matches(binding.param_selector, selectors.labels_of(item))
            ]
    except CelError:
        found = []
    if not found:
        action = binding.param_not_found_action
        raise ParamError(
            f"binding {binding.name}: no params found for policy binding with `{action}` parameterNotFoundAction",
            allow=action == "Allow",
        )
    return found
