"""Retrieval keys: the text an example is stored under and the text a new task is looked up by.

Both sides are built by :func:`key_text` from the same fields (the goal sentence and the
Commander/Driver dialogue), so a stored example and a new task of the same kind are the same
kind of text. Which text is used is the memory's *key kind*, recorded in the store:

- ``commander``: the Commander's turns of the dialogue (the default; greetings and the Driver's
  acknowledgements carry little about the task), else the goal sentence;
- ``dialogue``: every turn, ``Speaker: text`` per line (Driver narration included), else the goal;
- ``instruction``: the goal sentence (what memories written before keys existed used), else the
  dialogue.

An example or task without a dialogue (e.g. a relabeled example) falls back to its goal sentence.
"""

from __future__ import annotations

from collections.abc import Sequence

KEY_KINDS = ("commander", "dialogue", "instruction")
DEFAULT_KEY = "commander"


class KeyKindError(ValueError):
    """Unknown key kind."""


def dialogue_turns(dialogue: Sequence[Sequence[str] | str]) -> list[tuple[str, str]]:
    """Normalise a dialogue to ``[(speaker, text)]``.

    Accepts the task form ``[("Commander", "hi"), ...]`` and the stored-example form
    ``["Commander: hi", ...]`` (a line without a known speaker counts as the Commander's).
    """
    turns = []
    for turn in dialogue:
        if isinstance(turn, str):
            speaker, sep, text = turn.partition(": ")
            if not sep or speaker not in ("Commander", "Driver"):
                speaker, text = "Commander", turn
        else:
            speaker, text = str(turn[0]), str(turn[1])
        if text.strip():
            turns.append((speaker, text.strip()))
    return turns


def key_text(instruction: str, dialogue: Sequence[Sequence[str] | str], kind: str = DEFAULT_KEY) -> str:
    """The retrieval text of a task or example (see the module docstring for ``kind``)."""
    if kind not in KEY_KINDS:
        raise KeyKindError(f"unknown retrieval key kind {kind!r}; available: {list(KEY_KINDS)}")
    turns = dialogue_turns(dialogue)
    instruction = (instruction or "").strip()
    if kind == "instruction":
        return instruction or "\n".join(f"{s}: {t}" for s, t in turns)
    if kind == "commander":
        said = [t for s, t in turns if s == "Commander"]
        if said:
            return "\n".join(said)
    elif turns:
        return "\n".join(f"{s}: {t}" for s, t in turns)
    return instruction or "\n".join(t for _, t in turns)
