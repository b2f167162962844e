"""Kubernetes' quantity library (k8s.io/apiserver/pkg/cel/library/quantity.go): every row of
quantity_test.go that exists in the released library (mul/div/divInt are newer), the doc-comment
examples, and apimachinery's resource.Quantity parse/String tables (canonical forms)."""

from __future__ import annotations

from typing import Any

from tests.cel.helpers import Err, cases, check_case

FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
SUFFIX = "unable to parse quantity's suffix"

QUANTITY_TEST_GO = [
    ("quantity('12Mi')", "12Mi"),
    ("quantity('10Mo')", Err("evaluation", FORMAT_WRONG)),
    ("quantity('10Mm')", Err("evaluation", SUFFIX)),
    ("isQuantity('20')", True),
    ("isQuantity('20M')", True),
    ("isQuantity('20Mi')", True),
    ("isQuantity('20Mo')", False),
    ("isQuantity('10Mm')", False),
    ("isQuantity([1, 2, 3])", Err("compile", "found no matching overload for 'isQuantity' applied to")),
    ("quantity('200M') == quantity('200M')", True),
    ("quantity('200M') == quantity('0.2G') && quantity('0.2G') == quantity('200M')", True),
    (
        "quantity('2M') == quantity('0.002G') && quantity('2000k') == quantity('2M') && "
        "quantity('0.002G') == quantity('2000k')",
        True,
    ),
    ("quantity('200M') == quantity('0.3G')", False),
    ("quantity('50M').isLessThan(quantity('50Mi'))", True),
    ("quantity('50M').isLessThan(quantity('100M'))", True),
    ("quantity('100M').isLessThan(quantity('50M'))", False),
    ("quantity('50Mi').isGreaterThan(quantity('50M'))", True),
    ("quantity('150Mi').isGreaterThan(quantity('100Mi'))", True),
    ("quantity('50M').isGreaterThan(quantity('100M'))", False),
    ("quantity('200M').compareTo(quantity('0.2G'))", 0),
    ("quantity('50M').compareTo(quantity('50Mi'))", -1),
    ("quantity('50Mi').compareTo(quantity('50M'))", 1),
    ("quantity('50k').add(quantity('20')) == quantity('50.02k')", True),
    ("quantity('50k').add(20).isLessThan(quantity('50020'))", False),
    ("quantity('50k').sub(quantity('20')) == quantity('49.98k')", True),
    ("quantity('50k').sub(20) == quantity('49980')", True),
    ("quantity('50k').add(20).sub(quantity('100k')).asInteger()", -49980),
    ("quantity('50k').add(20).sub(quantity('100k')).sub(-50000).asInteger()", 20),
    ("quantity('50k').asInteger()", 50000),
    (
        "quantity('9999999999999999999999999999999999999G').asInteger()",
        Err("evaluation", "cannot convert value to integer"),
    ),
    ("quantity('9999999999999999999999999999999999999G').isInteger()", False),
    ("quantity('50').isInteger()", True),
    ("quantity('50.703k').asApproximateFloat()", 50703.0),
]

DOCS = [
    ("quantity('1.5G')", "1500M"),
    ("quantity('200k')", "200k"),
    ("quantity('200K')", Err("evaluation", SUFFIX)),
    ("quantity('Three')", Err("evaluation", FORMAT_WRONG)),
    # The doc comment calls quantity('Mi') an error, but apimachinery parses a bare suffix as zero
    # (kubernetes/apimachinery#165).
    ("quantity('Mi')", "0"),
    ("isQuantity('Mi')", True),
    ("isQuantity('1.3G')", True),
    ("isQuantity('1.3Gi')", True),
    ("isQuantity('1,3G')", False),
    ("isQuantity('10000k')", True),
    ("isQuantity('200K')", False),
    ("isQuantity('Three')", False),
    ("quantity('50000000G').isInteger()", True),
    ("quantity('50k').isInteger()", True),
    ("quantity('50k').asInteger() == 50000", True),
    ("quantity('50k').sub(20000).asApproximateFloat() == 30000.0", True),
    ("quantity('50k').add(quantity('20k')) == quantity('70k')", True),
    ("quantity('50k').add(20) == quantity('50020')", True),
    ("quantity('50k').sub(quantity('20k')) == quantity('30k')", True),
    ("quantity('50k').sub(20000) == quantity('30k')", True),
    ("quantity('50k').add(20).sub(quantity('100k')).sub(-50000) == quantity('20')", True),
    ("quantity('50Mi').isGreaterThan(quantity('100Mi'))", False),
    ("quantity('100M').isLessThan(quantity('50M'))", False),
    # sign is a global function in Kubernetes; the method form does not compile there.
    ("sign(quantity('50k'))", 1),
    ("sign(quantity('-50k'))", -1),
    ("sign(quantity('0'))", 0),
    ("quantity('50k').sign()", Err("compile", "found no matching overload for 'sign'")),
]

# apimachinery TestQuantityParse/TestQuantityString: an input and the canonical String() it yields.
CANONICAL = [
    ("quantity('1024Mi')", "1Gi"),
    ("quantity('307200Ki')", "300Mi"),
    ("quantity('1025024Mi')", "1001Gi"),
    ("quantity('1024Gi')", "1Ti"),
    ("quantity('5000m')", "5"),
    ("quantity('0.5')", "500m"),
    ("quantity('1000M')", "1G"),
    ("quantity('0.001T')", "1G"),
    ("quantity('1000u')", "1m"),
    ("quantity('1.08')", "1080m"),
    ("quantity('1080000000n')", "1080m"),
    ("quantity('1025')", "1025"),
    ("quantity('.001e12')", "1e9"),
    ("quantity('0.001e0')", "1e-3"),
    ("quantity('1000e-12')", "1e-9"),
    ("quantity('00')", "0"),
    ("quantity('108e-8')", "1080e-9"),
    ("quantity('.0001k')", "100m"),
    ("quantity('1.5Gi')", "1536Mi"),
    ("quantity('0.5Gi')", "512Mi"),
    ("quantity('1.1Ki')", "1126400m"),
    ("quantity('-1Ki')", "-1Ki"),
    ("quantity('0.1m')", "100u"),
    # Below a nano the value is rounded up (away from zero) to a whole nano.
    ("quantity('0.1n')", "1n"),
    ("quantity('-0.1n')", "-1n"),
    ("quantity('1e-10')", "1e-9"),
    # A parsed string already in canonical form is kept verbatim, sign and all.
    ("quantity('+1')", "+1"),
    ("quantity('1E3')", "1E3"),
    ("quantity('1E')", "1E"),
    # BinarySI values are capped at 2^63-1; a DecimalSI exponent past E loses its suffix (both as in Go).
    ("quantity('8Ei')", "9223372036854775807"),
    ("quantity('2000E')", "2"),
    ("quantity('1e1000')", "10e999"),
    ("quantity('1.1.M')", Err("evaluation", FORMAT_WRONG)),
    ("quantity('1+1.0M')", Err("evaluation", FORMAT_WRONG)),
    ("quantity('0.1mi')", Err("evaluation", SUFFIX)),
    ("quantity('0.1am')", Err("evaluation", FORMAT_WRONG)),
    ("quantity('.5i')", Err("evaluation", SUFFIX)),
    ("quantity('-3.01e-')", Err("evaluation", SUFFIX)),
    ("quantity(' 1')", Err("evaluation", FORMAT_WRONG)),
    ("quantity('1 ')", Err("evaluation", FORMAT_WRONG)),
    ("quantity('')", Err("evaluation", FORMAT_WRONG)),
]

REPRESENTATION = [
    # isInteger/asInteger follow Go's int64 fast path: a negative scale or a big decimal never converts.
    ("quantity('1000m').isInteger()", False),
    ("quantity('1').isInteger()", True),
    ("quantity('1.0').isInteger()", False),
    ("quantity('1.5Gi').isInteger()", False),
    ("quantity('1Gi').asInteger()", 1073741824),
    ("quantity('1e18').asInteger()", 1000000000000000000),
    ("quantity('1e19').isInteger()", False),
    # More than 18 digits always take the decimal path, even when the value fits an int64.
    ("quantity('999999999999999999').asInteger()", 999999999999999999),
    ("quantity('9223372036854775807').isInteger()", False),
    ("quantity('1000m').add(quantity('0')).isInteger()", False),
    ("quantity('500m').add(quantity('500m')).isInteger()", False),
    ("quantity('1k').sub(quantity('1')).asInteger()", 999),
    ("quantity('9223372036854775807').add(1).isInteger()", False),
    ("quantity('9223372036854775807').add(1).asApproximateFloat()", 9.223372036854776e18),
    ("quantity('-9223372036854775807').sub(2).compareTo(quantity('0'))", -1),
    ("quantity('1.5Gi').asApproximateFloat()", 1610612736.0),
    ("quantity('1n').asApproximateFloat()", 1e-09),
    ("quantity('1e400').asApproximateFloat() > 1.0e308", True),
    ("quantity('-1').sub(-1)", "0"),
    ("quantity('0').add(5000)", "5e3"),
    ("quantity('1Ki').add(quantity('1k'))", "2024"),
    ("quantity('1Mi').sub(quantity('1Ki'))", "1023Ki"),
    ("quantity('1e99999999').add(quantity('1'))", Err("evaluation", "out of the supported range")),
]

EQUALITY_AND_TYPES = [
    ("quantity('1000m') == quantity('1')", True),
    ("quantity('1Ki') == quantity('1024')", True),
    ("quantity('1Ki') != quantity('1k')", True),
    ("quantity('1').add(1) == quantity('2')", True),
    # Kubernetes quirk: add/sub return a pointer that Quantity.Equal does not accept as argument.
    ("quantity('2') == quantity('1').add(1)", False),
    ("quantity('2') == quantity('1').add(1) || quantity('1').add(1) == quantity('2')", True),
    ("quantity('1') in [quantity('1000m')]", True),
    ("type(quantity('1'))", "kubernetes.Quantity"),
    ("string(quantity('1'))", Err("compile", "no matching overload")),
    ("quantity(1)", Err("compile", "no matching overload")),
    ("quantity(dyn(1))", Err("evaluation", "no such overload")),
    ("quantity('1').add(1.0)", Err("compile", "no matching overload")),
    ("quantity('1').add(dyn(1u))", Err("evaluation", "no such overload")),
    ("quantity('1').isLessThan(semver('1.0.0'))", Err("compile", "no matching overload")),
    ("dyn(quantity('1')).isLessThan(dyn(quantity('2')))", True),
]

KUBERNETES_PROFILE = [
    ("quantity('50k').add(20).asInteger()", 50020),
    ("sign(quantity('-1Ki'))", -1),
    ("quantity('200M').compareTo(quantity('0.2G'))", 0),
    # a runtime error in Kubernetes: no validator or folding covers it (cel/program_checks.py)
    ("quantity('200K')", Err("evaluation", SUFFIX)),
]


@cases(QUANTITY_TEST_GO + DOCS + CANONICAL + REPRESENTATION + EQUALITY_AND_TYPES)
def test_quantity(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@cases(KUBERNETES_PROFILE)
def test_quantity_kubernetes_profile(expression: str, expected: Any) -> None:
    check_case(expression, expected, profile="kubernetes")


@cases([("quantity(object.limit).isGreaterThan(quantity(object.request))", True)])
def test_quantity_on_object_data(expression: str, expected: Any) -> None:
    check_case(expression, expected, object={"limit": "1Gi", "request": "512Mi"})
