"""ALFWorld backend: engine speed against the embedded simulator; P-RAG and the flat planner on ALFWorld games.

1. ``speed``: the same tasks (one per ALFWorld type, ``valid_unseen``) solved by each engine's expert
   through its gymnasium env: the ALFWorld env (``AlfworldEnv.step`` with the Fast Downward plan's
   text commands) against the household env (``HouseholdEnv(render_obs=False).step`` with the
   household expert's primitive actions). Reported: steps/s of each (CPU time of this process) and
   expert episodes/s, each as a ratio ALFWorld / embedded; game loading (``reset``) is timed apart.
2. ``prag``: P-RAG self-iteration on the generated games with the default model (SmolLM2-135M-Instruct,
   greedy, CPU, 1 torch thread), the first ``--prag-games`` games, ``--rounds`` rounds of
   ``--max-steps`` commands; success per round as a ratio against round 1.

3. ``flat``: the flat LLM-Planner (``icalkit alfworld-plan``) with the same model on every game, kNN
   examples = the expert plans of one ``train`` game per type, ``--max-replans`` re-plans.

4. ``eval``: ``icalkit eval --config configs/eval_alfworld.yaml`` (the evaluation harness on ALFWorld
   games, as a user runs it; ``--eval-methods``, default zero-shot and the flat LLM-Planner with 2 train
   games' expert plans per type as its memory; add ``alfworld_flat_finetuned`` after
   ``icalkit finetune --config configs/finetune_alfworld.yaml``; ``--eval-preset`` games per type of
   ``valid_unseen``), Table 1, wins per method and type, and the run's throughput (of the last
   invocation: the run resumes when it is started again).

Sections skipped (``--skip-speed/--skip-prag/--skip-flat/--skip-eval``) keep the figures of an earlier run.
Writes ``benchmarks/results/alfworld.json``. Needs the ``alfworld`` extra (``make alfworld-setup``).
Usage: python benchmarks/bench_alfworld.py [--rounds 2] [--max-steps 5] [--prag-games 3] [--skip-prag]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from icalkit.data_gen.expert import expert_actions
from icalkit.envs.alfworld.env import AlfworldEnv, load_task
from icalkit.envs.alfworld.games import ALFWORLD_TYPES, generate_games
from icalkit.envs.household.env import HouseholdEnv

RESULTS = Path(__file__).resolve().parent / "results" / "alfworld.json"


def cpu() -> float:
    return time.process_time()


def speed(games: list[Path]) -> dict:
    """Expert episodes on both engines; CPU seconds of resets and steps, step counts."""
    alf, home = AlfworldEnv(max_steps=1000), HouseholdEnv(render_obs=False)
    out = {"alfworld": {"reset_s": 0.0, "step_s": 0.0, "steps": 0, "won": 0},
           "embedded": {"reset_s": 0.0, "step_s": 0.0, "steps": 0, "won": 0}}
    for game in games:
        task, _ = load_task(game)
        t = cpu()
        _, info = alf.reset(options={"game": game})
        out["alfworld"]["reset_s"] += cpu() - t
        t = cpu()
        for command in info["expert_plan"]:
            _, _, done, _, info = alf.step(command)
        out["alfworld"]["step_s"] += cpu() - t
        out["alfworld"]["steps"] += len(info["expert_plan"])
        out["alfworld"]["won"] += bool(info["won"])
        actions = expert_actions(task)
        t = cpu()
        home.reset(options={"task": task})
        out["embedded"]["reset_s"] += cpu() - t
        t = cpu()
        for action in actions:
            _, _, done, _, hinfo = home.step(action)
        out["embedded"]["step_s"] += cpu() - t
        out["embedded"]["steps"] += len(actions)
        out["embedded"]["won"] += bool(hinfo.get("goal_progress", {}).get("success"))
    for side in out.values():
        side["steps_per_s"] = side["steps"] / side["step_s"]
        side["episodes_per_s"] = len(games) / (side["step_s"] + side["reset_s"])
    out["ratio_steps_per_s"] = out["alfworld"]["steps_per_s"] / out["embedded"]["steps_per_s"]
    out["ratio_episodes_per_s"] = out["alfworld"]["episodes_per_s"] / out["embedded"]["episodes_per_s"]
    return out


def prag(games: list[Path], rounds: int, max_steps: int, out: Path) -> dict:
    import torch

    from icalkit.agents.llm_session import LLMSession
    from icalkit.data_gen.prag import PragAgent, PragConfig, round_table, run_prag, transition_table
    from icalkit.data_gen.prag_alfworld import AlfworldGames
    from icalkit.memory.config import build_trajectory_db
    from icalkit.models.llm.factory import build_llm

    torch.set_num_threads(1)
    factory, tasks = AlfworldGames.load(games)
    cfg = PragConfig(k=3, max_steps=max_steps, batch_size=len(tasks))
    llm = build_llm("hf", cache=True, cache_path=out / "llm_cache.sqlite", device="cpu")
    agent = PragAgent(LLMSession(llm, cfg.max_new_tokens), build_trajectory_db(str(out / "trajectories.db")), cfg,
                      None, factory, "prag_step_alfworld")
    start = time.perf_counter()
    records = run_prag(agent, "self_iterate", rounds, [], tasks, out / "episodes.jsonl", factory.ref_lens,
                       lambda p, r, recs: print(f"round {r}: success {sum(x['success'] for x in recs)}/{len(recs)} "
                                                f"after {time.perf_counter() - start:.0f} s", flush=True))
    rows = round_table(records)
    base = rows[0]["success_rate"]
    for row in rows:
        row["success_vs_round1"] = row["success_rate"] / base if base > 0 else None
        row["llm_calls"] = sum(x["llm"]["calls"] for x in records if x["round"] == row["round"])
    parsed = [sum(1 for a, o in x["trajectory"]["history"] if not o.startswith("invalid")) for x in records]
    return {"model": agent.llm.model_name, "rounds": rounds, "max_steps": max_steps, "k": cfg.k,
            "oracle": {"success_flag": False, "object_map": False}, "per_round": rows,
            "transitions": transition_table(records), "parsed_commands_per_episode": sum(parsed) / len(parsed),
            "admissible_commands_per_episode": sum(sum(1 for _, o in x["trajectory"]["history"] if o == "ok")
                                                   for x in records) / len(records),
            "wall_s": time.perf_counter() - start}


def flat(games: list[Path], examples: list[Path], max_replans: int, out: Path) -> dict:
    """The flat LLM-Planner (``icalkit alfworld-plan``) with SmolLM2 on the games; examples from other games."""
    import torch

    from icalkit.agents.llm_session import LLMSession
    from icalkit.agents.planner_alfworld import AlfworldFlatPlanner
    from icalkit.data_gen.alfworld_plans import plan_examples
    from icalkit.memory.embed import SentenceTransformerEmbedder
    from icalkit.models.llm.factory import build_llm

    torch.set_num_threads(1)
    env = AlfworldEnv(max_steps=50, max_failures=50)
    pool = plan_examples(examples, env)
    llm = build_llm("hf", cache=True, cache_path=out / "llm_cache.sqlite", device="cpu")
    planner = AlfworldFlatPlanner(LLMSession(llm, 128), pool, SentenceTransformerEmbedder(), 3, max_replans)
    start, records = time.perf_counter(), []
    for game in games:
        rec = planner.run_episode(env, game)
        records.append(rec)
        print(f"flat {rec['task_id']}: {'won' if rec['success'] else 'failed'} {rec['satisfied']}/{rec['total']} "
              f"conditions, {rec['steps']} commands, {rec['replans']} re-plans, errors {rec['errors'][:1]}", flush=True)
    n = len(records)
    return {"model": planner.llm.model_name, "games": n, "examples": len(pool), "k": 3, "max_replans": max_replans,
            "success_rate": sum(r["success"] for r in records) / n,
            "gc_satisfied": sum(r["satisfied"] for r in records), "gc_total": sum(r["total"] for r in records),
            "gc_satisfied_at_start": sum(r["init_satisfied"] for r in records),
            "commands_per_game": sum(r["steps"] for r in records) / n,
            "parse_failures": sum(r["llm"]["parse_failures"] for r in records),
            "llm_calls": sum(r["llm"]["calls"] for r in records), "plans": [r["programs"] for r in records],
            "oracle": {"goal_feedback": False, "object_map": False}, "wall_s": time.perf_counter() - start}


def harness(out: Path, methods: str, preset: str, threads: int, workers: int = 0) -> dict:
    """``icalkit eval --config configs/eval_alfworld.yaml`` on ``valid_unseen`` games: Table 1, and per method
    the wins, goal conditions completed and first errors (the default model unless a method sets its own)."""
    from icalkit.cli import main as icalkit

    config = Path(__file__).resolve().parents[1] / "configs" / "eval_alfworld.yaml"
    run = out / "eval"
    overrides = [f"methods={methods}", "splits=[valid_unseen]", f"split.preset={preset}", f"workers={workers}",
                 f"torch_threads={threads}"]
    args = ["eval", "--config", str(config), *overrides, f"split.dir={out / 'splits'}",
            f"alfworld.games_dir={out / 'games'}", f"out_dir={run}", "wandb.mode=disabled"]
    start = time.perf_counter()
    code = icalkit(args)
    summary = json.loads((run / "summary.json").read_text())
    recs = [r for r in map(json.loads, (run / "episodes.jsonl").read_text().splitlines()) if r["split"] == "valid_unseen"]
    per_method = {}
    for name in sorted({r["method"] for r in recs}):
        rs = [r for r in recs if r["method"] == name]
        per_method[name] = {
            "wins": sum(r["success"] for r in rs), "episodes": len(rs),
            "wins_by_type": {t: sum(r["success"] for r in rs if r["task_type"] == t) for t in sorted({r["task_type"] for r in rs})},
            "gc_completed": sum(r["satisfied"] - r["init_satisfied"] for r in rs),
            "gc_to_complete": sum(r["init_total"] - r["init_satisfied"] for r in rs),
            "commands_per_episode": sum(r["steps"] for r in rs) / len(rs),
            "replans_per_episode": sum(r["replans"] for r in rs) / len(rs),
            "first_error_inadmissible": sum(1 for r in rs if r["errors"] and "not admissible" in r["errors"][0])}
    return {"command": "icalkit " + " ".join(args[:3] + overrides), "exit_code": code,
            "model": summary["config"]["llm"]["model"] or "SmolLM2-135M-Instruct (default)",
            "table1": summary["tables"]["table1"], "run": summary["run"], "per_method": per_method,
            "wall_s": time.perf_counter() - start}


def finetune_run(run: Path) -> dict | None:
    """The fine-tuned flat planner's run (``icalkit finetune --config configs/finetune_alfworld.yaml``): its pairs'
    statistics and the last invocation's training summary, recorded beside the evaluation that uses it."""
    stats, summary = run / "data" / "stats.json", run / "train_summary.json"
    if not (stats.is_file() and summary.is_file()):
        return None
    st, sm = json.loads(stats.read_text()), json.loads(summary.read_text())
    keep = ("global_step", "max_steps", "finished", "train_pairs", "tokens_seen", "eval_loss", "peak_rss_gb",
            "train_tokens_per_s", "threads", "precision", "method", "micro_batch", "grad_accum")
    return {"run": str(run), "pairs": {k: st[k] for k in ("tasks", "pairs", "by_kind", "by_type", "dropped", "tokens")},
            "train_last_invocation": {k: sm.get(k) for k in keep}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=5)
    parser.add_argument("--prag-games", type=int, default=3, help="P-RAG on the first N games (CPU time)")
    parser.add_argument("--out", default="runs/bench_alfworld")
    parser.add_argument("--skip-prag", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-flat", action="store_true")
    parser.add_argument("--skip-eval", action="store_true")
    parser.add_argument("--max-replans", type=int, default=1)
    parser.add_argument("--eval-methods", default="[zero_shot, alfworld_flat]",
                        help="methods of the eval part, e.g. '[zero_shot, alfworld_flat, alfworld_flat_finetuned]'")
    parser.add_argument("--eval-preset", default="cpu", help="games per type of the eval part: cpu 1, small 2, full 20")
    parser.add_argument("--eval-threads", type=int, default=2)
    parser.add_argument("--finetune-run", default="runs/finetune_alfworld")
    parser.add_argument("--eval-workers", type=int, default=0, help="game worker processes (their model calls are batched)")
    args = parser.parse_args()
    out = Path(args.out)
    games = generate_games(ALFWORLD_TYPES, 1, "valid_unseen", out / "games")
    result = {"benchmark": "ALFWorld engine vs embedded simulator; P-RAG and the flat planner on ALFWorld games",
              "games": [str(g.relative_to(out)) for g in games], "machine": platform.platform()}
    if not args.skip_speed:  # sections not run keep the figures of an earlier run
        result["speed"] = s = speed(games)
        print(f"steps/s  ALFWorld {s['alfworld']['steps_per_s']:.1f}  embedded {s['embedded']['steps_per_s']:.1f}  "
              f"ratio {s['ratio_steps_per_s']:.3f}x")
        print(f"expert episodes/s (incl. reset)  ALFWorld {s['alfworld']['episodes_per_s']:.3f}  embedded "
              f"{s['embedded']['episodes_per_s']:.3f}  ratio {s['ratio_episodes_per_s']:.3f}x  "
              f"(won: {s['alfworld']['won']}/{len(games)} vs {s['embedded']['won']}/{len(games)})")
    if not args.skip_flat:
        examples = generate_games(ALFWORLD_TYPES, 1, "train", out / "games")
        result["flat"] = f = flat(games, examples, args.max_replans, out)
        print(f"flat planner: SR {f['success_rate']:.3f} ({f['games']} games), goal conditions "
              f"{f['gc_satisfied']}/{f['gc_total']} (at start {f['gc_satisfied_at_start']})")
    if not args.skip_prag:
        result["prag"] = prag(games[:args.prag_games], args.rounds, args.max_steps, out)
        for row in result["prag"]["per_round"]:
            ratio = "n/a (round 1 solved none)" if row["success_vs_round1"] is None else f"{row['success_vs_round1']:.2f}x"
            print(f"P-RAG round {row['round']}: SR {row['success_rate']:.3f} ({ratio} vs round 1), GC {row['gc']:.3f}, "
                  f"invalid/episode {row['invalid_per_episode']:.1f}")
    if not args.skip_eval:
        result["eval"] = e = harness(out, args.eval_methods, args.eval_preset, args.eval_threads,
                                     args.eval_workers)
        result["finetune"] = finetune_run(Path(args.finetune_run))
        for row in e["table1"]:
            print(f"icalkit eval {row['method']}: unseen SR {row['unseen SR']:.3f} GC {row['unseen GC']:.3f} "
                  f"PLW-SR {row['unseen PLW-SR']:.3f} ({row['unseen n']} games)")
    latest = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}  # another run may have written meanwhile
    for key, skipped in (("speed", args.skip_speed), ("prag", args.skip_prag), ("flat", args.skip_flat),
                         ("eval", args.skip_eval), ("finetune", args.skip_eval)):
        if skipped:
            result[key] = latest.get(key)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
