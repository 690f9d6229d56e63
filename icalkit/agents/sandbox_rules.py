"""Static half of the sandbox: the rules a program must follow, checked on its AST, and the
instrumentation that routes risky operations through run-time guards (see ``sandbox.py``)."""

from __future__ import annotations

import ast
from collections.abc import Iterable

PROGRAM_FILENAME = "<program>"

FORBIDDEN_NAMES = frozenset(
    "exec eval open compile getattr setattr delattr hasattr globals locals vars type object input "
    "breakpoint dir help super memoryview exit quit classmethod staticmethod property "
    "__import__ __builtins__".split()
)
SAFE_BUILTIN_NAMES = frozenset(
    "range len print min max abs round sum any all enumerate zip reversed sorted list tuple str "
    "int float bool".split()
)
SAFE_METHODS: dict[type, frozenset[str]] = {
    list: frozenset({"append", "pop", "index", "count", "insert", "remove"}),
    dict: frozenset({"get", "keys", "values", "items"}),
    str: frozenset({"startswith", "endswith"}),
    tuple: frozenset({"index", "count"}),
}
_REFUSED_NODES = {
    ast.Import: "import",
    ast.ImportFrom: "import",
    ast.FunctionDef: "function definition (def)",
    ast.AsyncFunctionDef: "function definition (async def)",
    ast.Lambda: "lambda",
    ast.ClassDef: "class definition",
    ast.Try: "try/except",
    ast.With: "with statement",
    ast.AsyncWith: "with statement",
    ast.Raise: "raise",
    ast.Global: "global",
    ast.Nonlocal: "nonlocal",
    ast.Delete: "del",
    ast.Assert: "assert",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Await: "await",
    ast.NamedExpr: "walrus assignment (:=)",
    ast.Starred: "starred expression (*x)",
    ast.AnnAssign: "annotated assignment",
    ast.AsyncFor: "async for",
}
_ALLOWED_NODES = tuple(
    getattr(ast, n)
    for n in (
        "Module Expr Assign AugAssign If For While Break Continue Pass Name Load Store Constant "
        "List Tuple Dict Set BinOp UnaryOp BoolOp Compare Call keyword Attribute Subscript Slice "
        "IfExp JoinedStr FormattedValue ListComp SetComp DictComp GeneratorExp comprehension "
        "operator boolop unaryop cmpop"
    ).split()
)
_GUARDED_OPS = {ast.Add: "add", ast.Mult: "mul", ast.Pow: "pow", ast.LShift: "lshift", ast.Mod: "mod"}
_SEQUENCES = (str, bytes, list, tuple)
MAX_AST_DEPTH = 100  # syntax-tree levels; plans need a handful, attacks need hundreds

class SandboxRefused(ValueError):
    """The program breaks a sandbox rule; raised before anything runs."""

    def __init__(self, lineno: int, construct: str, detail: str = "", verdict: str = "is not allowed"
                 ) -> None:
        self.lineno = lineno
        self.construct = construct
        msg = f"line {lineno}: {construct} {verdict}".strip()
        super().__init__(f"{msg} ({detail})" if detail else msg)


class _Validator(ast.NodeVisitor):
    def __init__(self, callables: frozenset[str], attributes: frozenset[str]) -> None:
        self.callables = callables
        self.attributes = attributes

    def generic_visit(self, node: ast.AST) -> None:
        line = getattr(node, "lineno", 0)
        if type(node) in _REFUSED_NODES:
            raise SandboxRefused(line, _REFUSED_NODES[type(node)])
        if not isinstance(node, _ALLOWED_NODES):
            raise SandboxRefused(line, f"construct {type(node).__name__}")
        super().generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id.startswith("_"):
            raise SandboxRefused(node.lineno, f"name {node.id!r}", "names may not start with _")
        if node.id in FORBIDDEN_NAMES:
            raise SandboxRefused(node.lineno, f"name {node.id!r}", "forbidden built-in")
        if not isinstance(node.ctx, ast.Load) and node.id in self.callables:
            raise SandboxRefused(node.lineno, f"assignment to {node.id!r}",
                                 "API and built-in names cannot be rebound")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("_"):
            raise SandboxRefused(node.lineno, f"attribute {node.attr!r}", "private/dunder access")
        if not isinstance(node.ctx, ast.Load):
            raise SandboxRefused(node.lineno, f"assignment to attribute {node.attr!r}")
        if node.attr not in self.attributes:
            raise SandboxRefused(node.lineno, f"attribute {node.attr!r}", "not part of the API")
        self.visit(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id not in self.callables:
            if func.id in FORBIDDEN_NAMES or func.id.startswith("_"):
                self.visit_Name(func)
            raise SandboxRefused(node.lineno, f"call of {func.id!r}", "not an API or safe built-in")
        if not isinstance(func, (ast.Name, ast.Attribute)):
            raise SandboxRefused(node.lineno, "call of a computed expression")
        if any(k.arg is None for k in node.keywords):
            raise SandboxRefused(node.lineno, "keyword unpacking (**kwargs)")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise SandboxRefused(node.lineno, "augmented assignment to a non-name target")
        self.generic_visit(node)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> None:
        if node.format_spec is not None:
            raise SandboxRefused(node.lineno, "format spec in f-string")
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        if any(k is None for k in node.keys):
            raise SandboxRefused(node.lineno, "dict unpacking (**d)")
        self.generic_visit(node)


def _helper(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=list(args), keywords=[])


class Instrumenter(ast.NodeTransformer):
    """Route risky operations through runtime guards (names start with _sb_, unreachable by code)."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        op = _GUARDED_OPS.get(type(node.op))
        if op is None:
            return node
        return ast.copy_location(_helper(f"_sb_{op}", node.left, node.right), node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        target = node.target
        value = ast.BinOp(left=ast.Name(id=target.id, ctx=ast.Load()), op=node.op, right=node.value)
        ast.copy_location(value, node)
        new = ast.Assign(targets=[ast.Name(id=target.id, ctx=ast.Store())], value=value)
        return self.visit(ast.copy_location(new, node))

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        self.generic_visit(node)
        return ast.copy_location(_helper("_sb_attr", node.value, ast.Constant(node.attr)), node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load) and isinstance(node.slice, ast.Slice):
            return ast.copy_location(_helper("_sb_account", node), node)
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.expr:
        self.generic_visit(node)
        return ast.copy_location(_helper("_sb_account", node), node)

    def _tick_body(self, node: ast.For | ast.While) -> None:
        tick = ast.copy_location(ast.Expr(_helper("_sb_tick")), node)
        node.body.insert(0, tick)

    def visit_For(self, node: ast.For) -> ast.stmt:
        self.generic_visit(node)
        node.iter = ast.copy_location(_helper("_sb_iter", node.iter), node.iter)
        return node

    def visit_While(self, node: ast.While) -> ast.stmt:
        self.generic_visit(node)
        self._tick_body(node)
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.comprehension:
        self.generic_visit(node)
        node.iter = ast.copy_location(_helper("_sb_iter", node.iter), node.iter)
        return node


def _check_depth(tree: ast.Module, max_depth: int = MAX_AST_DEPTH) -> None:
    """Refuse syntax trees deeper than ``max_depth`` (iteratively: no recursion limit to hit)."""
    stack = [(tree, 0, 0)]
    while stack:
        node, depth, line = stack.pop()
        line = getattr(node, "lineno", line)
        if depth > max_depth:
            raise SandboxRefused(line, "expression", f"nested more than {max_depth} levels deep",
                                 verdict="is too deep")
        stack.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))


def validate(source: str, callables: Iterable[str], attributes: Iterable[str],
             max_source_chars: int = 20_000) -> ast.Module:
    """Parse and check a program against the sandbox rules.

    Args:
        source: program text.
        callables: names the program may call (API names; safe built-ins are added).
        attributes: attribute names the program may read (API names; safe methods are added).
        max_source_chars: longest accepted program.

    Returns:
        The parsed module.

    Raises:
        SandboxRefused: naming the line and the construct that breaks a rule.
    """
    if not isinstance(source, str):
        raise SandboxRefused(0, f"program of type {type(source).__name__}", "expected str")
    if len(source) > max_source_chars:
        raise SandboxRefused(0, f"program of {len(source)} characters", f"max {max_source_chars}")
    try:
        tree = ast.parse(source, filename=PROGRAM_FILENAME, mode="exec")
    except SyntaxError as exc:
        raise SandboxRefused(exc.lineno or 0, "syntax error:", str(exc.msg), verdict="") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise SandboxRefused(0, "program cannot be parsed", type(exc).__name__, verdict="") from None
    _check_depth(tree)
    safe_attrs = frozenset().union(*SAFE_METHODS.values())
    validator = _Validator(frozenset(callables) | SAFE_BUILTIN_NAMES,
                           frozenset(attributes) | safe_attrs)
    try:
        validator.visit(tree)
    except RecursionError:
        raise SandboxRefused(0, "program is nested too deeply", verdict="") from None
    return tree
