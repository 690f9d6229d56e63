"""Tolerant parsing of model output and versioned prompt templates."""

from pathlib import Path

import pytest

from icalkit.agents.parsing import ParseError, extract_code, numbered_items, parse_sections
from icalkit.agents.prompts import PromptTemplateError, check_all_templates, load_template, parse_template

NAMES = ["Summary", "Abstracted State", "Plan", "Program"]


@pytest.mark.parametrize("text", [
    "Summary: make coffee\nAbstracted State: Mug_1 dirty\nPlan:\n1. clean mug\n2. brew\nProgram:\n```python\nmug = InteractionObject('Mug')\n```",
    "**Summary**: make coffee\n**Abstracted state** - Mug_1 dirty\n## Plan\n1. clean mug\n2. brew\n```python\nmug = InteractionObject('Mug')\n```",
    "1. summary: make coffee\n2. abstracted_state: Mug_1 dirty\n3. PLAN: 1. clean mug 2. brew\n4. program:\nmug = InteractionObject('Mug')\n",
    'Sure! {"summary": "make coffee", "abstracted state": "Mug_1 dirty", "plan": ["clean mug", "brew"], '
    '"program": "mug = InteractionObject(\'Mug\')"} hope this helps',
])
def test_parse_sections_accepts_common_formats(text: str) -> None:
    out = parse_sections(text, NAMES, code_section="Program")
    assert "coffee" in out["Summary"]
    assert "Mug_1" in out["Abstracted State"]
    assert "clean mug" in out["Plan"]
    assert out["Program"].strip() == "mug = InteractionObject('Mug')"


@pytest.mark.parametrize("text, missing", [
    ("", "['Summary', 'Abstracted State', 'Plan', 'Program']"),
    ("Summary: x\nPlan: y", "['Abstracted State', 'Program']"),
    ("I cannot help with that.", "Summary"),
    ('{"summary": "x"', "Plan"),  # truncated JSON
    ("Summary:\nAbstracted State:\nPlan:\nProgram:", "Summary"),  # empty sections
])
def test_parse_sections_names_what_is_missing(text: str, missing: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_sections(text, NAMES, code_section="Program")
    assert missing in str(err.value)


def test_parse_rejects_non_text() -> None:
    with pytest.raises(ParseError, match="expected text"):
        parse_sections(None, NAMES)  # type: ignore[arg-type]


def test_extract_code_and_items() -> None:
    assert extract_code("text\n```\nx = 1\n```\nmore ```python\ny = 2\n```") == "y = 2\n"
    assert extract_code("no fence") == "no fence"
    assert extract_code("```python\nunterminated = 1\n") == "unterminated = 1\n"
    assert numbered_items("1. a\n2) b\n- c\n\n* d") == ["a", "b", "c", "d"]


def test_template_checks_placeholders(tmp_path: Path) -> None:
    good = {"name": "t", "version": 2, "placeholders": ["a", "b"], "system": "sys {a}", "user": "{a} and {b} {{literal}}"}
    t = parse_template(good, "t.yaml")
    msgs = t.render(a="1", b="2")
    assert msgs == [{"role": "system", "content": "sys 1"}, {"role": "user", "content": "1 and 2 {literal}"}]
    assert t.prompt_id.startswith("t@v2-")
    with pytest.raises(PromptTemplateError, match="missing values \\['b'\\]"):
        t.render(a="1")
    with pytest.raises(PromptTemplateError, match="declared but unused: \\['b'\\]"):
        parse_template({**good, "user": "{a}"}, "t.yaml")
    with pytest.raises(PromptTemplateError, match="used but not declared: \\['c'\\]"):
        parse_template({**good, "user": "{a} {b} {c}"}, "t.yaml")
    with pytest.raises(PromptTemplateError, match="missing key"):
        parse_template({"name": "t"}, "t.yaml")
    with pytest.raises(PromptTemplateError, match="no prompt template 'nope'"):
        load_template("nope", str(tmp_path))


def test_shipped_templates_load() -> None:
    templates = check_all_templates()
    assert all(t.prompt_id for t in templates)


def test_examples_render_their_state_as_the_planner_renders_the_new_tasks() -> None:
    """An example's state in a prompt uses the planner's compact state format (no labels, no
    None/False noise except ``open=False``), and a raw demonstration's empty sections are left out."""
    from icalkit.agents.context import format_example, state_text
    from icalkit.memory.example import Example

    state = {"Mug_1": {"label": "Mug", "parent": "Cabinet_1", "holding": False, "dirty": True, "liquid": None},
             "Cabinet_1": {"label": "Cabinet", "parent": None, "holding": False, "open": False}}
    raw = Example(task_id="t", task_type="Coffee", instruction="Coffee please", filtered_state=state,
                  demo_program='mug = InteractionObject("Mug")')
    text = format_example(raw, 1)
    assert state_text(state) in text and "Mug_1: parent=Cabinet_1, dirty=True\nCabinet_1: open=False" in text
    assert "label=" not in text and "Summary" not in text and "Plan" not in text
    learned = Example(task_id="t", task_type="Coffee", instruction="Coffee please", filtered_state=state,
                      summary="brew", plan=["open", "brew"], revised_program='mug = InteractionObject("Mug")')
    assert "Summary: brew\nPlan:\n1. open\n2. brew\nProgram:" in format_example(learned)
