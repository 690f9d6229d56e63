"""Append-only JSONL result files that make loops resumable (one record per finished item).

A killed run leaves at most a torn last line; :func:`load_records` drops it (rewriting the file
without it, so the next record starts on a fresh line) and returns the complete records keyed by
the caller's key, so a re-run skips the items that are done.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Hashable
from pathlib import Path

log = logging.getLogger(__name__)


def read_jsonl(path: str | Path) -> list[dict]:
    """Records of a JSONL file; a torn last line (from a kill) is ignored, any other bad line is an error.

    Raises:
        ValueError: naming the file and the line that is not valid JSON.
    """
    path = Path(path)
    if not path.exists():
        return []
    out = []
    lines = path.read_text().splitlines()
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if k == len(lines) - 1:
                break  # partial write of the item in flight
            raise ValueError(f"{path}: line {k + 1} is not valid JSON ({exc})") from exc
    return out


def drop_partial_line(path: str | Path) -> None:
    """Remove an incomplete last line left by a kill, so that appends start on a fresh line."""
    path = Path(path)
    if path.exists():
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            path.write_bytes(data[: data.rfind(b"\n") + 1])


def load_records(path: Path, key: Callable[[dict], Hashable]) -> dict[Hashable, dict]:
    """Complete records of ``path`` keyed by ``key(record)`` (later lines win); {} if missing."""
    path = Path(path)
    out: dict[Hashable, dict] = {}
    if not path.is_file():
        return out
    torn = False
    for n, line in enumerate(path.read_text().splitlines(), 1):
        try:
            rec = json.loads(line)
            out[key(rec)] = rec
        except (json.JSONDecodeError, KeyError, TypeError):
            log.warning("%s line %d is not a complete record; its item will be re-run", path, n)
            torn = True
    if torn:
        path.write_text("".join(json.dumps(r) + "\n" for r in out.values()))
    return out


class RecordWriter:
    """Appends one JSON record per line and flushes it (use as a context manager)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.path, "a")

    def write(self, record: dict) -> None:
        self._fh.write(json.dumps(record) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
