# Two commands do everything on a fresh machine: `make demo` and `make test`
# (`make test-slow` runs the multi-minute tests that `make test` leaves out; CI runs both).
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: setup demo test test-fast test-slow lint bench-timing bench-plt clean

setup:
	@bash scripts/setup.sh

# The pipeline check (identity must build and pass 100%), then the non-LLM reference
# optimizer on the held-out test split with its report. Reruns resume from the stores.
demo: setup
	$(VENV)/bin/asmopt eval --policy identity --measure none --run-dir runs/demo-identity
	$(VENV)/bin/asmopt eval --policy compiler-search --split test --run-dir runs/demo-compiler-search
	$(VENV)/bin/asmopt report runs/demo-compiler-search

# Everything but the tests marked slow (see [tool.pytest.ini_options] in pyproject.toml), in
# TEST_WORKERS processes (pytest-xdist; 0 runs them in this process, one after another);
# -rs prints the reason of every skipped test, so none is skipped silently.
TEST_WORKERS ?= 2
test: setup
	$(PY) -m pytest -q -rs -n $(TEST_WORKERS) --durations=15

# The sandbox-free tests alone, under a minute: what to run first while changing code.
test-fast: setup
	$(PY) -m pytest -q -rs -m "fast and not slow" --durations=5

# Only the slow tests: full sweeps over the built-in suite, multi-process training runs.
test-slow: setup
	$(PY) -m pytest -q -rs -m slow

lint: setup
	$(VENV)/bin/ruff check src tests bench scripts
	$(PY) scripts/function_lengths.py src bench scripts
	cd src && $(abspath $(VENV))/bin/lint-imports --config ../pyproject.toml

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
