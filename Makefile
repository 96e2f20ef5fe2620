# `make demo` and `make test` work on a fresh machine: each creates .venv and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_LOG := rules/examples/cuda_oom/fragmentation.log

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml constraints-test.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -c constraints-test.txt -e '.[dev,probes]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	@echo "$$ crashcart analyze $(DEMO_LOG)"
	@$(BIN)/crashcart analyze $(DEMO_LOG); status=$$?; test $$status -le 1

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: lint
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info
