# Two commands on a fresh machine with Python 3.11+: `make demo` and `make test`.
# Each creates .venv and installs only what it needs. They share the one .venv, with a
# stamp file per install level, so they work in either order and a second run installs
# nothing (a changed pyproject.toml makes the stamps stale and reinstalls).
#   make demo   the main job (examples/survey/pipeline.toml, run twice); installs the package and its dependencies
#   make test   the fast tier of the tests, on every core (a few minutes on 2 cores: run it
#               before every commit); installs the test stack (scikit-learn, river, Jupyter...)
#   make test-all  every tier one after another, as CI runs them (.ci/run); or one tier:
#               make test-slow | test-spark | test-browser | test-kill | test-fuzz-slow
#   make check  ruff and mypy; installs the lint extra
#   make docs   the documentation site into site/ (mkdocs build --strict); installs the docs extra
# Another interpreter: make demo PYTHON=python3.12 (or a full path).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# --no-compile: pip byte-compiles every module it installs (PySpark's, SciPy's and
# scikit-learn's tests among them), a third of the test stack's install time (44 -> 31 s);
# Python compiles the modules that are imported when they first are. Not where
# PYTHONDONTWRITEBYTECODE is set: no process would then ever keep what it compiled, and
# every import would compile anew (import polars_ppdm: 0.27 -> 0.62 s).
PIP := $(BIN)/python -m pip install --quiet$(if $(PYTHONDONTWRITEBYTECODE),, --no-compile)
# The target the user typed, for the hint in the interpreter check's message.
GOAL := $(or $(firstword $(MAKECMDGOALS)),demo)

.DEFAULT_GOAL := demo
.PHONY: demo test test-all test-slow test-spark test-browser test-kill test-fuzz-slow tiers-check check docs extras-lint-docs bench clean

# The interpreter is checked before anything is created: an unsupported or missing
# Python stops here, not halfway through with a .venv that later runs would trust.
# A venv that fails to build (e.g. no ensurepip) is removed if this run made it.
$(VENV)/.created:
	@if ! command -v $(PYTHON) >/dev/null 2>&1; then problem="was not found"; \
	elif ! $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then \
	  problem="is $$($(PYTHON) -V 2>&1)"; fi; \
	if [ -n "$$problem" ]; then \
	  echo "make $(GOAL): polars_ppdm needs Python 3.11 or newer; PYTHON=$(PYTHON) $$problem." >&2; \
	  echo "Choose another interpreter, for example:  make $(GOAL) PYTHON=python3.12" >&2; \
	  found=$$(for v in 3.14 3.13 3.12 3.11; do python$$v -c "" >/dev/null 2>&1 && printf ' python%s' $$v; done); \
	  [ -z "$$found" ] || echo "Python 3.11+ interpreters on PATH:$$found" >&2; \
	  exit 1; fi
	@fresh=; [ -d $(VENV) ] || fresh=1; \
	  $(PYTHON) -m venv $(VENV) || { [ -z "$$fresh" ] || rm -rf $(VENV); exit 1; }
	touch $@

# The compiled kernels (native/: Rust, PyO3, built by maturin, which pip fetches) when
# cargo is on PATH; without it, or if the build fails, the pure-Python kernels serve (the
# same bits, slower on many cores). Rebuilt when the crate changes. Built for this
# machine: where its CPU has VAES (and AVX-512), the AES code is compiled for them (twice
# the speed of the aes crate's run-time dispatch, measured). The features are written to
# .venv/ppdm-native-features, and polars_ppdm does not load the extension on a CPU that
# lacks one (a .venv copied elsewhere gets the pure kernels, not an illegal instruction).
# rustup's cargo is found in ~/.cargo/bin even when the shell has not sourced its env.
NATIVE_FLAGS = $(shell for f in aes ssse3 avx2 vaes avx512f; do grep -qw $$f /proc/cpuinfo 2>/dev/null && printf '+%s,' $$f; done)
$(VENV)/.native: native/Cargo.toml native/Cargo.lock $(wildcard native/src/*.rs) | $(VENV)/.created
	@PATH="$$PATH:$$HOME/.cargo/bin"; rm -f $(VENV)/ppdm-native-features; \
	if command -v cargo >/dev/null 2>&1; then \
	  echo "building the compiled kernels (native/, about a minute)"; \
	  flags=; case "$(NATIVE_FLAGS)" in *+vaes,*) flags="-Ctarget-feature=$(NATIVE_FLAGS:%,=%)";; esac; \
	  if RUSTFLAGS="$${RUSTFLAGS:+$$RUSTFLAGS }$$flags" $(PIP) ./native; then \
	    [ -z "$$flags" ] || echo "$(NATIVE_FLAGS)" | tr -d '+' | tr ',' ' ' > $(VENV)/ppdm-native-features; \
	  else echo "the compiled kernels did not build: the pure-Python kernels are used"; fi; \
	else echo "cargo not found: the pure-Python kernels are used (install Rust for the compiled ones)"; fi
	@touch $@

# Install levels. Each is a superset of the core, so it marks the core done as well.
$(VENV)/.core: pyproject.toml $(VENV)/.native | $(VENV)/.created
	$(PIP) -e .
	touch $@

# The test stack with the Spark extra: the Spark tests run (and skip only without Java).
$(VENV)/.test: pyproject.toml $(VENV)/.native | $(VENV)/.created
	$(PIP) -e '.[test,spark]'
	touch $@ $(VENV)/.core

$(VENV)/.lint: pyproject.toml | $(VENV)/.created
	$(PIP) -e '.[lint]'
	touch $@ $(VENV)/.core

$(VENV)/.docs: pyproject.toml | $(VENV)/.created
	$(PIP) -e '.[docs]'
	touch $@ $(VENV)/.core

# CI's first leg (.ci/run): the lint and docs extras in one pip run, so that make check and
# make docs then install nothing and can run side by side.
extras-lint-docs: | $(VENV)/.created
	$(PIP) -e '.[lint,docs]'
	touch $(VENV)/.lint $(VENV)/.docs $(VENV)/.core

# The main job: the survey pipeline (examples/survey/pipeline.toml) on its bundled data
# (made by examples/make_data.py when absent), run twice: the second run is identical
# (same pipeline, data and secret) and spends nothing. Its secret is a file of mode 0600
# made once by `ppdm secret --output` beside the pipeline (a new file each clone; no
# secret is written in the Makefile or the pipeline). `ppdm rules` is the groceries demo.
DEMO := examples/survey
demo: $(VENV)/.core
	@[ -f $(DEMO)/survey.csv ] || $(BIN)/python examples/make_data.py
	@if [ ! -f $(DEMO)/ppdm.secret ]; then $(BIN)/ppdm secret --output $(DEMO)/ppdm.secret && \
	  echo "made the demo's secret: $(DEMO)/ppdm.secret (mode 0600; only this clone's demo uses it)"; fi
	@echo; echo "== ppdm plan $(DEMO)/pipeline.toml"; $(BIN)/ppdm plan $(DEMO)/pipeline.toml
	@echo; echo "== ppdm run $(DEMO)/pipeline.toml"; $(BIN)/ppdm run $(DEMO)/pipeline.toml
	@echo; echo "== ppdm run $(DEMO)/pipeline.toml   (again: the identical run spends nothing)"; \
	  $(BIN)/ppdm run $(DEMO)/pipeline.toml
	@echo; echo "== ppdm ledger --pipeline $(DEMO)/pipeline.toml"; $(BIN)/ppdm ledger --pipeline $(DEMO)/pipeline.toml
	@echo; echo "The published table, the release and the manifest are in $(DEMO)/out/ (the manifest:"; \
	  echo "$(DEMO)/out/manifest.json), with the privacy and utility report: $(DEMO)/out/report.public.html"; \
	  echo "(and report.internal.html, which shows the original data: do not publish it)."; \
	  echo "The groceries rules comparison: $(BIN)/ppdm rules"

# The tiers of the tests, as pytest -m expressions over the markers (pyproject.toml;
# tests/conftest.py marks whole folders and files). Every test is in exactly one tier:
# .ci/tiers_check.py reads these lines and checks it on the collected suite.
TIER_FAST := not (slow or spark or browser or notebook or kill)
TIER_SLOW := slow and not (spark or browser or notebook or kill)
TIER_SPARK := spark
TIER_BROWSER := (browser or notebook) and not (spark or kill)
TIER_KILL := kill and not spark
PYTEST := $(BIN)/python -m pytest -q

# The fast tier (the package's doctests too) on every core with pytest-xdist.
test: $(VENV)/.test
	$(PYTEST) -n auto -m "$(TIER_FAST)"

test-all: test test-slow test-spark test-browser test-kill test-fuzz-slow

# Every collected test is in exactly one tier above (CI's first test leg).
tiers-check: $(VENV)/.test
	$(BIN)/python .ci/tiers_check.py

# Statistical tests and the data sets: many seconds each, so on every core too.
test-slow: $(VENV)/.test
	$(PYTEST) -n auto -m "$(TIER_SLOW)"

# One local Spark session (a JVM of two cores) serves the whole run: no xdist.
test-spark: $(VENV)/.test
	$(PYTEST) -m "$(TIER_SPARK)"

# The report in headless Chromium and the notebooks, each in its own kernel.
test-browser: $(VENV)/.test
	$(PYTEST) -n auto -m "$(TIER_BROWSER)"

# SIGKILL at fractions of a large write: alone, so the timing is the run's own.
test-kill: $(VENV)/.test
	$(PYTEST) -m "$(TIER_KILL)"

# tests/fuzz again under the slow Hypothesis profile (15x the examples, every memory case
# in a subprocess), with the table of generated cases per target (the workers send theirs home).
test-fuzz-slow: $(VENV)/.test
	HYPOTHESIS_PROFILE=slow PPDM_FUZZ_TABLE=1 $(PYTEST) -n auto -p no:cacheprovider tests/fuzz

# Every tool runs even when an earlier one finds something; the target fails if any did.
# The compiled kernels' Rust (native/) is checked, and its unit tests run, where cargo is installed
# (a debug build: it compiles in half the time of --release, and checks integer overflow).
check: $(VENV)/.lint
	@status=0; PATH="$$PATH:$$HOME/.cargo/bin"; \
	  $(BIN)/ruff check . || status=1; \
	  $(BIN)/mypy || status=1; \
	  if cargo fmt --version >/dev/null 2>&1 && cargo clippy --version >/dev/null 2>&1; then \
	    (cd native && cargo fmt --check && cargo clippy --quiet --all-targets -- -D warnings \
	      && cargo test --quiet) || status=1; \
	  else echo "cargo fmt / clippy not found: native/ not checked"; fi; \
	  exit $$status

# The documentation site (mkdocs.yml, docs/) into site/; --strict: a broken link, a missing
# page or an API reference that cannot be resolved fails the build.
docs: $(VENV)/.docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# The benchmarks compare against scikit-learn and measure RSS: the test stack has both.
bench: $(VENV)/.test
	$(BIN)/python benchmarks/bench_rr.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache dist site
