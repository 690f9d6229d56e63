"""Sandbox for generated programs: allowed plans run, the hostile corpus is refused or contained."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from icalkit.agents.sandbox import (
    Sandbox,
    SandboxLimits,
    SandboxRefused,
    current_program_line,
    validate,
)

CORPUS = sorted((Path(__file__).parent / "data" / "hostile_programs").glob("*.py"))
# programs marked "# needs: worker" (one C call that runs for minutes or builds gigabytes) are
# contained only by the worker process's OS limits: tests/test_sandbox_worker.py runs them
IN_PROCESS = [p for p in CORPUS if "# needs: worker" not in p.read_text()]


class FakeObject:
    """Test double of the API object (the sandbox only needs a class with public methods)."""

    calls: list[tuple[str, int | None]] = []

    def __init__(self, object_class: str, object_instance: str | None = None) -> None:
        self.object_class = object_class
        self._secret = "internal"

    def go_to(self) -> None:
        FakeObject.calls.append(("go_to", current_program_line()))

    def pickup(self) -> None:
        FakeObject.calls.append(("pickup", current_program_line()))

    def check_attribute(self, attr: str, value: object) -> bool:
        return attr == "dirty" and value is True


def make_sandbox(**limits: object) -> Sandbox:
    policy = {FakeObject: {"go_to", "pickup", "check_attribute", "object_class"}}
    return Sandbox({"InteractionObject": FakeObject}, policy, SandboxLimits(**limits))


def expected_kind(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name} lacks an '# expect:' header"
    return first.split(":", 1)[1].strip()


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("path", IN_PROCESS, ids=[p.stem for p in IN_PROCESS])
def test_hostile_program_is_refused_or_contained(path: Path) -> None:
    sandbox = make_sandbox(timeout_s=2.0)
    start = time.monotonic()
    result = sandbox.run(path.read_text())
    assert not result.ok
    assert result.kind == expected_kind(path), result.message
    assert result.message and len(result.message) < 500
    assert time.monotonic() - start < 5.0
    if result.kind in ("refused", "error") and result.lineno:
        assert f"line {result.lineno}" in result.message
    FakeObject.calls = []  # the same sandbox still runs a plan correctly afterwards
    after = sandbox.run("mug = InteractionObject('Mug')\nmug.go_to()\nprint('still here')\n")
    assert after.ok and after.output == "still here\n" and FakeObject.calls == [("go_to", 2)]


def test_allowed_plan_runs_and_records_lines() -> None:
    FakeObject.calls = []
    program = (
        "# make coffee\n"
        "mug = InteractionObject('Mug')\n"
        "mug.go_to()\n"
        "if mug.check_attribute('dirty', True):\n"
        "    for i in range(2):\n"
        "        mug.pickup()\n"
        "names = [o.object_class for o in [mug]]\n"
        "print(f'done {names} {len(names)}', 2 ** 10, 'x' * 3)\n"
    )
    result = make_sandbox().run(program)
    assert result.ok, result.message
    assert FakeObject.calls == [("go_to", 3), ("pickup", 6), ("pickup", 6)]
    assert result.output == "done ['Mug'] 1 1024 xxx\n"
    assert result.loop_iterations == 3


def test_runtime_attribute_policy_blocks_private_state() -> None:
    result = make_sandbox().run("mug = InteractionObject('Mug')\nx = [mug][0].object_class\n")
    assert result.ok
    with pytest.raises(SandboxRefused, match="line 2: attribute '_secret'"):
        validate("m = 1\nm._secret\n", {"InteractionObject"}, {"object_class"})


def test_error_message_names_line_and_exception() -> None:
    result = make_sandbox().run("a = 1\nb = [1, 2]\nc = b[5]\n")
    assert result.kind == "error"
    assert result.lineno == 3
    assert "IndexError" in result.message


def test_wall_clock_timeout_ends_slow_program() -> None:
    sandbox = make_sandbox(timeout_s=0.3, max_loop_iterations=10**9)
    start = time.monotonic()
    result = sandbox.run("x = 0\nwhile True:\n    x = x + 1\n")
    assert result.kind == "limit"
    assert "time limit" in result.message
    assert time.monotonic() - start < 2.0


def test_augmented_assignment_is_guarded() -> None:
    result = make_sandbox().run("s = 'ab'\nfor i in range(40):\n    s += s\n")
    assert result.kind == "limit" and result.lineno == 3


def test_output_is_capped() -> None:
    result = make_sandbox(max_output_chars=50).run("for i in range(100):\n    print('hello')\n")
    assert result.ok and len(result.output) == 50


def test_bad_limits_and_api_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        SandboxLimits(timeout_s=0)
    with pytest.raises(ValueError, match="eval"):
        Sandbox({"eval": eval})


def test_straight_line_program_runs_every_call() -> None:
    sandbox = make_sandbox()
    program = "mug = InteractionObject('Mug')\n" + "mug.go_to()\n" * 500
    code = sandbox.compile(program)
    assert code.co_filename == "<program>"
    FakeObject.calls.clear()
    assert sandbox.run(program).ok
    assert [line for _, line in FakeObject.calls] == list(range(2, 502))


class SlowObject:
    def wait(self) -> None:
        time.sleep(3.0)


def test_alarm_ends_a_long_api_call() -> None:
    sandbox = Sandbox({"SlowObject": SlowObject}, {SlowObject: {"wait"}},
                      SandboxLimits(timeout_s=0.2))
    start = time.monotonic()
    result = sandbox.run("s = SlowObject()\ns.wait()\n")
    assert result.kind == "limit" and "alarm" in result.message and result.lineno == 2
    assert time.monotonic() - start < 2.0


def test_loop_limits_hold_in_a_worker_thread() -> None:
    import threading

    results = []
    sandbox = make_sandbox(timeout_s=0.3, max_loop_iterations=10**9)
    worker = threading.Thread(target=lambda: results.append(sandbox.run("while True:\n    pass\n")))
    worker.start()
    worker.join(5.0)
    assert results and results[0].kind == "limit" and "time limit" in results[0].message
