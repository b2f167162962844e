"""cel-go's extension libraries (github.com/google/cel-go/ext), one module per library.

Kubernetes enables strings, sets and lists; Kyverno additionally enables encoders, math and regex.
Each profile takes the versioned ones at the version its system configures
(:mod:`celmut.cel.profiles`).
"""
