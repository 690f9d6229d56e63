"""Goal checker with TEACh semantics over AI2-THOR-style object metadata.

A task is satisfied when every component and relation is. An atomic component needs
``determiner`` many distinct objects meeting all its conditions ("a" = 1, a number, "#k"
after substitution; "all" = every object meeting its primary condition); a sub-task component
is checked recursively with the number of instances multiplied down; relations (in practice
``parentReceptacles``) link the objects matched by head components to those of a tail component.

Goal conditions are counted as TEACh counts them: per component, conditions x instances needed
(for "all": x matching objects), plus one per head instance of each relation; unmet conditions
of the best candidate objects (most conditions met) contribute what they already meet. A "the"
relation picks its tail objects with TEACh's incremental rule (:func:`_check_the_tail`), and
receptacles are looked up as TEACh does on AI2-THOR metadata, where ``parentReceptacles`` can be
``None`` (:meth:`_State.parents`); on cyclic parent links, where TEACh never returns, the checker
answers. Deliberate deviations unless ``teach_exact=True``: relation counts are capped per head
entity at the instances needed, so ``satisfied <= total`` always holds, and an object missing
altogether gets a description.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from icalkit.envs.household.tasks.definitions import (
    ResolvedComponent,
    ResolvedTask,
    TaskDefinition,
    TaskDefinitionError,
    instantiate,
    load_definitions,
    package_definitions,
)
from icalkit.envs.household.tasks.task import Task

_TYPE_ALIASES = {("SinkBasin", "Sink"), ("Sink", "SinkBasin"), ("BathtubBasin", "Bathtub"),
                 ("Bathtub", "BathtubBasin")}


@dataclass
class GoalResult:
    """Outcome of a goal check.

    Attributes:
        success: every goal condition holds.
        satisfied: goal conditions satisfied (TEACh counting).
        total: goal conditions in all.
        failure_descs: natural-language descriptions of unmet conditions (deduplicated, in order).
        unmet: ``(objectId, description)`` per unmet condition of a specific object.
    """

    success: bool
    satisfied: int
    total: int
    failure_descs: list[str] = field(default_factory=list)
    unmet: list[tuple[str, str]] = field(default_factory=list)

    @property
    def progress(self) -> float:
        """Fraction of goal conditions satisfied (1.0 when there are none)."""
        return self.satisfied / self.total if self.total else 1.0


@dataclass
class _Out:
    success: bool
    satisfied: int
    total: int
    steps: list[tuple[str, str]]  # unmet (objectId, desc)
    sat_objs: list[dict]
    cand_objs: list[dict]


class _State:
    """Objects plus lookups shared by one check."""

    def __init__(self, objects: Sequence[dict], distances: Mapping[str, float] | None,
                 teach_exact: bool = False) -> None:
        self.objects = list(objects)
        self.teach_exact = teach_exact
        self.by_id: dict[str, dict] = {}
        for obj in self.objects:
            self.by_id.setdefault(obj["objectId"], obj)  # the first one, as TEACh's lookup
        self.distances = distances or {}

    def parents(self, obj: dict) -> list[str]:
        """Receptacles holding ``obj``, directly or not, as TEACh's ``get_parent_receptacles``.

        An object's own ``parentReceptacles`` list is the answer when it is not ``None`` (even
        ``[]``). Otherwise (AI2-THOR leaves it ``None`` for some objects) the answer is its
        ``simbotLastParentReceptacle`` (unless ``None`` or the object itself) followed by that
        parent's answer, found the same way. Where TEACh would recurse forever on a cycle of
        ``simbotLastParentReceptacle`` links, the walk stops at the first object seen again: every
        id TEACh's endless list would contain is already in the answer.
        """
        out: list[str] = []
        visited: set[str] = set()
        cur = obj
        while True:
            listed = cur.get("parentReceptacles")
            if listed is not None:
                return out + list(listed)
            visited.add(cur["objectId"])
            last = cur.get("simbotLastParentReceptacle")
            if last is None or last == cur["objectId"]:
                return out
            out.append(last)
            if last in visited or last not in self.by_id:
                return out
            cur = self.by_id[last]


def _type_matches(obj: dict | None, wanted: Any) -> bool:
    if obj is None:
        return False
    t = obj.get("objectType")
    return t == wanted or (t, wanted) in _TYPE_ALIASES


def is_a(obj: dict | None, wanted: Any) -> bool:
    return obj is not None and (_type_matches(obj, wanted) or wanted in obj.get("simbotObjectClass", []))


def _prop_ok(obj: dict, prop: str, want: Any, st: _State) -> bool:
    if prop not in obj:
        return False
    have = obj[prop]
    if prop == "objectType":
        return _type_matches(obj, want)
    if prop == "parentReceptacles":
        return any(is_a(st.by_id.get(p), want) for p in st.parents(obj))
    if prop == "simbotLastParentReceptacle" and want is not None:
        return is_a(st.by_id.get(have), want)
    if type(want) is int and want in (0, 1):
        return bool(have) == bool(want)
    if isinstance(have, list):
        return want in have
    return have == want


def condition_holds(obj: dict, prop: str, want: Any, objects: Sequence[dict]) -> bool:
    """Whether one object's metadata meets one goal condition, with the checker's semantics."""
    return _prop_ok(obj, prop, want, _State(objects, None))


def _props(obj: dict, conditions: Mapping[str, Any], st: _State) -> dict[str, bool]:
    return {k: _prop_ok(obj, k, v, st) for k, v in conditions.items()}


def _whole_of(want: Any) -> str | None:
    """For a wanted "XSliced" / "XCracked" type, the whole "X" that slicing/cracking turns into it."""
    if isinstance(want, str):
        for suffix in ("Sliced", "Cracked"):
            if suffix in want:
                return want.replace(suffix, "")
    return None


def _condition_steps(comp: ResolvedComponent, problems: list[tuple[dict, dict[str, bool]]]
                     ) -> list[tuple[str, str]]:
    steps = []
    for key, desc in comp.condition_failure_descs.items():
        steps += [(o["objectId"], desc) for o, ps in problems if not ps.get(key, True)]
    return steps


def _check_n(comp: ResolvedComponent, n: int, st: _State) -> _Out:
    """Atomic component that needs ``n`` distinct objects."""
    if comp.instance_shareable:
        n = 1
    sat: list[dict] = []
    cands: list[tuple[dict, dict[str, bool]]] = []
    n_problem = n
    primary, want = comp.primary_condition, comp.conditions[comp.primary_condition]
    whole = _whole_of(want)
    many = whole is not None and "Sliced" in want  # one whole object yields every slice needed
    for obj in st.objects:
        could_become = whole is not None and obj.get(primary) == whole
        if not could_become and not _prop_ok(obj, primary, want, st):
            continue  # neither satisfies the component nor is a candidate for it
        ps = _props(obj, comp.conditions, st)
        if all(ps.values()):
            sat.append(obj)
            continue
        if len(sat) >= n:
            continue
        if many and could_become and all(v for k, v in ps.items() if k != primary):
            n_problem = 1
        cands.append((obj, ps))
    cands.sort(key=lambda c: (-sum(c[1].values()), st.distances.get(c[0]["objectId"], 0.0)))
    n_cond = len(comp.conditions)
    problems = cands[:min(len(cands), max(0, n_problem - len(sat)))]
    satisfied = n_cond * min(n, len(sat)) + sum(sum(ps.values()) for _, ps in problems)
    steps = _condition_steps(comp, problems)
    if not st.teach_exact and len(sat) + len(problems) < n_problem:
        steps.append(("", _missing_desc(comp)))  # TEACh says nothing when no object is there
    return _Out(len(sat) >= n, satisfied, n_cond * n, steps, sat, [o for o, _ in cands])


def _missing_desc(comp: ResolvedComponent) -> str:
    descs = comp.condition_failure_descs
    if comp.primary_condition in descs:
        return descs[comp.primary_condition]
    return f"No suitable {comp.conditions[comp.primary_condition]} was found."


def _check_all(comp: ResolvedComponent, st: _State) -> _Out:
    """Atomic component with determiner "all": every object meeting the primary condition."""
    sat: list[dict] = []
    problems: list[tuple[dict, dict[str, bool]]] = []
    primary, want = comp.primary_condition, comp.conditions[comp.primary_condition]
    for obj in st.objects:
        if not _prop_ok(obj, primary, want, st):
            continue
        ps = _props(obj, comp.conditions, st)
        if all(ps.values()):
            sat.append(obj)
        else:
            problems.append((obj, ps))
    n_cond = len(comp.conditions)
    satisfied = n_cond * len(sat) + sum(sum(ps.values()) for _, ps in problems)
    return _Out(not problems, satisfied, n_cond * (len(sat) + len(problems)),
                _condition_steps(comp, problems), sat, [o for o, _ in problems])


def _needed(det: str, n_task: int, n_all: int) -> int:
    if det == "all":
        return n_all
    return n_task * (1 if det in ("a", "the") else int(det))


def _heads(rel: dict, sat: dict, cand: dict) -> list[tuple[str, list[dict]]]:
    out = []
    for ent, det in zip(rel["head_entity_list"], rel["head_determiner_list"], strict=True):
        out.append((str(det), (sat.get(ent) or []) + (cand.get(ent) or [])))
    return out


def _check_relation(rel: dict, sat: dict, cand: dict, st: _State, n_task: int) -> _Out:
    heads = _heads(rel, sat, cand)
    total = sum(_needed(det, n_task, n_task * len(objs)) for det, objs in heads if det != "0")
    tail = rel["tail_entity_list"][0]
    tail_objs = (sat.get(tail) or []) + (cand.get(tail) or [])
    tail_ids = {o["objectId"] for o in tail_objs}
    prop, desc = rel["property"], rel["failure_desc"]

    def values(obj: dict) -> list:
        return st.parents(obj) if prop == "parentReceptacles" else list(obj.get(prop) or [])

    if not tail_ids:
        return _Out(False, 0, total, [], [], [])
    if rel["tail_determiner_list"][0] == "a":
        ok, satisfied, steps, sat_objs = True, 0, [], []
        for det, objs in heads:
            if det == "0":
                continue
            good = [o for o in objs if tail_ids.intersection(values(o))]
            bad = [o for o in objs if not tail_ids.intersection(values(o))]
            need = len(objs) if det == "all" else _needed(det, n_task, 0)
            satisfied += len(good) if st.teach_exact else min(need, len(good))
            if len(good) < need:
                ok = False
                steps += [(o["objectId"], desc) for o in bad[:need - len(good)]]
            sat_objs += good
        return _Out(ok, satisfied, total, steps, sat_objs, [])
    return _check_the_tail(heads, tail_objs, values, desc, n_task, total)


_PerHead = list[tuple[int, list[dict], list[dict]]]  # per head entity: (needed, good, bad)


def _check_the_tail(heads: list[tuple[str, list[dict]]], tail_objs: list[dict], values: Any,
                    desc: str, n_task: int, total: int) -> _Out:
    """Tail determiner "the": ``n_task`` tail objects must each hold every head's instances.

    Tail objects are scanned in order, as TEACh does: complete ones are kept until ``n_task`` are
    found; each unfinished one goes into a short list of the best candidates ahead of the first
    kept candidate it beats in complete heads *or* in placed instances (TEACh's rule, not a
    lexicographic sort), and the list is cut to the number of tail objects still missing. Counts
    and blamed head objects come from the complete tail objects and those candidates.
    """
    complete: list[_PerHead] = []
    best: list[tuple[int, int, _PerHead]] = []  # unfinished: (heads complete, instances placed, ...)
    for tail in tail_objs:
        per_head: _PerHead = []
        for det, objs in heads:
            if det == "0":
                continue
            good = [o for o in objs if tail["objectId"] in values(o)]
            bad = [o for o in objs if tail["objectId"] not in values(o)]
            per_head.append((len(objs) if det == "all" else _needed(det, 1, 0), good, bad))
        n_ok = sum(len(good) >= need for need, good, _ in per_head)
        if n_ok == len(per_head):
            complete.append(per_head)
            if len(complete) >= n_task:
                break
            continue
        n_inst = sum(min(need, len(good)) for need, good, _ in per_head)
        pos = next((i for i, (ok_i, inst_i, _) in enumerate(best) if n_ok > ok_i or n_inst > inst_i),
                   len(best))
        best.insert(pos, (n_ok, n_inst, per_head))
        del best[max(0, n_task - len(complete)):]
    satisfied, steps, sat_objs = 0, [], []
    for per_head in complete[:n_task]:
        satisfied += sum(min(need, len(good)) for need, good, _ in per_head)
        sat_objs += [o for _, good, _ in per_head for o in good]
    for _, n_inst, per_head in best[:max(0, n_task - len(complete))]:
        satisfied += n_inst
        steps += [(o["objectId"], desc) for need, good, bad in per_head
                  for o in bad[:max(0, need - len(good))]]
    return _Out(len(complete) >= n_task, satisfied, total, steps, sat_objs, [])


def _check_task(task: ResolvedTask, st: _State, n_inst: int = 1) -> tuple[_Out, bool]:
    """Returns the task's combined output (sat/cand objects of its anchor) and success."""
    subgoals: list[_Out] = []
    sat: dict[str, list[dict]] = {}
    cand: dict[str, list[dict]] = {}
    for key, comp in task.components.items():
        if comp.determiner == "0":
            continue
        if comp.determiner == "all":
            if comp.subtask is not None:
                raise TaskDefinitionError(f"task {task.name!r}: determiner 'all' is not supported "
                                          f"for sub-task component {key!r}")
            out = _check_all(comp, st)
            if not out.success or comp.condition_failure_descs:
                subgoals.append(out)  # TEACh leaves out a met "all" component without descriptions
            cand[key] = out.cand_objs
        elif comp.subtask is not None:
            n = n_inst * (1 if comp.determiner in ("a", "the") else int(comp.determiner))
            out, _ = _check_task(comp.subtask, st, n)
            subgoals.append(out)
        else:
            n = n_inst * (1 if comp.determiner in ("a", "the") else int(comp.determiner))
            out = _check_n(comp, n, st)
            subgoals.append(out)
            cand[key] = out.cand_objs
        sat[key] = out.sat_objs
    for rel in task.relations:
        subgoals.append(_check_relation(rel, sat, cand, st, n_inst))
    anchor = task.anchor if task.anchor in sat else None
    result = _Out(
        success=all(s.success for s in subgoals),
        satisfied=sum(s.satisfied for s in subgoals),
        total=sum(s.total for s in subgoals),
        steps=[step for s in subgoals for step in s.steps],
        sat_objs=sat[anchor] if anchor else [],
        cand_objs=cand.get(anchor, []) if anchor else [],
    )
    return result, result.success


def evaluate(resolved: ResolvedTask, objects: Sequence[dict],
             distances: Mapping[str, float] | None = None, teach_exact: bool = False
             ) -> GoalResult:
    """Check an instantiated task against object metadata dicts.

    ``teach_exact=True`` reproduces TEACh exactly, including its over-counting of relation heads
    (satisfied may then exceed total) and its silence about objects missing altogether; by
    default counts are capped and a missing object gets a description (objectId ``""``).
    """
    out, ok = _check_task(resolved, _State(objects, distances, teach_exact))
    descs = list(dict.fromkeys(d for _, d in out.steps))
    satisfied = out.satisfied if teach_exact else min(out.satisfied, out.total)
    return GoalResult(success=ok, satisfied=satisfied, total=out.total,
                      failure_descs=descs, unmet=out.steps)


def resolve(definition: TaskDefinition | str, params: Sequence[Any] | Mapping[str, Any] | None,
            definitions: Mapping[str, TaskDefinition] | None = None) -> ResolvedTask:
    """Instantiate a definition (object or name) with params against a definition set."""
    defs = definitions if definitions is not None else package_definitions()
    if isinstance(definition, str):
        if definition not in defs:
            raise TaskDefinitionError(f"unknown task definition {definition!r}; "
                                      f"available: {sorted(defs)}")
        definition = defs[definition]
    return instantiate(definition, params, defs)


def check_goal(task: Task | tuple[TaskDefinition | str, Sequence[Any] | Mapping[str, Any]],
               objects: Sequence[dict], definitions: Mapping[str, TaskDefinition] | None = None,
               distances: Mapping[str, float] | None = None, teach_exact: bool = False
               ) -> GoalResult:
    """Check a task's goal conditions on the current objects.

    Args:
        task: a :class:`Task` (its ``definition`` and ``params`` are used) or a pair
            ``(definition or name, params)``.
        objects: AI2-THOR-style metadata dicts (``World.metadata()``).
        definitions: definition set to resolve names in; default: the package's own.
        distances: optional objectId -> distance to the agent, to prefer near candidates.
        teach_exact: reproduce TEACh's counts and descriptions exactly (see :func:`evaluate`).

    Returns:
        GoalResult with success, satisfied / total goal conditions and failure descriptions.
    """
    if isinstance(task, Task):
        name, params = task.definition, task.params
    else:
        name, params = task
    if definitions is None and isinstance(name, str):
        resolved = _resolve_package(name, _freeze(params))
    else:
        resolved = resolve(name, params, definitions)
    return evaluate(resolved, objects, distances, teach_exact)


def _freeze(params: Sequence[Any] | Mapping[str, Any] | None) -> tuple:
    if isinstance(params, Mapping):
        return ("map", *sorted((str(k), str(v)) for k, v in params.items()))
    return ("seq", *(str(p) for p in params or ()))


@lru_cache(maxsize=512)
def _resolve_package(name: str, frozen: tuple) -> ResolvedTask:
    """Resolved package task, cached: the env checks the same task at every step."""
    params = dict(frozen[1:]) if frozen[0] == "map" else list(frozen[1:])
    return resolve(name, params)


@lru_cache(maxsize=4)
def _cached_defs(folder: str) -> dict[str, TaskDefinition]:
    return load_definitions(folder)


def check_definition_dir(folder: str | Path, task_name: str, params: Sequence[Any],
                         objects: Sequence[dict], teach_exact: bool = False) -> GoalResult:
    """Evaluate a task by name from another definition folder (e.g. TEACh's own files)."""
    defs = _cached_defs(str(Path(folder).resolve()))
    return evaluate(resolve(task_name, params, defs), objects, teach_exact=teach_exact)
