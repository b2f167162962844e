"""The empty audit annotations every outcome that evaluated nothing shares, and that refuse to change.

Its own module, left out of the compiled build (celmut.native): a subclass of ``dict`` whose
methods are assigned in one statement is Python mypyc does not compile, and nothing here is hot.
"""

from __future__ import annotations

from typing import Any


class _NoAuditAnnotations(dict[str, str]):
    """An empty dict that refuses to change: one serves every outcome that evaluated nothing. A dict
    still, so ``dataclasses.asdict``, ``copy.deepcopy``, pickle and JSON treat it as the empty dict."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("these audit annotations are shared by outcomes that evaluated nothing: copy them to change")

    __setitem__ = __delitem__ = __ior__ = update = setdefault = pop = popitem = clear = _refuse


NO_AUDIT_ANNOTATIONS: dict[str, str] = _NoAuditAnnotations()
