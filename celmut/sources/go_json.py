"""How Go's ``encoding/json`` matches object keys to struct fields, for the Kyverno CLI's own files.

Kyverno reads its Test, Values, Context and UserInfo files with ``UnmarshalStrict``
(``k8s.io/apimachinery/pkg/util/yaml`` or ``sigs.k8s.io/yaml``; ``cmd/cli/kubectl-kyverno/test/load.go``,
``utils/common`` ``LoadYAML`` for ``values/load.go`` and ``context/load.go``): YAML turned into JSON and
decoded by ``encoding/json``, which matches a key to a field exactly or else case-insensitively, and — being
strict — fails on a key that names no field (``json: unknown field "x"``). Only struct fields fold; the keys
of a Go map (variable names, labels, values) are data and stay as written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from celmut.sources.documents import DocumentError

# Go's strings.EqualFold also folds these two letters onto ASCII ones (unicode.SimpleFold).
_GO_FOLDS = str.maketrans({"\u212a": "k", "\u017f": "s"})

# metav1.TypeMeta (inlined) and metav1.ObjectMeta (``metadata``), the head of every Kyverno CLI file.
TYPE_META_FIELDS = ("apiVersion", "kind")
OBJECT_META_FIELDS = (
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields",
)  # fmt: skip


def _go_fold(key: str) -> str:
    return key.translate(_GO_FOLDS).lower()


def json_field_keys(mapping: dict[Any, Any], fields: Iterable[str]) -> dict[Any, Any]:
    """``mapping`` with each key spelled as the field it decodes into.

    ``userInfo:`` is a Test's ``userinfo`` field (upstream ``test-mutating-admission-policy/check-user-info``
    writes it so). A key that names no field is kept as written; when two spellings of one field appear,
    the last wins, as in ``encoding/json``.
    """
    by_fold = {_go_fold(name): name for name in fields}
    return {(by_fold.get(_go_fold(k), k) if isinstance(k, str) else k): v for k, v in mapping.items()}


def strict_fields(mapping: dict[Any, Any], fields: Iterable[str], where: str, source: str) -> dict[Any, Any]:
    """:func:`json_field_keys`, and a DocumentError naming the file and field for a key that names no
    field, as ``UnmarshalStrict`` fails (``json: unknown field "x"``) rather than ignore it."""
    known = tuple(fields)
    folded = json_field_keys(mapping, known)
    for key in folded:
        if key not in known:
            at = f"{where}.{key}" if where else str(key)
            raise DocumentError(source, f'{at}: unknown field "{key}" (Kyverno reads this file strictly)')
    return folded
