"""The page's two tools beside a run: the CEL scratch pad (``celmut eval``) and the preset compiler
(``celmut compile``).

The scratch pad evaluates one expression with the variables a policy sees for the selected resource:
``object``, ``oldObject``, ``request`` (the AdmissionRequest the run would send), ``namespaceObject``
(from the cluster objects); lookups read the cluster objects, as in a run. It is bounded as a run is:
the per-expression cost limit, the request's budget, the webhook's deadline, no outbound HTTP.
"""

from __future__ import annotations

from typing import Any

import yaml

from celmut import cel
from celmut.cel.evalcontext import Budget
from celmut.compile.pipeline import compile_documents
from celmut.compile.presets import registry as presets
from celmut.compile.presets.yaml_format import readable
from celmut.playground.inputs import PaneError, PaneProblem
from celmut.playground.session import ADMISSION_SECONDS, State, load, namespace_object
from celmut.policy.errors import PolicyError, caret_snippet

PROFILES = ("kyverno", "kubernetes")
MAX_EXPRESSION_CHARS = 100_000  # cel-go's expressionSizeCodePointLimit; the CEL layer refuses longer too


def evaluate(state: State, expression: str, resource: int, profile: str = "kyverno") -> dict[str, Any]:
    """``{"result": …}``, ``{"error": …, "kind": compile|evaluation|cost, "line", "column", "snippet"}``,
    or ``{"errors": […]}`` when the panes cannot be read; ``variables`` lists what was bound."""
    if profile not in PROFILES:
        return {"error": f"profile: must be one of {', '.join(PROFILES)}", "kind": "input"}
    if len(expression) > MAX_EXPRESSION_CHARS:
        return {"error": f"the expression is over {MAX_EXPRESSION_CHARS} characters", "kind": "input"}
    try:
        loaded = load(state, with_policies=False)
    except PaneError as ex:
        return {"errors": [p.to_dict() for p in ex.problems]}
    bound: dict[str, Any] = {}
    if 0 <= resource < len(loaded.resources):
        obj = loaded.resources[resource]
        old = loaded.old_objects[resource] if resource < len(loaded.old_objects) else None
        request = loaded.offline.request_for(obj, state.operation, old)
        namespace = request.namespace
        bound = {
            "object": request.object,
            "old_object": request.old_object,
            "request": request.cel_request(),
            "namespace_object": namespace_object(loaded.offline.cluster, namespace),
        }
    services = cel.Services(resources=loaded.offline.cluster)
    try:
        program = cel.Environment(profile).compile(expression)
    except cel.CelCompileError as ex:
        issue = ex.issues[0]
        return {
            "error": str(ex),
            "kind": "compile",
            "line": issue.line,
            "column": issue.column,
            "snippet": caret_snippet(expression, issue.line, issue.column),
        }
    variables = {_CEL_NAMES[k]: v is not None for k, v in bound.items()}
    try:
        activation = cel.Activation(**bound, services=services, budget=Budget.with_timeout(ADMISSION_SECONDS))
        value = cel.to_plain(program.evaluate(activation))
    except cel.CelError as ex:
        return {"error": ex.message, "kind": ex.kind, "variables": variables}
    return {"result": value, "variables": variables}


_CEL_NAMES = {
    "object": "object",
    "old_object": "oldObject",
    "request": "request",
    "namespace_object": "namespaceObject",
}


def compile_presets(text: str) -> dict[str, Any]:
    """The MutatingPolicies the preset documents in ``text`` compile to (``celmut compile``), as YAML;
    ``errors`` (located in the policies pane) when a preset is invalid or there is none."""
    from celmut.playground.inputs import read_pane

    try:
        pane = read_pane("policies", text)
    except PaneError as ex:
        return {"errors": [p.to_dict() for p in ex.problems]}
    compilation = compile_documents(pane.documents, skip_unsupported=True)
    if compilation.errors:
        return {"errors": [_problem(e) for e in compilation.errors]}
    expanded, _ = presets.expand(pane.documents)
    generated = [readable(d.content) for d in expanded if d.path.startswith("<generated")]
    if not generated:
        problem = "no preset here (PodMutation, spot values, GpuSlicing, PodPinningPlan): nothing to compile"
        return {"errors": [PaneProblem("policies", problem).to_dict()]}
    return {"yaml": yaml.safe_dump_all(generated, sort_keys=False, width=120), "count": len(generated)}


def _problem(error: Exception) -> dict[str, Any]:
    message = error.render(snippets=True) if isinstance(error, PolicyError) else str(error)
    return PaneProblem("policies", message).to_dict()
