"""The YAML loader of Kubernetes documents: PyYAML's safe loader without the timestamp resolver, fast.

Kubernetes reads timestamps as strings (PyYAML would turn ``2024-01-01T00:00:00Z`` into a datetime,
which no Kubernetes object contains). The parser is libyaml's where PyYAML was built with it: the
pure-Python scanner dominated reading thousands of resources (issue 16: ~7x a libyaml read).

Two shortcuts keep PyYAML's results exactly (``tests/sources/test_yaml_loader.py`` compares them)
and halve the time of reading 2,000 Pods (issue 30):

* the tag of a plain scalar (a few regular expressions per value) is resolved once per distinct
  value in a stream: a list of Pods repeats the same keys and values thousands of times;
* a document made only of maps, sequences and scalars (every Kubernetes object) is built by one
  tight walk instead of PyYAML's general constructor (a generator per map, a tag lookup per node).
  Anything else (a merge key ``<<``, an explicit collection tag such as ``!!set``, a complex key, an
  alias to an enclosing node, nesting deeper than :data:`MAX_FAST_DEPTH`) goes through PyYAML's
  constructor, for the whole document.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_BASE: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_PLAIN_SCALAR_TAGS = ("tag:yaml.org,2002:null", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int")
MAX_FAST_DEPTH = 100  # deeper documents use PyYAML's constructor, which does not recurse


class _Unusual(Exception):
    """The document needs PyYAML's general constructor."""


class ResolvedOnce:
    """A YAML loader's or dumper's resolver that works out a plain scalar's tag once per text: the
    implicit resolvers run their regular expressions once for each distinct text of a stream, not once
    per scalar (no path resolvers are registered, so the text alone decides)."""

    DEFAULT_SCALAR_TAG: str

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._resolved: dict[str, str] = {}  # a plain scalar's text → its tag

    def resolve(self, kind: type[Node], value: Any, implicit: Any) -> Any:
        if kind is not ScalarNode:
            return super().resolve(kind, value, implicit)  # type: ignore[misc]
        if not implicit[0]:  # not plain: a string whatever its text (PyYAML's BaseResolver.resolve)
            return self.DEFAULT_SCALAR_TAG
        tag = self._resolved.get(value)
        if tag is None:
            tag = self._resolved[value] = super().resolve(kind, value, implicit)  # type: ignore[misc]
        return tag


class KubernetesLoader(ResolvedOnce, _BASE):  # type: ignore[valid-type,misc]
    """SafeLoader (libyaml's when available) without the timestamp resolver; see the module."""

    def construct_document(self, node: Node) -> Any:
        try:
            data = self._build(node, {}, set(), 0)
        except _Unusual:
            self.constructed_objects.clear()  # the scalars built so far
            return super().construct_document(node)
        self.constructed_objects.clear()
        return data

    def _build(self, node: Node, built: dict[Node, Any], open_nodes: set[Node], depth: int) -> Any:
        """``node`` as PyYAML's SafeConstructor builds it; ``built`` keeps each collection node's
        value, so that an alias is the same object, as PyYAML makes it."""
        kind, tag = node.__class__, node.tag
        if kind is ScalarNode:
            if tag == _STR:
                return node.value
            if tag in _PLAIN_SCALAR_TAGS:
                return self.yaml_constructors[tag](self, node)
            return self.construct_object(node, deep=True)  # floats, !!binary, explicit tags …
        if node in built:
            return built[node]
        if node in open_nodes or depth > MAX_FAST_DEPTH:
            raise _Unusual
        open_nodes.add(node)
        depth += 1
        out: Any
        if kind is MappingNode and tag == _MAP:
            out = {}
            for key_node, value_node in node.value:
                if key_node.__class__ is not ScalarNode:
                    raise _Unusual  # PyYAML refuses a map as a key and makes a list key a tuple
                key_tag = key_node.tag
                if key_tag == _STR:
                    key = key_node.value
                elif key_tag in _PLAIN_SCALAR_TAGS:
                    key = self.yaml_constructors[key_tag](self, key_node)
                else:
                    raise _Unusual  # a merge key "<<", a value key "=", a float key …
                out[key] = self._build(value_node, built, open_nodes, depth)
        elif kind is SequenceNode and tag == _SEQ:
            out = [self._build(item, built, open_nodes, depth) for item in node.value]
        else:
            raise _Unusual
        open_nodes.discard(node)
        built[node] = out
        return out


KubernetesLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
assert not KubernetesLoader.yaml_path_resolvers, "a path resolver would make a scalar's tag depend on its place"
