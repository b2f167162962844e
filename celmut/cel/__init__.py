"""celmut's CEL layer: Kubernetes and Kyverno CEL on cel-python, compiled to Python code.

Typical use::

    from celmut import cel

    env = cel.Environment("kyverno")
    program = env.compile('object.metadata.labels["app"] == "web"')
    program.evaluate(cel.Activation(object=pod))  # -> True

Errors are :class:`CelError` subclasses with a ``kind`` of ``compile``, ``evaluation`` or ``cost``.
The engine is ``Environment(..., backend="compiled" | "interpreted")``, else ``CELMUT_CEL_ENGINE``
(see :mod:`celmut.cel.backends.select`).
"""

from celmut.cel.activation import Activation, admission_request
from celmut.cel.environment import Environment
from celmut.cel.errors import (
    CelCompileError,
    CelCostError,
    CelError,
    CelEvaluationError,
    CelInputError,
)
from celmut.cel.evalcontext import Budget
from celmut.cel.lookups import (
    Authorizer,
    GlobalContextLookup,
    HttpPolicy,
    ImageMetadataLookup,
    RegistryPolicy,
    ResourceLookup,
    Services,
)
from celmut.cel.profiles import profile
from celmut.cel.values import to_plain

__all__ = [
    "Activation",
    "Authorizer",
    "Budget",
    "CelCompileError",
    "CelCostError",
    "CelError",
    "CelEvaluationError",
    "CelInputError",
    "Environment",
    "GlobalContextLookup",
    "HttpPolicy",
    "ImageMetadataLookup",
    "RegistryPolicy",
    "ResourceLookup",
    "Services",
    "admission_request",
    "profile",
    "to_plain",
]
