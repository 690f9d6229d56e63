"""Import direction follows DESIGN.md's layers, for every import in icalkit (inside functions too).

Layers, lowest first: ``envs``, ``models``, ``memory`` (independent of one another) -> ``agents``
-> ``data_gen`` -> ``training`` -> ``inference`` -> ``eval``. ``config``, ``tracking`` and
``metrics`` sit at the bottom and import nothing above them; ``commands`` and ``cli`` sit at the
top and may import anything.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "icalkit"
STAGES = {"envs": 0, "models": 0, "memory": 0, "agents": 1, "data_gen": 2, "training": 3, "inference": 4, "eval": 5}
BOTTOM = {"config", "tracking", "metrics"}
TOP = {"commands", "cli", "__main__"}


def _module(path: Path, root: Path = PACKAGE) -> list[str]:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def imports(path: Path, root: Path = PACKAGE) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a file under package ``root``, relative
    ones resolved, those inside functions included."""
    here = _module(path, root)
    package = here if path.name == "__init__.py" else here[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            # ``from icalkit import metrics`` imports the module icalkit.metrics
            out += [(node.lineno, f"{name}.{a.name}" if name == "icalkit" else name) for a in node.names]
    return out


def violation(src: str, dst: str) -> str | None:
    """Why a module of top-level part ``src`` may not import one of part ``dst`` (None: allowed)."""
    if src == dst or src in TOP or dst == "":
        return None
    if dst in TOP:
        return f"{dst} is the top layer"
    if src in BOTTOM:
        return None if dst in BOTTOM else f"{src} sits at the bottom and imports nothing above it"
    if dst in BOTTOM:
        return None
    if src in STAGES and dst in STAGES:
        if STAGES[dst] > STAGES[src]:
            return f"{dst} is a later stage than {src}"
        if STAGES[dst] == STAGES[src]:
            return f"{src} and {dst} are independent of one another"
    return None


def test_every_import_points_down_the_layers():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 50
    problems, seen = [], 0
    for path in files:
        src = _module(path)[1] if len(_module(path)) > 1 else ""
        for line, name in imports(path):
            parts = name.split(".")
            if parts[0] != "icalkit":
                continue
            seen += 1
            why = violation(src, parts[1] if len(parts) > 1 else "")
            if why:
                problems.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}: {why}")
    assert seen > 100  # the scan found the package's own imports
    assert not problems, "\n".join(problems)


def test_the_checker_sees_imports_inside_functions_and_relative_ones(tmp_path):
    """The scan itself: a lazy import inside a function and relative imports are all found."""
    probe = tmp_path / "icalkit" / "data_gen" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("def f():\n    from icalkit.eval import harness\n\nfrom ..training import loop\n"
                     "from . import expert\nfrom icalkit import metrics\n")
    found = [(line, name, violation("data_gen", name.split(".")[1]))
             for line, name in imports(probe, tmp_path / "icalkit")]
    assert found == [(4, "icalkit.training", "training is a later stage than data_gen"),
                     (5, "icalkit.data_gen", None), (6, "icalkit.metrics", None),
                     (2, "icalkit.eval", "eval is a later stage than data_gen")]
    assert violation("metrics", "data_gen") and violation("envs", "memory") and violation("agents", "commands")
    assert violation("agents", "envs") is None and violation("commands", "eval") is None
