"""The API server's check that typed constructions follow their field paths, at admission time.

In ``Object{spec: Object.spec{selector: Object.spec.selector{…}}}`` each nested construction must be
named after the path it is assigned to; lists and maps do not add to the path. kube-apiserver checks
this on the value a mutation returns — an ApplyConfiguration's ``Object``, and each JSONPatch
``value`` that is a typed construction, whose own name is then the root
(``staging/src/k8s.io/apiserver/pkg/cel/mutation/dynamic/objects.go``,
``CheckTypeNamesMatchFieldPathNames``; called from ``patch/smd.go`` and ``patch/json_patch.go``).
It is a run-time error, so a policy with a wrong name is created and then fails at admission, following
its failurePolicy; Kyverno's MutatingPolicy does the same (``pkg/cel/policies/mpol/compiler/
applyconfig.go``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from celmut.cel.values import StructValue
from celmut.runtime.failures import MutationError


def check_type_names(values: Iterable[Any]) -> None:
    """Raise ``type mismatch: …`` (Go's ``errors.Join``: one line per mismatch) if a typed value
    among ``values`` has a nested construction named differently from its field path."""
    errors: list[str] = []
    for value in values:
        if isinstance(value, StructValue):
            _type_check(value, value.type_name, errors)
    if errors:
        raise MutationError("type mismatch: " + "\n".join(errors))


def json_patch_values(result: Any) -> list[Any]:
    """The ``value`` of each operation of a JSONPatch expression's result."""
    if not isinstance(result, list):
        return []
    return [item.get("value") for item in result if isinstance(item, dict)]


def _type_check(value: Any, path: str, errors: list[str]) -> None:
    if isinstance(value, StructValue):
        if value.type_name != path:
            errors.append(
                f'unexpected type name "{value.type_name}", expected "{path}", '
                "which matches field name path from root Object type"
            )
        for key, field in value.items():
            if isinstance(field, dict | list | tuple):  # a scalar names no type
                _type_check(field, f"{path}.{key}", errors)
    elif isinstance(value, dict):
        for item in value.values():
            _type_check(item, path, errors)
    elif isinstance(value, list | tuple):
        for item in value:
            _type_check(item, path, errors)
