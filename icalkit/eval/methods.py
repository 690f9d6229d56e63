"""Evaluation methods: a method is a config (planner mode, memory, model), never code.

Shipped methods are YAML files in ``configs/methods/`` (``zero_shot``, ``copy``, ``handwritten``,
``raw_kinesthetic``, ``raw_visual``, ``ical``, ``ical_no_abstraction``, ``ical_no_hitl``,
``ical_rerank``, ``finetuned``, ``finetuned_retrieval``); ``icalkit eval methods='[...]'`` takes their
names or paths to YAML files of your own. ``name@N`` evaluates a method with its memory cut to
its first N examples (the learning curve).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icalkit.agents.planner_config import PlannerConfig
from icalkit.config import ConfigError, from_dict, read_yaml_mapping
from icalkit.models.llm.base import check_loop_repeats
from icalkit.models.llm.factory import LLMConfig

METHODS_DIR = Path(__file__).resolve().parents[2] / "configs" / "methods"


@dataclass
class MethodConfig:
    """One evaluated method.

    Attributes:
        name: the method's name in tables (default: the YAML file's name).
        description: one line for the docs and the report.
        planner: deployment-agent settings (mode ``zero_shot``, ``ical``, ``rerank``, ``flat``, ``copy``).
        memory: example memory file (not needed for ``zero_shot``).
        memory_hint: the command that writes ``memory``, shown when it is missing.
        memory_limit: use only the memory's first N examples (None: all).
        retriever: text-embedder folder the memory was written with, e.g. a learned retriever
            from ``make retriever`` ("": the evaluation's ``memory.text_embedder``).
        type_vote: β of the memory's task-type vote re-ranking (``memory.rerank``; 0: off).
        llm: model settings (the whole section; None: the evaluation's ``llm`` section).
        max_new_tokens: completion length of this method's answers (0: the evaluation's
            ``llm.max_new_tokens``). A fine-tuned planner that writes whole programs of composite
            tasks (Breakfast, Sandwich: 500-950 tokens) needs about 1,024; a shorter limit cuts
            them into invalid Python.
        loop_repeats: cut an answer once its lines end with one block repeated this many times in
            a row (0: off). No demonstration program repeats even one line back to back, while a
            degenerate model can loop until ``max_new_tokens``; with the hf backend the cut also
            stops generating, so a looping sequence no longer keeps its batch waiting.
    """

    name: str = ""
    description: str = ""
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    memory: str = ""
    memory_hint: str = ""
    memory_limit: int | None = None
    retriever: str = ""
    type_vote: float = 0.0
    llm: LLMConfig | None = None
    max_new_tokens: int = 0
    loop_repeats: int = 0

    def validate(self) -> None:
        if self.max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be >= 0 (0: the evaluation's), got {self.max_new_tokens}")
        check_loop_repeats(self.loop_repeats)
        if self.memory_limit is not None and self.memory_limit < 0:
            raise ValueError(f"memory_limit must be >= 0, got {self.memory_limit}")
        if not self.type_vote >= 0:
            raise ValueError(f"type_vote must be >= 0 (0: no re-ranking), got {self.type_vote}")
        if self.planner.mode not in ("zero_shot",) and not self.memory:
            raise ValueError(f"planner.mode={self.planner.mode} needs a memory file (key `memory`)")


def load_method(spec: str, methods_dir: Path = METHODS_DIR) -> MethodConfig:
    """A method from its name (``configs/methods/<name>.yaml``), ``name@N`` or a YAML path.

    A method file may name another method as ``base`` (a shipped name, or a path relative to the
    directory icalkit runs in, as ``memory`` and ``retriever`` are) and give only what differs: its
    keys are merged over the base's, section by section, except ``llm``, which is replaced whole (one
    model's settings never mix with another's); the base's ``name`` is not inherited, nor its
    ``memory_hint`` when the file names its own ``memory`` (e.g. the recommended method with another
    memory and retriever, ``make heldout-choice``).

    Raises:
        ConfigError: no such method (the available names are listed), a malformed file, an empty
            base or one that leads back to the file.
    """
    base, _, limit = spec.partition("@")
    path = method_path(base, methods_dir)
    method = from_dict(MethodConfig, method_data(path, methods_dir))
    method.name = method.name or path.stem
    if limit:
        if not limit.isdigit():
            raise ConfigError(f"method {spec!r}: the part after @ must be a number of examples")
        method.memory_limit = int(limit)
        method.name = f"{method.name}@{limit}"
        if method.memory_limit == 0 and method.planner.mode not in ("copy",):
            method.planner.mode = "zero_shot"  # no examples: the same prompt as zero-shot
    return method


def method_path(spec: str, methods_dir: Path = METHODS_DIR) -> Path:
    """The YAML file of a method name or path (ConfigError listing the shipped names if there is none)."""
    path = Path(spec) if spec.endswith((".yaml", ".yml")) else methods_dir / f"{spec}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in methods_dir.glob("*.yaml"))
        raise ConfigError(f"method {spec!r}: no file {path}; shipped methods: {', '.join(known)}")
    return path


def method_data(path: Path, methods_dir: Path = METHODS_DIR, chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The keys of a method file, merged over those of its ``base`` method (recursively)."""
    data = read_yaml_mapping(path)
    if "base" not in data:
        return data
    base = data.pop("base")
    if not isinstance(base, str) or not base.strip() or "@" in base:
        raise ConfigError(f"method file {path}: base must name one method file or shipped method "
                          f"(no @N), got {base!r}")
    chain = (*chain, path.resolve())
    try:
        base_path = method_path(base, methods_dir)
    except ConfigError as err:
        raise ConfigError(f"method file {path}: base {base!r}: {err}") from None
    if base_path.resolve() in chain:
        links = " -> ".join(str(p) for p in (*chain, base_path.resolve()))
        raise ConfigError(f"method file {path}: base {base!r} leads back to itself ({links})")
    inherited = method_data(base_path, methods_dir, chain)
    inherited.pop("name", None)  # a derived method is named by its own file (or its own `name`)
    if "memory" in data:
        inherited.pop("memory_hint", None)  # the base's hint writes the base's memory
    return merged(inherited, data)


WHOLE_SECTIONS = ("llm",)  # one model's settings: a derived method's section replaces the base's


def merged(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``: nested mappings merge key by key (but ``WHOLE_SECTIONS`` and anything
    else are replaced)."""
    out = dict(base)
    for key, value in top.items():
        nested = isinstance(value, dict) and isinstance(out.get(key), dict) and key not in WHOLE_SECTIONS
        out[key] = merged(out[key], value) if nested else value
    return out


def method_problem(method: MethodConfig) -> str | None:
    """Why ``method`` cannot run here (missing memory or adapter file), or None."""
    if method.planner.mode != "zero_shot" and not Path(method.memory).is_file():
        hint = f"; write it with `{method.memory_hint}`" if method.memory_hint else ""
        return f"method {method.name}: memory {method.memory} does not exist{hint}"
    if method.retriever and not (Path(method.retriever) / "modules.json").is_file():
        return (f"method {method.name}: retriever model folder {method.retriever} does not exist (or has no "
                f"modules.json); train it with `make retriever` (icalkit train-retriever out_dir={method.retriever})")
    if method.llm is not None and method.llm.adapter and not Path(method.llm.adapter).exists():
        return (f"method {method.name}: LoRA adapter {method.llm.adapter} does not exist; "
                f"train one with `icalkit finetune` or point llm.adapter at it")
    if method.llm is not None and method.llm.model and method.llm.backend != "openai" \
            and not Path(method.llm.model).exists():
        return f"method {method.name}: model {method.llm.model} does not exist"
    return None


def effective_llm(method: MethodConfig, default: LLMConfig) -> LLMConfig:
    """The method's model settings: its own ``llm`` section, else the evaluation's."""
    return method.llm if method.llm is not None else default


def method_sampling(method: MethodConfig, sampling: dict[str, Any]) -> dict[str, Any]:
    """The evaluation's sampling settings with the method's own completion length and loop cut,
    where it sets them."""
    own = {"max_new_tokens": method.max_new_tokens, "loop_repeats": method.loop_repeats}
    return {**sampling, **{k: v for k, v in own.items() if v}}


# planner settings added after episodes were recorded with the behaviour of their default: left out
# of the fingerprint at that default, so that those episodes stay valid
LATER_PLANNER_DEFAULTS = {"room_fit": 0, "review_done": False, "reground": False, "oracle_reground": False,
                         "transfer_order": False, "mention_reground": False,
                         "copy_fallback": False, "model_replans": 0, "review_keeps_placed": False,
                         "silent_next_copy": "", "named_next": False, "finish_placements": False, "drop_absent": False,
                         "piece_counts": False, "drop_sliced": False, "finish_states": False, "compose_parts": False,
                         "stand_ins": False, "request_reader": False, "compose_dishes": False, "single_dish": False,
                         "wash_served": False, "fill_missed_dishes": False, "fill_only_meals": False}


def method_fingerprint(method: MethodConfig, default_llm: LLMConfig, sampling: dict[str, Any]) -> str:
    """Identity of what a method's episodes were run with: its settings, its effective model
    settings and sampling, the model / adapter folder's files (size + mtime) and the example
    memory's records.

    ``icalkit eval`` stores it with every episode and re-runs the episodes whose fingerprint
    differs, so retraining into the same folder or rebuilding a memory never reuses old results.
    """
    import hashlib
    import json

    from icalkit.config import to_dict
    from icalkit.memory.store import records_digest
    from icalkit.models.llm.cache import files_stamp

    llm = effective_llm(method, default_llm)
    settings = {k: v for k, v in to_dict(method).items() if k not in ("name", "description", "memory_hint", "llm")}
    settings["planner"] = {k: v for k, v in settings["planner"].items()
                           if k not in LATER_PLANNER_DEFAULTS or v != LATER_PLANNER_DEFAULTS[k]}
    folders = [Path(p) for p in (llm.model, llm.adapter) if p and Path(p).is_dir()]
    blob = json.dumps([settings, to_dict(llm), method_sampling(method, sampling), files_stamp(*folders),
                       records_digest(method.memory)],
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
