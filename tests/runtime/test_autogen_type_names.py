"""Pod-controller autogen renames every ``Object`` type name under the template (issue 25, item 1).

Kyverno's ``ConvertPodToTemplateExpression`` (``pkg/cel/policies/mpol/autogen/autogen.go``) leaves
``Object.metadata`` as written, so ``Object{metadata: Object.metadata{…}}`` fails the type-name check
on every Deployment and CronJob (kyverno/kyverno#17438, open; fix proposed in #17440). celmut
deliberately differs there (docs/policies/differences.md) and follows Kyverno's own table
(``autogen_test.go`` ``TestConvertPodToTemplateExpression``) everywhere else. The webhook, the
controller and ``celmut apply`` share the engine these tests drive; ``compile --to-map`` shares
:func:`celmut.compile.to_map.convert`, whose generated MAP runs here too."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from celmut.compile import to_map
from celmut.compile.autogen_rewrite import convert_expression
from tests.runtime.helpers import admit, applyconfig, parse


def _normalize(text: str) -> str:
    return "".join(text.split())  # autogen_test.go normalize: whitespace is not compared


CONTAINERS = (
    "Object{spec: Object.spec{containers: object.spec.containers.map(container, Object.spec.containers{"
    "name: container.name, securityContext: Object.spec.containers.securityContext{allowPrivilegeEscalation: false}"
    "})}}"
)
ISSUE_17438 = 'Object{metadata: Object.metadata{labels: {"a": "b"}}}'
REWRITES = [
    # (what it pins, variant, pod expression, controller expression)
    (
        "autogen_test.go: deployment containers conversion",
        "defaults",
        CONTAINERS,
        "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: "
        "object.spec.template.spec.containers.map(container, Object.spec.template.spec.containers{name: "
        "container.name, securityContext: Object.spec.template.spec.containers.securityContext{"
        "allowPrivilegeEscalation: false}})}}}}",
    ),
    (
        "autogen_test.go: cronjob containers conversion",
        "cronjobs",
        CONTAINERS,
        "Object{spec: Object.spec{jobTemplate: Object.spec.jobTemplate{spec: Object.spec.jobTemplate.spec{template: "
        "Object.spec.jobTemplate.spec.template{spec: Object.spec.jobTemplate.spec.template.spec{containers: "
        "object.spec.jobTemplate.spec.template.spec.containers.map(container, "
        "Object.spec.jobTemplate.spec.template.spec.containers{name: container.name, securityContext: "
        "Object.spec.jobTemplate.spec.template.spec.containers.securityContext{allowPrivilegeEscalation: false}})"
        "}}}}}}",
    ),
    (
        "autogen_test.go: namespaceObject labels not modified",
        "defaults",
        "'istio.io/dataplane-mode' in namespaceObject.metadata.labels",
        "'istio.io/dataplane-mode' in namespaceObject.metadata.labels",
    ),
    (
        "autogen_test.go: namespaceObject spec not modified",
        "cronjobs",
        "namespaceObject.spec.x",
        "namespaceObject.spec.x",
    ),
    (
        "autogen_test.go: oldObject spec still modified",
        "defaults",
        "oldObject.spec.c",
        "oldObject.spec.template.spec.c",
    ),
    (
        "autogen_test.go 'no containers in expression', corrected: kyverno#17438 renames Object.metadata",
        "defaults",
        "Object{metadata: Object.metadata{labels: Object.metadata.labels{foo: 'bar'}}}",
        "Object{spec: Object.spec{template: Object.spec.template{metadata: Object.spec.template.metadata{labels: "
        "Object.spec.template.metadata.labels{foo: 'bar'}}}}}",
    ),
    (
        "kyverno#17438: the documented add-label shape, defaults",
        "defaults",
        ISSUE_17438,
        'Object{spec: Object.spec{template: Object.spec.template{metadata: Object.spec.template.metadata{labels: {"a": '
        '"b"}}}}}',
    ),
    (
        "kyverno#17438: the documented add-label shape, cronjobs",
        "cronjobs",
        ISSUE_17438,
        "Object{spec: Object.spec{jobTemplate: Object.spec.jobTemplate{spec: Object.spec.jobTemplate.spec{template: "
        "Object.spec.jobTemplate.spec.template{metadata: Object.spec.jobTemplate.spec.template.metadata{labels: "
        '{"a": "b"}}}}}}}',
    ),
    (
        "every Object{…}, not only a leading one, is wrapped (Kyverno wraps only a leading one)",
        "defaults",
        "has(object.metadata.labels) ? Object{metadata: Object.metadata{labels: {'a': 'b'}}} : Object{}",
        "has(object.spec.template.metadata.labels) ? Object{spec: Object.spec{template: Object.spec.template{"
        "metadata: Object.spec.template.metadata{labels: {'a': 'b'}}}}} : Object{}",
    ),
    (
        "string literals and comments are kept as written, braces in them do not count",
        "defaults",
        "Object{metadata: Object.metadata{annotations: {'x': 'Object.metadata{ } }'}}} // Object.spec{",
        "Object{spec: Object.spec{template: Object.spec.template{metadata: Object.spec.template.metadata{annotations: "
        "{'x': 'Object.metadata{ } }'}}}}} // Object.spec{",
    ),
    (
        "object.metadata.name stays the controller's (Kyverno replacement.go protects it)",
        "defaults",
        "object.metadata.name",
        "object.metadata.name",
    ),
]


@pytest.mark.parametrize(("name", "variant", "pod", "controller"), REWRITES, ids=[r[0] for r in REWRITES])
def test_expressions_are_rewritten_for_the_template(name: str, variant: str, pod: str, controller: str) -> None:
    assert _normalize(convert_expression(pod, variant)) == _normalize(controller)


POLICY = f"""
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {{name: add-label}}
spec:
  failurePolicy: Fail
  autogen: {{mutatingAdmissionPolicy: {{enabled: true}}}}
  matchConstraints:
    resourceRules: [{{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}}]
  mutations:
{applyconfig(ISSUE_17438)}
"""
TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
CONTROLLERS = [
    ("apps/v1", "Deployment", ("spec", "template")),
    ("apps/v1", "StatefulSet", ("spec", "template")),
    ("batch/v1", "Job", ("spec", "template")),
    ("batch/v1", "CronJob", ("spec", "jobTemplate", "spec", "template")),
]


def _controller(api_version: str, kind: str, path: tuple[str, ...]) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "w", "namespace": "default"}}
    node = obj
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = yaml.safe_load(yaml.safe_dump(TEMPLATE))
    return obj


def _template(obj: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for key in path:
        obj = obj[key]
    return obj


@pytest.mark.parametrize(("api_version", "kind", "path"), CONTROLLERS, ids=[c[1] for c in CONTROLLERS])
def test_kyverno_17438_policy_labels_every_controller_template(
    api_version: str, kind: str, path: tuple[str, ...]
) -> None:
    """Kyverno denies these requests (failurePolicy Fail); celmut labels the pod template (on each
    CEL engine: tests/runtime/conftest.py)."""
    result = admit(POLICY, _controller(api_version, kind, path))
    assert result.allowed, result.message
    assert _template(result.object, path)["metadata"]["labels"] == {"app": "web", "a": "b"}
    assert "labels" not in result.object["metadata"]  # the controller's own metadata is untouched


@pytest.mark.parametrize(("api_version", "kind", "path"), CONTROLLERS, ids=[c[1] for c in CONTROLLERS])
def test_generated_native_maps_use_the_renamed_types_and_label_the_template(
    api_version: str, kind: str, path: tuple[str, ...]
) -> None:
    """``compile --to-map`` and the controller's generator: the variant MAP the API server would run."""
    natives = {n.variant: n for n in to_map.convert(parse(POLICY).mutating_policies[0])}
    variant = "cronjobs" if kind == "CronJob" else "defaults"
    expression = natives[variant].policy["spec"]["mutations"][0]["applyConfiguration"]["expression"]
    assert _normalize(expression) == _normalize(convert_expression(ISSUE_17438, variant))
    maps = yaml.safe_dump_all([natives[variant].policy, natives[variant].binding])
    result = admit(maps, _controller(api_version, kind, path))
    assert result.allowed, result.message
    assert _template(result.object, path)["metadata"]["labels"] == {"app": "web", "a": "b"}
