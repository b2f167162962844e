# Two entry points (see README): `make demo` and `make test`. Each creates .venv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,fast]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/celmut apply policies/ -r examples/resources/ --cluster-resources examples/cluster.yaml --detailed-results

test: $(STAMP)
	$(BIN)/python -m pytest -q
	$(BIN)/ruff check celmut tests benchmarks

lint: $(STAMP)
	$(BIN)/ruff check celmut tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/cel_bench.py

clean:
	rm -rf $(VENV) build *.egg-info
