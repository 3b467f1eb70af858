# Two entry points for a fresh machine: `make demo` and `make test` (see README.md).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
# The component folders are listed once, in pyproject.toml ([tool.setuptools] package-dir).
COMPONENTS := $(shell $(PYTHON) tools/repo_layout.py components)
ifeq ($(strip $(COMPONENTS)),)
$(error cannot read the components from pyproject.toml with $(PYTHON) (Python 3.11+ needed))
endif
# torch 2.13.0 (CPU build) lies on disk on these machines; pinning it avoids a multi-GB CUDA download.
TORCH_PIN ?= torch==2.13.0

.PHONY: demo test lint typecheck pytest system-deps install install-test clean bench-gpu-prep bench-gpu-check bench-gpu dashboards

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel

$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(VENV)/bin/python
	$(PIP) install "$(TORCH_PIN)"
	$(PIP) install -e '.[dev,serving,kernels,semantic]'
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
	$(VENV)/bin/ruff check gpuobs $(COMPONENTS) tests bench tools

# setuptools maps component folders into gpuobs.* with an import hook that mypy cannot follow,
# so type-check a tree of links laid out as the installed package.
typecheck: install-test
	rm -rf build/typecheck
	$(PY) tools/repo_layout.py link-tree build/typecheck
	cd build/typecheck && $(CURDIR)/$(VENV)/bin/mypy --config-file $(CURDIR)/pyproject.toml -p gpuobs
	$(VENV)/bin/mypy --config-file pyproject.toml tools bench/gpu.py

# Dashboards, rules and Grafana alerting into build/dashboards; the Kubernetes manifests into deploy/monitoring
# (committed: tests/dashboards checks that they are what this target writes).
dashboards: install
	$(VENV)/bin/gpuobs dashboards build build/dashboards --k8s deploy/monitoring

# --durations: the slowest tests close the log, so a CI run shows where its time went (the 2-core budget).
pytest: install-test system-deps
	TRITON_INTERPRET=1 $(VENV)/bin/pytest -q --durations=25 $(PYTEST_ARGS)

test: lint typecheck pytest

# GPU benchmarks on the lent H200 (docs/BENCHMARKS.md): prep here, then `bash bench/gpu.sh NAME` there
# through the device tool with carry ["build/wheels"]; bench-gpu-check installs the same closure offline
# into a bare venv here and imports every module (needs the package registry, not part of `make test`).
bench-gpu-prep:
	$(PYTHON) bench/gpu.py prep

bench-gpu-check:
	$(PYTHON) bench/gpu.py check

bench-gpu:
	@test -n "$(BENCH)" || { echo "usage: make bench-gpu BENCH='kernels serving_engine_gpu'" >&2; exit 2; }
	bash bench/gpu.sh $(BENCH)

clean:
	rm -rf build $(VENV) .mypy_cache .ruff_cache .pytest_cache
