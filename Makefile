# Two entry points (see README): `make demo` and `make test`. Each creates .venv on first use and
# installs what it needs: the demo the runtime only, the tests the dev extras on top.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install -qq --disable-pip-version-check
RUNTIME_STAMP := $(VENV)/.runtime-stamp
DEV_STAMP := $(VENV)/.dev-stamp

.PHONY: demo test check lint bench crds docs docs-serve docs-reference playground-editor clean

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

# Everything CI runs: the tests, then the house rules (lint, import contracts, types).
test: $(DEV_STAMP)
	$(BIN)/python -m pytest -q
	$(MAKE) --no-print-directory check

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
	rm -rf $(VENV) build site *.egg-info
