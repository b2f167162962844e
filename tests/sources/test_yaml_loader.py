"""celmut's YAML loader builds exactly what PyYAML's safe loader (without the timestamp resolver)
builds, for Kubernetes objects and for every YAML feature its shortcuts hand back to PyYAML (issue 30:
the shortcuts halve reading 2,000 Pods)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from celmut.sources.documents import parse_text
from celmut.sources.yaml_loader import MAX_FAST_DEPTH, KubernetesLoader


class PyYAMLLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The reference: the same parser (libyaml's) with PyYAML's own constructor and resolver, without
    the timestamp resolver (celmut's loader before issue 30)."""


PyYAMLLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def both(text: str) -> tuple[list[Any], list[Any]]:
    return list(yaml.load_all(text, Loader=KubernetesLoader)), list(yaml.load_all(text, Loader=PyYAMLLoader))


POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  creationTimestamp: 2024-01-01T00:00:00Z
  labels: {app: web, "version": "2.0", tier: ~}
  annotations:
    count: "3"
spec:
  containers:
  - name: app
    image: nginx:1.25
    ports: [{containerPort: 8080, protocol: TCP}]
    resources: {limits: {cpu: 0.5, memory: 512Mi}}
    securityContext: {privileged: false, runAsUser: 1000}
    args: ["--flag", yes, no, on, off, 010, 0x1F, 1_000, "1:30", 1:30, .inf, -.inf, 1e3, 3.14, null, ""]
"""

DOCUMENTS: list[tuple[str, str]] = [
    ("a Pod with every plain scalar kind", POD),
    ("several documents, empty ones among them", "a: 1\n---\n---\nb: [x]\n--- ~\n"),
    ("an anchored map and its alias", "a: &x {b: 1}\nc: *x\n"),
    ("an anchored list and its alias", "a: &x [1, 2]\nc: [*x, *x]\n"),
    ("a merge key", "base: &b {a: 1, b: 2}\nderived:\n  <<: *b\n  b: 3\n"),
    ("a merge of several maps", "x: &x {a: 1}\ny: &y {b: 2}\nz: {<<: [*x, *y], c: 3}\n"),
    ("a value key", "a: {=: 1}\n"),
    ("an alias to an enclosing map", "a: &a {self: *a}\n"),
    ("an alias to an enclosing list", "&l [1, *l]\n"),
    ("explicit tags", "s: !!set {a, b}\no: !!omap [{a: 1}, {b: 2}]\np: !!pairs [{a: 1}]\nt: !!timestamp 2024-01-01\n"),
    ("binary", "b: !!binary aGVsbG8=\n"),
    ("an explicit str tag on a number", "a: !!str 10\nb: !!int '10'\nc: !!float '1'\n"),
    ("keys that are not strings", "1: a\ntrue: b\n~: c\n1.5: d\n0x10: e\n"),
    ("duplicate keys: the last wins", "a: 1\na: 2\n"),
    ("block scalars", "a: |\n  line 1\n  line 2\nb: >-\n  folded\n  text\n"),
    ("nesting deeper than the fast path", "[" * (MAX_FAST_DEPTH + 20) + "]" * (MAX_FAST_DEPTH + 20) + "\n"),
    ("a map nested as deep as the fast path goes", "{a: " * MAX_FAST_DEPTH + "1" + "}" * MAX_FAST_DEPTH + "\n"),
]


@pytest.mark.parametrize("text", [d[1] for d in DOCUMENTS], ids=[d[0] for d in DOCUMENTS])
def test_documents_load_as_pyyaml_loads_them(text: str) -> None:
    ours, reference = both(text)
    assert repr(ours) == repr(reference)  # repr: 1 vs 1.0 vs True, nan, and recursive structures


def test_an_alias_is_the_same_object_as_its_anchor_as_in_pyyaml() -> None:
    (ours,), _ = both("a: &x {b: [1]}\nc: *x\nd: &l [2]\ne: *l\n")
    assert ours["a"] is ours["c"] and ours["d"] is ours["e"]


def test_timestamps_stay_strings_as_in_kubernetes_objects() -> None:
    (pod,) = parse_text(POD)
    assert pod["metadata"]["creationTimestamp"] == "2024-01-01T00:00:00Z"


@pytest.mark.parametrize(
    "text",
    ["a: !unknown x\n", "? {a: 1}\n: b\n", "? [a, b]\n: c\n", "a: *missing\n", "a: [1\n"],
    ids=["an unknown tag", "a map as a key", "a list as a key", "an undefined alias", "an unclosed list"],
)
def test_bad_yaml_fails_as_pyyaml_fails(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as ours:
        list(yaml.load_all(text, Loader=KubernetesLoader))
    with pytest.raises(yaml.YAMLError) as reference:
        list(yaml.load_all(text, Loader=PyYAMLLoader))
    assert type(ours.value) is type(reference.value) and str(ours.value) == str(reference.value)


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(["yes", "No", "on", "0o17", "017", "0x1f", "1_0", "1:30", ".5", "1e3", "2024-01-01", "<<", "="]),
)
JSON_LIKE = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8) | SCALARS, inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(data=JSON_LIKE, flow=st.sampled_from([None, True, False]))
def test_any_dumped_data_loads_as_pyyaml_loads_it(data: Any, flow: bool | None) -> None:
    text = yaml.safe_dump_all([data, data], default_flow_style=flow, allow_unicode=True, sort_keys=False)
    ours, reference = both(text)
    assert repr(ours) == repr(reference)
