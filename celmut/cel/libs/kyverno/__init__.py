"""Kyverno's CEL libraries (kyverno/sdk extensions/cel/libs), one module per library.

Only in the kyverno profile. Functions that reach outside (resource, http, globalContext, image
metadata) go through the providers in :class:`celmut.cel.lookups.Services`.
"""

from celmut.cel.declarations import Library

LIBRARIES: tuple[Library, ...] = ()
