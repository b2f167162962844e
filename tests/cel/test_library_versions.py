"""Versioned CEL libraries, gated as cel-go gates them (``if lib.version >= N`` in ext/strings.go,
ext/lists.go, ext/math.go; Kubernetes' semverlib.go), and the version each profile configures."""

from __future__ import annotations

import pytest

from celmut.cel import profiles
from celmut.cel.declarations import Library
from celmut.cel.libs.ext import lists, math, strings
from celmut.cel.libs.k8s import semver
from tests.cel.helpers import Err, check_case


def signatures(library: Library) -> set[str]:
    return {f"{o.function}/{len(o.params)}" for o in library.overloads}


# (library, version, signatures that version adds) — from each library's doc comment upstream.
GATES = [
    (strings.LIBRARY, 0, {"charAt/2", "indexOf/2", "lastIndexOf/3", "join/1", "split/3", "trim/1"}),
    (strings.LIBRARY, 1, {"format/2", "strings.quote/1"}),
    (strings.LIBRARY, 3, {"reverse/1"}),
    (lists.LIBRARY, 0, {"slice/3"}),
    (lists.LIBRARY, 1, {"flatten/1", "flatten/2"}),
    (lists.LIBRARY, 2, {"lists.range/1", "distinct/1", "reverse/1", "sort/1"}),
    (math.LIBRARY, 0, {"math.greatest/1", "math.greatest/2", "math.least/2"}),
    (math.LIBRARY, 1, {"math.ceil/1", "math.abs/1", "math.bitShiftLeft/2", "math.isNaN/1"}),
    (math.LIBRARY, 2, {"math.sqrt/1"}),
    (semver.LIBRARY, 0, {"semver/1", "isSemver/1", "major/1", "compareTo/2"}),
    (semver.LIBRARY, 1, {"semver/2", "isSemver/2"}),
]


@pytest.mark.parametrize(("library", "version", "added"), GATES, ids=[f"{g[0].name} v{g[1]}" for g in GATES])
def test_each_function_arrives_with_its_version(library: Library, version: int, added: set[str]) -> None:
    assert added <= signatures(library.at(version))
    if version:
        assert not added & signatures(library.at(version - 1))


def test_every_versioned_library_has_a_version_in_each_profile_that_offers_it() -> None:
    """Adding a function behind a new version cannot leak into a profile unnoticed."""
    for library in profiles.BASE_LIBRARIES + profiles.KYVERNO_ONLY_LIBRARIES:
        if library.latest == 0:
            continue
        assert library.name in profiles.KYVERNO_VERSIONS, library.name
        if library in profiles.BASE_LIBRARIES:
            assert library.name in profiles.KUBERNETES_VERSIONS, library.name


# Kubernetes staging/src/k8s.io/apiserver/pkg/cel/environment/base.go: StringsVersion(2) (1.29),
# ListsVersion(3) (1.34), SemverVersion(1) (1.33); Kyverno adds ext.Math() at its latest version.
DECLARED = [
    ("kubernetes", strings.LIBRARY.name, 2),
    ("kubernetes", lists.LIBRARY.name, 3),
    ("kubernetes", semver.LIBRARY.name, 1),
    ("kyverno", strings.LIBRARY.name, 2),
    ("kyverno", lists.LIBRARY.name, 3),
    ("kyverno", math.LIBRARY.name, 2),
]


@pytest.mark.parametrize(("profile", "name", "version"), DECLARED)
def test_profiles_configure_the_versions_the_real_systems_do(profile: str, name: str, version: int) -> None:
    (library,) = [lib for lib in profiles.profile(profile).libraries if lib.name == name]
    assert library.version == version


ROWS = [
    ("kubernetes", "'gums'.reverse()", Err("compile", "no matching overload for 'reverse' applied to '(string)'")),
    ("kyverno", "'gums'.reverse()", Err("compile", "no matching overload for 'reverse' applied to '(string)'")),
    ("kubernetes", "[1, 2].reverse()", [2, 1]),  # lists v2
    ("kyverno", "math.sqrt(4)", 2.0),  # math v2
    ("kubernetes", "isSemver('v1.0', true)", True),  # semver v1
    # kube-apiserver v1.36.2, measured: no U+202F around the × (golang.org/x/text v0.22+)
    ("kubernetes", "'%e'.format([1234.5])", "1.234500×10⁰³"),
    ("kyverno", "'%e'.format([1234.5])", "1.234500×10⁰³"),
]


@pytest.mark.parametrize(("profile", "expression", "expected"), ROWS, ids=[f"{r[0]}: {r[1]}" for r in ROWS])
def test_what_each_profile_offers(profile: str, expression: str, expected: object) -> None:
    check_case(expression, expected, profile=profile)


@pytest.mark.parametrize(
    ("kubernetes", "narrow"), [((1, 29), True), ((1, 32), True), ((1, 33), False), ((1, 36), False)]
)
def test_scientific_format_follows_the_x_text_each_kubernetes_release_vendors(
    kubernetes: tuple[int, int], narrow: bool
) -> None:
    """golang/go#71428: x/text v0.22.0 (January 2025) dropped U+202F around the ×; Kubernetes 1.33
    is the first release built with it."""
    (format_overload,) = [o for o in strings.library(2, kubernetes).overloads if o.function == "format"]
    expected = "1.234500\u202f×\u202f10⁰³" if narrow else "1.234500×10⁰³"
    assert format_overload.impl("%e", [1234.5]) == expected
