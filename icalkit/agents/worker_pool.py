"""Warm sandbox worker processes, owned by the executor's process and reused across programs.

A :class:`Worker` is one ``python -m icalkit.agents.sandbox_worker`` process started with
``subprocess`` (so it works from any thread, from multiprocessing children, daemonic or not, and
from forked processes), with a pipe for requests, a pipe for answers, a shared-memory action log
and a pipe for ``faulthandler`` tracebacks. :meth:`Worker.run` sends one program, replays the
action log as it grows (through a callback), and enforces the wall-clock deadline: past it the
worker is asked for its traceback (``SIGUSR1``), then killed. :class:`WorkerPool` hands out idle
workers, retires killed or worn ones and starts their replacements at once, so the next program
rarely waits for a start-up.
"""

from __future__ import annotations

import atexit
import json
import mmap
import os
import pickle
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import icalkit

HEADER_BYTES = 8
MAX_ANSWER_BYTES = 4 * 2**20
MAX_TRACEBACK_BYTES = 64 * 2**10
_PROGRAM_LINE = re.compile(rb'File "<program>", line (\d+)')
_SIGNAL_NAMES = {signal.SIGXCPU: "CPU-time limit", signal.SIGKILL: "killed",
                 signal.SIGSEGV: "crashed (segmentation fault)", signal.SIGABRT: "aborted"}


@dataclass
class IsolationLimits:
    """OS-level limits of the worker process that runs programs.

    Attributes:
        memory_mb: address space a worker may add to its start-up footprint (RLIMIT_AS).
        cpu_s: CPU seconds per program (RLIMIT_CPU); default: the sandbox's timeout + 1.
        grace_s: wall-clock seconds past the sandbox's timeout before the executor kills the
            worker (the worker's own timers normally stop a program first, with a cleaner message).
        start_timeout_s: how long a new worker may take to start.
        worker_cpu_s: CPU seconds over a worker's life; it is replaced before it runs out.
        max_programs: programs per worker before it is replaced.
        log_mb: size of the shared action log (bounds the actions of one program).
        drop_privileges: workers started as root switch to ``nobody``.
        verify_replay: the worker also sends a digest of its final world, and the executor checks
            that its replay reached the same world (tests; costs ~1 ms per program).
    """

    memory_mb: int = 1024
    cpu_s: float | None = None
    grace_s: float = 1.0
    start_timeout_s: float = 120.0
    worker_cpu_s: int = 3600
    max_programs: int = 1000
    log_mb: int = 8
    drop_privileges: bool = True
    verify_replay: bool = False

    def __post_init__(self) -> None:
        for name in ("memory_mb", "grace_s", "start_timeout_s", "worker_cpu_s", "max_programs", "log_mb"):
            if getattr(self, name) <= 0:
                raise ValueError(f"IsolationLimits.{name} must be positive, got {getattr(self, name)}")
        if self.cpu_s is not None and self.cpu_s <= 0:
            raise ValueError(f"IsolationLimits.cpu_s must be positive, got {self.cpu_s}")

    def key(self) -> tuple:
        """Settings fixed at a worker's start (workers are shared only between equal keys)."""
        return (self.memory_mb, self.worker_cpu_s, self.log_mb, self.drop_privileges)


@dataclass
class RunOutcome:
    """How a program run in a worker ended.

    Attributes:
        answer: the worker's JSON answer when it finished the program, else None.
        stopped: why the executor or the OS stopped it (``deadline``, ``cpu``, ``died``,
            ``protocol``, ``start``), else None.
        message: the reason in words.
        line: program line at the moment it was stopped (from the worker's traceback).
        seconds: wall-clock seconds from send to answer or kill.
    """

    answer: dict | None
    stopped: str | None = None
    message: str = ""
    line: int | None = None
    seconds: float = 0.0


class WorkerError(RuntimeError):
    """A worker could not be started or talked to."""


class Worker:
    """One sandbox worker process (see the module docstring)."""

    def __init__(self, limits: IsolationLimits) -> None:
        self.key = limits.key()
        self.programs = 0
        self.ready = False
        self.info: dict = {}
        self.started = time.monotonic()
        if not hasattr(os, "memfd_create"):
            raise WorkerError("sandbox workers need Linux (os.memfd_create, /proc, setrlimit)")
        size = limits.log_mb * 2**20
        self._log_fd = os.memfd_create("icalkit-action-log")
        os.ftruncate(self._log_fd, size)
        self.log = mmap.mmap(self._log_fd, size)
        fault_r, fault_w = os.pipe()
        os.set_blocking(fault_r, False)
        self._fault_r = fault_r
        root = str(Path(icalkit.__file__).resolve().parent.parent)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "PYTHONDONTWRITEBYTECODE": "1"}
        cmd = [sys.executable, "-m", "icalkit.agents.sandbox_worker", "--log-fd", str(self._log_fd),
               "--fault-fd", str(fault_w), "--memory-mb", str(limits.memory_mb),
               "--cpu-total-s", str(limits.worker_cpu_s)]
        if not limits.drop_privileges:
            cmd.append("--keep-privileges")
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, pass_fds=(self._log_fd, fault_w),
                                         env=env, cwd="/", start_new_session=True)
        finally:
            os.close(fault_w)
        self.tx = Connection(os.dup(self.proc.stdin.fileno()), readable=False)
        self.rx = Connection(os.dup(self.proc.stdout.fileno()), writable=False)
        self.proc.stdin.close()
        self.proc.stdout.close()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, timeout_s: float) -> None:
        """Block until the worker reports that it started under its limits."""
        if self.ready:
            return
        if not self.rx.poll(max(0.0, self.started + timeout_s - time.monotonic())):
            raise WorkerError(f"the sandbox worker did not start within {timeout_s:g} s")
        try:
            self.info = json.loads(self.rx.recv_bytes(MAX_ANSWER_BYTES))
        except (EOFError, OSError, ValueError) as exc:
            code = self.proc.poll()
            raise WorkerError(f"the sandbox worker failed to start (exit code {code}): {exc}") from None
        self.ready = bool(self.info.get("ready"))
        if not self.ready:
            raise WorkerError(f"the sandbox worker sent {self.info!r} instead of a ready message")

    def alive(self) -> bool:
        return self.proc.poll() is None

    # ------------------------------------------------------------------ running a program

    def run(self, request: dict, deadline_s: float, on_records: Callable[[list[bytes]], None]) -> RunOutcome:
        """Send one program and wait for its answer, at most ``deadline_s`` seconds.

        ``on_records`` gets the new action-log lines while the program runs (and once more at the
        end); it may raise to stop the run (the worker is then killed, see :meth:`kill`).
        """
        self.programs += 1
        self.log[:HEADER_BYTES] = bytes(HEADER_BYTES)
        self._read_pos = HEADER_BYTES
        start = time.monotonic()
        end = start + deadline_s
        try:
            self.tx.send_bytes(pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError as exc:
            return self._died(start, f"the sandbox worker could not take the program ({exc})", on_records)
        wait = 0.005  # a short program answers before the first look at the log: one wake-up
        while True:
            self._drain(on_records)
            remaining = end - time.monotonic()
            if self.rx.poll(max(0.0, min(remaining, wait))):  # an answer counts even if late
                try:
                    data = self.rx.recv_bytes(MAX_ANSWER_BYTES)
                except (EOFError, OSError):
                    return self._died(start, "", on_records)
                self._drain(on_records)
                try:
                    answer = json.loads(data)
                except ValueError:
                    answer = None
                if not isinstance(answer, dict):
                    self.kill()
                    return RunOutcome(None, "protocol", "the sandbox worker sent a malformed answer",
                                      None, time.monotonic() - start)
                return RunOutcome(answer, seconds=time.monotonic() - start)
            if remaining <= 0:
                line = self.kill(traceback=True)
                self._drain(on_records)
                return RunOutcome(None, "deadline", f"wall-clock limit of {deadline_s:g} s exceeded "
                                  "(the worker was stopped)", line, time.monotonic() - start)
            wait = 0.02  # long programs: replay what the worker did so far, 50 times a second

    def _drain(self, on_records: Callable[[list[bytes]], None]) -> None:
        committed = HEADER_BYTES + int.from_bytes(self.log[:HEADER_BYTES], "little")
        committed = min(committed, len(self.log))
        if committed <= self._read_pos:
            return
        data = self.log[self._read_pos:committed]
        self._read_pos = committed
        on_records(data.splitlines())

    def _died(self, start: float, message: str, on_records: Callable[[list[bytes]], None]) -> RunOutcome:
        try:
            code = self.proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        line = self._traceback_line(wait_s=0.0)
        self._drain(on_records)
        stopped = "cpu" if code == -signal.SIGXCPU else "died"
        if not message:
            if code is not None and code < 0:
                what = _SIGNAL_NAMES.get(-code, f"signal {-code}")
                message = (f"{what} reached: the program used its CPU time" if stopped == "cpu"
                           else f"the sandbox worker was ended ({what})")
            else:
                message = f"the sandbox worker exited unexpectedly (exit code {code})"
        return RunOutcome(None, stopped, message, line, time.monotonic() - start)

    def kill(self, traceback: bool = False) -> int | None:
        """Stop the worker (after asking for its traceback); returns the program line it was on."""
        line = None
        if traceback and self.alive():
            try:
                os.kill(self.pid, signal.SIGUSR1)
                line = self._traceback_line(wait_s=0.5)
            except ProcessLookupError:
                pass
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            pass
        return line

    def _traceback_line(self, wait_s: float) -> int | None:
        data = b""
        end = time.monotonic() + wait_s
        while len(data) < MAX_TRACEBACK_BYTES:
            ready, _, _ = select.select([self._fault_r], [], [], max(0.0, end - time.monotonic()))
            if not ready:
                break
            try:
                chunk = os.read(self._fault_r, MAX_TRACEBACK_BYTES)
            except BlockingIOError:
                break
            if not chunk:
                break
            data += chunk
            if b"<module>" in data:  # the outermost program frame has been written
                break
        found = _PROGRAM_LINE.search(data)  # most recent call first: the innermost program line
        return int(found.group(1)) if found else None

    def close(self) -> None:
        """End the worker (politely if idle) and free its resources."""
        if self.alive():
            self.tx.close()
            try:
                self.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                self.kill()
        self.release_fds()

    def release_fds(self) -> None:
        for close in (self.tx.close, self.rx.close, self.log.close):
            try:
                close()
            except (OSError, ValueError, BufferError):
                pass
        for fd in (self._log_fd, self._fault_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self._log_fd = self._fault_r = -1


class WorkerPool:
    """Idle warm workers, shared by every executor of this process (thread-safe)."""

    def __init__(self, max_idle: int = 4) -> None:
        self.max_idle = max_idle
        self._idle: list[Worker] = []
        self._lock = threading.Lock()
        self.started = 0

    def acquire(self, limits: IsolationLimits) -> Worker:
        """An idle worker started with ``limits`` (a new one when none is idle), ready to run."""
        key = limits.key()
        with self._lock:
            worker = next((w for w in self._idle if w.key == key and w.alive()), None)
            if worker is not None:
                self._idle.remove(worker)
        if worker is None:
            worker = self._start(limits)
        try:
            worker.wait_ready(limits.start_timeout_s)
        except WorkerError:
            worker.kill()
            worker.release_fds()
            raise
        return worker

    def release(self, worker: Worker, limits: IsolationLimits, healthy: bool) -> None:
        """Return a worker after a program; a killed or worn one is replaced by a fresh one."""
        if healthy and worker.alive() and worker.programs < limits.max_programs:
            with self._lock:
                if len(self._idle) < self.max_idle:
                    self._idle.append(worker)
                    return
            worker.close()
            return
        worker.kill()
        worker.release_fds()
        with self._lock:
            if len(self._idle) >= self.max_idle:
                return
        fresh = self._start(limits)  # starts in the background; acquire() waits for it if needed
        with self._lock:
            self._idle.append(fresh)

    def _start(self, limits: IsolationLimits) -> Worker:
        self.started += 1
        return Worker(limits)

    def idle_pids(self) -> list[int]:
        """Process ids of the idle workers that have started (and run under their limits)."""
        with self._lock:
            return [w.pid for w in self._idle if w.ready]

    def close(self) -> None:
        """End every idle worker."""
        with self._lock:
            idle, self._idle = self._idle, []
        for w in idle:
            w.close()

    def forget(self) -> None:
        """In a forked child: drop the parent's workers without touching their processes."""
        idle, self._idle = self._idle, []
        self._lock = threading.Lock()
        for w in idle:
            w.release_fds()


_POOL: WorkerPool | None = None
_POOL_LOCK = threading.Lock()


def shared_pool() -> WorkerPool:
    """This process's worker pool (created on first use, ended at exit, forgotten after fork)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = WorkerPool()
        return _POOL


def _close_pool() -> None:
    if _POOL is not None:
        _POOL.close()


def _forget_pool_after_fork() -> None:
    global _POOL, _POOL_LOCK
    _POOL_LOCK = threading.Lock()
    if _POOL is not None:
        _POOL.forget()
        _POOL = None


atexit.register(_close_pool)
os.register_at_fork(after_in_child=_forget_pool_after_fork)
