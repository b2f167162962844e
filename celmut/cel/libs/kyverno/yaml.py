"""Kyverno's YAML library (kyverno/sdk ``extensions/cel/libs/yaml``).

yaml.parse(<string>) -> <dyn>

    Parses the first YAML document the way Kyverno does (``sigs.k8s.io/yaml``: YAML 1.1 read by
    go-yaml v2, converted to JSON, decoded into ``any``). So every number is a double, map keys
    become strings, ``yes``/``no``/``on``/``off``/``y``/``n`` are booleans, timestamps stay strings
    and an empty document is ``null``.

        yaml.parse("replicas: 3\\nenabled: yes") == {"replicas": 3.0, "enabled": true}
"""

from __future__ import annotations

import base64
import datetime
import math
import re
from collections.abc import Hashable
from typing import Any

import yaml as pyyaml

from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError, describe
from celmut.cel.libs.kyverno.json import go_float
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("kyverno.yaml")
fn = LIBRARY.function

_MAX_NODES = 200_000  # refuses "billion laughs" alias expansion


class _Loader(pyyaml.SafeLoader):
    """SafeLoader with go-yaml v2's plain-scalar rules: y/n booleans, Go number syntax, no timestamps;
    map keys become strings as they are read (``1`` and ``true`` stay distinct keys)."""

    def construct_mapping(self, node: pyyaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        self.flatten_mapping(node)
        mapping: dict[Hashable, Any] = {}  # string keys, typed as SafeLoader declares the method
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            mapping[_key(key)] = self.construct_object(value_node, deep=deep)
        return mapping


_DROPPED = {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}
_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag not in _DROPPED]
    for key, resolvers in pyyaml.SafeLoader.yaml_implicit_resolvers.items()
}
_NUMBER_TAG = "tag:celmut,2024:go-number"
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))
_Loader.add_implicit_resolver(_NUMBER_TAG, re.compile(r"^[-+.0-9][-+.0-9A-Za-z_]*$"), list("-+.0123456789"))
_TRUE = frozenset({"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
_GO_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_YAML_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_SPECIAL = {".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf, ".nan": math.nan}


def go_number(text: str) -> float | None:
    """go-yaml v2's reading of a plain scalar as a number (``strconv.ParseInt(s, 0, 64)``, then
    ``ParseFloat`` for YAML-style floats), after removing underscores; None when it is a string."""
    if text.lower() in _SPECIAL and text[-3:] in ("inf", "Inf", "INF", "nan", "NaN", "NAN"):
        return _SPECIAL[text.lower()]
    plain = text.replace("_", "")
    match = _GO_INT.fullmatch(plain)
    if match:
        sign, digits = match.groups()
        base = 8 if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit() else 0
        return float(int(digits, base)) * (-1.0 if sign == "-" else 1.0)
    if _YAML_FLOAT.fullmatch(plain):
        return float(plain)
    return None


def _construct_number(loader: pyyaml.SafeLoader, node: pyyaml.ScalarNode) -> Any:
    text = loader.construct_scalar(node)
    number = go_number(text)
    return text if number is None else number


def _construct_bool(loader: pyyaml.SafeLoader, node: pyyaml.ScalarNode) -> bool:
    return loader.construct_scalar(node) in _TRUE


_Loader.add_constructor(_NUMBER_TAG, _construct_number)
_Loader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return go_float(key) if math.isfinite(key) else str(key)
    raise CelEvaluationError(f"yaml: unsupported map key {describe(key)}")


def _to_json_value(value: Any, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise CelEvaluationError("yaml: document is too large (too many nodes, or aliases expand too far)")
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int | float):
        number = float(value)
        if not math.isfinite(number):
            raise CelEvaluationError(f"yaml: unsupported value: {value}")
        return number
    if isinstance(value, dict):
        return {_key(k): _to_json_value(item, budget) for k, item in value.items()}
    if isinstance(value, list):
        return [_to_json_value(item, budget) for item in value]
    if isinstance(value, bytes):  # !!binary is base64 text in JSON
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value)


def parse_yaml(text: str) -> Any:
    try:
        loader = _Loader(text)
        try:
            document = loader.get_node() if loader.check_node() else None
            value = loader.construct_document(document) if document is not None else None
        finally:
            loader.dispose()
    except pyyaml.YAMLError as ex:
        raise CelEvaluationError(f"yaml: {ex}".splitlines()[0]) from None
    except RecursionError:
        raise CelEvaluationError("yaml: document is nested too deeply") from None
    return _to_json_value(value, [_MAX_NODES])


@fn("yaml.parse", ("string",), "dyn", cost=lambda text: len(text) // 10 if isinstance(text, str) else 0)
def parse(text: Any) -> Any:
    if not isinstance(text, str):
        raise no_such_overload("yaml.parse", text)
    return parse_yaml(text)
