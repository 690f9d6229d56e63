"""A demonstration read as about the food a request names (icalkit/agents/food_swap.py), and the composer's
use of it, on real recorded demonstrations and the bundled MiniLM."""

from __future__ import annotations

from types import SimpleNamespace

import copy_fixtures
from copy_fixtures import embedder  # noqa: F401  (fixture)

from icalkit.agents.composition import Composer
from icalkit.agents.food_swap import as_food, named_food, recipe_foods
from icalkit.envs.factory import make_env
from icalkit.memory.example_memory import ExampleMemory


def _example(task_type: str, *classes: str) -> SimpleNamespace:
    program = "\n".join(f"x{i} = InteractionObject('{c}', object_instance=None)" for i, c in enumerate(classes))
    return SimpleNamespace(task_type=task_type, revised_program=program, demo_program="")


def test_named_food_and_as_food() -> None:
    assert named_food("two cooked potatos on a plate") == "Potato"
    assert named_food("an apple slice") == "Apple"
    assert named_food("a mug of coffee") == named_food("lettuce and tomato") == ""  # none, or two
    assert as_food("Slice the tomatoes, then one slice of tomato on a plate", "Tomato", "Apple") == (
        "Slice the apple, then one slice of apple on a plate")


def test_recipe_foods_are_a_types_foods_where_they_vary_and_no_type_owns_them() -> None:
    examples = [_example("N Slices Of X In Y", "Knife", "Tomato", "Plate"), _example("N Slices Of X In Y", "Potato"),
                _example("N Slices Of X In Y", "Bread", "Plate"), _example("Plate Of Toast", "Bread", "Toaster"),
                _example("Plate Of Toast", "Bread"), _example("Salad", "Lettuce", "Tomato"),
                _example("N Cooked Slices Of X In Y", "Tomato"), _example("Coffee", "Mug")]
    foods, owned = recipe_foods(examples)
    # one food each and two or more across the type: a recipe; the toast's bread, a salad's two foods, a
    # type that showed one food only and a coffee are not
    assert foods == ["Tomato", "Potato", "Bread", "", "", "", "", ""]
    assert owned == {"Bread", "Tomato"}


def test_a_food_reads_recipes_as_about_it_and_a_dishs_fillings_are_its_own(tmp_path, embedder) -> None:  # noqa: F811
    env = make_env("household", render_obs=False)
    specs = [("N Slices Of X In Y", 2, "0-00000"), ("N Slices Of X In Y", 2, "0-00001"),  # a tomato, a potato
             ("N Cooked Slices Of X In Y", 5, "0-00002"), ("N Cooked Slices Of X In Y", 5, "0-00004"),  # potato, apple
             ("Coffee", 4, "0-00000"), ("Plate Of Toast", 4, "0-00002"), ("Salad", 2, "0-00001")]
    memory = ExampleMemory(tmp_path / "slices.db", embedder)
    memory.add_many([copy_fixtures.recorded_example(env, *spec)[0] for spec in specs])
    composer = Composer(memory)
    composer.composite_types()
    types = {e.task_type for e in composer.examples}
    for item in ("an apple slice on a plate", "a slice of apple"):
        sim, hits = composer._best(item, types)
        assert hits[0].task_type == "N Slices Of X In Y", item  # not the one demonstration that cut an apple: cooked
    sim, hits = composer._best("two cooked apple slices", types)
    assert hits[0].task_type == "N Cooked Slices Of X In Y"
    sim, hits = composer._best("a slice of toast", types)  # bread is the toast's: no recipe is read as about it
    assert hits[0].task_type == "Plate Of Toast"

    # a salad's slices listed after it are its description, not dishes of their own; an apple slice is no filling
    salad, slices = (next(e for e in composer.examples if e.task_type == t) for t in ("Salad", "N Slices Of X In Y"))
    assert "N Slices Of X In Y" in composer._ingredients["Salad"]
    chosen = [(0.9, "a small salad", salad), (0.8, "one lettuce slice", slices), (0.8, "a tomato slice on a plate", slices),
              (0.8, "an apple slice", slices)]
    assert [(item, ex.task_type) for _, item, ex in composer._folded(chosen)] == [
        ("a small salad: one lettuce slice, a tomato slice on a plate", "Salad"), ("an apple slice", "N Slices Of X In Y")]
