"""cel-go's extension libraries (github.com/google/cel-go/ext), one module per library.

Kubernetes enables strings (v2) and sets; Kyverno additionally enables encoders, lists (v3), math
and regex.
"""

from celmut.cel.declarations import Library

KUBERNETES_LIBRARIES: tuple[Library, ...] = ()
KYVERNO_ONLY_LIBRARIES: tuple[Library, ...] = ()
