# kvviz: the two commands a teacher needs.
#   make lesson   set up (first time) and serve the lesson at http://localhost:5006/app and the
#                 teacher page at /teacher (its passphrase is printed at start)
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

.PHONY: lesson test bench chromium clean class nginx

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.lesson-installed: requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.test-installed: requirements.txt requirements-test.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements-test.txt
	touch $@ $(VENV)/.lesson-installed

# Hand-ins go to KVVIZ_DB (default ./kvviz-class.db), shared by the PROCS processes; the teacher's
# passphrase is KVVIZ_TEACHER_KEY, else one generated once and stored there (printed here).
lesson: $(VENV)/.lesson-installed
	@$(BIN)/python -m kvviz.handin.key --url http://$(ADDRESS):$(PORT)/teacher
	$(BIN)/panel serve app.py teacher.py --port $(PORT) --address $(ADDRESS) --num-procs $(PROCS) \
		--allow-websocket-origin '$(ALLOW)' --static-dirs assets=./assets

# make class: serve a whole class from this machine, every core busy (deploy/class_server.py): one
# single-process `panel serve app.py` per core (BACKENDS, default: every core) on 127.0.0.1:5100+i,
# behind Debian's nginx on ADDRESS:PORT (default 0.0.0.0:5006), which keeps each student on one
# backend. Students open http://<this machine's address>:PORT/app, the teacher /teacher (both printed
# at start, with the teacher's passphrase; hand-ins in KVVIZ_DB, default ./kvviz-class.db). ALLOW: the
# websocket origins, host:port, separated by spaces or commas; default '*' (any: fine on a
# classroom network). UPSTREAM: backends on other machines, HOST:PORT separated by spaces (see
# deploy/README.md). Ctrl-C stops everything.
BACKENDS ?= $(shell nproc 2>/dev/null || echo 2)
CLASS_ADDRESS = $(if $(filter file,$(origin ADDRESS)),0.0.0.0,$(ADDRESS))
CLASS_ALLOW = $(if $(filter file,$(origin ALLOW)),*,$(ALLOW))

class: $(VENV)/.lesson-installed nginx
	BOKEH_VALIDATE_DOC=false $(BIN)/python deploy/class_server.py --address '$(CLASS_ADDRESS)' \
		--port $(PORT) --allow '$(CLASS_ALLOW)' --backends $(BACKENDS) $(foreach u,$(UPSTREAM),--upstream $(u))

# Debian's nginx for `make class`, installed with apt-get when missing (as root). Only the binary is
# used: the class server runs its own nginx with its own configuration; the system service that the
# package would start is stopped and disabled when this installs it.
nginx:
	@command -v nginx >/dev/null 2>&1 || test -x /usr/sbin/nginx || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null \
			&& { ! command -v systemctl >/dev/null 2>&1 || systemctl disable --now nginx >/dev/null 2>&1 || true; }; \
		else echo "make class needs Debian's nginx: sudo apt-get install -y nginx" >&2; exit 1; fi; }

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
