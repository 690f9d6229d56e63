"""SQLite response cache: re-running a loop replays completions instead of re-generating.

The key is a SHA-256 of the canonical JSON of (model identity, prompt, sampling parameters);
the model identity comes from :meth:`LLM.cache_identity`: backend, model, adapter and a stamp of
their files (:func:`weights_stamp`: every file's name, size and mtime), or, for a server, the
served model's card (its root folder and that folder's stamp when it is local). Retraining into
the same folder, or re-serving other weights under the same name, therefore never replays an
answer from the old weights. The database uses WAL mode, so several processes may read and write
it at once.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from icalkit.models.llm.base import LLM, Generation, Prompt, SamplingParams

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def files_stamp(*folders: Path | None) -> tuple:
    """(path, size, mtime_ns) of every file in ``folders``: changes when a folder is rewritten."""
    stamp = []
    for folder in folders:
        if folder is not None and Path(folder).is_dir():
            for p in sorted(Path(folder).iterdir()):
                if p.is_file():
                    st = p.stat()
                    stamp.append((str(p), st.st_size, st.st_mtime_ns))
    return tuple(stamp)


def weights_stamp(*folders: Path | None) -> str:
    """Short hex digest of :func:`files_stamp` (a model or adapter folder's identity on disk)."""
    return hashlib.sha256(repr(files_stamp(*folders)).encode()).hexdigest()[:16]


def cache_key(identity: dict[str, Any], prompt: Prompt, params: SamplingParams) -> str:
    """Stable hex key of one request."""
    payload = {"model": identity, "prompt": prompt, "params": params.to_dict()}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """A key → :class:`Generation` store in one SQLite file (thread- and process-safe)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
            with self._lock:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
                self._conn.execute(SCHEMA)
                self._conn.commit()
        except sqlite3.Error as exc:
            raise ValueError(f"the response cache {self.path} cannot be opened as an SQLite file ({exc}); "
                             "set llm.cache_path to another file or llm.cache=false") from None

    def get_many(self, keys: list[str]) -> dict[str, Generation]:
        """Stored generations for the keys that are present."""
        found: dict[str, Generation] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, response FROM responses WHERE key IN ({marks})", chunk
                ).fetchall()
                for key, response in rows:
                    found[key] = Generation.from_dict(json.loads(response))
        return found

    def put_many(self, items: list[tuple[str, dict[str, Any], Generation]]) -> None:
        """Store (key, request description, generation) triples in one transaction."""
        now = time.time()
        rows = [
            (key, gen.backend, gen.model, json.dumps(req, ensure_ascii=False),
             json.dumps(gen.to_dict(), ensure_ascii=False), now)
            for key, req, gen in items
        ]
        with self._lock, self._conn:
            self._conn.executemany("INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?,?)", rows)

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def clear(self) -> None:
        """Delete every stored response."""
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM responses")

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()


class CachedLLM(LLM):
    """Wrap an :class:`LLM`: answer from the cache, generate only the misses (in one batch)."""

    def __init__(self, inner: LLM, cache: ResponseCache | str | Path) -> None:
        self.inner = inner
        self.cache = cache if isinstance(cache, ResponseCache) else ResponseCache(cache)
        self.backend, self.model_name = inner.backend, inner.model_name

    def cache_identity(self) -> dict[str, Any]:
        """The wrapped model's identity."""
        return self.inner.cache_identity()

    def _generate(self, prompts: list[Prompt], params: SamplingParams) -> list[Generation]:
        start = time.perf_counter()
        identity = self.inner.cache_identity()
        keys = [cache_key(identity, p, params) for p in prompts]
        found = self.cache.get_many(list(dict.fromkeys(keys)))
        lookup_s = time.perf_counter() - start
        missing = [i for i, k in enumerate(keys) if k not in found]
        fresh: dict[str, Generation] = {}
        if missing:
            todo = list({keys[i]: i for i in missing}.values())  # one request per distinct key
            gens = self.inner._generate([prompts[i] for i in todo], params)
            fresh = {keys[i]: g for i, g in zip(todo, gens, strict=True)}
            request = {"model": identity, "params": params.to_dict()}
            self.cache.put_many(
                [(keys[i], {**request, "prompt": prompts[i]}, fresh[keys[i]]) for i in todo]
            )
        out = []
        for key in keys:
            if key in fresh:
                out.append(fresh[key])
            else:
                hit = Generation.from_dict(found[key].to_dict())
                hit.cached, hit.latency_s = True, lookup_s
                out.append(hit)
        return out

    def __repr__(self) -> str:
        return f"CachedLLM({self.inner!r}, cache={str(self.cache.path)!r})"
