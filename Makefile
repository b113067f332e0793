# The two commands a fresh machine needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint typecheck bench bench-deps clean

$(BIN)/agentsrc: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,mcp,web]'
	@touch $@

run: $(BIN)/agentsrc
	$(BIN)/agentsrc run

test: $(BIN)/agentsrc
	$(BIN)/ruff check agentsrc_daemon tests bench tools
	$(BIN)/mypy --no-incremental
	$(BIN)/pytest -q

lint: $(BIN)/agentsrc
	$(BIN)/ruff check agentsrc_daemon tests bench tools

typecheck: $(BIN)/agentsrc
	$(BIN)/mypy --no-incremental

# What the benchmarks compare against (bench/run.py backfill): agentsview's Go binary,
# shipped in its wheel. Not a dependency of agentsrc.
AGENTSVIEW_VERSION := 0.46.1

bench-deps: $(BIN)/agentsrc
	$(BIN)/pip install -q agentsview==$(AGENTSVIEW_VERSION)

bench: bench-deps
	$(BIN)/python bench/run.py all

clean:
	rm -rf $(VENV) build *.egg-info
