# Two entry points (see README): `make demo` and `make test`. Each creates .venv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint bench crds clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,fast]'
	touch $(STAMP)

# policies/presets/ ships the three spot presets as alternatives (each places every workload pod):
# the demo loads every other policy plus one of them (make demo SPOT_PRESET=spot-partial) and the
# example pod pinning plan, compiled on the fly.
SPOT_PRESET ?= spot-all-except-kube-system
POLICY_FILES = $(shell find policies -name '*.yaml' -o -name '*.yml' -o -name '*.json')
DEMO_POLICIES = $(sort $(filter-out policies/presets/spot-%,$(POLICY_FILES))) policies/presets/$(SPOT_PRESET).yaml \
	examples/pinning-plan.yaml

demo: $(STAMP)
	$(BIN)/celmut apply $(DEMO_POLICIES) -r examples/resources/ -r examples/preset-pods/ \
		--cluster-resources examples/cluster.yaml --cluster-resources examples/preset-cluster.yaml --detailed-results

test: $(STAMP)
	$(BIN)/python -m pytest -q
	$(BIN)/ruff check celmut tests benchmarks

lint: $(STAMP)
	$(BIN)/ruff check celmut tests benchmarks

# The CRDs in crds/ and charts/celmut are generated from celmut/install/ (tests fail while they differ).
crds: $(STAMP)
	$(BIN)/python -m celmut.install.crds .

bench: $(STAMP)
	$(BIN)/python benchmarks/cel_bench.py

clean:
	rm -rf $(VENV) build *.egg-info
