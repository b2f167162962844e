"""celmut: a Kyverno-compatible CEL mutation engine for Kubernetes."""

__version__ = "0.1.0"
