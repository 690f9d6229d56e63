"""Do to every object what the copy did to one (``planner.finish_states``).

"Clean all the mugs": the demonstration washed the two pots of its room, the copy (re-grounded to mugs)
washes two mugs, and the new room holds a third. The end-state check says so ("not yet every Mug
(dirty=False)", :mod:`icalkit.agents.demo_end_state`), but the next copy is another demonstration, often
of other objects ("No Cup has been found"). The copied program itself already shows what to do to one
mug: the top-level statements after its variable's declaration, up to the next mug's declaration or
the variable's next binding (take it to the sink, run the faucet, set it aside). :func:`state_repair`
repeats that block, the longest one of the class that names no other mug, for each object of the class
the room still has out of the state asked, named by id (the evaluation's object map names them); the
names the block reads and does not bind itself are bound first, as the copy had bound them where the
block began. No model is asked; the executor's pre-condition checks open what holds an object and make
a repeated ``open()`` a no-op (``finish_states`` requires them).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterable, Mapping, Sequence

from icalkit.agents.absent_objects import bound_names, declared_class, read_names
from icalkit.agents.demo_end_state import Check, has_attrs, objects_of


class _Rename(ast.NodeTransformer):
    """Rename one variable."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(self.new, node.ctx), node) if node.id == self.old else node


def class_blocks(body: Sequence[ast.stmt], cls: str) -> list[tuple[str, int, list[ast.stmt]]]:
    """Each variable of class ``cls`` that ``body`` declares at the top level (``v = InteractionObject(
    "Class", ...)``), the index of its declaration and its block: the statements after it up to the
    next declaration of a ``cls`` variable or the next binding of the variable (or the end)."""
    out = []
    for i, stmt in enumerate(body):
        names = bound_names(stmt)
        if declared_class(stmt) != cls or len(names) != 1:
            continue
        var, block = next(iter(names)), []
        for later in body[i + 1:]:
            if declared_class(later) == cls or var in bound_names(later):
                break
            block.append(later)
        out.append((var, i, block))
    return out


def _preamble(body: Sequence[ast.stmt], start: int, needs: set[str]) -> list[ast.stmt] | None:
    """The statements that bind ``needs`` as they were bound where statement ``start`` runs: each name's
    last top-level binding before it, and so on for the names those read (an alias of the sink needs
    the sink), in program order; None where a name has no binding there. Names ``body`` never binds
    (``InteractionObject``, builtins) need none."""
    bound = {x for stmt in body for x in bound_names(stmt)}
    chosen: set[int] = set()
    todo = [(name, start) for name in needs & bound]
    while todo:
        name, before = todo.pop()
        where = [i for i in range(before) if name in bound_names(body[i])]
        if not where:
            return None
        if where[-1] not in chosen:
            chosen.add(where[-1])
            todo += [(x, where[-1]) for x in read_names(body[where[-1]]) & bound]
    return [body[i] for i in sorted(chosen)]


def free_prefix(names: set[str], stem: str = "every") -> str:
    """``every_`` (``stem``), or ``every1_``, ``every2_`` ... where the program has names starting so."""
    k = 0
    while any(n.startswith(f"{stem}{k or ''}_") for n in names):
        k += 1
    return f"{stem}{k or ''}_"


def state_repair(checks: Iterable[Check], state: Mapping[str, dict], program: str) -> str:
    """A program that gives every object of each unmet "every" state check's class the check's states:
    ``program``'s longest block for the class (:func:`class_blocks`) that acts on its variable and names
    no other variable of the class, once per such object, by id; "" when a check is of another kind,
    ``program`` does not parse or has no such block, a name the block reads is bound nowhere before it,
    or no object is left to change."""
    try:
        body = ast.parse(program).body
    except SyntaxError:
        return ""
    prefix = free_prefix({n.id for n in ast.walk(ast.Module(body=body, type_ignores=[])) if isinstance(n, ast.Name)})
    out: list[ast.stmt] = []
    for n, check in enumerate(checks):
        if check.on or not check.every:
            return ""
        own = {v for v, _, _ in class_blocks(body, check.cls)}
        blocks = [(var, i, b) for var, i, b in class_blocks(body, check.cls)
                  if any(var in read_names(s) for s in b) and not any((own - {var}) & read_names(s) for s in b)]
        objs = [o for o in objects_of(state, check.cls) if not has_attrs(state, o, check.attrs)]
        if not blocks or not objs:
            return ""
        var, start, block = max(blocks, key=lambda b: len(b[2]))  # the first of the longest
        first = _preamble(body, start, {x for s in block for x in read_names(s)}
                          - {x for s in block for x in bound_names(s)} - {var})
        if first is None:
            return ""
        out += [s for s in first if s not in out]
        for i, oid in enumerate(objs):
            item = f"{prefix}{n}_{i}"
            out.append(ast.parse(f'{item} = InteractionObject("{check.cls}", object_instance="{oid}")').body[0])
            out += [_Rename(var, item).visit(copy.deepcopy(s)) for s in block]
    return "\n".join(ast.unparse(s) for s in out) + "\n" if out else ""
