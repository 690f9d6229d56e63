"""Episode metrics: SR, GC, PLW, SPL and normalized edit distance on hand-computed cases."""

from __future__ import annotations

import pytest

from icalkit.metrics import (
    Episode,
    aggregate,
    edit_distance,
    goal_condition_rate,
    normalized_edit_distance,
    path_weight,
    plw,
    spl,
    table_by,
)


def test_path_weight_and_plw():
    assert path_weight(10, 20) == 0.5
    assert path_weight(10, 5) == 1.0  # shorter than the expert is not rewarded above 1
    assert path_weight(0, 0) == 1.0
    assert plw(0.5, 10, 40) == pytest.approx(0.125)
    with pytest.raises(ValueError, match="path lengths"):
        path_weight(-1, 3)


def test_goal_condition_rate_checks_counts():
    assert goal_condition_rate(1, 4) == 0.25
    assert goal_condition_rate(0, 0) == 1.0
    with pytest.raises(ValueError, match="satisfied=5"):
        goal_condition_rate(5, 4)


def test_aggregate_teach_metrics():
    eps = [Episode(True, 2, 2, steps=20, ref_len=10),   # success at twice the expert length
           Episode(False, 1, 3, steps=10, ref_len=10),  # partial
           Episode(True, 1, 1, steps=5, ref_len=10)]    # success, shorter than expert
    m = aggregate(eps)
    assert m["n"] == 3
    assert m["sr"] == pytest.approx(2 / 3)
    assert m["gc"] == pytest.approx(4 / 6)  # pooled over conditions
    assert m["gc_mean"] == pytest.approx((1 + 1 / 3 + 1) / 3)
    assert m["plw_sr"] == pytest.approx((0.5 + 0 + 1) / 3)
    assert m["plw_gc"] == pytest.approx((2 * 0.5 + 1 * 1 + 1 * 1) / 6)
    assert m["spl"] == pytest.approx(spl([True, False, True], [10, 10, 10], [20, 10, 5]))
    assert aggregate([])["sr"] == 0.0


def test_spl_matches_definition_and_checks_lengths():
    assert spl([True, True, False], [4, 4, 4], [4, 8, 4]) == pytest.approx((1 + 0.5 + 0) / 3)
    assert spl([], [], []) == 0.0
    with pytest.raises(ValueError, match="equal-length"):
        spl([True], [1, 2], [1])


def test_edit_distance():
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance([], ["a"]) == 1
    a = [("Pickup", "Mug"), ("Put", "Sink")]
    b = [("Pickup", "Mug"), ("Open", "Fridge"), ("Put", "Sink")]
    assert edit_distance(a, b) == 1
    assert normalized_edit_distance(a, b) == pytest.approx(1 / 3)
    assert normalized_edit_distance([], []) == 0.0
    assert normalized_edit_distance("abc", "xyz") == 1.0


def test_table_by_task_type_and_bad_record():
    recs = [{"task_type": "Coffee", "success": True, "satisfied": 2, "total": 2, "steps": 10, "ref_len": 10},
            {"task_type": "Coffee", "success": False, "satisfied": 0, "total": 2, "steps": 10, "ref_len": 10},
            {"task_type": "Boil X", "success": True, "satisfied": 1, "total": 1, "steps": 20, "ref_len": 10}]
    rows = {r["task_type"]: r for r in table_by(recs)}
    assert rows["Coffee"]["sr"] == 0.5 and rows["Boil X"]["plw_sr"] == 0.5
    assert rows["all"]["n"] == 3 and rows["all"]["gc"] == pytest.approx(3 / 5)
    with pytest.raises(ValueError, match="lacks"):
        Episode.from_record({"success": True})
