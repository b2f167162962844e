"""Kubernetes' JSON Patch library (``kubernetes.jsonpatch``, k8s.io/apiserver/pkg/cel/library/jsonpatch.go).

jsonpatch.escapeKey(<string>) -> string
    Escapes a key for use in a JSON Pointer path (RFC 6901): ``~`` becomes ``~0`` and ``/`` ``~1``.
    "/metadata/labels/" + jsonpatch.escapeKey('k8s.io/my~label') // "/metadata/labels/k8s.io~1my~0label"
"""

from __future__ import annotations

from celmut import jsonutil
from celmut.cel.declarations import Library
from celmut.cel.libs.k8s.support import string_cost, typed

LIBRARY: Library = Library("kubernetes.jsonpatch")
fn = LIBRARY.function


@fn("jsonpatch.escapeKey", ("string",), "string", cost=string_cost)
@typed("jsonpatch.escapeKey", str)
def escape_key(key: str) -> str:
    return jsonutil.escape_pointer(key)
