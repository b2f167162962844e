"""``-o yaml`` prints the bytes PyYAML's safe dumper printed before issue 30 made it twice as fast:
quoting, anchors for a value met twice, every scalar type, and arbitrary generated data."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from celmut.cli import output
from celmut.sources.yaml_dumper import ObjectDumper

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from workloads import realistic_pod

PYYAML: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # what -o yaml used before


def pyyaml(objects: list[Any]) -> str:
    return yaml.dump_all(objects, Dumper=PYYAML, sort_keys=False, default_flow_style=False)


SHARED = {"a": 1}
LOOP: dict[str, Any] = {"name": "loop"}
LOOP["self"] = LOOP
STRINGS = ["true", "no", "Yes", "~", "null", "", " padded", "123", "0x1f", "1e3", "1:30", "2024-01-01", "a: b",
           "- x", "#c", "multi\nline\n", "tab\there", "ünïcødé ✓", "'quoted'", '"dq"', "&anchor", "*alias", "<<", "="]  # fmt: skip

OBJECTS: list[tuple[str, list[Any]]] = [
    ("realistic Pods", [realistic_pod("a"), realistic_pod("b")]),
    ("strings that must be quoted or need a style", [{"s": STRINGS, **{s: s for s in STRINGS}}]),
    (
        "every scalar type",
        [{"i": [0, -1, 2**70], "f": [1.5, 1e300, float("inf"), -0.0], "b": [True, False], "n": None}],
    ),
    ("keys that are not strings", [{1: "a", None: "c", 2.5: "d"}, {True: "b", False: "e"}]),
    ("empty collections", [{"m": {}, "l": [], "nested": [[], [{}]]}, {}, []]),
    ("a value met twice: an anchor and an alias", [{"x": SHARED, "y": SHARED, "z": [SHARED]}]),
    ("a list met twice", [{"x": STRINGS[:2], "y": [STRINGS[:2]]}, {"again": STRINGS[:2]}]),
    ("an object that contains itself", [LOOP]),
    ("bytes", [{"b": b"\x00\xff"}]),
    ("scalars as documents", ["text", 5, None, True]),
    ("a long line", [{"k": "word " * 40}]),
]


@pytest.mark.parametrize("objects", [o[1] for o in OBJECTS], ids=[o[0] for o in OBJECTS])
def test_yaml_output_is_pyyamls_byte_for_byte(objects: list[Any]) -> None:
    assert output.render(objects, "yaml") == pyyaml(objects)


def test_a_type_pyyaml_refuses_is_refused_the_same_way() -> None:
    with pytest.raises(yaml.representer.RepresenterError, match="cannot represent an object"):
        output.render([{"x": object()}], "yaml")


def test_other_settings_are_pyyamls_unchanged() -> None:
    data = {"b": [1, {"c": "true"}], "a": SHARED, "again": SHARED}
    for options in ({"sort_keys": True}, {"default_flow_style": None}, {"default_style": '"'}):
        assert yaml.dump(data, Dumper=ObjectDumper, **options) == yaml.dump(data, Dumper=PYYAML, **options)


SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10), st.sampled_from(STRINGS)
)
JSON_LIKE = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6) | SCALARS, inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(objects=st.lists(JSON_LIKE, min_size=1, max_size=3))
def test_any_json_like_data_prints_as_pyyaml_prints_it(objects: list[Any]) -> None:
    assert output.render(objects, "yaml") == pyyaml(objects)
