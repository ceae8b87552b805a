# patchstream developer entry points. `make run` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
RUN_FILE ?= src/patchstream/parsing/extract.py

.PHONY: install compile unit-pure bench-scale system-deps dashboards run parse test test-fast docs docs-check lint typecheck unit schemas bench bench-parse bench-sinks bench-pipeline bench-query bench-outbox bench-faults bench-restarts bench-chaos bench-correctness reference-compilers bench-context clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,embed]'
	touch $(STAMP)

# The parsing package compiled with mypyc (scripts/compile_parsing.py): rebuilt when a parsing
# source changes; a failed build leaves the pure-Python modules in use (the package only loads
# a build made from its current sources).
NATIVE := src/patchstream/parsing/_native/SOURCES
PARSING_SOURCES := $(filter-out %/__init__.py %/jail.py %/jail_child.py,$(wildcard src/patchstream/parsing/*.py))
$(NATIVE): $(PARSING_SOURCES) scripts/compile_parsing.py | $(STAMP)
	@$(PY) scripts/compile_parsing.py || echo "warning: parsing stays pure Python (slower)"

install: $(STAMP) $(NATIVE)

## compile: build the parsing package with mypyc (make install does it; this forces a check)
compile: $(STAMP)
	$(PY) scripts/compile_parsing.py

# The ops tests run Debian's docker-compose (config validation), promtool and a real
# Prometheus; the Java correctness test runs javac (a JDK), the C one gcc. Installed once; apt's lists are
# refreshed only when the install needs it.
SYSTEM_TOOLS := prometheus promtool docker-compose javac gcc
SYSTEM_PACKAGES := prometheus docker-compose default-jdk-headless gcc
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
system-deps:
	@for tool in $(SYSTEM_TOOLS); do command -v $$tool >/dev/null || missing=1; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages: $(SYSTEM_PACKAGES)"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  $(SUDO) apt-get install -y -q $(SYSTEM_PACKAGES) >/dev/null \
	  || ($(SUDO) apt-get update -q >/dev/null && \
	      $(SUDO) apt-get install -y -q $(SYSTEM_PACKAGES) >/dev/null); \
	fi

## run: start the embedded stack, index this repository (or REPO_DIR=...) and show queries
run: install
	bash scripts/run.sh

## parse: print the symbols, edges and chunks of one file (RUN_FILE=...)
parse: install
	$(VENV)/bin/patchstream parse $(RUN_FILE) --repo patchstream

## test: lint, type-check, schema and docs drift, the docs site and the whole test suite
test: install system-deps lint typecheck docs-check unit unit-pure

## test-fast: the inner loop: lint, types and the unit tests (no services), well under 2 minutes
test-fast: install lint typecheck
	$(PY) -m pytest -q tests/unit

## docs: serve the docs site on http://127.0.0.1:8000 (mkdocs, Material theme)
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

# A broken link or anchor, a page missing from the nav or a stale reference page fails.
docs-check: install
	$(VENV)/bin/patchstream docs-reference --check
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

lint: install
	$(VENV)/bin/ruff check src tests bench dashboards
	$(VENV)/bin/ruff format --check src tests bench dashboards

typecheck: install
	$(VENV)/bin/mypy

# pytest exits 5 when it collected no tests; that is not a failure of the suite.
# The suite runs in TEST_WORKERS processes (pytest-xdist), each test file whole in one of them
# (its module's stack and session services stay with it): most of an e2e test's time is spent
# waiting on its stack, so four workers keep two cores busy (21:45 -> 7:56 on 2 cores).
TEST_WORKERS ?= 4
unit: install
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=20; rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; rc=0; fi; exit $$rc

# The same parsing tests with the pure-Python modules (the fallback where no compiler is):
# the unit suite, the parse jail and the hand-checked call graphs.
PURE_TESTS := tests/unit tests/security/test_parse_jail.py tests/integration/test_hand_checked_callers.py
unit-pure: install
	PATCHSTREAM_PURE_PYTHON=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile $(PURE_TESTS)

## dashboards: regenerate the Grafana dashboard JSON from dashboards/build.py
dashboards: install
	$(PY) dashboards/build.py

schemas: install
	$(VENV)/bin/patchstream schemas

## bench: every bench on real code; updates the table in docs/benchmarks/index.md and prints it
bench: bench-parse bench-sinks bench-pipeline bench-watch bench-query bench-outbox bench-faults bench-correctness bench-context
	$(PY) bench/report.py

bench-parse: install
	$(PY) bench/parse.py --corpus medium --update-results
	$(PY) bench/parse.py --corpus npm --update-results

bench-sinks: install
	$(PY) bench/sinks.py --update-results

bench-pipeline: install
	$(PY) bench/pipeline.py --corpus small --update-results
	$(PY) bench/pipeline.py --corpus medium --update-results
	$(PY) bench/pipeline.py --corpus npm --update-results
	$(PY) bench/pipeline.py --corpus small --embedder minilm --edits 20 --update-results

## bench-scale: the stack at about 1k, 5k and 20k files, and how each figure grows (~40 min)
bench-scale: install
	$(PY) bench/scale.py --update-results

## bench-watch: a file saved in a watched checkout, to applied, against a direct publish
bench-watch: install
	$(PY) bench/watch.py --corpus small --update-results

bench-outbox: install
	$(PY) bench/outbox.py --update-results

## bench-faults: 100 rounds of a random SIGKILL mid-index (about an hour)
bench-faults: install
	$(PY) bench/faults.py --rounds 100 --update-results

## bench-chaos: 30 minutes of SIGKILLs and pauses of every process while agents write and queries run
bench-chaos: install
	$(PY) bench/chaos.py --minutes 30 --update-results

## bench-restarts: 100 rounds of stopping the whole stack and starting it on its own data
bench-restarts: install
	$(PY) bench/restarts.py --rounds 100 --update-results

## bench-correctness: callers against each language's own compiler or checker
bench-correctness: install reference-compilers
	$(PY) bench/correctness.py --update-results

# The references of C#, Kotlin and Scala: Debian's Mono compiler and disassembler, its POSIX
# assembly (dbus-sharp), Debian's Kotlin and Scala compilers; of Ruby and PHP, their runtimes
# with the test runners the traced suites need and Xdebug. For the bench only.
REFERENCE_PACKAGES := mono-mcs mono-utils libmono-posix4.0-cil kotlin scala ruby ruby-minitest \
	ruby-test-unit php-cli php-xdebug php-mbstring phpunit golang-go
reference-compilers:
	@command -v mcs >/dev/null && command -v monodis >/dev/null && command -v kotlinc >/dev/null \
	&& command -v scalac >/dev/null && command -v ruby >/dev/null && command -v phpunit >/dev/null \
	&& command -v go >/dev/null \
	|| (export DEBIAN_FRONTEND=noninteractive; \
	    $(SUDO) apt-get install -y -q $(REFERENCE_PACKAGES) >/dev/null \
	    || ($(SUDO) apt-get update -q >/dev/null && \
	        $(SUDO) apt-get install -y -q $(REFERENCE_PACKAGES) >/dev/null))

## bench-context: file recall of search and context on the localization sets (both embedders)
bench-context: install
	$(PY) bench/context_quality.py --update-results

bench-query: install
	$(PY) bench/query.py --corpus medium --update-results
	$(PY) bench/query.py --corpus large --update-results

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis src/patchstream/parsing/_native build/mypyc
