# The two commands: `make demo` serves the default flights dashboard at http://127.0.0.1:8000,
# `make test` runs the tests. Each does its own setup: virtualenv, Java 17 for Spark, the
# frontend build (npm), the data (demo), Debian's chromium (tests).

VENV   := .venv
PY     := $(VENV)/bin/python
DATA   := data/flights-3m.parquet
SPEC   ?= dashboards/flights.yaml

HOST   ?= 127.0.0.1
PORT   ?= 8000
FRONTEND_SRC := $(wildcard frontend/src/*) frontend/index.html frontend/build.mjs

.PHONY: demo gallery test test-quick setup java chromium frontend lint bench clean

# the files of data/ the spec reads (as ../data/ from dashboards/) that scripts/fetch-data.sh
# fetches: dashboards/flights-airports.yaml's airports too
SPEC_DATA := $(filter data/flights-3m.parquet data/airports.csv,\
  $(patsubst ../%,%,$(shell grep -o '\.\./data/[A-Za-z0-9._-]*' $(SPEC) 2>/dev/null)))

demo: setup frontend $(DATA) $(SPEC_DATA)
	@echo "Brushfire: open the URL printed below (with ?token=... when a token is in use;"
	@echo "  capture progress shows there on the first run)"
	$(VENV)/bin/brushfire serve $(SPEC) --host $(HOST) --port $(PORT)

gallery: setup frontend  ## the dashboards of dashboards/gallery/, at http://$(HOST):$(PORT)
	$(PY) scripts/fetch_gallery.py
	$(VENV)/bin/brushfire serve dashboards/gallery/*.yaml --host $(HOST) --port $(PORT)

test: setup frontend chromium
	$(VENV)/bin/ruff check backend tests perf
	$(VENV)/bin/pytest -q --durations=30

test-quick: setup  ## skip tests that start Spark or take long
	$(VENV)/bin/pytest -q -m "not spark and not slow"

setup: java $(VENV)/.installed

java:
	@scripts/ensure-java.sh

chromium:
	@scripts/ensure-chromium.sh

frontend: frontend/dist/index.html

frontend/node_modules/.package-lock.json: frontend/package.json frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund
	touch $@

frontend/dist/index.html: frontend/node_modules/.package-lock.json $(FRONTEND_SRC)
	cd frontend && npm run build

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

$(DATA):
	scripts/fetch-data.sh $(DATA)

data/airports.csv:
	scripts/fetch-data.sh $@

lint: setup
	$(VENV)/bin/ruff check backend tests perf

clean:
	rm -rf $(VENV) .cache .pytest_cache .hypothesis frontend/node_modules frontend/dist
