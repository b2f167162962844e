"""runtime/decode.py against the real Kubernetes schemas: the Go round trip of a built-in object and
the strict decoder's errors, row by row, each naming the Go rule it pins."""

from __future__ import annotations

from typing import Any

import pytest

from celmut.runtime import decode
from celmut.runtime.schemas import SchemaRegistry

REGISTRY = SchemaRegistry()
POD = REGISTRY.typed_schema("v1", "Pod")


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "resources": {}}], **spec},
    }


# (what it pins, input as received, as the API server encodes it)
INPUT_ENCODING = [
    ("an empty omitempty map is dropped", pod(nodeSelector={}), pod()),
    ("an empty omitempty slice is dropped", pod(tolerations=[]), pod()),
    ("a struct is never dropped, even empty", pod(securityContext={}), pod(securityContext={})),
    (
        "a list without omitempty (PodSpec.containers) stays empty",
        {"spec": {"containers": []}},
        {"spec": {"containers": []}},
    ),
    ("a null the API server wrote stays (no omitempty on that field)", pod(affinity=None), pod(affinity=None)),
    ("a null map value becomes the zero value", pod(nodeSelector={"a": None}), pod(nodeSelector={"a": ""})),
    (
        "creationTimestamp: null is metav1.Time's zero",
        {"metadata": {"creationTimestamp": None}},
        {"metadata": {"creationTimestamp": None}},
    ),
    (
        "zero scalars are kept (pointer or not is not in the schema)",
        pod(priority=0, hostNetwork=False),
        pod(priority=0, hostNetwork=False),
    ),
    ("unknown fields are left for the decoder to report", pod(notAField={}), pod(notAField={})),
    (
        "an empty map inside a list item's struct is dropped",
        {"spec": {"containers": [{"name": "c", "resources": {"limits": {}}}]}},
        {"spec": {"containers": [{"name": "c", "resources": {}}]}},
    ),
]


@pytest.mark.parametrize(("pins", "given", "encoded"), INPUT_ENCODING, ids=[row[0] for row in INPUT_ENCODING])
def test_the_input_as_the_api_server_encodes_it(pins: str, given: dict[str, Any], encoded: dict[str, Any]) -> None:
    assert decode.as_encoded(given, POD) == encoded


def test_an_encoded_object_is_returned_as_is() -> None:
    obj = pod(securityContext={})
    assert decode.as_encoded(obj, POD) is obj


# (what it pins, the patched object, as encoded after decoding) — previous: pod()
AFTER_PATCH = [
    ("a null field a patch wrote removes an optional pointer", pod(securityContext=None), pod()),
    (
        "a null a patch wrote into a required string is its zero value",
        {**pod(), "spec": {"containers": [{"name": None}]}},
        {**pod(), "spec": {"containers": [{"name": ""}]}},
    ),
    (
        "a null list item is the element's zero value (its required fields: pointers are not in the schema)",
        {**pod(), "spec": {"containers": [None]}},
        {**pod(), "spec": {"containers": [{"name": ""}]}},
    ),
    (
        "a required list set to null is nil (null)",
        {**pod(), "spec": {"containers": None}},
        {**pod(), "spec": {"containers": None}},
    ),
]


@pytest.mark.parametrize(("pins", "patched", "encoded"), AFTER_PATCH, ids=[row[0] for row in AFTER_PATCH])
def test_what_a_patch_wrote_as_the_api_server_re_encodes_it(
    pins: str, patched: dict[str, Any], encoded: dict[str, Any]
) -> None:
    assert decode.as_encoded(patched, POD, previous=pod()) == encoded


def test_custom_resources_and_unknown_kinds_are_left_alone() -> None:
    crd = {
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object"}}}],
        }
    }
    registry = SchemaRegistry([crd])
    assert registry.typed_schema("example.com/v1", "Widget") is None
    assert registry.for_kind("example.com/v1", "Widget") is not None
    assert registry.typed_schema("example.com/v1", "Gadget") is None
    obj = {"spec": {"options": {}, "tags": [], "note": None}}
    assert decode.as_encoded(obj, None) is obj
    assert decode.decode_error({"spec": "x"}, None) is None


# (what it pins, patched object, the strict decoder's error)
DECODE_ERRORS = [
    ("a well-formed pod decodes", pod(), None),
    (
        "unknown fields are all listed, with indexes (sigs.k8s.io/json strict mode)",
        {**pod(), "spec": {"containers": [{"name": "c", "x": 1}], "y": 2}},
        'strict decoding error: unknown field "spec.containers[0].x", unknown field "spec.y"',
    ),
    (
        "a type error wins over unknown fields (UnmarshalTypeError is fatal)",
        {**pod(), "spec": {"containers": "c", "y": 2}},
        "json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type []v1.Container",
    ),
    (
        "bools are not strings",
        {**pod(), "metadata": {"name": True}},
        "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.name of type string",
    ),
    (
        "an int that overflows int32",
        pod(priority=2**31),
        "json: cannot unmarshal number 2147483648 into Go struct field PodSpec.spec.priority of type int32",
    ),
    ("Quantity, IntOrString and Time decode themselves", pod(overhead={"cpu": 1}, activeDeadlineSeconds=1), None),
    (
        "a map value of the wrong type names the map type's element",
        pod(nodeSelector={"a": {"b": 1}}),
        "json: cannot unmarshal object into Go struct field PodSpec.spec.nodeSelector of type string",
    ),
]


@pytest.mark.parametrize(("pins", "patched", "error"), DECODE_ERRORS, ids=[row[0] for row in DECODE_ERRORS])
def test_the_strict_decoders_error(pins: str, patched: dict[str, Any], error: str | None) -> None:
    assert decode.decode_error(patched, POD) == error
