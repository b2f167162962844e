"""Rewrite a pod policy's expression for a pod controller's template (autogen, :mod:`.autogen`).

Field accesses follow Kyverno's ``ConvertPodToTemplateExpression``
(``pkg/cel/policies/mpol/autogen/autogen.go``, cases in ``autogen_test.go``): ``object.spec``,
``oldObject.spec``, ``object.metadata.labels`` and ``object.metadata.annotations`` move under the
template; ``namespaceObject`` and ``object.metadata.name`` stay.

Typed constructions are where Kyverno is wrong (kyverno/kyverno#17438, fix proposed in #17440): it
rewrites only ``Object.spec``, ``Object.metadata.labels`` and ``Object.metadata.annotations`` and
wraps only an expression that starts with ``Object{``, so ``Object{metadata: Object.metadata{…}}``
becomes ``…template: Object.spec.template{metadata: Object.metadata{…}}`` and the API server's
type-name check (``k8s.io/apiserver/pkg/cel/mutation/dynamic/objects.go``
``CheckTypeNamesMatchFieldPathNames``) refuses it on every controller. celmut rewrites type names
whole, outside string literals and comments: every ``Object.<path>`` becomes
``Object.<template>.<path>`` and every non-empty ``Object{…}``, wherever it stands, is wrapped in
the template's constructions, so each name matches its field path again.
"""

from __future__ import annotations

import re

PATHS = {  # variant → (pod spec path, pod metadata path) in the controller
    "defaults": ("spec.template.spec", "spec.template.metadata"),
    "cronjobs": ("spec.jobTemplate.spec.template.spec", "spec.jobTemplate.spec.template.metadata"),
}
_WRAPPERS = {
    "defaults": ("Object{spec: Object.spec{template: Object.spec.template{", "}}}"),
    "cronjobs": (
        "Object{spec: Object.spec{jobTemplate: Object.spec.jobTemplate{spec: Object.spec.jobTemplate.spec"
        "{template: Object.spec.jobTemplate.spec.template{",
        "}}}}}",
    ),
}

# CEL string literals (raw or not, single or triple quoted, bytes or not) and comments: kept as written.
_RAW = r"""(?<!\w)(?:[rR][bB]?|[bB][rR])(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'[^'\n]*'|"[^"\n]*")"""
_QUOTED = (
    r"""(?<!\w)[bB]?(?:'''(?:\\[\s\S]|[^\\])*?'''|\"\"\"(?:\\[\s\S]|[^\\])*?\"\"\""""
    r"""|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")"""
)
_TOKENS = re.compile(
    rf"(?P<literal>//[^\n]*|{_RAW}|{_QUOTED})"
    # a type name: Object, Object.spec, Object.spec.containers … (not a field named Object)
    r"|(?<![\w.])Object(?P<path>(?:\s*\.\s*[A-Za-z_]\w*)*)(?!\w)"
    # oldObject's fields, which Kyverno's text replacement of "Object.spec" rewrites too (not
    # namespaceObject's: autogen_test.go "namespaceObject spec not modified")
    r"|(?<![\w.])oldObject\.(?P<field>spec|metadata\.labels|metadata\.annotations)(?!\w)"
)
_OPEN_BRACE = re.compile(r"\s*\{")


def convert_expression(expression: str, variant: str) -> str:
    """``expression``, written for a Pod, rewritten for the ``defaults`` or ``cronjobs`` template."""
    spec_path, metadata_path = PATHS[variant]
    expression = expression.replace("object.spec", f"object.{spec_path}")
    for field in ("labels", "annotations"):
        expression = expression.replace(f"object.metadata.{field}", f"object.{metadata_path}.{field}")
    return _wrap_objects(_rename_types(expression, spec_path, metadata_path), variant)


def _rename_types(expression: str, spec_path: str, metadata_path: str) -> str:
    template = metadata_path.removesuffix(".metadata")

    def replace(match: re.Match[str]) -> str:
        if match["literal"] is not None:
            return match[0]
        if match["field"] is not None:
            field = match["field"]
            return "oldObject." + (spec_path if field == "spec" else metadata_path + field.removeprefix("metadata"))
        path = re.sub(r"\s+", "", match["path"])
        return f"Object.{template}{path}" if path else match[0]

    return _TOKENS.sub(replace, expression)


def _wrap_objects(expression: str, variant: str) -> str:
    """Wrap every non-empty ``Object{…}`` in the template's constructions (``Object{}`` stays)."""
    opening, closing = _WRAPPERS[variant]
    out: list[str] = []
    position = 0
    for match in _TOKENS.finditer(expression):
        if match.start() < position or match["literal"] is not None or match["field"] is not None or match["path"]:
            continue
        brace = _OPEN_BRACE.match(expression, match.end())
        end = _closing_brace(expression, brace.end()) if brace is not None else None
        if brace is None or end is None or not expression[brace.end() : end].strip():
            continue
        inner = _wrap_objects(expression[brace.end() : end], variant)
        out += [expression[position : match.start()], opening, inner, closing]
        position = end + 1
    out.append(expression[position:])
    return "".join(out)


def _closing_brace(expression: str, start: int) -> int | None:
    """The index of the ``}`` that closes the brace opened just before ``start``, literals skipped."""
    depth, index = 1, start
    while index < len(expression):
        token = _TOKENS.match(expression, index)
        if token is not None and token["literal"] is not None:
            index = token.end()
            continue
        if expression[index] == "{":
            depth += 1
        elif expression[index] == "}":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return None
