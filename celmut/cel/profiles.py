"""The two CEL profiles, as the real systems offer them (the declarations; :mod:`.environment`
turns a profile into a checker and programs).

* **kubernetes** — what kube-apiserver (1.36, the release celmut is measured against) offers
  MutatingAdmissionPolicy: the standard definitions, optionals, cel-go strings (v2), sets and lists
  (v3), two-variable comprehensions, and the Kubernetes libraries (lists, regex, url, ip/cidr,
  quantity, semver v1, format, jsonpatch) — ``staging/src/k8s.io/apiserver/pkg/cel/environment/base.go``.
* **kyverno** — what Kyverno offers MutatingPolicy: all of the above plus ``cel.bind``, cel-go
  encoders, math (latest) and regex, and Kyverno's libraries (``pkg/cel/compiler/env.go``).

Versioned libraries are taken at the version each system configures, as cel-go gates them
(``ext.Strings(ext.StringsVersion(2))`` has no ``reverse``): :data:`KUBERNETES_VERSIONS`,
:data:`KYVERNO_VERSIONS`.

Backends import this module (never :mod:`.environment`, which imports the backends).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from celmut.cel import types as t
from celmut.cel.declarations import Library, Overload
from celmut.cel.libs import core, k8s, kyverno, optional, timestamps
from celmut.cel.libs.ext import encoders, lists, math, regex, sets, strings

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
        "sortBy",  # ext.Lists version 2
    }
)
KYVERNO_MACROS = KUBERNETES_MACROS | {"cel.bind"}

# The Kubernetes release each profile behaves as, where behaviour follows what a release vendors
# (the %e of ext.Strings' format; see strings.library). Kyverno 1.16+ vendors k8s.io 1.34.
KUBERNETES_TARGET = (1, 36)
KYVERNO_TARGET = (1, 34)

# Library versions, by library name: Kubernetes base.go (StringsVersion(2) since 1.29,
# ListsVersion(3) since 1.34, SemverVersion(1) since 1.33); Kyverno adds ext.Math() (every version).
KUBERNETES_VERSIONS: Mapping[str, int] = {
    strings.LIBRARY.name: 2,
    lists.LIBRARY.name: 3,
    k8s.semver.LIBRARY.name: 1,
    k8s.authz.LIBRARY.name: 1,  # Authz (1.27) + AuthzSelectors (1.32, base.go)
}
KYVERNO_VERSIONS: Mapping[str, int] = {**KUBERNETES_VERSIONS, math.LIBRARY.name: math.LIBRARY.latest}


def configured(library: Library, versions: Mapping[str, int], target: tuple[int, int]) -> Library:
    """``library`` as a profile offers it: at its declared version, with target-dependent behaviour."""
    if library is strings.LIBRARY:
        return strings.library(versions[library.name], target)
    if library.name in versions:
        return library.at(versions[library.name])
    return library


def _libraries(
    libraries: tuple[Library, ...], versions: Mapping[str, int], target: tuple[int, int]
) -> tuple[Library, ...]:
    return tuple(configured(library, versions, target) for library in libraries)


# Libraries in both profiles, then Kyverno's additions. Each library lives in its own module under
# celmut/cel/libs/; adding one to CEL means adding it here.
BASE_LIBRARIES: tuple[Library, ...] = (
    core.LIBRARY,
    timestamps.LIBRARY,
    optional.LIBRARY,
    strings.LIBRARY,
    sets.LIBRARY,
    lists.LIBRARY,
    *k8s.LIBRARIES,
)
KYVERNO_ONLY_LIBRARIES: tuple[Library, ...] = (
    optional.KYVERNO_COMPAT,
    encoders.LIBRARY,
    math.LIBRARY,
    regex.LIBRARY,
    *kyverno.LIBRARIES,
)
KUBERNETES_LIBRARIES = _libraries(BASE_LIBRARIES, KUBERNETES_VERSIONS, KUBERNETES_TARGET)
KYVERNO_LIBRARIES = _libraries(BASE_LIBRARIES + KYVERNO_ONLY_LIBRARIES, KYVERNO_VERSIONS, KYVERNO_TARGET)

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
    target: tuple[int, int]  # the Kubernetes release whose behaviour it follows
    macros: frozenset[str]
    variables: Mapping[str, t.CelType]
    kyverno_or_value: bool  # x.orValue(y) is Kyverno's __orValueCompat__ (see BackendOptions)
    description: str

    def functions(self) -> dict[str, list[Overload]]:
        table: dict[str, list[Overload]] = {}
        for library in self.libraries:
            for overload in library.overloads:
                table.setdefault(overload.function, []).append(overload)
        if self.kyverno_or_value:  # Kyverno's macro routes every x.orValue(y) to its own function
            table["orValue"] = list(optional.KYVERNO_COMPAT.overloads)
        return table

    def constants(self) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for library in self.libraries:
            merged.update(library.constants)
        return merged


KUBERNETES = Profile(
    name="kubernetes",
    libraries=KUBERNETES_LIBRARIES,
    target=KUBERNETES_TARGET,
    macros=KUBERNETES_MACROS,
    variables={
        "object": t.DYN,
        "oldObject": t.DYN,
        "request": REQUEST_TYPE,
        "params": t.DYN,
        "namespaceObject": t.DYN,
        "variables": VARIABLES_TYPE,
        # mutating/compilation.go: HasAuthorizer (Kyverno's MutatingPolicy compiler: false)
        "authorizer": t.opaque(k8s.authz.AUTHORIZER),
        "authorizer.requestResource": t.opaque(k8s.authz.RESOURCE_CHECK),
    },
    kyverno_or_value=False,
    description="Kubernetes (MutatingAdmissionPolicy)",
)
KYVERNO = Profile(
    name="kyverno",
    libraries=KYVERNO_LIBRARIES,
    target=KYVERNO_TARGET,
    macros=KYVERNO_MACROS,
    variables={
        "object": t.DYN,
        "oldObject": t.DYN,
        "request": REQUEST_TYPE,
        "namespaceObject": t.DYN,
        "variables": VARIABLES_TYPE,
        "exceptions": EXCEPTIONS_TYPE,
    },
    kyverno_or_value=True,
    description="Kyverno (MutatingPolicy)",
)
PROFILES = {p.name: p for p in (KUBERNETES, KYVERNO)}


def profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown CEL profile {name!r}; choose one of {', '.join(PROFILES)}") from None
