"""Kyverno's yaml library (``sigs.k8s.io/yaml``: go-yaml v2's YAML 1.1 read through JSON, so every
number is a double and keys are strings)."""

from __future__ import annotations

from typing import Any

from tests.cel.helpers import Err, cases, check_case

ROWS = [
    ('yaml.parse("a: b")', {"a": "b"}),
    ('yaml.parse("replicas: 3")', {"replicas": 3.0}),
    ('yaml.parse("- 1\\n- two\\n- 3.5")', [1.0, "two", 3.5]),
    ('yaml.parse("x: yes\\nv: off\\nz: y\\nw: True")', {"x": True, "v": False, "z": True, "w": True}),
    ('yaml.parse("y: 1\\nn: 2")', {"true": 1.0, "false": 2.0}),  # go-yaml v2 reads the keys y and n as booleans
    ('yaml.parse("date: 2001-12-14")', {"date": "2001-12-14"}),  # timestamps stay strings
    (
        'yaml.parse("hex: 0x1F\\noctal: 017\\nsci: 1e3\\nunder: 1_000")',
        {"hex": 31.0, "octal": 15.0, "sci": 1000.0, "under": 1000.0},
    ),
    ('yaml.parse("time: 1:30\\nversion: 1.2.3\\nport: \\"80\\"")', {"time": "1:30", "version": "1.2.3", "port": "80"}),
    ('yaml.parse("1: one\\ntrue: yes\\n~: none")', {"1": "one", "true": True, "null": "none"}),
    ('yaml.parse("a: &x [1, 2]\\nb: *x")', {"a": [1.0, 2.0], "b": [1.0, 2.0]}),
    ('yaml.parse("")', None),
    ('yaml.parse("~")', None),
    ('yaml.parse("a: 1\\n---\\nb: 2")', {"a": 1.0}),  # only the first document
    ('yaml.parse("key: [unclosed")', Err("evaluation", "yaml:")),
    ('yaml.parse("a: .inf")', Err("evaluation", "unsupported value")),
    ('yaml.parse("a: !!python/object:os.system x")', Err("evaluation", "yaml:")),
    ("yaml.parse(1)", Err("compile", "no matching overload")),
    ("yaml.parse(variables.doc).metadata.labels.app", "web"),
]


@cases(ROWS)
def test_yaml_parse(expression: str, expected: Any) -> None:
    check_case(expression, expected, variables={"doc": "metadata:\n  labels:\n    app: web\n"})


def test_alias_expansion_is_bounded() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    check_case("yaml.parse(variables.bomb)", Err("evaluation", "too large"), variables={"bomb": "\n".join(lines)})


def test_kubernetes_profile_has_no_yaml_library() -> None:
    check_case('yaml.parse("a: b")', Err("compile", "undeclared reference to 'yaml.parse'"), profile="kubernetes")
