"""Benchmark splits: fixed, versioned task sets generated from seeds.

A split file (JSONL, one task per line) holds every task of one split with what the metrics
need from the start of the episode: the expert's reference length (``ref_len``; None when the
expert fails) and the goal-condition counts of the initial state (``init_satisfied`` /
``init_total``). Files are generated once, then read back unchanged, so every method of every
run is scored on the same tasks; ``split_hash`` names the content.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from icalkit.data_gen.expert import reference_length
from icalkit.envs.household.scene import build_world
from icalkit.envs.household.tasks.checker import check_goal
from icalkit.envs.household.tasks.hand_written import HumanDialogue, human_task, load_human_dialogues
from icalkit.envs.household.tasks.instructions import DIALOGUE_STYLES, write_instructions
from icalkit.envs.household.tasks.registry import TFD_TYPES, get_task_type
from icalkit.envs.household.tasks.sampler import friendly_params, sample_task
from icalkit.envs.household.tasks.task import SPLITS, Task

SPLIT_VERSION = 1
PRESETS = {"cpu": 1, "small": 2, "full": 20}  # tasks per type and split


@dataclass
class SplitConfig:
    """Which tasks a benchmark split holds.

    Attributes:
        preset: ``cpu`` (1 task per type), ``small`` (2) or ``full`` (20, for GPU machines);
            ``n_per_type`` > 0 overrides it.
        n_per_type: tasks per task type (0: the preset's).
        task_types: task types (default: the 12 TEACh TfD types).
        seed: sampling seed (tasks are deterministic in type, index, split and seed).
        dir: where split files are written and read back.
        dialogues: what the Commander says. ``template``: the generator's dialogues; ``human``: the
            same tasks (same rooms, goals and start states) with the generator's human-like dialogues
            (indirect goals, corrections, slang, typos); or the path of a YAML file of hand-written
            dialogues (``tests/data/human_dialogues``): each of the first ``size`` dialogues of each
            listed type is played in a room made for its parameters.
    """

    preset: str = "cpu"
    n_per_type: int = 0
    task_types: list[str] = field(default_factory=lambda: list(TFD_TYPES))
    seed: int = 0
    dir: str = "runs/splits"
    dialogues: str = "template"

    def validate(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"splits.preset {self.preset!r} is not one of {', '.join(PRESETS)}")
        if self.n_per_type < 0:
            raise ValueError(f"splits.n_per_type must be >= 0, got {self.n_per_type}")
        if not self.task_types:
            raise ValueError("splits.task_types is empty: a split needs at least one task type")
        for t in self.task_types:
            get_task_type(t)
        if self.dialogues not in DIALOGUE_STYLES:
            if not Path(self.dialogues).is_file():
                raise ValueError(f"split.dialogues {self.dialogues!r} is neither one of {', '.join(DIALOGUE_STYLES)} "
                                 "nor a file of hand-written dialogues")
            if not {d.task_type for d in load_human_dialogues(self.dialogues)} & set(self.task_types):
                raise ValueError(f"split.dialogues {self.dialogues} holds no dialogue of the task types "
                                 f"{', '.join(self.task_types)}")

    @property
    def size(self) -> int:
        """Tasks per type."""
        return self.n_per_type or PRESETS[self.preset]


@dataclass
class SplitTask:
    """One task of a split with its start-of-episode facts."""

    task: Task
    ref_len: int | None
    init_satisfied: int
    init_total: int
    game: str = ""  # ALFWorld: the game file played (empty on the embedded simulator)

    def to_dict(self) -> dict:
        d = {"task": self.task.to_dict(), "ref_len": self.ref_len,
             "init_satisfied": self.init_satisfied, "init_total": self.init_total}
        return d | {"game": self.game} if self.game else d

    @classmethod
    def from_dict(cls, data: dict) -> SplitTask:
        return cls(Task.from_dict(data["task"]), data["ref_len"], int(data["init_satisfied"]),
                   int(data["init_total"]), str(data.get("game", "")))


def split_task(task: Task) -> SplitTask:
    """Measure a task's reference length (expert) and initial goal-condition counts."""
    goal = check_goal(task, build_world(task).metadata())
    ref = reference_length(task)
    task.reference_length = ref
    return SplitTask(task, ref, goal.satisfied, goal.total)


def split_path(cfg: SplitConfig, split: str) -> Path:
    """The file of ``split`` under ``cfg`` (its name encodes version, size, seed and types)."""
    types = hashlib.sha256("|".join(cfg.task_types).encode()).hexdigest()[:8]
    talk = ""
    if cfg.dialogues == "human":
        talk = "-dhuman"
    elif cfg.dialogues != "template":  # a file: its name and content
        text = Path(cfg.dialogues).read_bytes()
        talk = f"-d{Path(cfg.dialogues).stem}-{hashlib.sha256(text).hexdigest()[:8]}"
    return Path(cfg.dir) / f"{split}-v{SPLIT_VERSION}-n{cfg.size}-s{cfg.seed}-t{types}{talk}.jsonl"


def split_tasks(cfg: SplitConfig, split: str) -> list[Task]:
    """The tasks ``cfg`` names in ``split``, in type order, before they are measured. A task told in
    human words has no goal sentence (TEACh's TfD tasks have none): nothing may read the generator's
    clean wording of it. A hand-written one's id is its instance's (``…/0-00004`` for the file's fifth
    dialogue); each episode record carries its task's content hash (:func:`task_hash`)."""
    if cfg.dialogues == "template":
        return [sample_task(t, i, split, cfg.seed) for t in cfg.task_types for i in range(cfg.size)]
    if cfg.dialogues == "human":
        tasks = [told_humanly(sample_task(t, i, split, cfg.seed)) for t in cfg.task_types for i in range(cfg.size)]
    else:
        by_type: dict[str, list[tuple[int, HumanDialogue]]] = {}
        for i, d in enumerate(load_human_dialogues(cfg.dialogues)):
            by_type.setdefault(d.task_type, []).append((i, d))
        tasks = [human_task(d, index=i, split=split, seed=cfg.seed)
                 for t in cfg.task_types for i, d in by_type.get(t, [])[:cfg.size]]
    for task in tasks:
        task.instruction = ""
    return tasks


def told_humanly(task: Task) -> Task:
    """``task`` with the generator's human-like dialogue instead of its template one: the same seed and
    the same start objects for the location hints (``instructions.write_instructions``)."""
    _, task.dialogue = write_instructions(task.task_type, friendly_params(task), task.task_id,
                                          build_world(task).metadata(), style="human")
    return task


def task_hash(st: SplitTask) -> str:
    """Content hash of one task of a split (its dialogue, scene, start state, reference length)."""
    return hashlib.sha256(_canonical(st)).hexdigest()[:12]


def split_hash(tasks: list[SplitTask]) -> str:
    """Content hash of a split (task ids, dialogues, scenes, reference lengths)."""
    h = hashlib.sha256()
    for st in tasks:
        h.update(_canonical(st))
    return h.hexdigest()[:12]


def _canonical(st: SplitTask) -> bytes:
    return json.dumps(st.to_dict(), sort_keys=True).encode()


def load_split(cfg: SplitConfig, split: str, progress: bool = True) -> list[SplitTask]:
    """The tasks of ``split``: read from its file, or generated (expert + initial check) and saved.

    Raises:
        ValueError: unknown split name, a split file that cannot be read (named), or a hand-written
            dialogue file that cannot be read or names no task of ``cfg.task_types``.
    """
    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not one of {SPLITS}")
    cfg.validate()
    path = split_path(cfg, split)
    if path.is_file():
        try:
            tasks = [SplitTask.from_dict(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"split file {path} is damaged ({exc}); delete it to generate it again") from None
        if not tasks:
            raise ValueError(f"split file {path} holds no tasks; delete it to generate it again")
        return tasks
    from tqdm import tqdm

    tasks = [split_task(t) for t in tqdm(split_tasks(cfg, split), desc=f"split {split}", unit="task",
                                         disable=not progress)]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(st.to_dict()) + "\n" for st in tasks))
    tmp.replace(path)
    return tasks
