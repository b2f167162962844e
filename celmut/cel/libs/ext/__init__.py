"""cel-go's extension libraries (github.com/google/cel-go/ext), one module per library.

Kubernetes enables strings (v2), sets and lists (v3, since 1.34); Kyverno additionally enables
encoders, math and regex.
"""

from celmut.cel.declarations import Library
from celmut.cel.libs.ext import encoders, lists, math, regex, sets, strings

KUBERNETES_LIBRARIES: tuple[Library, ...] = (strings.LIBRARY, sets.LIBRARY, lists.LIBRARY)
KYVERNO_ONLY_LIBRARIES: tuple[Library, ...] = (encoders.LIBRARY, math.LIBRARY, regex.LIBRARY)
