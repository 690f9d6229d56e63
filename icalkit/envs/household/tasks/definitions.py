"""Task definitions in TEACh's JSON format: loading, validation and ``#k`` parameter substitution.

A definition file is one JSON object with ``task_id``, ``task_name``, ``task_nparams``,
``task_anchor_object``, ``desc``, ``components`` and ``relations``. A component is either
*atomic* (``determiner``, ``primary_condition``, ``instance_shareable``, ``conditions``,
``condition_failure_descs``) or a *sub-task* (``determiner``, ``task_name``, ``task_params``).
A relation links head components to one tail component through a property (in practice
``parentReceptacles``). Strings may contain ``#k`` placeholders for the k-th task parameter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

REQUIRED_KEYS = ("task_id", "task_name", "task_nparams", "task_anchor_object", "desc",
                 "components", "relations")
ATOMIC_KEYS = ("determiner", "primary_condition", "instance_shareable", "conditions",
               "condition_failure_descs")
SUBTASK_KEYS = ("determiner", "task_name", "task_params")
RELATION_KEYS = ("property", "tail_entity_list", "tail_determiner_list", "head_entity_list",
                 "head_determiner_list", "failure_desc")
PACKAGE_DEFINITIONS_DIR = Path(__file__).parent / "definitions"
_PLACEHOLDER = re.compile(r"#(\d+)")
_DETERMINER = re.compile(r"^(a|the|all|\d+|#\d+)$")


class TaskDefinitionError(ValueError):
    """A task-definition file (or a parameter list for it) is malformed."""


@dataclass(frozen=True)
class TaskDefinition:
    """One task definition as read from a TEACh-format JSON file (placeholders unresolved)."""

    task_id: int
    task_name: str
    task_nparams: int
    task_anchor_object: str | None
    desc: str
    components: dict[str, dict]
    relations: list[dict]
    source: str = ""
    comments_task_params: dict[str, str] = field(default_factory=dict)

    def subtask_names(self) -> list[str]:
        """Names of the tasks this definition uses as components."""
        return [c["task_name"] for c in self.components.values() if "task_name" in c]


@dataclass
class ResolvedComponent:
    """A component with parameters substituted; ``subtask`` is set for sub-task components."""

    key: str
    determiner: str
    conditions: dict[str, Any] = field(default_factory=dict)
    primary_condition: str = "objectType"
    instance_shareable: bool = False
    condition_failure_descs: dict[str, str] = field(default_factory=dict)
    subtask: ResolvedTask | None = None


@dataclass
class ResolvedTask:
    """A task definition instantiated with concrete parameters (sub-tasks resolved too)."""

    name: str
    params: list[str]
    desc: str
    anchor: str | None
    components: dict[str, ResolvedComponent]
    relations: list[dict]


def _fail(source: str, problem: str) -> TaskDefinitionError:
    return TaskDefinitionError(f"task definition {source}: {problem}")


def _check_component(source: str, key: str, comp: Any) -> None:
    if not isinstance(comp, dict):
        raise _fail(source, f"component {key!r} must be a JSON object, got {type(comp).__name__}")
    expected = SUBTASK_KEYS if "task_name" in comp else ATOMIC_KEYS
    missing = [k for k in expected if k not in comp]
    if missing:
        kind = "sub-task" if "task_name" in comp else "atomic"
        raise _fail(source, f"{kind} component {key!r} is missing key(s) {missing}")
    det = comp["determiner"]
    if not isinstance(det, str) or not _DETERMINER.match(det):
        raise _fail(source, f"component {key!r} has invalid determiner {det!r} "
                            "(expected 'a', 'the', 'all', a number or '#k')")
    if "task_name" in comp:
        if not isinstance(comp["task_params"], list):
            raise _fail(source, f"component {key!r}: task_params must be a list")
        return
    if not isinstance(comp["conditions"], dict) or not comp["conditions"]:
        raise _fail(source, f"component {key!r}: conditions must be a non-empty object")
    if comp["primary_condition"] not in comp["conditions"]:
        raise _fail(source, f"component {key!r}: primary_condition {comp['primary_condition']!r} "
                            f"is not one of its conditions {list(comp['conditions'])}")
    if not isinstance(comp["condition_failure_descs"], dict):
        raise _fail(source, f"component {key!r}: condition_failure_descs must be an object")


def _check_relation(source: str, i: int, rel: Any, components: Mapping[str, Any]) -> None:
    if not isinstance(rel, dict):
        raise _fail(source, f"relation {i} must be a JSON object")
    missing = [k for k in RELATION_KEYS if k not in rel]
    if missing:
        raise _fail(source, f"relation {i} is missing key(s) {missing}")
    if len(rel["tail_entity_list"]) != 1 or len(rel["tail_determiner_list"]) != 1:
        raise _fail(source, f"relation {i}: exactly one tail entity and determiner are supported")
    if rel["tail_determiner_list"][0] not in ("a", "the"):
        raise _fail(source, f"relation {i}: tail determiner must be 'a' or 'the', "
                            f"got {rel['tail_determiner_list'][0]!r}")
    if len(rel["head_entity_list"]) != len(rel["head_determiner_list"]):
        raise _fail(source, f"relation {i}: head_entity_list and head_determiner_list differ in length")
    for entity in [*rel["tail_entity_list"], *rel["head_entity_list"]]:
        if entity not in components:
            raise _fail(source, f"relation {i} names unknown component {entity!r}; "
                                f"components are {list(components)}")


def parse_definition(data: Any, source: str = "<dict>") -> TaskDefinition:
    """Validate one decoded JSON definition and wrap it.

    Raises:
        TaskDefinitionError: naming ``source`` and the problem (missing key, bad component ...).
    """
    if not isinstance(data, dict):
        raise _fail(source, f"must be a JSON object with keys {list(REQUIRED_KEYS)}")
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise _fail(source, f"missing key(s) {missing}")
    nparams = data["task_nparams"]
    if not isinstance(nparams, int) or nparams < 0:
        raise _fail(source, f"task_nparams must be a non-negative integer, got {nparams!r}")
    if not isinstance(data["task_name"], str) or not data["task_name"]:
        raise _fail(source, "task_name must be a non-empty string")
    comps, rels = data["components"], data["relations"]
    if not isinstance(comps, dict) or not comps:
        raise _fail(source, "components must be a non-empty JSON object")
    if not isinstance(rels, list):
        raise _fail(source, "relations must be a JSON list")
    for key, comp in comps.items():
        _check_component(source, key, comp)
    for i, rel in enumerate(rels):
        _check_relation(source, i, rel, comps)
    used = {int(k) for k in _PLACEHOLDER.findall(json.dumps([comps, rels, data["desc"]]))}
    if used and max(used) >= nparams:
        raise _fail(source, f"uses parameter #{max(used)} but task_nparams is {nparams}")
    return TaskDefinition(
        task_id=data["task_id"], task_name=data["task_name"], task_nparams=nparams,
        task_anchor_object=data["task_anchor_object"], desc=data["desc"], components=comps,
        relations=rels, source=source,
        comments_task_params=dict(data.get("comments_task_params") or {}),
    )


def load_definition_file(path: str | Path) -> TaskDefinition:
    """Read and validate one JSON definition file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise _fail(str(path), f"invalid JSON ({e})") from None
    except OSError as e:
        raise _fail(str(path), f"cannot be read ({e})") from None
    return parse_definition(data, str(path))


def validate_references(defs: Mapping[str, TaskDefinition]) -> None:
    """Check that sub-task names exist, get the right number of params and do not form a cycle."""
    for d in defs.values():
        for key, comp in d.components.items():
            if "task_name" not in comp:
                continue
            sub = defs.get(comp["task_name"])
            if sub is None:
                raise _fail(d.source, f"component {key!r} uses unknown sub-task "
                                      f"{comp['task_name']!r}; known tasks: {sorted(defs)}")
            if len(comp["task_params"]) != sub.task_nparams:
                raise _fail(d.source, f"component {key!r}: sub-task {sub.task_name!r} takes "
                                      f"{sub.task_nparams} params, got {len(comp['task_params'])}")

    def visit(name: str, stack: tuple[str, ...]) -> None:
        if name in stack:
            raise _fail(defs[name].source, f"sub-task cycle {' -> '.join((*stack, name))}")
        for sub in defs[name].subtask_names():
            visit(sub, (*stack, name))

    for name in defs:
        visit(name, ())


def load_definitions(*dirs: str | Path) -> dict[str, TaskDefinition]:
    """Load every ``*.json`` definition in the given folders, keyed by ``task_name``.

    With no folder, loads the package's own definitions. Raises TaskDefinitionError for a
    malformed file, duplicate names/ids, unknown sub-tasks or wrong sub-task parameter counts.
    """
    folders = [Path(d) for d in dirs] or [PACKAGE_DEFINITIONS_DIR]
    defs: dict[str, TaskDefinition] = {}
    ids: dict[Any, str] = {}
    for folder in folders:
        if not folder.is_dir():
            raise TaskDefinitionError(f"task-definition folder {folder} does not exist")
        for path in sorted(folder.glob("*.json")):
            d = load_definition_file(path)
            if d.task_name in defs:
                raise _fail(str(path), f"duplicate task_name {d.task_name!r} "
                                       f"(also in {defs[d.task_name].source})")
            if d.task_id in ids:
                raise _fail(str(path), f"duplicate task_id {d.task_id!r} (also in {ids[d.task_id]})")
            defs[d.task_name] = d
            ids[d.task_id] = str(path)
    validate_references(defs)
    return defs


@lru_cache(maxsize=1)
def package_definitions() -> dict[str, TaskDefinition]:
    """The project's own definitions shipped in ``tasks/definitions/`` (cached)."""
    return load_definitions(PACKAGE_DEFINITIONS_DIR)


def _sub_str(s: str, params: Sequence[str]) -> str:
    # highest index first so that "#13" is not read as "#1" followed by "3"
    for k in range(len(params) - 1, -1, -1):
        s = s.replace(f"#{k}", params[k])
    return s


def substitute(value: Any, params: Sequence[str], key: str | None = None) -> Any:
    """Replace ``#k`` placeholders in strings, lists and dict keys/values.

    As in TEACh, a string value that becomes all digits turns into an int (a property value
    such as ``"isToggled": "#1"``), except under the key ``determiner`` and inside lists.
    """
    if isinstance(value, str):
        out = _sub_str(value, params)
        if key is not None and key != "determiner" and out.isdigit():
            return int(out)
        return out
    if isinstance(value, list):
        return [substitute(v, params) for v in value]
    if isinstance(value, dict):
        return {_sub_str(k, params): substitute(v, params, k) for k, v in value.items()}
    return value


def normalize_params(params: Sequence[Any] | Mapping[str, Any] | None, definition: TaskDefinition
                     ) -> list[str]:
    """Turn ``["Mug"]`` or ``{"#0": "Mug"}`` into the positional string list, checking its length."""
    if params is None:
        params = []
    if isinstance(params, Mapping):
        keys = [f"#{k}" for k in range(len(params))]
        if sorted(params) != sorted(keys):
            raise TaskDefinitionError(
                f"task {definition.task_name!r}: params must be keyed '#0'..'#{len(params) - 1}', "
                f"got keys {sorted(params)}")
        params = [params[k] for k in keys]
    out = [str(p) for p in params]
    if len(out) != definition.task_nparams:
        raise TaskDefinitionError(
            f"task {definition.task_name!r} takes {definition.task_nparams} params, got {len(out)}: "
            f"{out}" + (f" (meaning: {definition.comments_task_params})"
                        if definition.comments_task_params else ""))
    return out


def instantiate(definition: TaskDefinition, params: Sequence[Any] | Mapping[str, Any] | None,
                definitions: Mapping[str, TaskDefinition]) -> ResolvedTask:
    """Substitute parameters into a definition and, recursively, into its sub-tasks."""
    p = normalize_params(params, definition)
    comps = substitute(definition.components, p)
    components: dict[str, ResolvedComponent] = {}
    for key, c in comps.items():
        if "task_name" in c:
            sub_def = definitions.get(c["task_name"])
            if sub_def is None:
                raise TaskDefinitionError(f"task {definition.task_name!r}: unknown sub-task "
                                          f"{c['task_name']!r}")
            components[key] = ResolvedComponent(
                key=key, determiner=str(c["determiner"]),
                subtask=instantiate(sub_def, c["task_params"], definitions))
        else:
            components[key] = ResolvedComponent(
                key=key, determiner=str(c["determiner"]), conditions=c["conditions"],
                primary_condition=c["primary_condition"],
                instance_shareable=bool(c["instance_shareable"]),
                condition_failure_descs=c["condition_failure_descs"])
    anchor = definition.task_anchor_object
    return ResolvedTask(
        name=definition.task_name, params=p, desc=_sub_str(definition.desc, p),
        anchor=_sub_str(anchor, p) if isinstance(anchor, str) else None,
        components=components, relations=substitute(definition.relations, p))
