# kvviz: the two commands a teacher needs.
#   make lesson   set up (first time) and serve the lesson at http://localhost:5006/app
#   make test     set up (first time) and run every test, browser tests included
# Both create a virtual environment in .venv; nothing is installed system-wide except
# Debian's Chromium for the browser tests (installed with apt-get when missing, as root).

PYTHON ?= python3
VENV ?= .venv
PORT ?= 5006
ADDRESS ?= localhost
PROCS ?= 1
ALLOW ?= localhost:$(PORT)
BIN = $(VENV)/bin

.PHONY: lesson test bench chromium clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.lesson-installed: requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.test-installed: requirements.txt requirements-test.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements-test.txt
	touch $@ $(VENV)/.lesson-installed

lesson: $(VENV)/.lesson-installed
	$(BIN)/panel serve app.py --port $(PORT) --address $(ADDRESS) --num-procs $(PROCS) \
		--allow-websocket-origin '$(ALLOW)' --static-dirs assets=./assets

chromium:
	@command -v chromium >/dev/null 2>&1 || test -x /usr/bin/chromium || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
		else echo "The browser tests need Debian's Chromium: sudo apt-get install -y chromium" >&2; exit 1; fi; }

test: $(VENV)/.test-installed chromium
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

bench: $(VENV)/.test-installed
	$(BIN)/python -m benchmarks.memory
	$(BIN)/python -m benchmarks.prefix
	$(BIN)/python -m benchmarks.kernels

clean:
	rm -rf $(VENV)
