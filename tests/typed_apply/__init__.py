"""ApplyConfiguration (and JSONPatch) cases typed as kube-apiserver types them: run through celmut by
tests/runtime/test_typed_apply.py and through a real API server by benchmarks/typed_apply_real.py."""
