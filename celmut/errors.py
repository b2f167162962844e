"""celmut's errors: one hierarchy, each layer's errors defined in that layer, all under
:class:`CelmutError`, so a surface can catch one base and report every user error the same way::

    CelmutError
    ├── ConfigurationError            bad settings: flags, TLS files, an unknown CEL engine
    │   ├── UnknownCelEngine          (cel_engines.py)
    │   └── PolicySelectorError       a --policy-selector that is not a label selector (policy/selection.py)
    ├── DocumentError                 a file or document that cannot be read (sources/documents.py)
    ├── PolicyError                   an invalid policy or preset, every field error with its path
    │                                 (policy/errors.py)
    ├── CelError                      CEL, with kind compile | evaluation | cost (cel/errors.py)
    │   ├── CelCompileError           every issue with its line and column
    │   └── CelEvaluationError
    │       ├── CelCostError          cost budget or deadline exceeded
    │       ├── CelInputError         an input over the size limit
    │       ├── LookupUnavailable     a CEL function needs a provider nobody gave (cel/lookups.py)
    │       └── LookupFailed          the provider answered with an error
    │           ├── ResourceNotFound
    │           └── ResourceConflict
    ├── EvaluationFailure             a policy failed on a request (runtime/failures.py)
    │   ├── PolicyFailure             an expression or mutation failed: field path and message
    │   │   └── DecodeFailure         the API server could not decode the patched object
    │   ├── MutationError             a patch or apply configuration that cannot be applied
    │   ├── MergeError
    │   └── ParamError                a binding's params cannot be resolved
    ├── ClusterError                  the API server answered with an error (kube/client.py)
    │   ├── NotFound, Conflict, Gone, TooManyRequests, Unreachable
    └── ReviewError                   a malformed AdmissionReview (server/review.py)

Not in the hierarchy, on purpose: control-flow signals that never leave their module (a JSONPatch
``test`` that did not hold, ``runtime/mutations.TestFailed``; the parser's macro errors) and the
``ValueError``s of ported Go parsers (``netip``, ``neturl``, ``resource.Quantity``, ``semver``, image
references), which the CEL libraries turn into :class:`CelEvaluationError` at their boundary.
"""

from __future__ import annotations


class CelmutError(Exception):
    """Base of every error celmut raises on purpose; its message is fit to show a user."""


class ConfigurationError(CelmutError, ValueError):
    """A setting celmut was started with cannot be used (a flag, a file it names, a backend)."""
