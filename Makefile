# Developer and CI entry points. `make` alone lists the targets.
#
#   make run      venv + local services + migrations, then api/scheduler/alerter/worker under honcho
#   make test     venv + local services + migrations on the test database, lint, types, pytest
#
# Local services (PostgreSQL 17 + TimescaleDB, Redis) come from scripts/services.sh. Set both
# MONITOR_DATABASE_URL and MONITOR_REDIS_URL to use your own instead; either one set on its own
# overrides just that one.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

SERVICES := bash scripts/services.sh
VENV := .venv
BIN := $(VENV)/bin
# Marks the last successful `pip install`; older than pyproject.toml means install again.
STAMP := $(VENV)/.installed-from-pyproject
# Only the paths that exist yet (bench/ and tests/ fill in over time).
LINT_PATHS := $(wildcard monitor tests bench)
PYTEST_ARGS ?=
BENCH_ARGS ?=
# Which benchmark `make bench` runs: a module of bench/ (scheduler, pings, api, alerter, connectivity, apply,
# reactions).
BENCH ?= scheduler

# Shell snippet: export MONITOR_DATABASE_URL and MONITOR_REDIS_URL for $(1) (run or test) from
# scripts/services.sh, keeping whichever of the two the caller already set.
define load_env
keep_db="$${MONITOR_DATABASE_URL:-}"; keep_redis="$${MONITOR_REDIS_URL:-}"; \
eval "$$($(SERVICES) env $(1))"; \
export MONITOR_DATABASE_URL="$${keep_db:-$$MONITOR_DATABASE_URL}" \
       MONITOR_REDIS_URL="$${keep_redis:-$$MONITOR_REDIS_URL}"
endef

.PHONY: help venv vendor services services-down status migrate run lint test test-tools bench nginx dist browser-tools

help:
	@echo 'make run            start api, scheduler, alerter and worker (honcho, Ctrl-C stops them)'
	@echo 'make test           migrations + ruff + mypy + pytest (five streams side by side: e2e, slow, browser, more, rest; PYTEST_ARGS=... runs one pytest)'
	@echo 'make lint           ruff check, ruff format --check, mypy'
	@echo 'make test-tools     what tests run besides the services: iproute2, redis-server, the PostgreSQL root'
	@echo 'make browser-tools  what heavy checks run: Debian chromium (scripts/browser.sh) and the pinned Lighthouse CLI (tools/lighthouse)'
	@echo 'make migrate        apply sql/ migrations to the run database'
	@echo 'make bench          python -m bench.$$BENCH (scheduler; or pings, api, alerter...) $$BENCH_ARGS against the run services'
	@echo 'make dist           build the sdist and the wheel (migrations included) into dist/'
	@echo 'make test-system    docs/install.md in a booted Debian 13 container: units, checks, restarts (root; minutes)'
	@echo 'make venv           $(VENV) with the package and test tools (re-installs when pyproject.toml changes)'
	@echo 'make vendor         the pinned npm libraries of the dashboard, hashes checked (monitor/dashboard/vendor.toml; offline once done)'
	@echo 'make services       start local PostgreSQL 17 + TimescaleDB and Redis (idempotent)'
	@echo 'make services-down  stop them'
	@echo 'make status         show whether they run'

venv: $(STAMP)

$(STAMP): pyproject.toml
	@# Debian splits ensurepip out of python3; without it `python3 -m venv` makes a venv without pip.
	@python3 -c 'import ensurepip' 2>/dev/null || { \
	    echo 'installing python3-venv (apt-get)'; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -q; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv; }
	@[ -x $(BIN)/pip ] || { rm -rf $(VENV); python3 -m venv $(VENV); }
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $@

# The dashboard's front-end libraries (htmx, uPlot; axe-core for the browser tests), pinned with
# their tarballs' SHA-512 in monitor/dashboard/vendor.toml, into the gitignored
# monitor/dashboard/static/vendor/ and tests/.vendor/. A few milliseconds and no network when
# they are already there, so every target that serves or ships the dashboard depends on it.
vendor: venv
	@$(BIN)/python scripts/vendor.py

services:
	$(SERVICES) up

services-down:
	$(SERVICES) down

status:
	@$(SERVICES) status

migrate: venv services
	@$(call load_env,run); \
	$(BIN)/monitor migrate

# honcho SIGKILLs what still runs 5 s after it passes on SIGTERM: the processes stop within 4 s.
# scripts/run.py runs honcho so that a clean Ctrl-C ends make with status 0 (its docstring: why).
# Before the processes start: the dashboard's address and, on a fresh installation, the link that
# makes its first owner (monitor setup-url; the api's log prints one too).
run: venv vendor services migrate browser-tools
	@$(call load_env,run); \
	$(BIN)/monitor setup-url || true; \
	export MONITOR_LOG_FORMAT="$${MONITOR_LOG_FORMAT:-console}"; \
	export MONITOR_SHUTDOWN_TIMEOUT_SECONDS="$${MONITOR_SHUTDOWN_TIMEOUT_SECONDS:-4}"; \
	exec $(BIN)/python scripts/run.py Procfile

lint: venv
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/mypy

# Debian's nginx: the benchmark's target and a server of the HTTP check's conformance table,
# always run from a prefix of our own (never the system service).
nginx:
	@command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || { \
	    echo 'installing nginx-light (apt-get)'; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -q; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx-light; }

# What the tests run besides the services, so that none of them skips for want of it (under
# `make test` a skip fails: tests/support/skips.py): iproute2's `ip` for the network-namespace
# tests (ping hosts, quorum locations), and redis-server and the PostgreSQL root for the tests
# that start servers of their own (failover, restarts), also when MONITOR_*_URL are preset and
# `make services` provisions nothing. And for SLA reports as PDF: pango and the DejaVu fonts
# WeasyPrint lays pages out with, and poppler-utils' pdftoppm and pdftotext, which the report
# tests read PDFs with.
test-tools:
	@command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || { \
	    echo 'installing iproute2 (apt-get)'; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -q; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q iproute2; }
	@command -v pdftoppm >/dev/null 2>&1 && [ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] && \
	    ldconfig -p 2>/dev/null | grep -q libpangoft2-1.0 || { \
	    echo 'installing poppler-utils, fonts-dejavu-core and pango (apt-get)'; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -q; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q poppler-utils fonts-dejavu-core libpango-1.0-0 \
	        libpangoft2-1.0-0; }
	@$(SERVICES) tools

test: venv vendor services nginx test-tools browser-tools
	@$(call load_env,test); \
	echo "monitor migrate (test database)"; \
	$(BIN)/monitor migrate
	@$(MAKE) --no-print-directory lint
	@$(call load_env,test); \
	bash scripts/test.sh $(PYTEST_ARGS)

# What the workers' heavy checks run: Debian's chromium (scripts/browser.sh ensure: a few ms when
# it is there) and the Lighthouse CLI of page-speed checks, pinned by tools/lighthouse/package.json
# and package-lock.json (exact versions and integrity hashes) and installed by `npm ci` into the
# gitignored tools/lighthouse/node_modules (monitor/browser/lighthouse.py finds it there). npm
# writes node_modules/.package-lock.json: newer than the lock means installed, nothing to do.
LIGHTHOUSE_DIR := tools/lighthouse
LIGHTHOUSE_STAMP := $(LIGHTHOUSE_DIR)/node_modules/.package-lock.json

browser-tools: $(LIGHTHOUSE_STAMP)
	@bash scripts/browser.sh ensure

$(LIGHTHOUSE_STAMP): $(LIGHTHOUSE_DIR)/package.json $(LIGHTHOUSE_DIR)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { \
	    echo 'installing nodejs and npm (apt-get)'; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -q; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm; }
	@echo 'npm ci (tools/lighthouse: lighthouse, pinned)'
	@cd $(LIGHTHOUSE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# pings and status drive the api with wrk (Debian's package), installed here when missing.
bench: venv vendor services nginx browser-tools
	@if { [ "$(BENCH)" = pings ] || [ "$(BENCH)" = status ]; } && ! command -v wrk >/dev/null 2>&1; then \
	    echo 'installing wrk (apt-get)'; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk; \
	fi
	@$(call load_env,run); \
	$(BIN)/python -m bench.$(BENCH) $(BENCH_ARGS)

# The sdist, then the wheel built from it (as pip would), so a file the sdist misses fails here.
dist: venv vendor
	rm -f dist/monitor-*
	$(BIN)/python -m build --outdir dist .

# Not part of `make test` (a few minutes, root, a booted container): scripts/system-test.sh.
.PHONY: test-system
test-system: venv
	bash scripts/system-test.sh
