# Two commands do everything on a fresh machine: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: setup demo test lint bench-timing bench-plt clean

setup:
	@bash scripts/setup.sh

demo: setup
	$(VENV)/bin/asmopt eval --policy identity

test: setup
	$(PY) -m pytest -q

lint: setup
	$(VENV)/bin/ruff check src tests bench scripts

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
