"""The YAML dumper of printed and shown objects (``celmut apply -o yaml``, the playground's diff):
PyYAML's safe dumper (libyaml's emitter where PyYAML was built with it), with the shortcuts that make
``apply -o yaml`` of 2,000 Pods twice as fast (issue 30) and print the same bytes
(``tests/cli/test_yaml_dumper.py`` compares them).

* JSON-shaped values (dicts, lists, strings, integers, booleans, null: every Kubernetes object) become
  nodes in one tight walk, instead of PyYAML's general representer (a type lookup, an alias check and
  two or three calls per value). Any other value (a float, bytes, a type PyYAML refuses) goes through
  PyYAML's representer, and a dict or list met twice is the same node, so that PyYAML's emitter writes
  an anchor and an alias just as before.
* The emitter asks twice per scalar whether its text would read back as another type (``"true"`` must
  be quoted): the answer is remembered per text within one dump.

The shortcuts apply with the settings celmut prints with (block style, keys in their order, no forced
scalar style); other settings use PyYAML's representer unchanged.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from celmut.sources.yaml_loader import ResolvedOnce

_BASE: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_INT, _BOOL, _NULL = "tag:yaml.org,2002:int", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"


class ObjectDumper(ResolvedOnce, _BASE):  # type: ignore[valid-type,misc]
    """SafeDumper (libyaml's when available) with the shortcuts of the module."""

    def represent_data(self, data: Any) -> Any:
        if self.default_flow_style is not False or self.sort_keys or self.default_style is not None:
            return super().represent_data(data)
        return self._node(data)

    def _node(self, data: Any) -> Any:
        """The node PyYAML's SafeRepresenter makes of ``data`` (block style, keys in order)."""
        kind = type(data)
        if kind is str:
            return ScalarNode(_STR, data)
        if kind is dict or kind is list:
            node = self.represented_objects.get(id(data))
            if node is not None:
                return node  # the same object again: the emitter writes an alias to its anchor
            self.object_keeper.append(data)
            if kind is dict:
                pairs: list[tuple[Node, Node]] = []
                node = self.represented_objects[id(data)] = MappingNode(_MAP, pairs, flow_style=False)
                pairs.extend((self._node(key), self._node(value)) for key, value in data.items())
            else:
                items: list[Node] = []
                node = self.represented_objects[id(data)] = SequenceNode(_SEQ, items, flow_style=False)
                items.extend(self._node(item) for item in data)
            return node
        if kind is bool:
            return ScalarNode(_BOOL, "true" if data else "false")
        if kind is int:
            return ScalarNode(_INT, str(data))
        if data is None:
            return ScalarNode(_NULL, "null")
        return super().represent_data(data)


assert not ObjectDumper.yaml_path_resolvers, "a path resolver would make a scalar's tag depend on its place"
