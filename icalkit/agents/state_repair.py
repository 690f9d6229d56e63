"""Do to every object what the copy did to one (``planner.finish_states``).

"Clean all the mugs": the demonstration washed the two pots of its room, the copy (re-grounded to mugs)
washes two mugs, and the new room holds a third. The end-state check says so ("not yet every Mug
(dirty=False)", :mod:`icalkit.agents.demo_end_state`), but the next copy is another demonstration, often
of other objects ("No Cup has been found"). The copied program itself already shows what to do to one
mug: the statements from its variable's declaration up to the next mug's (take it to the sink, run the
faucet, set it aside). :func:`state_repair` repeats that block, the longest one the program has for
the class, for each object of the class the room still has out of the state asked, named by id (the
evaluation's object map names them), with the other objects the block uses declared first as the copy
declared them. No model is asked; the executor's pre-condition checks open what holds an object.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence

from icalkit.agents.context import is_interaction
from icalkit.agents.demo_end_state import Check, has_attrs, interaction_class, objects_of


class _Rename(ast.NodeTransformer):
    """Rename one variable."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(self.new, node.ctx), node) if node.id == self.old else node


def _declared(stmt: ast.stmt) -> tuple[str, str] | None:
    """``(variable, class)`` of ``v = InteractionObject("Class", ...)``; None for any other statement."""
    if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and is_interaction(stmt.value)):
        return stmt.targets[0].id, interaction_class(stmt.value) or ""
    return None


def class_blocks(body: Sequence[ast.stmt], cls: str) -> list[tuple[str, list[ast.stmt]]]:
    """Each variable of class ``cls`` that ``body`` declares, with its block: the statements after its
    declaration up to the next declaration of a ``cls`` variable (or the end), declarations left out."""
    starts = [(i, d[0]) for i, s in enumerate(body) if (d := _declared(s)) and d[1] == cls]
    ends = [i for i, _ in starts[1:]] + [len(body)] if starts else []
    return [(var, [s for s in body[i + 1:end] if _declared(s) is None])
            for (i, var), end in zip(starts, ends, strict=True)]


def state_repair(checks: Iterable[Check], state: Mapping[str, dict], program: str) -> str:
    """A program that gives every object of each unmet "every" state check's class the check's states:
    ``program``'s longest block for the class (:func:`class_blocks`, one that touches its variable) for
    each such object, by id; "" when a check is of another kind, ``program`` has no such block or
    does not parse, or no object is left to change."""
    try:
        body = ast.parse(program).body
    except SyntaxError:
        return ""
    declarations = [s for s in body if _declared(s)]
    lines: list[str] = []
    for n, check in enumerate(checks):
        if check.on or not check.every:
            return ""
        blocks = [(var, b) for var, b in class_blocks(body, check.cls)
                  if any(isinstance(x, ast.Name) and x.id == var for s in b for x in ast.walk(s))]
        objs = [o for o in objects_of(state, check.cls) if not has_attrs(state, o, check.attrs)]
        if not blocks or not objs:
            return ""
        var, block = max(blocks, key=lambda vb: len(vb[1]))  # the first of the longest
        for i, oid in enumerate(objs):
            item = f"every_{n}_{i}"
            lines.append(f'{item} = InteractionObject("{check.cls}", object_instance="{oid}")')
            lines += [ast.unparse(_Rename(var, item).visit(ast.parse(ast.unparse(s)).body[0])) for s in block]
    if not lines:
        return ""
    used = {x.id for line in lines for x in ast.walk(ast.parse(line)) if isinstance(x, ast.Name)}
    preamble = [ast.get_source_segment(program, s) or ast.unparse(s) for s in declarations if _declared(s)[0] in used]
    return "\n".join(preamble + lines) + "\n"
