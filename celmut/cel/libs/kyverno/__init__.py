"""Kyverno's CEL libraries (kyverno/sdk extensions/cel/libs), one module per library.

Only in the kyverno profile. Functions that reach outside (resource, http, globalContext, image
metadata) go through the providers in :class:`celmut.cel.lookups.Services`.
"""

from celmut.cel.declarations import Library
from celmut.cel.libs.kyverno import (
    globalcontext,
    gzip,
    hash,
    http,
    image,
    json,
    math,
    random,
    resource,
    time,
    transform,
    user,
    x509,
    yaml,
)

LIBRARIES: tuple[Library, ...] = (
    resource.LIBRARY,
    http.LIBRARY,
    globalcontext.LIBRARY,
    image.LIBRARY,
    user.LIBRARY,
    x509.LIBRARY,
    json.LIBRARY,
    yaml.LIBRARY,
    gzip.LIBRARY,
    hash.LIBRARY,
    random.LIBRARY,
    time.LIBRARY,
    transform.LIBRARY,
    math.LIBRARY,
)
"""CEL function libraries, one module per library; :mod:`celmut.cel.environment` assembles them."""
