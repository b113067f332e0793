# The two commands a fresh machine needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint typecheck bench clean

$(BIN)/agentsrc: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,mcp]'
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

bench: $(BIN)/agentsrc
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
