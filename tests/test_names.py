"""Kubernetes name checks in their one home (celmut/names.py), as k8s.io/apimachinery
pkg/util/validation/validation.go does them, and the surfaces that use them."""

from __future__ import annotations

import pytest

from celmut import names
from celmut.errors import ConfigurationError
from celmut.policy.selection import PolicySelection


@pytest.mark.parametrize(
    ("check", "value", "valid"),
    [
        (names.is_dns_label, "kube-system", True),
        (names.is_dns_label, "a" * 63, True),
        (names.is_dns_label, "a" * 64, False),
        (names.is_dns_subdomain, "ip-10-0-1-17.ec2.internal", True),
        (names.is_dns_subdomain, "Node", False),
        (names.is_qualified_name, "app.kubernetes.io/name", True),
        (names.is_qualified_name, "/app", False),  # IsQualifiedName: "prefix part must be non-empty"
        (names.is_label_value, "", True),
        (names.is_label_value, "-x", False),
        # Go's `$` is the end of the text: a trailing newline is not part of a valid name
        (names.is_dns_label, "kube-system\n", False),
        (names.is_dns_subdomain, "ip-10-0-1-17.ec2.internal\n", False),
        (names.is_qualified_name, "app\n", False),
        (names.is_label_value, "web\n", False),
    ],
    ids=lambda v: getattr(v, "__name__", repr(v)),
)
def test_name_checks_follow_apimachinery_validation(check: object, value: str, valid: bool) -> None:
    assert check(value) is valid  # type: ignore[operator]


def test_a_manifests_name_is_a_label_of_at_most_50_characters() -> None:
    assert names.is_dns_label("a" * 50, max_length=50) and not names.is_dns_label("a" * 51, max_length=50)


def test_the_policy_selector_rejects_a_key_with_an_empty_prefix() -> None:
    with pytest.raises(ConfigurationError, match="not a label key"):
        PolicySelection("/app=x")
