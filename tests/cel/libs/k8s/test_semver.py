"""Kubernetes' semver library (k8s.io/apiserver/pkg/cel/library/semverlib.go, version 1): every row
of semver_test.go, the doc-comment examples, and blang/semver's parse errors and precedence."""

from __future__ import annotations

from typing import Any

from tests.cel.helpers import Err, cases, check_case

SEMVER_TEST_GO = [
    ("semver('1.2.3')", "1.2.3"),
    ("semver('v1.0')", Err("evaluation", "No Major.Minor.Patch elements found")),
    ("isSemver('1.2.3-beta.1+build.1')", True),
    ("isSemver('')", False),
    ("isSemver('v1.0.0')", False),
    ("isSemver(' 1.0.0')", False),
    ("isSemver('1. 0.0')", False),
    ("isSemver('1.0.0 ')", False),
    ("isSemver('01.01.01')", False),
    ("isSemver('1')", False),
    ("isSemver('1.1')", False),
    ("isSemver('', true)", False),
    ("isSemver(' 1.0.0', true)", False),
    ("isSemver('1. 0.0', true)", False),
    ("isSemver('1.0.0 ', true)", False),
    ("isSemver('v1.0.0', true)", True),
    ("isSemver('01.01.01', true)", True),
    ("isSemver('1', true)", True),
    ("isSemver('1.1', true)", True),
    ("isSemver([1, 2, 3])", Err("compile", "found no matching overload for 'isSemver' applied to")),
    ("semver('v01.01', true) == semver('1.1.0')", True),
    ("semver('1.2.3') == semver('1.2.3')", True),
    ("semver('1.2.3') == semver('1.0.0')", False),
    ("semver('1.0.0').isLessThan(semver('1.2.3'))", True),
    ("semver('1.0.0').isLessThan(semver('1.0.0'))", False),
    ("semver('1.2.3').isGreaterThan(semver('1.0.0'))", True),
    ("semver('1.0.0').isGreaterThan(semver('1.0.0'))", False),
    ("semver('1.2.3').compareTo(semver('1.2.3'))", 0),
    ("semver('1.0.0').compareTo(semver('1.2.3'))", -1),
    ("semver('1.2.3').compareTo(semver('1.0.0'))", 1),
    ("semver('1.2.3').major()", 1),
    ("semver('1.2.3').minor()", 2),
    ("semver('1.2.3').patch()", 3),
]

DOCS_AND_PARSER = [
    ("semver('0.1.0-alpha.1')", "0.1.0-alpha.1"),
    ("semver('200K')", Err("evaluation", "No Major.Minor.Patch elements found")),
    ("semver('v1.0.0', true)", "1.0.0"),
    ("semver('1.0', true)", "1.0.0"),
    ("semver('01.01.01', true)", "1.1.1"),
    ("semver('v00.0.01', true)", "0.0.1"),
    ("semver('1.2.3-rc.1+build.5')", "1.2.3-rc.1+build.5"),
    ("semver('1.2.3-0.a-b')", "1.2.3-0.a-b"),
    ("semver('')", Err("evaluation", "Version string empty")),
    ("semver('a.2.3')", Err("evaluation", 'Invalid character(s) found in major number "a"')),
    ("semver('1.b.3')", Err("evaluation", 'Invalid character(s) found in minor number "b"')),
    ("semver('1.2.c')", Err("evaluation", 'Invalid character(s) found in patch number "c"')),
    ("semver('01.2.3')", Err("evaluation", 'Major number must not contain leading zeroes "01"')),
    ("semver('1.02.3')", Err("evaluation", 'Minor number must not contain leading zeroes "02"')),
    ("semver('1.2.03')", Err("evaluation", 'Patch number must not contain leading zeroes "03"')),
    ("semver('1.2.3-')", Err("evaluation", "Prerelease is empty")),
    ("semver('1.2.3-01')", Err("evaluation", 'Numeric PreRelease version must not contain leading zeroes "01"')),
    ("semver('1.2.3-a_b')", Err("evaluation", 'Invalid character(s) found in prerelease "a_b"')),
    ("semver('1.2.3+')", Err("evaluation", "Buildstr is empty")),
    ("semver('1.2.3+a_b')", Err("evaluation", 'Invalid character(s) found in build meta data "a_b"')),
    ("semver('.2.3')", Err("evaluation", 'strconv.ParseUint: parsing "": invalid syntax')),
    ("semver('99999999999999999999.0.0')", Err("evaluation", "value out of range")),
    ("semver('1.0-rc', true)", Err("evaluation", "short version cannot contain PreRelease/Build meta data")),
    ("semver('1.0-rc.1', true)", Err("evaluation", 'Invalid character(s) found in minor number "0-rc"')),
    ("semver('vv1.0.0', true)", Err("evaluation", "Invalid character(s) found in major number")),
    ("isSemver('1.2.3-beta_1')", False),
    ("isSemver('1.2', false)", False),
    # Precedence: numbers, then pre-release (numeric identifiers first, fewer identifiers first).
    ("semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", True),
    ("semver('1.0.0-alpha').isLessThan(semver('1.0.0-alpha.1'))", True),
    ("semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))", True),
    ("semver('1.0.0-beta.2').isLessThan(semver('1.0.0-beta.11'))", True),
    ("semver('1.0.0-rc.1').isLessThan(semver('1.0.0-beta.11'))", False),
    ("semver('2.0.0').compareTo(semver('10.0.0'))", -1),
    # Build metadata does not take part in equality or precedence.
    ("semver('1.0.0+a') == semver('1.0.0+b')", True),
    ("semver('1.0.0+a').compareTo(semver('1.0.0'))", 0),
    ("semver('1.0.0-a') == semver('1.0.0')", False),
    ("semver('2.3.4', true).minor()", 3),
    ("type(semver('1.0.0'))", "kubernetes.Semver"),
    ("string(semver('1.0.0'))", Err("compile", "no matching overload")),
    ("semver(1)", Err("compile", "no matching overload")),
    ("semver('1.0.0', 'true')", Err("compile", "no matching overload")),
    ("semver(dyn(1))", Err("evaluation", "no such overload")),
    ("semver('1.0.0', dyn('x'))", Err("evaluation", "no such overload")),
    ("dyn('1.0.0').major()", Err("evaluation", "no such overload")),
    ("semver('1.0.0').isLessThan(quantity('1'))", Err("compile", "no matching overload")),
]

KUBERNETES_PROFILE = [
    ("semver('1.2.3').isLessThan(semver('1.10.0'))", True),
    ("isSemver('v1.2', true)", True),
    # a runtime error in Kubernetes: no validator or folding covers it (cel/program_checks.py)
    ("semver('v1.0')", Err("evaluation", "No Major.Minor.Patch elements found")),
]


@cases(SEMVER_TEST_GO + DOCS_AND_PARSER)
def test_semver(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@cases(KUBERNETES_PROFILE)
def test_semver_kubernetes_profile(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes")
