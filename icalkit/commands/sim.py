"""``icalkit sim``: play or inspect the household simulator."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from icalkit.envs.config import EnvConfig

HELP = """icalkit sim — play or inspect the household simulator.

Generates one task instance, prints its instruction, dialogue, text state and scene graph, then
plays actions (from `actions`, from the expert with `expert=true`, or typed at the terminal with
`interactive=true`) and saves every frame as PNG under `out_dir`.

Actions are written as the TEACh primitive, optionally with a target instance id or a pixel:
  Forward | Turn Left | Look Down | Pickup Mug_1 | Place CounterTop_2 | ToggleOn @64,70

Examples:
  icalkit sim task_type=Coffee seed=3
  icalkit sim task_type="Boil X" expert=true out_dir=runs/sim_boil
  icalkit sim interactive=true
"""


@dataclass
class Config:
    env: EnvConfig = field(default_factory=EnvConfig)
    task_type: str = "Coffee"
    index: int = 0
    split: str = "train"
    seed: int = 0
    actions: list[str] = field(default_factory=list)
    expert: bool = False
    interactive: bool = False
    out_dir: str = "runs/sim"
    save_frames: bool = True


def parse_action_text(text: str, action_names: tuple[str, ...]) -> dict:
    """``"Pickup Mug_1"`` / ``"ToggleOn @64,70"`` / ``"Turn Left"`` -> env action dict."""
    text = " ".join(text.strip().split())
    lowered = {a.lower(): a for a in action_names}
    for name in sorted(lowered, key=len, reverse=True):
        if text.lower() == name or text.lower().startswith(name + " "):
            rest = text[len(name):].strip()
            action: dict = {"action": lowered[name], "target": None, "pixel": None}
            if rest.startswith("@"):
                try:
                    x, y = (int(v) for v in rest[1:].split(","))
                except ValueError:
                    raise ValueError(f"pixel target {rest!r} must look like @x,y") from None
                action["pixel"] = (x, y)
            elif rest:
                action["target"] = rest
            return action
    raise ValueError(f"unknown action {text!r}; actions: {', '.join(action_names)}")


def _show(obs: dict, info: dict) -> None:
    status = "ok" if obs.get("last_action_success", True) else f"FAILED: {obs.get('error')}"
    print(f"  -> {status}")
    progress = info.get("goal_progress")
    if progress:
        print(f"  goal: {progress['satisfied']}/{progress['total']} success={progress['success']}")


def run(cfg: Config) -> int:
    from icalkit.envs.factory import make_env
    from icalkit.envs.household.actions import ACTIONS
    from icalkit.envs.household.png import save_png
    from icalkit.envs.household.tasks.sampler import sample_task

    task = sample_task(cfg.task_type, cfg.index, cfg.split, cfg.seed)
    env = make_env(cfg.env.name, **cfg.env.kwargs())
    obs, info = env.reset(seed=cfg.seed, options={"task": task})
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    print(f"task {task.task_id} ({task.task_type}) in {task.room_type}\n  instruction: {task.instruction}")
    print("  dialogue:\n    " + task.dialogue_text().replace("\n", "\n    "))
    print("text state:\n" + obs["text_state"])
    frame_no = 0

    def save(o: dict) -> None:
        nonlocal frame_no
        if cfg.save_frames and cfg.env.render:
            save_png(o["rgb"], out / f"frame_{frame_no:04d}.png")
        frame_no += 1

    save(obs)
    if cfg.expert:
        from icalkit.data_gen.expert import expert_actions

        script = [dict(a) for a in expert_actions(task)]
    else:
        script = [parse_action_text(a, ACTIONS) for a in cfg.actions]
    for action in script:
        print(f"> {action['action']} {action.get('target') or action.get('pixel') or ''}")
        obs, _, terminated, truncated, info = env.step(action)
        _show(obs, info)
        save(obs)
        if terminated or truncated:
            break
    while cfg.interactive:
        line = input("action (empty to quit)> ").strip() if sys.stdin.isatty() else sys.stdin.readline().strip()
        if not line:
            break
        try:
            action = parse_action_text(line, ACTIONS)
        except ValueError as exc:
            print(exc)
            continue
        obs, _, terminated, truncated, info = env.step(action)
        _show(obs, info)
        print(obs["text_state"])
        save(obs)
        if terminated or truncated:
            break
    print(f"{frame_no} frame(s) in {out}")
    return 0
