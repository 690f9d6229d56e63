"""The sandbox worker process: runs one program at a time under OS limits for the executor.

Started by :mod:`icalkit.agents.worker_pool` as ``python -m icalkit.agents.sandbox_worker``; never
imported by a process that runs programs itself. Start-up: import everything a program run needs,
register ``faulthandler`` (a traceback on ``SIGUSR1`` and on ``SIGXCPU``, written to a pipe the
executor reads, so a program stopped inside a long C call still gets its line), then apply the OS
limits (:func:`apply_os_limits`): address space, no file writes, no new processes or threads, few
file descriptors, no core dumps, and, when started as root, the uid/gid of ``nobody``.

Protocol: requests arrive on stdin as length-prefixed pickles from the executor (trusted);
answers leave on the original stdout as length-prefixed JSON (the executor never unpickles what a
worker sends). While a program runs, every API call and primitive is appended as one JSON line to
a shared-memory log (:class:`ActionLog`), so the executor can replay the completed primitives on
its own simulator even when it has to kill the worker mid-program.
"""

from __future__ import annotations

import argparse
import faulthandler
import hashlib
import json
import mmap
import os
import pickle
import resource
import signal
import struct
import sys
import tempfile
from multiprocessing.connection import Connection
from typing import Any

from icalkit.agents.api.household import InteractionObject, bind_api, sandbox_attributes
from icalkit.agents.api.runtime import ApiCall, ApiRuntime, Primitive, describe
from icalkit.agents.sandbox import Sandbox, SandboxLimitExceeded
from icalkit.agents.sandbox_outcome import outcome_of
from icalkit.envs.household.simulator import Simulator

HEADER = struct.Struct("<Q")  # committed length of the action log, in bytes after the header
NOBODY = 65534
SPARE_FDS = 8


class ActionLog:
    """Append-only action log in shared memory; the header holds the committed length.

    One line per event, tab-separated (ids and action names hold no tabs or newlines):
    ``c <method> <line> <object>`` when a top-level API call starts, ``p <action> <target> <0|1>``
    per primitive, ``e <object> <0|1>`` when a call without arguments, error or result ends, and
    ``E <json [object, args, success, error, result]>`` for any other end.
    """

    def __init__(self, buf: mmap.mmap) -> None:
        self.buf = buf
        self.size = len(buf)
        self.pos = HEADER.size

    def reset(self) -> None:
        self.pos = HEADER.size
        HEADER.pack_into(self.buf, 0, 0)

    def append(self, line: str) -> None:
        data = line.encode()
        end = self.pos + len(data)
        if end > self.size:
            raise SandboxLimitExceeded("the program sent more actions than one run may log")
        self.buf[self.pos:end] = data
        self.pos = end
        HEADER.pack_into(self.buf, 0, end - HEADER.size)  # commit after the bytes are in place

    # CallListener -----------------------------------------------------------------------
    def call_started(self, record: ApiCall) -> None:
        line = "" if record.line is None else record.line
        self.append(f"c\t{record.method}\t{line}\t{_field(record.object)}\n")

    def primitive(self, p: Primitive) -> None:
        self.append(f"p\t{p.action}\t{p.target or ''}\t{int(p.success)}\n")

    def call_ended(self, record: ApiCall) -> None:
        if not record.args and not record.error and record.result is None:
            self.append(f"e\t{_field(record.object)}\t{int(record.success)}\n")
            return
        result = record.result if isinstance(record.result, (bool, int, float, str)) else None
        end = [record.object, record.args, record.success, record.error[:500], result]
        self.append("E\t" + json.dumps(end, separators=(",", ":")) + "\n")


def _field(text: str) -> str:
    return text.replace("\t", " ").replace("\n", " ")


def apply_os_limits(memory_bytes: int, cpu_total_s: int, drop_privileges: bool = True) -> dict:
    """Limit this process: address space, CPU seconds, no file writes, no forks, few fds.

    Args:
        memory_bytes: address-space limit (``RLIMIT_AS``), soft and hard.
        cpu_total_s: hard CPU-time limit of the worker's whole life (per-program soft limits are
            set below it by :func:`set_program_cpu`).
        drop_privileges: when running as root, change root into an empty directory, delete it
            (nothing can be created in it) and switch to ``nobody`` (root ignores RLIMIT_NPROC);
            the process then sees no files at all.

    Returns:
        What was applied, for the executor's records.
    """
    jail = None
    if drop_privileges and os.geteuid() == 0:
        jail = tempfile.mkdtemp(prefix="icalkit-sandbox-")  # empty, root-owned, mode 0700
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past RLIMIT_FSIZE fails with EFBIG
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    used = int(_cpu_seconds()) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (used + cpu_total_s, used + cpu_total_s))
    top = max(int(fd) for fd in os.listdir("/proc/self/fd")) + SPARE_FDS
    if jail is not None:
        parent = os.open(os.path.dirname(jail), os.O_RDONLY | os.O_DIRECTORY)
        os.chroot(jail)
        os.chdir("/")
        os.rmdir(os.path.basename(jail), dir_fd=parent)  # the root is now a deleted, empty directory
        os.close(parent)
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (top, top))
    return {"memory_bytes": memory_bytes, "uid": os.getuid(), "jail": jail, "nofile": top}


def _cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def set_program_cpu(cpu_s: float) -> None:
    """Soft CPU limit for the next program: SIGXCPU (traceback, then death) after ``cpu_s`` more."""
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    soft = min(int(_cpu_seconds() + cpu_s) + 1, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _intern_layout(world: Any, layouts: dict[bytes, Any]) -> None:
    """Reuse one ``blocked`` array per layout, so that the layout memo tables stay warm."""
    key = world.blocked.tobytes() + repr(world.blocked.shape).encode()
    world.blocked = layouts.setdefault(key, world.blocked)
    if len(layouts) > 32:
        layouts.clear()


def run_request(req: dict, log: ActionLog, layouts: dict[bytes, Any]) -> dict:
    """Run one program against a private copy of the executor's world; the answer is plain JSON."""
    world = req["world"]
    _intern_layout(world, layouts)
    sim = Simulator(world)
    sim.steps, sim.failures = req["steps"], req["failures"]
    runtime = ApiRuntime(sim, req["api"])
    runtime.seen, runtime.claimed = set(req["seen"]), set(req["claimed"])
    runtime._last_reach = req["last_reach"]
    runtime.listener = log
    api_class = bind_api(runtime)
    policy = {api_class: sandbox_attributes(), InteractionObject: sandbox_attributes()}
    sandbox = Sandbox({"InteractionObject": api_class}, policy, req["sandbox"])
    log.reset()
    set_program_cpu(req["cpu_s"])
    result = sandbox.run(req["program"])
    kind, message, line = outcome_of(result)
    beliefs = [[str(o)[:200], str(a)[:200], v if isinstance(v, (bool, int, float, type(None)))
                else describe(v)] for o, a, v in runtime.beliefs]
    last = runtime._last_reach
    return {"ok": result.ok, "kind": kind, "message": message[:2000], "line": line,
            "output": result.output[: req["sandbox"].max_output_chars],
            "seen": sorted(runtime.seen), "claimed": sorted(runtime.claimed), "beliefs": beliefs,
            "last_reach": list(last[:5]) + [list(last[5]), last[6]] if last else None,
            "recycle": isinstance(result.exception, MemoryError), "cpu_s": _cpu_seconds(),
            "digest": world_digest(world) if req.get("digest") else None}


def world_digest(world: Any) -> str:
    """Hash of the world's metadata and agent pose (to check that a replay matched)."""
    a = world.agent
    text = json.dumps([world.metadata(), [a.i, a.j, a.yaw, a.pitch], world.held], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="icalkit sandbox worker (started by the executor)")
    parser.add_argument("--log-fd", type=int, required=True)
    parser.add_argument("--fault-fd", type=int, required=True)
    parser.add_argument("--memory-mb", type=int, required=True)
    parser.add_argument("--cpu-total-s", type=int, required=True)
    parser.add_argument("--keep-privileges", action="store_true")
    args = parser.parse_args(argv)
    requests = Connection(os.dup(0), writable=False)
    answers = Connection(os.dup(1), readable=False)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    log = ActionLog(mmap.mmap(args.log_fd, 0))
    fault = os.fdopen(args.fault_fd, "w")
    faulthandler.register(signal.SIGUSR1, file=fault, all_threads=True, chain=False)
    faulthandler.register(signal.SIGXCPU, file=fault, all_threads=True, chain=True)
    base = _vm_size()
    applied = apply_os_limits(base + args.memory_mb * 2**20, args.cpu_total_s,
                              drop_privileges=not args.keep_privileges)
    answers.send_bytes(json.dumps({"ready": True, "pid": os.getpid(), **applied}).encode())
    layouts: dict[bytes, Any] = {}
    while True:
        try:
            req = pickle.loads(requests.recv_bytes())
        except (EOFError, OSError):
            return 0
        try:
            answer = run_request(req, log, layouts)
        except MemoryError:
            answer = {"ok": False, "kind": "limit", "message": "memory limit of the worker reached",
                      "line": None, "recycle": True}
        answers.send_bytes(json.dumps(answer).encode())


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


if __name__ == "__main__":
    sys.exit(main())
