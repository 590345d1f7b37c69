# `make demo` and `make test` bootstrap .venv on a fresh machine, then run.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export PAPERLAB_DATA ?= $(shell [ -d ../shared/data ] && cd ../shared/data && pwd)
export OMP_NUM_THREADS ?= 2

.PHONY: demo test lint package-check forecast-check venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The CPU wheel first: a looser torch requirement would pull a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[dev]"
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests $(wildcard benchmarks/*.py)
	$(BIN)/mypy

test: $(STAMP) lint
	$(BIN)/python -m pytest

package-check: $(STAMP)
	bash .ci/package_check

# neuralforecast and darts are optional extras (ray, lightning: ~1 min to install), so `make test` skips their
# adapters; here they are installed and tested for real, a missing package failing instead of skipping
forecast-check: $(STAMP)
	$(BIN)/pip install -q -e ".[forecast]"
	PAPERLAB_REQUIRE_FORECAST=1 $(BIN)/python -m pytest tests/losses

demo: $(STAMP)
	$(BIN)/paperlab reproduce --quick --jobs 2 --out runs/demo

clean:
	rm -rf $(VENV) runs
