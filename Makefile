# Two entry points, both self-installing on a fresh machine with Python 3.11:
#   make run   -> the app on http://localhost:8501 (embedded Qdrant in ./data/qdrant, local model)
#   make test  -> the whole test suite (browser tests run when Chromium is installed)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: run test lint bench clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.run-installed: requirements.txt | $(VENV)/bin/python
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev-installed: requirements.txt requirements-dev.txt | $(VENV)/bin/python
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(VENV)/.run-installed $@

run: $(VENV)/.run-installed
	$(PY) -m streamlit run app.py --server.port 8501 --browser.gatherUsageStats false

test: $(VENV)/.dev-installed
	$(PY) -m pytest

lint: $(VENV)/.dev-installed
	$(PY) -m ruff check .

bench: $(VENV)/.dev-installed
	$(PY) bench/chunking.py

clean:
	rm -rf $(VENV) .pytest_cache
