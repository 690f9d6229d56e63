"""TEACh's goal checker re-implemented from alexa/teach ``src/teach/dataset/task_THOR.py``.

A test oracle for icalkit's checker, written from TEACh's code and kept in its shape (one task
object holding raw definition dicts; ``write_task_params``, ``get_parent_receptacles``,
``obj_satisfies_props``, ``check_component_n_instances``, ``check_component_all_instances``,
``check_relation``, ``check_episode_progress``) so that a reader can set the two side by side. It
shares no code with ``icalkit``: it loads the raw JSON files itself. Left out: what does not
change success, counts or unmet steps (problem keys, descriptions, representative objects of
sub-tasks, distances to the agent, precondition checks).

Two places where TEACh gives no answer are made explicit:

* a cycle of ``simbotLastParentReceptacle`` links makes TEACh recurse until Python's recursion
  limit. ``get_parent_receptacles`` unrolls the same recursion but stops one level deeper than
  there are objects (raising :class:`TeachRecursion` unless ``cycles="truncate"``): the list
  returned is then a prefix of TEACh's endless list that has already gone round the cycle, so it
  holds every id the endless list would hold;
* a ``parentReceptacles`` condition on an object whose parent id names no object makes TEACh
  fail with a TypeError (it reads ``None["objectType"]``); here :class:`TeachCrash` is raised.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any


class TeachRecursion(RuntimeError):
    """TEACh would recurse forever (cycle of ``simbotLastParentReceptacle`` links)."""


class TeachCrash(RuntimeError):
    """TEACh would stop with an exception on this input."""


def load_teach_definitions(folder: str | Path) -> dict[str, dict]:
    """Raw TEACh definition dicts by task name (no validation: the files are TEACh's own)."""
    out = {}
    for path in sorted(Path(folder).glob("*.json")):
        definition = json.loads(path.read_text())
        out[definition["task_name"]] = definition
    return out


class ReferenceTask:
    """One TEACh task with its parameters, sub-tasks resolved (``Task_THOR`` in TEACh)."""

    def __init__(self, definitions: dict[str, dict], name: str, params: list[str],
                 cycles: str = "raise") -> None:
        raw = copy.deepcopy(definitions[name])
        self.task_name = name
        self.task_params = list(params)
        self.task_anchor_object = raw["task_anchor_object"]
        self.components: dict[str, dict] = raw["components"]
        self.relations: list[dict] = raw["relations"]
        self.cycles = cycles
        for component in self.components.values():
            if "task_name" in component:
                # TEACh's sub-task shares the component's task_params list, so the parent's
                # substitution (which runs first) reaches it.
                component["task"] = _SubTask(definitions, component, cycles)
        assert len(self.task_params) == raw["task_nparams"], (name, params)
        self.write_task_params()

    # ------------------------------------------------------------------ parameters

    def _fill_str(self, text: str) -> str:
        for idx in reversed(range(len(self.task_params))):  # "#10" before "#1"
            text = text.replace(f"#{idx}", self.task_params[idx])
        return text

    def _fill_list(self, values: list) -> list:
        for idx, value in enumerate(values):
            if isinstance(value, str):
                values[idx] = self._fill_str(value)
            elif isinstance(value, list):
                values[idx] = self._fill_list(value)
            elif isinstance(value, dict):
                values[idx] = self._fill_dict(value)
        return values

    def _fill_dict(self, mapping: dict) -> dict:
        renamed = []
        for key, value in list(mapping.items()):
            new_key = self._fill_str(key)
            if new_key != key:
                renamed.append(key)
            if isinstance(value, str):
                value = self._fill_str(value)
                if value.isnumeric() and new_key != "determiner":
                    value = int(value)  # a simulator property value, e.g. isToggled "#1" -> 1
                mapping[new_key] = value
            elif isinstance(value, list):
                mapping[new_key] = self._fill_list(value)
            elif isinstance(value, dict):
                mapping[new_key] = self._fill_dict(value)
            elif isinstance(value, _SubTask):
                value.resolve()
                mapping[new_key] = value
        for key in renamed:  # renamed keys move to the end of the dict, as in TEACh
            del mapping[key]
        return mapping

    def write_task_params(self) -> None:
        if self.task_anchor_object is not None:
            self.task_anchor_object = self._fill_str(self.task_anchor_object)
        self.components = self._fill_dict(self.components)
        self.relations = self._fill_list(self.relations)

    # ------------------------------------------------------------------ object properties

    @staticmethod
    def object_by_id(objects: list[dict], obj_id: Any) -> dict | None:
        for obj in objects:
            if obj["objectId"] == obj_id:
                return obj
        return None

    def get_parent_receptacles(self, obj: dict, objects: list[dict], depth: int = 0) -> list | None:
        if obj.get("parentReceptacles") is not None:
            return obj["parentReceptacles"]
        if "simbotLastParentReceptacle" in obj:
            parent_id = obj["simbotLastParentReceptacle"]
            if parent_id is not None and parent_id != obj["objectId"]:
                if depth > len(objects):
                    if self.cycles == "truncate":
                        return None
                    raise TeachRecursion(obj["objectId"])
                parents = [parent_id]
                parent = self.object_by_id(objects, parent_id)
                if parent is not None:
                    further = self.get_parent_receptacles(parent, objects, depth + 1)
                    if further is not None:
                        parents = parents + list(further)
                return parents
        return None

    @staticmethod
    def check_object_type(obj: dict, wanted: Any) -> bool:
        aliases = {("SinkBasin", "Sink"), ("Sink", "SinkBasin"), ("BathtubBasin", "Bathtub"),
                   ("Bathtub", "BathtubBasin")}
        return obj["objectType"] == wanted or (obj["objectType"], wanted) in aliases

    def _is_a(self, obj: dict | None, wanted: Any) -> bool:
        if obj is None:
            raise TeachCrash("a parent id names no object")
        return self.check_object_type(obj, wanted) or wanted in obj["simbotObjectClass"]

    def obj_satisfies_props(self, obj: dict, props: dict, objects: list[dict]) -> dict[str, bool]:
        sats = {}
        for prop, wanted in props.items():
            if prop not in obj:
                sats[prop] = False
            elif prop == "objectType":
                sats[prop] = self.check_object_type(obj, wanted)
            elif prop == "simbotLastParentReceptacle" and wanted is not None:
                value_obj = self.object_by_id(objects, obj[prop])
                sats[prop] = value_obj is not None and (
                    self.check_object_type(value_obj, wanted) or wanted in value_obj["simbotObjectClass"])
            elif prop == "parentReceptacles":
                parents = self.get_parent_receptacles(obj, objects) or []
                matches = [self._is_a(self.object_by_id(objects, p), wanted) for p in parents]
                sats[prop] = any(matches)
            elif type(wanted) is int and wanted in (0, 1):
                sats[prop] = not ((obj[prop] and wanted == 0) or (not obj[prop] and wanted == 1))
            elif type(obj[prop]) is list:
                sats[prop] = wanted in obj[prop]
            else:
                sats[prop] = wanted == obj[prop]
        return sats

    # ------------------------------------------------------------------ components

    def check_component_n_instances(self, objects: list[dict], component: dict, num_instances: int
                                    ) -> dict:
        if component["instance_shareable"]:
            num_instances = 1
        primary = component["primary_condition"]
        wanted = component["conditions"][primary]
        success, satisfied, candidates = False, [], []
        to_check = num_instances
        for obj in objects:
            props = self.obj_satisfies_props(obj, component["conditions"], objects)
            if all(props.values()):
                satisfied.append(obj)
                if len(satisfied) >= num_instances:
                    success = True
                continue
            if success:
                continue
            whole_of_slice = "Sliced" in wanted and obj[primary] == wanted.replace("Sliced", "")
            whole_of_crack = "Cracked" in wanted and obj[primary] == wanted.replace("Cracked", "")
            if not (props[primary] or whole_of_slice or whole_of_crack):
                continue
            others = [v for k, v in props.items() if k != primary]
            if all(others) and "Sliced" in wanted:
                to_check = 1  # one whole object gives every slice needed
            cand = {"object": obj, "props_sat": props, "n": sum(props.values())}
            # insert ahead of the first candidate it beats (no distances: all are 0)
            pos = next((i for i, c in enumerate(candidates) if cand["n"] > c["n"]), len(candidates))
            candidates.insert(pos, cand)
        missing = max(0, to_check - len(satisfied))
        n_cond = len(component["conditions"])
        problems = candidates[:min(len(candidates), missing)]
        steps = []
        for key, desc in component["condition_failure_descs"].items():
            blamed = [c for c in problems if not c["props_sat"].get(key, True)]
            if blamed:
                steps += [{"success": False, "objectId": c["object"]["objectId"], "desc": desc}
                          for c in blamed]
            else:
                rep = satisfied[0] if satisfied else (candidates[0]["object"] if candidates else None)
                if rep is not None:
                    steps.append({"success": True, "objectId": rep["objectId"], "desc": desc})
        return {"success": success, "satisfied_objects": satisfied,
                "candidate_objects": [c["object"] for c in candidates], "steps": steps,
                "goal_conditions_total": n_cond * num_instances,
                "goal_conditions_satisfied": n_cond * min(num_instances, len(satisfied))
                + sum(c["n"] for c in problems)}

    def check_component_all_instances(self, objects: list[dict], component: dict) -> dict:
        satisfied, problems = [], []
        for obj in objects:
            props = self.obj_satisfies_props(obj, component["conditions"], objects)
            if props[component["primary_condition"]]:
                (satisfied if all(props.values()) else problems).append((obj, props))
        n_cond = len(component["conditions"])
        steps = []
        for key, desc in component["condition_failure_descs"].items():
            blamed = [o for o, props in problems if not props.get(key, True)]
            if blamed:
                steps += [{"success": False, "objectId": o["objectId"], "desc": desc} for o in blamed]
            elif satisfied:
                steps.append({"success": True, "objectId": satisfied[0][0]["objectId"], "desc": desc})
        return {"success": not problems, "satisfied_objects": [o for o, _ in satisfied],
                "candidate_objects": [o for o, _ in problems], "steps": steps,
                "goal_conditions_total": n_cond * (len(satisfied) + len(problems)),
                "goal_conditions_satisfied": n_cond * len(satisfied)
                + sum(sum(p.values()) for _, p in problems)}

    # ------------------------------------------------------------------ relations

    def _head_values(self, relation: dict, head: dict, objects: list[dict]) -> list | None:
        if relation["property"] == "parentReceptacles":
            return self.get_parent_receptacles(head, objects)
        return head[relation["property"]]

    def check_relation(self, relation: dict, sat: dict, cand: dict, objects: list[dict],
                       num_task_instances: int) -> dict:
        def members(entity: str) -> list[dict]:
            return list(sat.get(entity) or []) + list(cand.get(entity) or [])

        heads = list(zip(relation["head_entity_list"], relation["head_determiner_list"], strict=True))
        total = 0
        for entity, det in heads:
            if det == "a":
                total += num_task_instances
            elif det == "all":
                total += num_task_instances * len(members(entity))
            else:
                total += num_task_instances * int(det)
        tails = members(relation["tail_entity_list"][0])
        tail_ids = {t["objectId"] for t in tails}
        if not tail_ids:
            return {"success": False, "steps": [], "goal_conditions_total": total,
                    "goal_conditions_satisfied": 0}
        desc = relation["failure_desc"]
        steps: list[dict] = []
        if relation["tail_determiner_list"][0] == "a":
            success, n_sat = True, 0
            for entity, det in heads:
                if det == "0":
                    continue
                good, bad = [], []
                for head in members(entity):
                    values = self._head_values(relation, head, objects)
                    (good if values is not None and any(v in tail_ids for v in values) else bad).append(head)
                n_sat += len(good)
                if det == "all":
                    if bad:
                        success = False
                        steps += [{"success": False, "objectId": o["objectId"], "desc": desc} for o in bad]
                else:
                    needed = num_task_instances * (1 if det == "a" else int(det))
                    if len(good) < needed:
                        success = False
                        steps += [{"success": False, "objectId": o["objectId"], "desc": desc}
                                  for o in bad[:needed - len(good)]]
            return {"success": success, "steps": steps, "goal_conditions_total": total,
                    "goal_conditions_satisfied": n_sat}
        assert relation["tail_determiner_list"][0] == "the"
        done_tails, best_tails = [], []
        for tail in tails:
            status = []
            for entity, det in heads:
                if det == "0":
                    continue
                good, bad = [], []
                for head in members(entity):
                    values = self._head_values(relation, head, objects)
                    (good if values is not None and tail["objectId"] in values else bad).append(head)
                needed = len(members(entity)) if det == "all" else 1 if det == "a" else int(det)
                status.append({"good": good, "bad": bad, "needed": needed,
                               "gc": min(needed, len(good)), "ok": len(good) >= needed})
            if all(s["ok"] for s in status):
                done_tails.append(status)
                if len(done_tails) >= num_task_instances:
                    break
                continue
            entry = {"status": status, "heads": sum(s["ok"] for s in status),
                     "inst": sum(s["gc"] for s in status)}
            for idx, other in enumerate(best_tails):
                if entry["heads"] > other["heads"] or entry["inst"] > other["inst"]:
                    best_tails.insert(idx, entry)
                    break
            else:
                best_tails.append(entry)
            best_tails = best_tails[:max(0, num_task_instances - len(done_tails))]
        if not done_tails and not best_tails:
            raise TeachCrash('tail determiner "the" with no tail candidates')
        n_sat = sum(s["gc"] for status in done_tails[:num_task_instances] for s in status)
        for entry in best_tails[:max(0, num_task_instances - len(done_tails))]:
            for s in entry["status"]:
                n_sat += s["gc"]
                missing = s["needed"] - len(s["good"])
                if missing > 0:
                    steps += [{"success": False, "objectId": o["objectId"], "desc": desc}
                              for o in s["bad"][:missing]]
        return {"success": len(done_tails) >= num_task_instances, "steps": steps,
                "goal_conditions_total": total, "goal_conditions_satisfied": n_sat}

    # ------------------------------------------------------------------ task

    def check_episode_progress(self, objects: list[dict], num_instances_needed: int = 1) -> dict:
        subgoals, sat, cand = [], {}, {}
        anchor_sat = None
        for key, component in self.components.items():
            det = component["determiner"]
            if det == "0":
                continue
            if det == "all":
                out = self.check_component_all_instances(objects, component)
                if not out["success"] or out["steps"]:
                    subgoals.append(out)
                sat[key], cand[key] = out["satisfied_objects"], out["candidate_objects"]
            else:
                needed = num_instances_needed * (1 if det == "a" else int(det))
                if "task_name" in component:
                    sub = component["task"].task.check_episode_progress(objects, needed)
                    subgoals.append({
                        "success": all(s["success"] for s in sub["subgoals"]),
                        "steps": [st for s in sub["subgoals"] for st in s["steps"] if not st["success"]],
                        "goal_conditions_total": sub["goal_conditions_total"],
                        "goal_conditions_satisfied": sub["goal_conditions_satisfied"]})
                    sat[key] = sub["satisfied_objects"]  # sub-task candidates stay out of relations
                    out = sub
                else:
                    out = self.check_component_n_instances(objects, component, needed)
                    subgoals.append(out)
                    sat[key], cand[key] = out["satisfied_objects"], out["candidate_objects"]
            if key == self.task_anchor_object:
                anchor_sat = out["satisfied_objects"]
        for relation in self.relations:
            subgoals.append(self.check_relation(relation, sat, cand, objects, num_instances_needed))
        return {"success": all(s["success"] for s in subgoals), "subgoals": subgoals,
                "satisfied_objects": anchor_sat,
                "goal_conditions_total": sum(s["goal_conditions_total"] for s in subgoals),
                "goal_conditions_satisfied": sum(s["goal_conditions_satisfied"] for s in subgoals)}

    def result(self, objects: list[dict]) -> tuple[bool, int, int, list[tuple[str, str]]]:
        """(success, satisfied, total, sorted unmet (objectId, desc) steps) as TEACh reports them."""
        out = self.check_episode_progress(objects)
        unmet = sorted((st["objectId"], st["desc"]) for s in out["subgoals"] for st in s["steps"]
                       if not st["success"])
        return (bool(out["success"]), int(out["goal_conditions_satisfied"]),
                int(out["goal_conditions_total"]), unmet)


class _SubTask:
    """A sub-task component's task, built once its parameters are filled in (TEACh's ``task``)."""

    def __init__(self, definitions: dict[str, dict], component: dict, cycles: str) -> None:
        self.definitions, self.component, self.cycles = definitions, component, cycles
        self.task: ReferenceTask | None = None

    def resolve(self) -> None:
        self.task = ReferenceTask(self.definitions, self.component["task_name"],
                                  self.component["task_params"], self.cycles)
