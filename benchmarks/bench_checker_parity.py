"""Goal checker (``teach_exact=True``) against TEACh's algorithm on random AI2-THOR-style states.

States and task instances come from ``tests/teach_states.py`` (realistic, adversarial and cyclic
parent links; every TEACh task type), the expected answers from ``tests/teach_reference.py`` (TEACh's
``task_THOR.py`` re-implemented, checked against TEACh's saved outputs). A check compares success,
satisfied and total goal conditions and the unmet (objectId, description) steps. On a cycle of
``simbotLastParentReceptacle`` links TEACh recurses forever; such checks are compared with TEACh's
list cut after it has gone round the cycle, and counted apart. Writes
``benchmarks/results/checker_parity.json``.

Usage: python benchmarks/bench_checker_parity.py [--states 3000] [--tasks-per-state 10] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))

from teach_reference import ReferenceTask, TeachRecursion, load_teach_definitions  # noqa: E402
from teach_states import TEACH_DEFINITIONS, cases  # noqa: E402

from icalkit.envs.household.tasks.checker import check_definition_dir  # noqa: E402

RESULTS = Path(__file__).parent / "results"


def compare(seed: int, n_states: int, tasks_per_state: int) -> dict:
    """Run every check; return counts per kind and every disagreement."""
    defs = load_teach_definitions(TEACH_DEFINITIONS)
    checks, cyclic, diffs = Counter(), Counter(), []
    task_types = Counter()
    for kind, state, tasks in tqdm(cases(seed, n_states, tasks_per_state), desc="states"):
        for name, params in tasks:
            try:
                expected = ReferenceTask(defs, name, params).result(state)
            except TeachRecursion:
                cyclic[kind] += 1
                expected = ReferenceTask(defs, name, params, cycles="truncate").result(state)
            got = check_definition_dir(TEACH_DEFINITIONS, name, params, state, teach_exact=True)
            answer = (got.success, got.satisfied, got.total, sorted(got.unmet))
            checks[kind] += 1
            task_types[name] += 1
            if answer != expected:
                diffs.append({"kind": kind, "task": name, "params": params, "teach": expected,
                              "checker": answer, "success_flipped": answer[0] != expected[0]})
    return {"checks": sum(checks.values()), "checks_per_kind": dict(checks),
            "teach_recurses_forever": sum(cyclic.values()), "teach_recurses_forever_per_kind": dict(cyclic),
            "checks_per_task_type": dict(sorted(task_types.items())),
            "disagreements": len(diffs), "success_flipped": sum(d["success_flipped"] for d in diffs),
            "examples": diffs[:20]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=3000)
    parser.add_argument("--tasks-per-state", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not TEACH_DEFINITIONS.is_dir():
        sys.exit(f"TEACh task definitions not found at {TEACH_DEFINITIONS}")
    result = {"args": vars(args), **compare(args.seed, args.states, args.tasks_per_state)}
    print(f"{result['checks']} checks ({result['checks_per_kind']}), "
          f"{result['teach_recurses_forever']} where TEACh recurses forever: "
          f"{result['disagreements']} disagreements, {result['success_flipped']} with success flipped")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "checker_parity.json").write_text(json.dumps(result, indent=2) + "\n")
    sys.exit(1 if result["disagreements"] else 0)


if __name__ == "__main__":
    main()
