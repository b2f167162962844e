"""The PodMutation model (``pod-mutations.cast.ai/v1``, cluster-scoped) and its validating parser.

Validation is what the CRD (plus the mutator's own checks) would do, collecting every problem with
its field path: unknown fields anywhere under ``spec``, matcher ``type`` (``exact``/``regex``),
regexes that RE2 cannot compile, label ``operator`` (``and``/``or``), patch ``op`` and the fields it
needs (``value`` for add/replace/test, ``from`` for move/copy), JSON Pointers (must start with ``/``;
``~`` only as ``~0``/``~1``), patch values that are not JSON (NaN, out-of-range integers), spot modes,
percentages outside 0–100, distribution group percentages summing over 100, duplicate or reserved
group names, and ``restartPolicy``.

The legacy ``filter`` is converted to the filterV2 model: every string becomes an ``exact`` matcher
and every ``{key, value}`` pair an exact key matcher with an exact value matcher.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from celmut.cel.errors import CelEvaluationError
from celmut.cel.regex import compile_pattern
from celmut.compile.presets.placement import SPOT_MODES
from celmut.policy.errors import FieldError, PolicyError
from celmut.policy.fields import Reader
from celmut.policy.mutating_policy import RECORD_PROVENANCE_ANNOTATION
from celmut.sources.documents import Document

API_GROUP = "pod-mutations.cast.ai"
API_VERSION = f"{API_GROUP}/v1"
KIND = "PodMutation"
MATCH_TYPES = ("exact", "regex")
OPERATORS = ("and", "or")
OPS = ("add", "remove", "replace", "move", "copy", "test")
RESTART_POLICIES = ("deferred", "immediate")
NO_GROUP = "(none)"  # the recorded group of pods in the unallocated percentage
COPIED_ANNOTATIONS = (
    f"{API_GROUP}/pod-mutation-id",
    f"{API_GROUP}/pod-mutation-name",
    f"{API_GROUP}/pod-mutation-source",
    RECORD_PROVENANCE_ANNOTATION,  # the generated policy records itself in celmut.io/mutated-by
)

_SPEC_FIELDS = ("filterV2", "filter", "patchesV2", "patches", "restartPolicy", "spotConfig", "distributionGroups")
_WORKLOAD_FIELDS = ("namespaces", "excludeNamespaces", "names", "excludeNames", "kinds", "excludeKinds")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_BAD_ESCAPE = re.compile(r"~(?![01])")
_INT64 = 2**63 - 1


@dataclass(frozen=True)
class Matcher:
    type: str  # exact | regex
    value: str


@dataclass(frozen=True)
class LabelMatcher:
    key: Matcher
    value: Matcher


@dataclass(frozen=True)
class LabelGroup:
    matchers: tuple[LabelMatcher, ...]
    operator: str = "and"


@dataclass(frozen=True)
class Filter:
    """One filter section: ``filterV2``, or the legacy ``filter`` converted to exact matchers."""

    namespaces: tuple[Matcher, ...] = ()
    exclude_namespaces: tuple[Matcher, ...] = ()
    names: tuple[Matcher, ...] = ()
    exclude_names: tuple[Matcher, ...] = ()
    kinds: tuple[Matcher, ...] = ()
    exclude_kinds: tuple[Matcher, ...] = ()
    labels: LabelGroup | None = None
    exclude_labels: LabelGroup | None = None


@dataclass(frozen=True)
class Operation:
    """One RFC 6902 operation; ``value`` is meaningful only when ``has_value``."""

    op: str
    path: str
    value: Any = None
    has_value: bool = False
    source: str = ""  # ``from``


@dataclass(frozen=True)
class SpotConfig:
    mode: str | None  # None: spotConfig changes nothing
    percentage: int = 100


@dataclass(frozen=True)
class DistributionGroup:
    name: str
    percentage: int
    operations: tuple[Operation, ...] = ()
    spot_mode: str | None = None


@dataclass(frozen=True)
class PodMutation:
    name: str
    source: str
    index: int
    filters: tuple[Filter, ...] = ()
    operations: tuple[Operation, ...] = ()  # patchesV2 groups in order, then legacy patches
    spot: SpotConfig | None = None
    groups: tuple[DistributionGroup, ...] = ()
    restart_policy: str = "deferred"
    annotations: dict[str, str] = field(default_factory=dict)


def claims(doc: Any) -> bool:
    """Any PodMutation document; versions other than v1 are claimed and then rejected."""
    return (
        isinstance(doc, dict) and doc.get("kind") == KIND and str(doc.get("apiVersion", "")).startswith(f"{API_GROUP}/")
    )


def parse(document: Document) -> PodMutation:
    """The validated PodMutation, or :class:`PolicyError` listing every problem with its path."""
    doc = document.content
    errors: list[FieldError] = []
    if doc.get("apiVersion") != API_VERSION:
        errors.append(
            FieldError("apiVersion", f"Unsupported value: {doc.get('apiVersion')!r}: supported: {API_VERSION!r}")
        )
    meta = Reader(doc.get("metadata"), "metadata", errors)
    name = meta.string("name", required=True)
    if name and (len(name) > 253 or not _DNS_SUBDOMAIN.match(name)):
        meta.fail(f"Invalid value: {name!r}: must be a lowercase RFC 1123 subdomain", "name")
    annotations = meta.string_map("annotations")
    spec = Reader(doc.get("spec"), "spec", errors)
    spec.unknown_fields(_SPEC_FIELDS)

    filters: list[Filter] = []
    if spec.has("filterV2"):
        filters.append(_filter_v2(spec.child("filterV2")))
    if spec.has("filter"):
        filters.append(_legacy_filter(spec.child("filter")))
    operations = _patch_list(spec)
    spot: SpotConfig | None = None
    if spec.has("spotConfig"):
        reader = spec.child("spotConfig")
        reader.unknown_fields(("mode", "distributionPercentage"))
        mode = reader.string("mode", enum=SPOT_MODES) or None
        percentage = reader.integer("distributionPercentage", 100, minimum=0, maximum=100)
        spot = SpotConfig(mode, 100 if percentage is None else percentage)
    groups = _groups(spec)
    restart = spec.string("restartPolicy", default="deferred", enum=RESTART_POLICIES) or "deferred"
    if errors:
        raise PolicyError(document.path, KIND, name, errors)
    return PodMutation(
        name=name,
        source=document.path,
        index=document.index,
        filters=tuple(f for f in filters if f != Filter()),
        operations=operations,
        spot=spot,
        groups=groups,
        restart_policy=restart,
        annotations={k: v for k, v in annotations.items() if k in COPIED_ANNOTATIONS},
    )


# --- filters ---------------------------------------------------------------------------------------


def _matcher(reader: Reader) -> Matcher:
    reader.unknown_fields(("type", "value"))
    kind = reader.string("type", required=True, enum=MATCH_TYPES)
    value = reader.data.get("value")
    if value is None:
        reader.fail("Required value", "value")
        value = ""
    elif not isinstance(value, str):
        reader.fail(f"must be a string, got {type(value).__name__}", "value")
        value = ""
    elif kind == "regex":
        try:
            compile_pattern(value)
        except CelEvaluationError as ex:
            reader.fail(f"Invalid value: {ex.message}", "value")
    return Matcher(kind or "exact", value)


def _matchers(reader: Reader, field_name: str) -> tuple[Matcher, ...]:
    return tuple(_matcher(item) for item in reader.items(field_name))


def _label_group(reader: Reader) -> LabelGroup | None:
    reader.unknown_fields(("matchers", "operator"))
    matchers: list[LabelMatcher] = []
    for item in reader.items("matchers"):
        item.unknown_fields(("keyMatcher", "valueMatcher"))
        for required in ("keyMatcher", "valueMatcher"):
            if not item.has(required):
                item.fail("Required value", required)
        matchers.append(LabelMatcher(_matcher(item.child("keyMatcher")), _matcher(item.child("valueMatcher"))))
    operator = reader.string("operator", default="and", enum=OPERATORS) or "and"
    return LabelGroup(tuple(matchers), operator) if matchers else None


def _filter_v2(reader: Reader) -> Filter:
    reader.unknown_fields(("workload", "pod"))
    workload = reader.child("workload")
    workload.unknown_fields(_WORKLOAD_FIELDS)
    pod = reader.child("pod")
    pod.unknown_fields(("labels", "excludeLabels"))
    lists = {f: _matchers(workload, f) for f in _WORKLOAD_FIELDS}
    return Filter(
        namespaces=lists["namespaces"],
        exclude_namespaces=lists["excludeNamespaces"],
        names=lists["names"],
        exclude_names=lists["excludeNames"],
        kinds=lists["kinds"],
        exclude_kinds=lists["excludeKinds"],
        labels=_label_group(pod.child("labels")) if pod.has("labels") else None,
        exclude_labels=_label_group(pod.child("excludeLabels")) if pod.has("excludeLabels") else None,
    )


def _legacy_labels(pod: Reader, field_name: str, operator_field: str) -> LabelGroup | None:
    matchers: list[LabelMatcher] = []
    for item in pod.items(field_name):
        item.unknown_fields(("key", "value"))
        key = item.string("key", required=True)
        value = item.data.get("value")
        if not isinstance(value, str):
            item.fail("Required value" if value is None else "must be a string", "value")
            value = ""
        matchers.append(LabelMatcher(Matcher("exact", key), Matcher("exact", value)))
    operator = pod.string(operator_field, default="and", enum=OPERATORS) or "and"
    return LabelGroup(tuple(matchers), operator) if matchers else None


def _legacy_filter(reader: Reader) -> Filter:
    reader.unknown_fields(("workload", "pod"))
    workload = reader.child("workload")
    workload.unknown_fields(_WORKLOAD_FIELDS)
    pod = reader.child("pod")
    pod.unknown_fields(("labelsFilter", "labelsOperator", "excludeLabelsFilter", "excludeLabelsOperator"))
    lists = {f: tuple(Matcher("exact", v) for v in workload.string_list(f) or ()) for f in _WORKLOAD_FIELDS}
    return Filter(
        namespaces=lists["namespaces"],
        exclude_namespaces=lists["excludeNamespaces"],
        names=lists["names"],
        exclude_names=lists["excludeNames"],
        kinds=lists["kinds"],
        exclude_kinds=lists["excludeKinds"],
        labels=_legacy_labels(pod, "labelsFilter", "labelsOperator"),
        exclude_labels=_legacy_labels(pod, "excludeLabelsFilter", "excludeLabelsOperator"),
    )


# --- patches ---------------------------------------------------------------------------------------


def _pointer(reader: Reader, field_name: str) -> str:
    pointer = reader.string(field_name, required=True)
    if pointer and not pointer.startswith("/"):
        reader.fail(f"Invalid value: {pointer!r}: a JSON Pointer must start with '/'", field_name)
    elif _BAD_ESCAPE.search(pointer):
        reader.fail(f"Invalid value: {pointer!r}: '~' must be escaped as '~0' ('/' as '~1')", field_name)
    return pointer


def _json_problem(value: Any) -> str:
    """Why ``value`` is not a JSON value CEL can write as a literal ('' when it is)."""
    if value is None or isinstance(value, bool | str):
        return ""
    if isinstance(value, int):
        return "" if -_INT64 <= value <= _INT64 else f"integer {value} is outside the 64-bit range"
    if isinstance(value, float):
        return "" if math.isfinite(value) else f"{value} is not a JSON number"
    if isinstance(value, list):
        return next((p for p in map(_json_problem, value) if p), "")
    if isinstance(value, dict):
        if any(not isinstance(k, str) for k in value):
            return "map keys must be strings"
        return next((p for p in map(_json_problem, value.values()) if p), "")
    return f"{type(value).__name__} is not a JSON value"


def _operation(reader: Reader) -> Operation:
    reader.unknown_fields(("op", "path", "value", "from"))
    op = reader.string("op", required=True, enum=OPS)
    path = _pointer(reader, "path")
    has_value = "value" in reader.data
    value = reader.data.get("value")
    if op in ("add", "replace", "test"):
        if not has_value:
            reader.fail(f"Required value: the {op} operation needs a value", "value")
        elif problem := _json_problem(value):
            reader.fail(f"Invalid value: {problem}", "value")
    source = _pointer(reader, "from") if op in ("move", "copy") else ""
    return Operation(op, path, value, has_value and op in ("add", "replace", "test"), source)


def _patch_list(reader: Reader) -> tuple[Operation, ...]:
    operations: list[Operation] = []
    for group in reader.items("patchesV2"):
        group.unknown_fields(("operations",))
        operations += (_operation(op) for op in group.items("operations", required=True))
    operations += (_operation(op) for op in reader.items("patches"))
    return tuple(operations)


# --- distribution groups ---------------------------------------------------------------------------


def _groups(spec: Reader) -> tuple[DistributionGroup, ...]:
    groups: list[DistributionGroup] = []
    seen: set[str] = set()
    total = 0
    for item in spec.items("distributionGroups"):
        item.unknown_fields(("name", "percentage", "configuration"))
        name = item.string("name", required=True)
        if name in seen:
            item.fail(f"Duplicate value: {name!r}", "name")
        elif name == NO_GROUP:
            item.fail(f"Invalid value: {name!r} is reserved for pods in no group", "name")
        seen.add(name)
        if not item.has("percentage"):
            item.fail("Required value", "percentage")
        percentage = item.integer("percentage", 0, minimum=0, maximum=100) or 0
        total += percentage
        if not item.has("configuration"):
            item.fail("Required value", "configuration")
        config = item.child("configuration")
        config.unknown_fields(("patches", "patchesV2", "spotMode"))
        operations = _patch_list(config)
        spot_mode = config.string("spotMode", enum=SPOT_MODES) or None
        groups.append(DistributionGroup(name, percentage, operations, spot_mode))
    if total > 100:
        spec.fail(f"Invalid value: group percentages sum to {total}: must be at most 100", "distributionGroups")
    return tuple(groups)
