"""Building blocks of the cases: the upstream functions they pin, the API server's message prefixes,
and the expressions that reach a field of each object."""

from __future__ import annotations

VALIDATE = "structured-merge-diff typed/validate.go"
HELPERS = "structured-merge-diff typed/helpers.go"
MERGE = "structured-merge-diff typed/merge.go"
SMD_GO = "k8s.io/apiserver policy/mutating/patch/smd.go"
OBJECTS_GO = "k8s.io/apiserver cel/mutation/dynamic/objects.go convertField"
CONVERTER = "apimachinery runtime/converter.go fromUnstructured"
UNMARSHALERS = "apimachinery intstr.IntOrString / resource.Quantity UnmarshalJSON"
JSON_PATCH = "k8s.io/apiserver policy/mutating/patch/json_patch.go (sigs.k8s.io/json UnmarshalStrict)"
AFTER_ADMISSION = "no Go type for a custom resource: its validation, after admission, decides"

TYPED = "error applying patch: failed to convert patch object to typed object: "
ATOMIC = "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: "
TO_DEPLOYMENT = "unable to convert unstructured object to apps/v1, Kind=Deployment: "
TO_CONFIGMAP = "unable to convert unstructured object to /v1, Kind=ConfigMap: "
TO_POD = "unable to convert unstructured object to /v1, Kind=Pod: "
INTERNAL = "Internal error occurred: "
QUANTITY_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

T = "Object.spec.template.spec"
SCALAR = VALIDATE + " validateScalar"
FIELDS = VALIDATE + " visitMapItems"
KEYS = HELPERS + " keyedAssociativeListItemToPathElement"
DEFAULTS = HELPERS + " getAssociativeKeyDefault (the published default of a required field: its zero value)"
C = '.spec.template.spec.containers[name="c"]'  # the Deployment's container, as structured-merge-diff names it
LIMITS = "spec.template.spec.containers.0.resources.limits"


def spec(fields: str) -> str:
    """``Object{spec: Object.spec{fields}}`` (any kind with a spec)."""
    return f"Object{{spec: Object.spec{{{fields}}}}}"


def template_spec(fields: str) -> str:
    """A Deployment's pod template spec with ``fields``."""
    return f"Object{{spec: Object.spec{{template: Object.spec.template{{spec: {T}{{{fields}}}}}}}}}"


def container(fields: str) -> str:
    """The Deployment's container ``c`` with ``fields``."""
    return template_spec(f'containers: [{T}.containers{{name: "c", {fields}}}]')


def limits(values: str) -> str:
    """The Deployment container's ``resources.limits``."""
    return container(f"resources: {T}.containers.resources{{limits: {{{values}}}}}")


def max_surge(value: str) -> str:
    """The Deployment's ``strategy.rollingUpdate.maxSurge`` (an IntOrString)."""
    return spec(
        f"strategy: Object.spec.strategy{{rollingUpdate: Object.spec.strategy.rollingUpdate{{maxSurge: {value}}}}}"
    )


def pod_container(fields: str) -> str:
    """The Pod's container ``nginx`` with ``fields``."""
    return spec(f'containers: [Object.spec.containers{{name: "nginx", {fields}}}]')


def patch(*operations: str) -> str:
    """A JSONPatch expression of ``op, path, value`` triples written as ``'add /spec/x 1'``."""
    out = []
    for operation in operations:
        op, path, value = operation.split(" ", 2)
        out.append(f'JSONPatch{{op: "{op}", path: "{path}", value: {value}}}')
    return "[" + ", ".join(out) + "]"
