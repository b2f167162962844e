"""The CEL ``authorizer`` offline: ``--authorizer allow|deny|FILE`` on apply, test and eval.

Without the flag an authorizer check is an error that says to pass it — never silently allowed.

``allow`` / ``deny`` answer every check so. ``FILE`` holds rules; a check is allowed when one rule
matches it, and otherwise gets no opinion (``allowed()`` is false, as RBAC answers when no role
grants it)::

    rules:
    - users: [alice]                       # who: users and/or groups; omitted or "*": anyone
      groups: [system:masters]
      verbs: [create, update]              # "*": any verb
      apiGroups: [""]                      # resource checks: group, resources ("pods/status" for
      resources: [pods, deployments/scale] # a subresource), namespaces, names; omitted or "*": any
      namespaces: [shop]
      names: []
    - groups: [system:authenticated]
      verbs: [get]
      nonResourceURLs: [/healthz]          # path checks ("*" suffix: a prefix)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from celmut.cel.lookups import AuthorizationAttributes, AuthorizationDecision
from celmut.errors import ConfigurationError

_FIELDS = ("users", "groups", "verbs", "apiGroups", "resources", "namespaces", "names", "nonResourceURLs")


@dataclass(frozen=True)
class FixedAuthorizer:
    """``--authorizer allow`` or ``deny``: one answer for every check."""

    decision: str

    def authorize(self, attributes: AuthorizationAttributes) -> AuthorizationDecision:
        return AuthorizationDecision(self.decision, f"--authorizer {self.decision}")


def _matches(allowed: Sequence[str] | None, value: str) -> bool:
    return not allowed or "*" in allowed or value in allowed


@dataclass(frozen=True)
class Rule:
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    def grants(self, a: AuthorizationAttributes) -> bool:
        if (self.users or self.groups) and not (
            "*" in self.users
            or a.user.username in self.users
            or "*" in self.groups
            or any(g in self.groups for g in a.user.groups)
        ):
            return False
        if not _matches(self.verbs, a.verb):
            return False
        if not a.resource_request:
            return bool(self.non_resource_urls) and any(
                u == "*" or u == a.path or (u.endswith("*") and a.path.startswith(u[:-1]))
                for u in self.non_resource_urls
            )
        if self.non_resource_urls and not (self.api_groups or self.resources):
            return False
        resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
        return (
            _matches(self.api_groups, a.group)
            and _matches(self.resources, resource)
            and _matches(self.namespaces, a.namespace)
            and _matches(self.names, a.name)
        )


@dataclass(frozen=True)
class RulesAuthorizer:
    """``--authorizer FILE``: allowed when a rule grants the check, else no opinion."""

    source: str
    rules: tuple[Rule, ...]

    def authorize(self, attributes: AuthorizationAttributes) -> AuthorizationDecision:
        for index, rule in enumerate(self.rules):
            if rule.grants(attributes):
                return AuthorizationDecision("allow", f"allowed by {self.source} rules[{index}]")
        return AuthorizationDecision("no-opinion", f"no rule of {self.source} allows it")


def _strings(source: str, index: int, rule: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = rule.get(name)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigurationError(f"{source}: rules[{index}].{name} must be a list of strings")
    return tuple(value)


def load_rules(path: str) -> RulesAuthorizer:
    try:
        document = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as ex:
        raise ConfigurationError(f"--authorizer {path}: {ex}") from ex
    if not isinstance(document, dict) or not isinstance(document.get("rules"), list):
        raise ConfigurationError(f"--authorizer {path}: must hold a map with a 'rules' list (allow, deny or a FILE)")
    unknown = sorted(set(document) - {"rules"})
    if unknown:
        raise ConfigurationError(f"--authorizer {path}: unknown field {unknown[0]!r}")
    rules = []
    for index, rule in enumerate(document["rules"]):
        if not isinstance(rule, dict):
            raise ConfigurationError(f"{path}: rules[{index}] must be a map")
        extra = sorted(set(rule) - set(_FIELDS))
        if extra:
            raise ConfigurationError(
                f"{path}: rules[{index}]: unknown field {extra[0]!r} (known: {', '.join(_FIELDS)})"
            )
        fields = [_strings(path, index, rule, name) for name in _FIELDS]
        rules.append(Rule(*fields))
    return RulesAuthorizer(path, tuple(rules))


def from_flag(value: str | None) -> FixedAuthorizer | RulesAuthorizer | None:
    """The authorizer ``--authorizer value`` names; None without the flag."""
    if value is None:
        return None
    if value in ("allow", "deny"):
        return FixedAuthorizer(value)
    return load_rules(value)
