"""``icalkit eval``: the evaluation harness (ICAL's Table 1, Table S3 and learning curve)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from icalkit.config import ConfigError, refuse_keys
from icalkit.envs.alfworld.config import AlfworldConfig
from icalkit.envs.config import EnvConfig
from icalkit.eval.splits import SplitConfig
from icalkit.memory.config import MemoryConfig
from icalkit.models.llm.base import LLMError
from icalkit.models.llm.factory import LLMConfig
from icalkit.tracking import WandbConfig

HELP = """icalkit eval — evaluate methods on benchmark splits with TEACh's metrics.

Each method is a YAML file (configs/methods/<name>.yaml: planner mode, memory, model); `name@N`
cuts its memory to the first N examples. For every (method, split, task) the deployment agent
plans, executes and re-plans; episodes run in `workers` processes whose model calls are batched
in this process. Writes under out_dir: episodes.jsonl (one line per episode; a re-run resumes),
errors.jsonl (episodes that failed; retried by a re-run), table1.md/.csv (SR, GC, PLW-SR,
PLW-GC per method and split), per_type_<split>.md, learning_curve_<method>.md/.png,
summary.json (metrics, episodes/hour, model-busy fraction) and a W&B run.

Examples:
  icalkit eval methods='[zero_shot, copy]' splits='[valid_unseen]'
  icalkit eval methods='[ical, ical_no_abstraction, raw_kinesthetic]' split.preset=small workers=8
  icalkit eval curve_method=ical curve_sizes='[0, 5, 10, 20]'
  icalkit eval methods='[finetuned]' llm.backend=openai llm.base_url=http://127.0.0.1:8000/v1 llm.model=m
  icalkit eval --config configs/eval_alfworld.yaml    # ALFWorld games (env.name=alfworld; make alfworld-setup)
"""


@dataclass
class Config:
    methods: list[str] = field(default_factory=lambda: ["zero_shot", "copy"])
    splits: list[str] = field(default_factory=lambda: ["valid_unseen", "valid_seen"])
    split: SplitConfig = field(default_factory=SplitConfig)
    curve_method: str = ""
    curve_sizes: list[int] = field(default_factory=lambda: [0, 5, 10, 20])
    env: EnvConfig = field(default_factory=lambda: EnvConfig(render=False))
    alfworld: AlfworldConfig = field(default_factory=AlfworldConfig)  # env.name=alfworld: the games played
    alfworld_examples_per_type: int = 2  # train games per type whose expert plans fill a flat method's memory
    llm: LLMConfig = field(default_factory=lambda: LLMConfig(max_new_tokens=384))
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    workers: int = 4
    torch_threads: int = 0
    oracle_object_map: bool = True
    out_dir: str = "runs/eval"
    wandb: WandbConfig = field(default_factory=WandbConfig)

    def validate(self) -> None:
        from icalkit.envs.household.tasks.task import SPLITS

        bad = [s for s in self.splits if s not in SPLITS]
        if bad or not self.splits:
            raise ValueError(f"splits {bad or '[]'}: each must be one of {SPLITS}, at least one")
        if not self.methods and not self.curve_method:
            raise ValueError("no methods to evaluate: set methods or curve_method")
        if self.workers < 0 or self.torch_threads < 0 or any(n < 0 for n in self.curve_sizes):
            raise ValueError("workers, torch_threads and curve_sizes must be >= 0")
        refuse_keys(self.llm, "llm", {"threads": "torch_threads"})
        refuse_keys(self.memory.text_embedder, "memory.text_embedder", {"num_threads": "torch_threads"})
        if self.env.name != "alfworld":
            self.split.validate()
        else:
            from icalkit.eval.alfworld import check_task_types

            if self.split.dialogues != "template":
                raise ValueError("split.dialogues is for the household simulator; ALFWorld's games bring their own goals")
            check_task_types(self.split.task_types)
            self.alfworld.validate()
            if self.alfworld_examples_per_type < 1:
                raise ValueError(f"alfworld_examples_per_type must be >= 1, got {self.alfworld_examples_per_type}")


def git_commit() -> str:
    """The checkout's commit (empty outside a git checkout)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def method_specs(cfg: Config) -> list[str]:
    """The method names to evaluate (curve points included), each once."""
    specs = list(cfg.methods) + [f"{cfg.curve_method}@{n}" for n in cfg.curve_sizes if cfg.curve_method]
    return list(dict.fromkeys(specs))


def set_aside_stale(done: dict[str, dict], fingerprints: dict[str, str], path: Path,
                    task_hashes: dict[tuple[str, str], str], dialogues: str = "template") -> dict[str, dict]:
    """Episodes of ``path`` still valid for resuming; those of a method whose fingerprint changed
    (another model, retrained weights, another memory or planner setting) or that carry none, and
    those of a task of this run whose content changed (other dialogues, another scene:
    ``task_hashes``, by (split, task id)) move to ``<name>.stale.jsonl`` (nothing is deleted) and are
    run again. A line written before task hashes were recorded counts as the generator's dialogues'
    (``dialogues``: the split's kind now)."""
    def is_stale(r: dict) -> bool:
        now = task_hashes.get((r["split"], r["task_id"]))
        then = r.get("task_hash", now if dialogues == "template" else None)
        return r["method"] in fingerprints and (r.get("method_fp") != fingerprints[r["method"]]
                                                or (now is not None and then != now))

    stale = {k: r for k, r in done.items() if is_stale(r)}
    if not stale:
        return done
    with path.with_suffix(".stale.jsonl").open("a") as f:
        f.writelines(json.dumps(r) + "\n" for r in stale.values())
    keep = {k: r for k, r in done.items() if k not in stale}
    path.write_text("".join(json.dumps(r) + "\n" for r in keep.values()))
    methods = sorted({r["method"] for r in stale.values()})
    print(f"icalkit eval: {len(stale)} episodes of {', '.join(methods)} were run with another configuration, model, "
          f"memory or task set; moved to {path.with_suffix('.stale.jsonl')} and run again")
    return keep


def resolve_methods(cfg: Config) -> tuple[dict, list[str]]:
    """Methods by name (curve points included) and the problems of those that cannot run."""
    from icalkit.eval.alfworld import alfworld_problem
    from icalkit.eval.methods import load_method, method_problem

    methods, problems, names = {}, [], set()
    for spec in method_specs(cfg):
        method = load_method(spec)
        if method.name in names:  # records are keyed by name: the two would be one
            raise ConfigError(f"methods: two are named {method.name!r} (give one file its own `name`)")
        names.add(method.name)
        problem = (cfg.env.name == "alfworld" and alfworld_problem(method)) or method_problem(method)
        if problem:
            problems.append(problem)
        else:
            methods[method.name] = method
    return methods, problems


def run(cfg: Config) -> int:
    from tqdm import tqdm

    from icalkit.config import to_dict
    from icalkit.data_gen.results_file import RecordWriter, load_records
    from icalkit.envs.alfworld.engine import AlfworldUnavailable
    from icalkit.eval.alfworld import ensure_plan_memories, load_alfworld_split
    from icalkit.eval.methods import effective_llm, method_fingerprint
    from icalkit.eval.report import write_report
    from icalkit.eval.runner import Evaluator, Job, Setup, job_key, model_key
    from icalkit.eval.splits import load_split, split_hash, task_hash
    from icalkit.models.llm.factory import build_llm_from_config
    from icalkit.tracking import RunLogger

    alfworld = cfg.env.name == "alfworld"
    try:
        if alfworld:  # a flat method's plan memory: the train games' expert plans, written on first use
            ensure_plan_memories(method_specs(cfg), cfg.alfworld, cfg.split.task_types,
                                 cfg.alfworld_examples_per_type, cfg.split.seed)
        methods, problems = resolve_methods(cfg)
        splits = {s: load_alfworld_split(cfg.split, s, cfg.alfworld) if alfworld else load_split(cfg.split, s)
                  for s in cfg.splits}
    except (AlfworldUnavailable, ValueError) as exc:  # a missing extra; a broken game, split or dialogue file
        print(f"icalkit eval: {exc}")
        return 2
    for p in problems:
        print(f"icalkit eval: skipped {p}")
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    episodes_path, errors_path = out / "episodes.jsonl", out / "errors.jsonl"
    done = load_records(episodes_path, lambda r: job_key(r["method"], r["split"], r["task_id"]))
    sampling = {"max_new_tokens": cfg.llm.max_new_tokens, "temperature": cfg.llm.temperature, "seed": 0}
    fingerprints = {m: method_fingerprint(meth, cfg.llm, sampling) for m, meth in methods.items()}
    task_hashes = {(s, st.task.task_id): task_hash(st) for s, tasks in splits.items() for st in tasks}
    done = set_aside_stale(done, fingerprints, episodes_path, task_hashes, cfg.split.dialogues)
    jobs = [Job(m, s, st) for m in methods for s, tasks in splits.items() for st in tasks
            if job_key(m, s, st.task.task_id) not in done]
    llm_keys = {m: model_key(effective_llm(meth, cfg.llm)) if meth.planner.uses_model else ""
                for m, meth in methods.items()}
    llms, names = {}, {}
    for m in [m for m in methods if llm_keys[m] and llm_keys[m] not in llms]:
        if not any(j.method == m for j in jobs):
            continue
        try:
            llms[llm_keys[m]] = build_llm_from_config(effective_llm(methods[m], cfg.llm))
            names[llm_keys[m]] = llms[llm_keys[m]].model_name
        except Exception as exc:  # a missing/broken model skips its methods only
            problems.append(f"method {m}: the model could not be loaded ({type(exc).__name__}: {exc})")
            print(f"icalkit eval: skipped {problems[-1]}")
    runnable = {m for m in methods if not llm_keys[m] or llm_keys[m] in llms or not any(j.method == m for j in jobs)}
    jobs = [j for j in jobs if j.method in runnable]
    print(f"{len(jobs)} episodes to run ({len(done)} already done), methods: {', '.join(sorted(runnable))}")
    setup = Setup({m: methods[m] for m in runnable}, {m: llm_keys[m] for m in runnable}, names, cfg.memory,
                  cfg.env, sampling, cfg.oracle_object_map, cfg.torch_threads or 1)
    if cfg.torch_threads:
        import torch

        torch.set_num_threads(cfg.torch_threads)
    provenance = {"git_commit": git_commit(), "split_hashes": {s: split_hash(t) for s, t in splits.items()}}
    logger = RunLogger(out, to_dict(cfg), cfg.wandb, job_type="eval", provenance=provenance)

    def on_done(job: Job, rec: dict) -> None:
        rec["method_fp"], rec["task_hash"] = fingerprints[job.method], task_hashes[(job.split, job.task.task.task_id)]
        done[job.key] = rec
        episodes.write(rec)
        logger.log({"episode/success": float(rec["success"]), "episode/steps": rec["steps"]})

    def on_fail(job: Job, message: str) -> None:
        errors.write({"method": job.method, "split": job.split, "task_id": job.task.task.task_id,
                      "error": message})
        print(f"icalkit eval: episode {job.key} failed: {message.splitlines()[0]}")

    with RecordWriter(episodes_path) as episodes, RecordWriter(errors_path) as errors, \
            tqdm(total=len(jobs), desc="eval", unit="episode") as bar:
        try:
            stats = Evaluator(setup, llms, cfg.workers, on_done, on_fail).run(jobs, lambda: bar.update(1))
        except LLMError as exc:  # the model's server is down: stop, keep what is written
            print(f"icalkit eval: {exc}")
            logger.finish()
            return 1
    ids = {s: {st.task.task_id for st in tasks} for s, tasks in splits.items()}
    records = [r for r in done.values() if r["method"] in methods and r["task_id"] in ids.get(r["split"], ())]
    tables = write_report(logger, records, list(methods), list(splits))
    print((out / "table1.md").read_text())
    summary = {"config": to_dict(cfg), "provenance": provenance, "run": stats.to_dict(), "tables": tables, "skipped": problems}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    logger.finish()
    return 0 if not problems and not stats.failed else 1
