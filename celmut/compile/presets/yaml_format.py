"""Generated policies printed for people: multi-line CEL as YAML literal blocks (``celmut compile``)."""

from __future__ import annotations

from typing import Any, TypeVar, overload

import yaml


class BlockStr(str):
    """A multi-line string that YAML dumps as a literal block (``|``), so a generated expression prints
    as written instead of as one quoted line of ``\\n`` escapes. Equal to (and hashes like) the plain
    string; only the YAML representation differs."""


def _represent_block(dumper: yaml.representer.BaseRepresenter, data: BlockStr) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(data), style="|")


yaml.SafeDumper.add_representer(BlockStr, _represent_block)
yaml.Dumper.add_representer(BlockStr, _represent_block)


_T = TypeVar("_T")


# The copy has the shape (and type) of ``value``; only its multi-line strings change class.
@overload
def readable(value: dict[str, Any]) -> dict[str, Any]: ...
@overload
def readable(value: _T) -> _T: ...
def readable(value: Any) -> Any:
    """A copy of ``value`` (a generated policy) whose multi-line strings dump as YAML literal blocks:
    lines lose their trailing blanks (which would force the quoted style) and become a BlockStr."""
    if isinstance(value, dict):
        return {k: readable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [readable(v) for v in value]
    if isinstance(value, str) and "\n" in value:
        return BlockStr("\n".join(line.rstrip() for line in value.splitlines()))
    return value
