"""Which engine serves a policy: celmut, or Kyverno running next to it.

Kyverno serves every ``MutatingPolicy`` and ``NamespacedMutatingPolicy`` in the cluster and has no
per-policy opt-out; a policy both engines serve is applied twice (an appended toleration lands twice).
So celmut serves only the policies its **policy selector** (``--policy-selector``, the chart's
``policySelector``) selects, a label selector in ``kubectl get -l`` syntax:

* ``auto`` (the default): every policy while Kyverno is absent; once Kyverno is detected
  (:func:`kyverno_presence`), only those labelled :data:`OWNED_BY_CELMUT` (``celmut.io/owner=celmut``);
* a selector, e.g. ``celmut.io/owner=celmut`` or ``team in (a,b)``: the policies it selects, always;
* ``''``: every policy, always.

:meth:`Ownership.declines` is the one place that says why celmut leaves a policy object alone (also:
a MutatingPolicy the API server applies from the MutatingAdmissionPolicy celmut generated for it); a
policy celmut does not serve is not compiled, not reported on (no status, no Event) and not in the
webhook rules celmut prints. PolicyExceptions labelled :data:`KYVERNO_ONLY_LABEL` are the ones celmut
creates so that *Kyverno* skips the policies celmut owns (:mod:`celmut.install.kyverno_exceptions`);
celmut never applies them itself.

The selector syntax and matching follow ``k8s.io/apimachinery/pkg/labels/selector.go`` (``Parse``):
``k=v``, ``k==v``, ``k!=v`` (also true when ``k`` is absent), ``k in (a,b)``, ``k notin (a,b)``,
``k``, ``!k``, ``k>1``, ``k<1``, joined by ``,`` (all must hold).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from celmut import names
from celmut.errors import ConfigurationError

AUTO = "auto"
OWNER_LABEL = "celmut.io/owner"
OWNED_BY_CELMUT = f"{OWNER_LABEL}=celmut"
KYVERNO_ONLY_LABEL = "celmut.io/kyverno-only"
#: The kinds both engines serve, and so the kinds the selector chooses among.
SELECTED_KINDS = frozenset({"MutatingPolicy", "NamespacedMutatingPolicy"})

# Kyverno's fingerprints (kyverno/kyverno api/kyverno/labels.go ``LabelWebhookManagedBy``; its webhook
# controller stamps it on every configuration it registers, pkg/controllers/webhook/controller.go).
KYVERNO_WEBHOOK_LABEL = "webhook.kyverno.io/managed-by"
KYVERNO_POLICY_CRDS = ("mutatingpolicies.policies.kyverno.io", "namespacedmutatingpolicies.policies.kyverno.io")
PART_OF = "app.kubernetes.io/part-of"


class PolicySelectorError(ConfigurationError):
    """A ``--policy-selector`` that is not a label selector."""


# --- label selectors in kubectl's syntax ----------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(?P<op>!=|==|=|!|\(|\)|,|>|<)|(?P<word>[^\s!=(),<>]+))")
_OPERATORS = {"=": "=", "==": "=", "!=": "!=", ">": ">", "<": "<"}


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # = != in notin exists !exists > <
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator in ("=", "in"):
            return value is not None and value in self.values
        if self.operator in ("!=", "notin"):
            return value is None or value not in self.values
        if self.operator == "exists":
            return value is not None
        if self.operator == "!exists":
            return value is None
        try:  # > and <: both sides integers (selector.go: strconv.ParseInt)
            number, bound = int(value or ""), int(self.values[0])
        except ValueError:
            return False
        return number > bound if self.operator == ">" else number < bound

    def __str__(self) -> str:
        if self.operator == "exists":
            return self.key
        if self.operator == "!exists":
            return f"!{self.key}"
        if self.operator in ("in", "notin"):
            return f"{self.key} {self.operator} ({','.join(self.values)})"
        return f"{self.key}{self.operator}{self.values[0]}"


@dataclass(frozen=True)
class Selector:
    """A label selector; the empty one selects everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    @property
    def everything(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _check_key(key: str, text: str) -> None:
    if not names.is_qualified_name(key):
        raise PolicySelectorError(
            f"policy selector {text!r}: {key!r} is not a label key (a name of at most 63 characters, "
            "optionally prefixed by a DNS subdomain and '/')"
        )


def _check_value(value: str, text: str) -> None:
    if not names.is_label_value(value):
        raise PolicySelectorError(
            f"policy selector {text!r}: {value!r} is not a label value (at most 63 characters: letters, digits, "
            "'-', '_' and '.', starting and ending with a letter or digit)"
        )


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None:  # pragma: no cover - the token pattern accepts every non-space character
            raise PolicySelectorError(f"policy selector {text!r}: unexpected character at {position}")
        tokens.append(match.group("op") or match.group("word"))
        position = match.end()
    return tokens


def parse_selector(text: str) -> Selector:
    """A :class:`Selector` from ``kubectl get -l`` syntax; :class:`PolicySelectorError` naming the problem."""
    tokens = _tokens(text)
    requirements: list[Requirement] = []
    index = 0

    def expect(what: str) -> str:
        nonlocal index
        if index >= len(tokens):
            raise PolicySelectorError(f"policy selector {text!r}: expected {what} at the end")
        token = tokens[index]
        index += 1
        return token

    while index < len(tokens):
        negated = tokens[index] == "!"
        if negated:
            index += 1
        key = expect("a label key")
        if key in _OPERATORS or key in ("(", ")", ",", "!"):
            raise PolicySelectorError(f"policy selector {text!r}: expected a label key, found {key!r}")
        _check_key(key, text)
        following = tokens[index] if index < len(tokens) else ","
        if negated or following == ",":
            requirements.append(Requirement(key, "!exists" if negated else "exists"))
        elif following in _OPERATORS:
            index += 1
            operator = _OPERATORS[following]
            value = tokens[index] if index < len(tokens) and tokens[index] not in (",",) else ""
            if value:
                index += 1
            if operator in (">", "<") and not re.fullmatch(r"-?\d+", value):
                raise PolicySelectorError(f"policy selector {text!r}: {key}{operator} needs an integer")
            _check_value(value, text)
            requirements.append(Requirement(key, operator, (value,)))
        elif following in ("in", "notin"):
            index += 1
            if expect("'('") != "(":
                raise PolicySelectorError(f"policy selector {text!r}: expected '(' after {following}")
            values: list[str] = []
            while True:
                token = expect("')'")
                if token == ")":
                    break
                if token == ",":
                    continue
                _check_value(token, text)
                values.append(token)
            requirements.append(Requirement(key, following, tuple(values)))
        else:
            raise PolicySelectorError(
                f"policy selector {text!r}: after {key!r} expected =, ==, !=, in, notin or ',', found {following!r}"
            )
        if index < len(tokens):
            if tokens[index] != ",":
                raise PolicySelectorError(f"policy selector {text!r}: expected ',' before {tokens[index]!r}")
            index += 1
            if index == len(tokens):
                raise PolicySelectorError(f"policy selector {text!r}: a requirement must follow ','")
    return Selector(tuple(requirements))


# --- Kyverno next to celmut -----------------------------------------------------------------------


@dataclass(frozen=True)
class KyvernoPresence:
    """Whether Kyverno is serving MutatingPolicies in the cluster, and what shows it ('' when not)."""

    evidence: str = ""

    @property
    def detected(self) -> bool:
        return bool(self.evidence)


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return dict(labels) if isinstance(labels, Mapping) else {}


def crd_is_celmuts(crd: Mapping[str, Any]) -> bool:
    """Whether celmut installed this CRD (its ``app.kubernetes.io/part-of: celmut`` label; Kyverno's chart
    labels its CRDs ``app.kubernetes.io/part-of: <kyverno release>``, and a take-over replaces ours)."""
    return _labels(crd).get(PART_OF) == "celmut"


def _serves_mutating_policies(configuration: Mapping[str, Any]) -> bool:
    """A Kyverno webhook configuration with a webhook for (Namespaced)MutatingPolicies: Kyverno names them
    ``mpol.*``/``nmpol.*`` and calls ``/mpol/...``, ``/nmpol/...`` (pkg/controllers/webhook)."""
    for webhook in configuration.get("webhooks") or []:
        name = str(webhook.get("name") or "")
        client = webhook.get("clientConfig") or {}
        path = str((client.get("service") or {}).get("path") or urlsplit(str(client.get("url") or "")).path)
        if name.startswith(("mpol.", "nmpol.")) or path.split("/")[1:2] in (["mpol"], ["nmpol"]):
            return True
    return False


def kyverno_presence(
    crds: Iterable[Mapping[str, Any]], webhook_configurations: Iterable[Mapping[str, Any]]
) -> KyvernoPresence:
    """Kyverno is present when a MutatingPolicy CRD is not celmut's (Kyverno installed it, or took it
    over), or when a webhook configuration Kyverno manages serves MutatingPolicies."""
    for crd in crds:
        name = str((crd.get("metadata") or {}).get("name") or "")
        if name in KYVERNO_POLICY_CRDS and not crd_is_celmuts(crd):
            owner = _labels(crd).get(PART_OF)
            shown = f"{PART_OF}={owner}" if owner else f"no {PART_OF}=celmut label"
            return KyvernoPresence(f"CustomResourceDefinition {name} is not celmut's ({shown})")
    for configuration in webhook_configurations:
        if _labels(configuration).get(KYVERNO_WEBHOOK_LABEL) == "kyverno" and _serves_mutating_policies(configuration):
            name = str((configuration.get("metadata") or {}).get("name"))
            return KyvernoPresence(f"MutatingWebhookConfiguration {name} of Kyverno serves MutatingPolicies")
    return KyvernoPresence()


# --- the decision ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ownership:
    """The policies celmut serves now: an effective selector, and why it is the one in force.

    ``native``: the MutatingPolicies whose generated MutatingAdmissionPolicies are in service (each
    exists and its binding names it), by name, with those policies' names: the API server applies them,
    so celmut's webhook must not (issue 19; kyverno pkg/controllers/webhook/controller.go drops a policy
    whose ``status.generated`` is true)."""

    selector: Selector
    why: str
    kyverno: KyvernoPresence = KyvernoPresence()
    native: tuple[tuple[str, str], ...] = ()
    # a fixed --policy-selector: the policies it leaves out may be another celmut install's (several
    # installs share the cluster), so what was written for them is theirs (:meth:`belongs_to_another`)
    shared: bool = False

    def selects(self, kind: str, obj: Mapping[str, Any]) -> bool:
        """Whether the policy object is celmut's to serve, by the selector alone (natively applied or not)."""
        return not self.declines(kind, obj, natively=False)

    def natively_applied(self, kind: str, obj: Mapping[str, Any]) -> str:
        """The MutatingAdmissionPolicies that apply this policy in the API server ('' when none do)."""
        if kind != "MutatingPolicy":
            return ""
        name = str((obj.get("metadata") or {}).get("name") or "")
        return next((maps for policy, maps in self.native if policy == name), "")

    def declines(self, kind: str, obj: Mapping[str, Any], *, natively: bool = True) -> str:
        """Why celmut leaves this policy object to another engine ('' when celmut serves it);
        ``natively=False`` leaves out the policies the API server applies from their generated MAPs."""
        labels = _labels(obj)
        if kind == "PolicyException" and labels.get(KYVERNO_ONLY_LABEL) == "true":
            return f"a PolicyException for Kyverno only ({KYVERNO_ONLY_LABEL}=true)"
        if kind in SELECTED_KINDS and not self.selector.matches(labels):
            return f"not selected by the policy selector {self.selector} ({self.why})"
        if natively and (maps := self.natively_applied(kind, obj)):
            return f"the API server applies it: its generated MutatingAdmissionPolicy {maps} is in service"
        return ""

    def belongs_to_another(self, kind: str, obj: Mapping[str, Any]) -> bool:
        """Whether this existing policy is another celmut install's (or no one's) to serve: a fixed policy
        selector leaves it out. Its report results, generated MutatingAdmissionPolicies and Kyverno
        PolicyExceptions are then left as they are; only the install serving it, or its deletion, removes
        them. Never true with ``auto`` (one celmut per cluster: what celmut wrote is this install's)."""
        return self.shared and kind in SELECTED_KINDS and not self.selector.matches(_labels(obj))

    def keys_of_others(self, policies: Iterable[tuple[str, Mapping[str, Any]]]) -> frozenset[str]:
        """The ``namespace/name`` keys (``name`` when cluster-scoped: how reports name a policy) of the
        (kind, policy) pairs :meth:`belongs_to_another` says are another install's."""
        keys: set[str] = set()
        for kind, obj in policies:
            if self.belongs_to_another(kind, obj):
                meta = obj.get("metadata") or {}
                name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
                keys.add(f"{namespace}/{name}" if namespace else name)
        return frozenset(keys)

    def describe(self) -> str:
        """One line for logs and statuses."""
        chosen = "every MutatingPolicy" if self.selector.everything else f"MutatingPolicies matching {self.selector}"
        return f"celmut serves {chosen}: {self.why}"


@dataclass(frozen=True)
class PolicySelection:
    """The ``--policy-selector`` setting: :data:`AUTO`, or a fixed selector."""

    text: str = AUTO

    def __post_init__(self) -> None:
        if self.text.strip() != AUTO:
            parse_selector(self.text)  # refuse a bad selector when the setting is made

    @property
    def auto(self) -> bool:
        return self.text.strip() == AUTO

    def resolve(self, kyverno: KyvernoPresence, native: tuple[tuple[str, str], ...] = ()) -> Ownership:
        """The ownership in force, given whether Kyverno is present (and the natively applied policies)."""
        if not self.auto:
            selector = parse_selector(self.text)
            why = f"--policy-selector {self.text.strip()!r}"
            return Ownership(selector, why, kyverno, native, shared=not selector.everything)
        if kyverno.detected:
            return Ownership(parse_selector(OWNED_BY_CELMUT), f"Kyverno detected: {kyverno.evidence}", kyverno, native)
        return Ownership(Selector(), "Kyverno not detected", kyverno, native)

    def resolve_offline(self) -> Ownership:
        """For files (no cluster to look at): a fixed selector as such; ``auto`` selects every policy."""
        if self.auto:
            return Ownership(Selector(), "no cluster to detect Kyverno in")
        return Ownership(parse_selector(self.text), f"--policy-selector {self.text.strip()!r}")


#: celmut alone (files, the CLI, tests): every policy is celmut's.
EVERYTHING = Ownership(Selector(), "celmut alone")
