"""Decoding the Kubernetes protobuf wire format for the kinds clients send that way.

client-go's typed clients write with ``Content-Type: application/vnd.kubernetes.protobuf`` when asked to
(Helm's release storage, helm/helm pkg/storage/driver/secrets.go through ``kubernetes.Clientset``, does:
its REST config asks for protobuf). The envelope is k8s.io/apimachinery/pkg/runtime/serializer/protobuf:
the magic ``k8s\\x00`` then a ``runtime.Unknown`` (1 typeMeta{1 apiVersion, 2 kind}, 2 raw, 3
contentEncoding, 4 contentType) whose ``raw`` is the object's message from k8s.io/api's generated.proto.
MODELLED: DeleteOptions, and Secret and ConfigMap with the ObjectMeta fields clients set (name, generateName, namespace,
resourceVersion, labels, annotations, finalizers). Anything else is a 415, as for an unknown encoding.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from . import errors

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, varint value or length-delimited bytes) of one message."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            length, pos = _varint(data, pos)
            yield number, data[pos : pos + length]
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise errors.bad_request(f"protobuf: unsupported wire type {wire}")


def _map_entry(data: bytes) -> tuple[str, bytes]:
    key, value = "", b""
    for number, item in _fields(data):
        if number == 1 and isinstance(item, bytes):
            key = item.decode()
        elif number == 2 and isinstance(item, bytes):
            value = item
    return key, value


def _object_meta(data: bytes) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    scalars = {1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"}
    for number, item in _fields(data):
        if not isinstance(item, bytes):
            continue
        if number in scalars:
            meta[scalars[number]] = item.decode()
        elif number in (11, 12):
            key, value = _map_entry(item)
            meta.setdefault("labels" if number == 11 else "annotations", {})[key] = value.decode()
        elif number == 14:
            meta.setdefault("finalizers", []).append(item.decode())
    return meta


def _secret(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret"}
    for number, item in _fields(data):
        if number == 1 and isinstance(item, bytes):
            obj["metadata"] = _object_meta(item)
        elif number == 2 and isinstance(item, bytes):
            key, value = _map_entry(item)
            obj.setdefault("data", {})[key] = base64.b64encode(value).decode()
        elif number == 3 and isinstance(item, bytes):
            obj["type"] = item.decode()
        elif number == 5:
            obj["immutable"] = bool(item)
    return obj


def _config_map(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap"}
    for number, item in _fields(data):
        if number == 1 and isinstance(item, bytes):
            obj["metadata"] = _object_meta(item)
        elif number == 2 and isinstance(item, bytes):
            key, value = _map_entry(item)
            obj.setdefault("data", {})[key] = value.decode()
    return obj


def _delete_options(data: bytes) -> dict[str, Any]:
    """meta/v1 DeleteOptions: 1 gracePeriodSeconds, 2 preconditions{1 uid, 2 resourceVersion},
    4 propagationPolicy, 5 dryRun (3 orphanDependents is deprecated)."""
    options: dict[str, Any] = {}
    for number, item in _fields(data):
        if number == 1 and isinstance(item, int):
            options["gracePeriodSeconds"] = item
        elif number == 2 and isinstance(item, bytes):
            names = {1: "uid", 2: "resourceVersion"}
            options["preconditions"] = {
                names[n]: v.decode() for n, v in _fields(item) if n in names and isinstance(v, bytes)
            }
        elif number == 4 and isinstance(item, bytes):
            options["propagationPolicy"] = item.decode()
        elif number == 5 and isinstance(item, bytes):
            options.setdefault("dryRun", []).append(item.decode())
    return options


DECODERS = {
    ("v1", "Secret"): _secret,
    ("v1", "ConfigMap"): _config_map,
    ("v1", "DeleteOptions"): _delete_options,
    ("meta.k8s.io/v1", "DeleteOptions"): _delete_options,
}


def decode(body: bytes) -> dict[str, Any]:
    """The object a protobuf request body carries (415 for a kind this fake cannot decode)."""
    if not body.startswith(MAGIC):
        raise errors.bad_request("protobuf: the body does not start with the k8s magic number")
    api_version = kind = ""
    raw = b""
    for number, item in _fields(body[len(MAGIC) :]):
        if number == 1 and isinstance(item, bytes):
            for sub, value in _fields(item):
                if sub == 1 and isinstance(value, bytes):
                    api_version = value.decode()
                elif sub == 2 and isinstance(value, bytes):
                    kind = value.decode()
        elif number == 2 and isinstance(item, bytes):
            raw = item
    decoder = DECODERS.get((api_version, kind))
    if decoder is None:
        raise errors.unsupported_media_type(MEDIA_TYPE, ["application/json", "application/yaml"])
    return decoder(raw)
