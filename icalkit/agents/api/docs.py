"""API documentation text for prompts, generated from the code so the two never disagree."""

from __future__ import annotations

import inspect

from icalkit.agents.api.household import ATTRIBUTES, InteractionObject, public_methods


def _first_line(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.splitlines()[0] if doc else ""


def _signature(name: str, fn: object) -> str:
    sig = inspect.signature(fn)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()
              if p.name != "self"]
    return f"{name}{sig.replace(parameters=params, return_annotation=inspect.Signature.empty)}"


def api_documentation() -> str:
    """Signatures and one-line docstrings of the household API, as shown to the model."""
    cls = InteractionObject
    lines = [f"class {_signature(cls.__name__, cls.__init__)}:", f'    """{_first_line(cls)}"""',
             f'    # __init__: {_first_line(cls.__init__)}']
    for name in public_methods():
        lines.append(f"    def {_signature(name, getattr(cls, name))}:")
        lines.append(f'        """{_first_line(getattr(cls, name))}"""')
    lines.append("")
    lines.append(f"# attributes for check_attribute / change_state: {', '.join(ATTRIBUTES)}")
    return "\n".join(lines)
