"""The two CEL profiles, as the real systems offer them (the declarations; :mod:`.environment`
turns a profile into a checker and programs).

* **kubernetes** — what kube-apiserver offers MutatingAdmissionPolicy: the standard definitions,
  optionals, cel-go strings (v2), sets and lists (v3), two-variable comprehensions, and the
  Kubernetes libraries (lists, regex, url, ip/cidr, quantity, semver, format, jsonpatch).
* **kyverno** — what Kyverno offers MutatingPolicy: all of the above plus ``cel.bind``, cel-go
  encoders, math and regex, and Kyverno's libraries.

Backends import this module (never :mod:`.environment`, which imports the backends).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from celmut.cel import types as t
from celmut.cel.declarations import Library, Overload
from celmut.cel.libs import core, ext, k8s, kyverno, optional, timestamps

KUBERNETES_MACROS = frozenset(
    {
        "has",
        "all",
        "exists",
        "exists_one",
        "existsOne",
        "map",
        "filter",
        "transformList",
        "transformMap",
        "transformMapEntry",
        "optMap",
        "optFlatMap",
        "sortBy",
    }
)
KYVERNO_MACROS = KUBERNETES_MACROS | {"cel.bind"}

# Libraries in both profiles, then Kyverno's additions. Each library lives in its own module under
# celmut/cel/libs/; adding one to CEL means adding it here.
KUBERNETES_LIBRARIES: tuple[Library, ...] = (
    core.LIBRARY,
    timestamps.LIBRARY,
    optional.LIBRARY,
    *ext.KUBERNETES_LIBRARIES,
    *k8s.LIBRARIES,
)
KYVERNO_LIBRARIES: tuple[Library, ...] = (
    *KUBERNETES_LIBRARIES,
    optional.KYVERNO_COMPAT,
    *ext.KYVERNO_ONLY_LIBRARIES,
    *kyverno.LIBRARIES,
)

ADMISSION_REQUEST_FIELDS: dict[str, t.CelType] = {
    "uid": t.STRING,
    "kind": t.map_of(t.STRING, t.STRING),
    "resource": t.map_of(t.STRING, t.STRING),
    "subResource": t.STRING,
    "requestKind": t.map_of(t.STRING, t.STRING),
    "requestResource": t.map_of(t.STRING, t.STRING),
    "requestSubResource": t.STRING,
    "name": t.STRING,
    "namespace": t.STRING,
    "operation": t.STRING,
    "userInfo": t.DYN,
    "object": t.DYN,
    "oldObject": t.DYN,
    "dryRun": t.BOOL,
    "options": t.DYN,
}
EXCEPTIONS_FIELDS: dict[str, t.CelType] = {
    "allowedImages": t.list_of(t.STRING),
    "allowedValues": t.list_of(t.STRING),
}
REQUEST_TYPE = t.opaque("kubernetes.AdmissionRequest")
VARIABLES_TYPE = t.opaque("variables")
EXCEPTIONS_TYPE = t.opaque("kyverno.Exceptions")


@dataclass(frozen=True)
class Profile:
    name: str
    libraries: tuple[Library, ...]
    macros: frozenset[str]
    variables: Mapping[str, t.CelType]
    lenient_or_value: bool
    description: str

    def functions(self) -> dict[str, list[Overload]]:
        table: dict[str, list[Overload]] = {}
        for library in self.libraries:
            for overload in library.overloads:
                table.setdefault(overload.function, []).append(overload)
        return table

    def constants(self) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for library in self.libraries:
            merged.update(library.constants)
        return merged


KUBERNETES = Profile(
    name="kubernetes",
    libraries=KUBERNETES_LIBRARIES,
    macros=KUBERNETES_MACROS,
    variables={
        "object": t.DYN,
        "oldObject": t.DYN,
        "request": REQUEST_TYPE,
        "params": t.DYN,
        "namespaceObject": t.DYN,
        "variables": VARIABLES_TYPE,
    },
    lenient_or_value=False,
    description="Kubernetes (MutatingAdmissionPolicy)",
)
KYVERNO = Profile(
    name="kyverno",
    libraries=KYVERNO_LIBRARIES,
    macros=KYVERNO_MACROS,
    variables={
        "object": t.DYN,
        "oldObject": t.DYN,
        "request": REQUEST_TYPE,
        "namespaceObject": t.DYN,
        "variables": VARIABLES_TYPE,
        "exceptions": EXCEPTIONS_TYPE,
    },
    lenient_or_value=True,
    description="Kyverno (MutatingPolicy)",
)
PROFILES = {p.name: p for p in (KUBERNETES, KYVERNO)}


def profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown CEL profile {name!r}; choose one of {', '.join(PROFILES)}") from None
