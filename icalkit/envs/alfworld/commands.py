"""Reading one ALFWorld command out of a model's answer, and listing the command vocabulary."""

from __future__ import annotations

import re

STOP = "Stop"
VERBS = ("go to", "take", "move", "put", "open", "close", "use", "heat", "cool", "clean", "slice", "examine",
         "look", "inventory")
_COMMAND = re.compile(r"^(?:" + "|".join(re.escape(v) for v in VERBS) + r")\b", re.I)
_STOP = re.compile(r"^\W*(stop|done|finish(ed)?|end)\b", re.I)
_PREFIX = re.compile(r"^(?:\*\*)?(?:next\s+)?(?:action|command)(?:\*\*)?\s*:\s*|^\s*(?:\d+[.):]|[-*>])\s*", re.I)
COMMAND_HELP = ("go to <receptacle>, open/close <receptacle>, take <object> from <receptacle>, move <object> to "
                "<receptacle>, heat/cool/clean <object> with <receptacle>, use <object>, examine <something>, "
                "look, inventory, Stop (when the task is done)")


def parse_command(text: str) -> str:
    """The first line of an answer that is an ALFWorld command (lower case, single spaces) or ``Stop``.

    Raises:
        ValueError: no line starts with a command verb (the message lists the verbs).
    """
    if not isinstance(text, str):
        raise ValueError(f"expected text, got {type(text).__name__}")
    for raw in text.splitlines():
        line = _PREFIX.sub("", raw.strip()).strip("`*\"' .")
        if _STOP.match(line):
            return STOP
        if _COMMAND.match(line):
            return " ".join(line.lower().split())
    raise ValueError(f"no command found; reply with one command: {COMMAND_HELP}")
