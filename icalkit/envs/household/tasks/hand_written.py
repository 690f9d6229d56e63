"""Hand-written Commander/Driver dialogues and the task instances they are played on.

The dialogues (``tests/data/human_dialogues``) were written by hand, not from the generator's
templates: typos, slang, corrections, indirect goals, hints that may not match the room. Each
entry names the task type and friendly parameters it means; :func:`human_task` builds an instance
of them and puts the hand-written turns in place of the generated ones. :data:`DEV_DIALOGUES` is the
set settings are chosen on; :data:`HUMAN_DIALOGUES` was a test set until round 28 scored it (its
failures chose round 29's changes), :data:`TEST2_DIALOGUES` round 29's (its failures chose round 30's);
:data:`TEST3_DIALOGUES` round 30's (read after round 30 scored it); :data:`TEST4_DIALOGUES` round 31's (scored
in round 32); :data:`TEST5_DIALOGUES` round 32's, breakfasts only (28, 4 per menu); :data:`TEST6_DIALOGUES`
round 33's, breakfasts (28, 4 per menu), in half of which the Commander changes their mind (scored in round 33);
:data:`TEST7_DIALOGUES` round 34's, 28 breakfasts (4 per menu) and 24 single dishes of the types they are made of;
:data:`TEST8_DIALOGUES` and :data:`TEST9_DIALOGUES` round 35's, the same mix by two more writers;
:data:`TEST10_DIALOGUES` round 36's, 48 single dishes (8 of each type breakfasts are made of) and 14 breakfasts;
:data:`TEST11_DIALOGUES` round 37's, 5 of each of the 12 TEACh task types; :data:`TEST12_DIALOGUES` round 37's
second, 42 breakfasts (6 per menu, 3 per serving place) and 22 single dishes; :data:`TEST13_DIALOGUES` round 38's,
28 breakfasts (4 per menu, 2 per serving place) and 36 single dishes, 28 with a correction; :data:`TEST14_DIALOGUES`
round 39's, 28 breakfasts (4 per menu, 2 per serving place) and 36 dishes of every other TEACh kitchen type;
:data:`TEST15_DIALOGUES` round 40's, the same mix by another writer. :data:`TEST16_DIALOGUES` round 41's, the same mix
by another writer. :data:`TEST17_DIALOGUES` round 42's, the same mix by another writer.
:data:`TEST18_DIALOGUES` round 42's second, the same mix by another writer.
:data:`TEST19_DIALOGUES` round 43's, the same mix by another writer.
Each test set was written by a writer who never read the code that reads dialogues, and scored once before it
was read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from icalkit.envs.household.tasks.registry import TASK_TYPES, TaskSpecError
from icalkit.envs.household.tasks.sampler import make_task
from icalkit.envs.household.tasks.task import Task

HUMAN_DIALOGUES = Path(__file__).resolve().parents[4] / "tests" / "data" / "human_dialogues" / "tfd_dialogues.yaml"
DEV_DIALOGUES = HUMAN_DIALOGUES.with_name("dev_dialogues.yaml")
TEST2_DIALOGUES = HUMAN_DIALOGUES.with_name("test2_dialogues.yaml")  # round 29's test set, by another writer
TEST3_DIALOGUES = HUMAN_DIALOGUES.with_name("test3_dialogues.yaml")  # round 30's test set, by another writer
TEST4_DIALOGUES = HUMAN_DIALOGUES.with_name("test4_dialogues.yaml")  # round 31's test set, by another writer
TEST5_DIALOGUES = HUMAN_DIALOGUES.with_name("test5_dialogues.yaml")  # round 32's breakfasts, by another writer
TEST6_DIALOGUES = HUMAN_DIALOGUES.with_name("test6_dialogues.yaml")  # round 33's breakfasts, half change their mind
TEST7_DIALOGUES = HUMAN_DIALOGUES.with_name("test7_dialogues.yaml")  # round 34's breakfasts and single dishes
TEST8_DIALOGUES = HUMAN_DIALOGUES.with_name("test8_dialogues.yaml")  # round 35's, the same mix by another writer
TEST9_DIALOGUES = HUMAN_DIALOGUES.with_name("test9_dialogues.yaml")  # round 35's second, by another writer
TEST10_DIALOGUES = HUMAN_DIALOGUES.with_name("test10_dialogues.yaml")  # round 36's, mostly single dishes
TEST11_DIALOGUES = HUMAN_DIALOGUES.with_name("test11_dialogues.yaml")  # round 37's, every TEACh task type
TEST12_DIALOGUES = HUMAN_DIALOGUES.with_name("test12_dialogues.yaml")  # round 37's second, mostly breakfasts
TEST13_DIALOGUES = HUMAN_DIALOGUES.with_name("test13_dialogues.yaml")  # round 38's, many corrections
TEST14_DIALOGUES = HUMAN_DIALOGUES.with_name("test14_dialogues.yaml")  # round 39's, breakfasts and every other type
TEST15_DIALOGUES = HUMAN_DIALOGUES.with_name("test15_dialogues.yaml")  # round 40's, breakfasts and every other type
TEST16_DIALOGUES = HUMAN_DIALOGUES.with_name("test16_dialogues.yaml")  # round 41's, breakfasts and every other type
TEST17_DIALOGUES = HUMAN_DIALOGUES.with_name("test17_dialogues.yaml")  # round 42's, breakfasts and every other type
TEST18_DIALOGUES = HUMAN_DIALOGUES.with_name("test18_dialogues.yaml")  # round 42's second, breakfasts, every other type
TEST19_DIALOGUES = HUMAN_DIALOGUES.with_name("test19_dialogues.yaml")  # round 43's, breakfasts and every other type
# every set: none may be trained on
HAND_WRITTEN = (HUMAN_DIALOGUES, DEV_DIALOGUES, TEST2_DIALOGUES, TEST3_DIALOGUES, TEST4_DIALOGUES, TEST5_DIALOGUES,
                TEST6_DIALOGUES, TEST7_DIALOGUES, TEST8_DIALOGUES, TEST9_DIALOGUES, TEST10_DIALOGUES, TEST11_DIALOGUES,
                TEST12_DIALOGUES, TEST13_DIALOGUES, TEST14_DIALOGUES, TEST15_DIALOGUES, TEST16_DIALOGUES,
                TEST17_DIALOGUES, TEST18_DIALOGUES, TEST19_DIALOGUES)


class DialogueFileError(ValueError):
    """A hand-written dialogue file that cannot be read or names an unknown task."""


@dataclass(frozen=True)
class HumanDialogue:
    """One hand-written dialogue: what it means (task type + friendly params) and its turns."""

    id: str
    task_type: str
    params: dict[str, str]
    dialogue: list[tuple[str, str]]


def load_human_dialogues(path: str | Path = HUMAN_DIALOGUES) -> list[HumanDialogue]:
    """Read and check a hand-written dialogue YAML (task types and params must be valid).

    Raises:
        DialogueFileError: the file cannot be read, or an entry is malformed (named).
    """
    import yaml

    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise DialogueFileError(f"cannot read hand-written dialogues {path}: {exc}") from exc
    if not isinstance(raw, list) or not raw:
        raise DialogueFileError(f"{path} must be a non-empty list of dialogues")
    out = []
    for i, item in enumerate(raw):
        where = f"{path.name} entry {i} ({item.get('id', '?') if isinstance(item, dict) else item!r})"
        if not isinstance(item, dict) or not {"id", "task_type", "params", "dialogue"} <= set(item):
            raise DialogueFileError(f"{where}: needs id, task_type, params and dialogue")
        turns = item["dialogue"]
        if not turns or any(not isinstance(t, list) or len(t) != 2 or t[0] not in ("Commander", "Driver")
                            for t in turns):
            raise DialogueFileError(f"{where}: dialogue must be a list of [Commander|Driver, text] pairs")
        if not isinstance(item["params"], dict):
            raise DialogueFileError(f"{where}: params must be a mapping such as {{X: Potato}}")
        try:
            human_task(HumanDialogue(str(item["id"]), item["task_type"], dict(item["params"]), []), grounded=False)
        except TaskSpecError as exc:
            raise DialogueFileError(f"{where}: {exc}") from exc
        out.append(HumanDialogue(str(item["id"]), item["task_type"], {k: str(v) for k, v in item["params"].items()},
                                 [(str(s), str(t)) for s, t in turns]))
    return out


def human_task(d: HumanDialogue, index: int = 0, grounded: bool = True, split: str = "valid_unseen",
               seed: int = 7) -> Task:
    """A task instance with the dialogue's type and params, its dialogue replaced by ``d``'s turns.

    The first of the type's rooms that can hold the parameters is used.

    Raises:
        TaskSpecError: unknown task type, or parameters no room of the type can hold.
    """
    tt = TASK_TYPES.get(d.task_type)
    if tt is None:
        raise TaskSpecError(f"unknown task type {d.task_type!r}; available: {sorted(TASK_TYPES)}")
    errors = []
    for room in tt.rooms:
        try:
            task = make_task(d.task_type, d.params, split=split, index=index, seed=seed, room_type=room,
                             grounded=grounded)
        except TaskSpecError as exc:
            errors.append(str(exc))
            continue
        task.dialogue = list(d.dialogue)
        return task
    raise TaskSpecError("; ".join(errors))
