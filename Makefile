# Two entry points for a fresh machine: `make demo` and `make test` (see README.md).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
COMPONENTS := exporters rca chaos serving kernels dashboards
# torch 2.13.0 (CPU build) lies on disk on these machines; pinning it avoids a multi-GB CUDA download.
TORCH_PIN ?= torch==2.13.0

.PHONY: demo test lint typecheck pytest system-deps install install-test clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel

$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(VENV)/bin/python
	$(PIP) install "$(TORCH_PIN)"
	$(PIP) install -e '.[dev,serving,kernels]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

demo: install
	$(VENV)/bin/gpuobs demo

# Debian's Prometheus server and promtool: integration tests scrape the real exporter with them.
# Debian's chromium: the game-day report test loads the HTML page in a real headless browser.
system-deps:
	@if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null || ! command -v chromium >/dev/null; then \
		echo "installing Debian packages prometheus, prometheus-alertmanager, chromium"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			prometheus prometheus-alertmanager chromium >/dev/null; \
	fi

lint: install-test
	$(VENV)/bin/ruff check gpuobs $(COMPONENTS) tests $(wildcard bench)

# setuptools maps component folders into gpuobs.* with an import hook that mypy cannot follow,
# so type-check a tree of links laid out as the installed package.
typecheck: install-test
	rm -rf build/typecheck && mkdir -p build/typecheck
	cp -rs "$(CURDIR)/gpuobs" build/typecheck/gpuobs
	for c in $(COMPONENTS); do cp -rs "$(CURDIR)/$$c" build/typecheck/gpuobs/$$c; done
	cd build/typecheck && $(CURDIR)/$(VENV)/bin/mypy --config-file $(CURDIR)/pyproject.toml -p gpuobs

pytest: install-test system-deps
	TRITON_INTERPRET=1 $(VENV)/bin/pytest -q $(PYTEST_ARGS)

test: lint typecheck pytest

clean:
	rm -rf build $(VENV) .mypy_cache .ruff_cache .pytest_cache
