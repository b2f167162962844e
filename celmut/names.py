"""Kubernetes name checks, as k8s.io/apimachinery ``pkg/util/validation/validation.go`` does them:
one home for the presets, the policy selector, the CLI's flags and the CEL authorizer (the CEL ``format`` library keeps
its own port, with Kubernetes' error messages: ``cel/libs/k8s/format.py``).

>>> is_dns_label("kube-system"), is_dns_subdomain("ip-10-0-1-17.ec2.internal"), is_qualified_name("/app")
(True, True, False)
"""

from __future__ import annotations

import re

_LABEL_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
# Matched whole (``fullmatch``): Go's ``$`` is the end of the text, Python's ``$`` also matches before a
# final newline, so ``re.match("^…$")`` would take "kube-system\n" for a name.
_DNS_SUBDOMAIN_RE = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
_DNS_LABEL_RE = re.compile(_DNS_LABEL)
_LABEL_VALUE_RE = re.compile(rf"({_LABEL_NAME})?")
_LABEL_NAME_RE = re.compile(_LABEL_NAME)


def is_dns_label(name: str, max_length: int = 63) -> bool:
    """A namespace name: RFC 1123 label (``IsDNS1123Label``), at most ``max_length`` characters."""
    return len(name) <= max_length and bool(_DNS_LABEL_RE.fullmatch(name))


def is_dns_subdomain(name: str) -> bool:
    """An object name (node, policy): RFC 1123 subdomain (``IsDNS1123Subdomain``), at most 253 characters."""
    return len(name) <= 253 and bool(_DNS_SUBDOMAIN_RE.fullmatch(name))


def is_qualified_name(key: str) -> bool:
    """A label key or resource name (``IsQualifiedName``): ``[prefix/]name`` with a non-empty DNS
    subdomain prefix and a name of at most 63 characters."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not (prefix and is_dns_subdomain(prefix)):
        return False
    return len(name) <= 63 and bool(_LABEL_NAME_RE.fullmatch(name))


def is_label_value(value: str) -> bool:
    """A label value (``IsValidLabelValue``): empty, or at most 63 characters of a label name."""
    return len(value) <= 63 and bool(_LABEL_VALUE_RE.fullmatch(value))
