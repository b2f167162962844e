# Two entry points (see README): `make demo` and `make test`. Each creates .venv on first use and
# installs what it needs: the demo the runtime only, the tests the dev extras on top.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install -qq --disable-pip-version-check
RUNTIME_STAMP := $(VENV)/.runtime-stamp
DEV_STAMP := $(VENV)/.dev-stamp

.PHONY: demo test test-compiled chainsaw-real check lint bench crds docs docs-serve docs-reference playground-editor clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) -e .
	touch $@

# The dev extras: test tools, the chart tests' Helm, OpenTelemetry for the tracing tests, and the
# documentation site's tools (the tests build it and run its examples).
$(DEV_STAMP): pyproject.toml $(RUNTIME_STAMP)
	$(PIP) -e '.[dev,tracing,docs]'
	touch $@

# policies/ holds policies that work together; the three spot presets are alternatives (each places
# every workload pod), compiled in examples/spot-presets/: the demo loads policies/ plus one of them
# (make demo SPOT_PRESET=spot-partial) and the example pod pinning plan, compiled on the fly.
SPOT_PRESET ?= spot-all-except-kube-system
DEMO_POLICIES = policies/ examples/spot-presets/$(SPOT_PRESET).yaml examples/pinning-plan.yaml

# What each policy changed, as a unified diff per object (add --detailed-results for every policy's outcome).
demo: $(RUNTIME_STAMP)
	$(BIN)/celmut apply $(DEMO_POLICIES) -r examples/resources/ -r examples/preset-pods/ \
		--cluster-resources examples/cluster.yaml --cluster-resources examples/preset-cluster.yaml --diff

# Everything CI runs: the tests, then the house rules (lint, import contracts, types). The tests run in
# TEST_WORKERS processes (pytest-xdist): most of the suite waits on servers, browsers and subprocesses, so
# four processes on two cores take half the time of one; TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= 4
test: $(DEV_STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)
	$(MAKE) --no-print-directory check

# The compiled build (docs/development/compiled-build.md): the wheel with the hot path compiled by mypyc
# (CELMUT_MYPYC=1, setup.py) installed into its own virtualenv, and the tests of what it compiles run
# against it; tests/native compares its answers byte for byte with the same install's pure-Python
# modules (CELMUT_PURE=1). `python -P` and `-p celmut.native` import the installed celmut before
# pytest puts the checkout on sys.path; the suite's conftest checks that the compiled build ran.
COMPILED_VENV ?= .venv-compiled
COMPILED_DIST := build/compiled-dist
COMPILED_STAMP := $(COMPILED_VENV)/.compiled-stamp
COMPILED_TESTS ?= tests/native tests/runtime tests/server tests/cel

# The dependencies at the versions the dev virtualenv has (its pip freeze as constraints): the builds
# compared run on the same libraries, and the pip cache already holds them.
$(COMPILED_STAMP): pyproject.toml setup.py build_backend/celmut_build.py $(shell find celmut -type f -not -name '*.pyc') \
		$(DEV_STAMP)
	test -x $(COMPILED_VENV)/bin/python || $(PYTHON) -m venv $(COMPILED_VENV)
	rm -rf $(COMPILED_DIST) build/lib.*  # no module a past build left behind goes into the wheel
	mkdir -p $(COMPILED_DIST)
	$(BIN)/python -m pip freeze --exclude-editable --disable-pip-version-check > $(COMPILED_DIST)/constraints.txt
	CELMUT_MYPYC=1 PIP_CONSTRAINT=$(abspath $(COMPILED_DIST))/constraints.txt $(COMPILED_VENV)/bin/python -m pip wheel \
		-qq --disable-pip-version-check --no-deps -w $(COMPILED_DIST) .
	$(COMPILED_VENV)/bin/python -m pip install -qq --disable-pip-version-check --force-reinstall --no-deps \
		$(COMPILED_DIST)/celmut-*.whl
	$(COMPILED_VENV)/bin/python -m pip install -qq --disable-pip-version-check -c $(COMPILED_DIST)/constraints.txt \
		"$$(echo $(COMPILED_DIST)/celmut-*.whl)[dev,tracing]"
	touch $@

test-compiled: $(COMPILED_STAMP)
	CELMUT_EXPECT_BUILD=compiled $(COMPILED_VENV)/bin/python -P -m pytest -q -p celmut.native $(COMPILED_TESTS)

# Kyverno's chainsaw cases on a real API server (development only: CI has none), with celmut's webhook and
# controller in process: KUBECONFIG must reach it, and the webhook certificates for 127.0.0.1 its API server
# trusts are read from PKI= (default $$KUBE_RIG_HOME/kube/pki; docs/operations/reports.md). CASES= picks some.
chainsaw-real: $(DEV_STAMP)
	$(BIN)/python -m tests.chainsaw.real_cluster $(if $(PKI),--pki $(PKI)) $(CASES)

check: $(DEV_STAMP)
	$(BIN)/ruff check celmut tests benchmarks scripts
	$(BIN)/lint-imports
	$(BIN)/mypy

lint: check

# The CRDs in crds/ and charts/celmut are generated from celmut/install/ (tests fail while they differ).
crds: $(RUNTIME_STAMP)
	$(BIN)/python -m celmut.install.crds .

bench: $(DEV_STAMP)
	$(BIN)/python benchmarks/cel_bench.py

# The documentation site (docs/, mkdocs.yml): built into site/ with every warning an error; served with
# live reload at http://127.0.0.1:8000. The reference pages under docs/reference/ are generated from the
# code: `make docs-reference` writes them again (tests/docs/test_reference.py fails while one is stale).
docs: $(DEV_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: $(DEV_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

docs-reference: $(DEV_STAMP)
	$(BIN)/python scripts/gen_reference.py

# The playground's editor (CodeMirror 6) is one committed file, celmut/playground/static/editor.js, built
# by esbuild from playground-src/ with the exact packages of its lockfile (npm ci); the same sources give
# the same bytes (tests/playground/test_editor_bundle.py compares them). Needs Node.js 18+ and npm.
playground-editor:
	cd playground-src && npm ci --no-audit --no-fund && node build.mjs

clean:
	rm -rf $(VENV) $(COMPILED_VENV) build site *.egg-info
