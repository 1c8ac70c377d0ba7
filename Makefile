# The two commands: `make demo` runs the default flights dashboard, `make test` runs the tests.
# Each does its own setup: virtualenv, Java 17 for Spark, the data.

VENV   := .venv
PY     := $(VENV)/bin/python
DATA   := data/flights-3m.parquet
SPEC   ?= dashboards/flights.yaml

.PHONY: demo test test-quick setup java lint bench clean

demo: setup $(DATA)
	$(VENV)/bin/brushfire demo $(SPEC)

test: setup
	$(VENV)/bin/ruff check backend tests perf
	$(VENV)/bin/pytest -q

test-quick: setup  ## skip tests that start Spark or take long
	$(VENV)/bin/pytest -q -m "not spark and not slow"

setup: java $(VENV)/.installed

java:
	@scripts/ensure-java.sh

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

$(DATA):
	scripts/fetch-data.sh $(DATA)

lint: setup
	$(VENV)/bin/ruff check backend tests perf

clean:
	rm -rf $(VENV) .cache .pytest_cache .hypothesis
