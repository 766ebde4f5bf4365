# Newcomers: `make demo` (set up + run the main job on the embedded sample), `make test` (set up + run the tests).
SHELL := /bin/bash
.DEFAULT_GOAL := help
ROOT := $(CURDIR)
VENV := $(ROOT)/.venv
PY := $(VENV)/bin/python
export PATH := $(VENV)/bin:$(PATH)
export SPARK_LOCAL_IP := 127.0.0.1
export PYSPARK_PYTHON := $(PY)
export PYSPARK_DRIVER_PYTHON := $(PY)
export AIRFLOW__CORE__LOAD_EXAMPLES := False

DEMO_DIR ?= $(ROOT)/.demo
DEMO_DATE ?= 2026-11-20
DEMO_CONFIG ?= $(ROOT)/examples/rocketmq-retry.yaml
PYTEST_ARGS ?=
# make test is what CI runs: every test but those marked slow (Airflow's own services, a Spark cluster, minutes each),
# which make test-all adds; both list their 30 slowest tests at the end, so a log says where its time went
# (docs/scale.md "Where the suite's time goes").
# Two pytest-xdist workers, one test module per worker at a time (docs: README "Two commands"); 0 runs in one process.
PYTEST_WORKERS ?= 2
# --no-loadscope-reorder: xdist would otherwise start the modules with the most tests first, and the modules that take
# minutes (few tests each) would start last; conftest.py puts them first.
XDIST := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

.PHONY: help setup test test-all lint format demo airflow airflow-stop bench clean

help:
	@echo "make setup      create .venv from the pinned constraints (idempotent; checks Java 17)"
	@echo "make demo       setup, then run the daily DAG (airflow dags test) on the committed sample and print its summary"
	@echo "                (DEMO_SPARK=connect: its Spark tasks on one warm Spark Connect server, left running)"
	@echo "make airflow    setup, then the UI on http://127.0.0.1:8080 (PostgreSQL on 127.0.0.1:5432 needed): the four"
	@echo "                Airflow components, the example day through the daily DAG, two simulated days backfilled"
	@echo "make airflow-stop  stop what make airflow started (by pid)"
	@echo "make test       setup, then the test suite CI runs (real Spark, Airflow dag.test(), GE, SQLite, PostgreSQL,"
	@echo "                Chromium): every test but those marked slow"
	@echo "make test-all   setup, then every test: also the slow ones (a real scheduler's backfill, make airflow, a Spark"
	@echo "                cluster, the attribution property, the 2,000-message simulated day, a killed ingest process,"
	@echo "                the example day with generated code; about 15 more minutes)"
	@echo "make lint       ruff check + ruff format --check"
	@echo "make bench      the benchmarks in benchmarks/ (minutes; not part of the tests)"

setup:
	@bash scripts/setup.sh

test: setup
	@bash scripts/ensure-postgres.sh
	@bash scripts/ensure-chromium.sh
	$(PY) -m pytest $(XDIST) -m "not slow" --durations=30 $(PYTEST_ARGS)

test-all: setup
	@bash scripts/ensure-postgres.sh
	@bash scripts/ensure-chromium.sh
	$(PY) -m pytest $(XDIST) --durations=30 $(PYTEST_ARGS)

LINT_PATHS := $(wildcard src tests benchmarks spark dags plugins scripts)

lint: setup
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)

format: setup
	$(VENV)/bin/ruff check --fix $(LINT_PATHS)
	$(VENV)/bin/ruff format $(LINT_PATHS)

demo: setup
	@bash scripts/demo.sh "$(DEMO_DIR)" "$(DEMO_DATE)" "$(DEMO_CONFIG)"

airflow: setup
	@bash scripts/airflow-local.sh start

airflow-stop:
	@bash scripts/airflow-local.sh stop

bench: setup
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(DEMO_DIR) .pytest-airflow .pytest_cache .ruff_cache spark-warehouse
