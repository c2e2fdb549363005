# Two entry points that set themselves up on a fresh machine (Python 3.10+ and Node 20):
#   make demo   -> validate the example shipped in examples/
#   make test   -> the whole test suite (lint, types, unit, e2e, conformance)
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test setup lint typecheck pytest bench clean extension extension-e2e e2e-tools

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	# the CPU build of torch first: an unpinned torch would pull a multi-GB CUDA build
	$(BIN)/python -m pip install -q --disable-pip-version-check "torch==2.13.0"
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[dev,cluster]"
	touch $(STAMP)

setup: $(STAMP)

# no goldens needed: the first dump on synthesized inputs is the reference; then one with goldens
demo: $(STAMP)
	$(BIN)/pypto-lsp validate examples/gather_rows/passes_dump
	$(BIN)/pypto-lsp validate examples/elementwise/passes_dump

lint: $(STAMP)
	$(BIN)/ruff check pypto_lsp tests benchmarks
	$(BIN)/ruff format --check pypto_lsp tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

# unit and conformance tests on two xdist workers (the machine's two cores); the end-to-end,
# adversarial and bad-input tests, which time servers, worker pools and clusters, one at a time
pytest: $(STAMP)
	$(BIN)/python -m pytest -q --durations=15 -n 2 tests/unit tests/conformance
	$(BIN)/python -m pytest -q --durations=15 tests/e2e tests/adversarial tests/badinput

# the VS Code extension: its unit tests, the .vsix, and the end-to-end test in real VS Code
# (code-server + headless Chromium, installed on first use; see vscode-extension/test/e2e/run.sh)
extension: $(STAMP)
	cd vscode-extension && npm ci --no-audit --no-fund && npm test && npm run package

extension-e2e: extension
	PYPTO_LSP_PYTHON=$(CURDIR)/$(BIN)/python bash vscode-extension/test/e2e/run.sh --no-build

# Debian's chromium (and code-server) before pytest: the report test draws report.html in a real browser
e2e-tools:
	bash vscode-extension/test/e2e/setup.sh

test: lint typecheck e2e-tools pytest extension-e2e

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
