"""Compile stage: presets into policies, policy models into CEL programs, checked up front.

- :mod:`.pipeline` — sources to a :class:`~.pipeline.Compilation` in one call (the path every surface takes);
- :mod:`.policies` — policy models to :mod:`.compiled` policies, every expression compiled once;
- :mod:`.compiled` — what the runtime evaluates (the only module of this floor the runtime imports);
- :mod:`.presets` — CAST AI-style presets compiled into MutatingPolicies;
- :mod:`.autogen` — pod-controller variants of MutatingPolicies.

This package module imports nothing, so importing :mod:`.compiled` does not load the compiler.
"""
