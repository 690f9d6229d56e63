"""TEACh metrics on hand-computed cases: initial-state GC, negative GC, clipping, PLW by reference
length, missing reference lengths, SPL and edit distance.

Expected values are worked out by hand from TEACh's ``compute_metrics.py`` formulas (written out
in the comments), not by calling the code under test a second way.
"""

from __future__ import annotations

import pytest

from icalkit.metrics import (
    Episode,
    aggregate,
    edit_distance,
    normalized_edit_distance,
    path_weight,
    spl,
    table_by,
)


def ep(success, sat, total, init_sat, init_total, steps, ref):
    return Episode(success, sat, total, init_sat, init_total, steps, ref)


def test_path_weight():
    assert path_weight(10, 20) == 0.5
    assert path_weight(10, 5) == 1.0  # shorter than the expert is not rewarded above 1
    assert path_weight(0, 0) == 1.0
    with pytest.raises(ValueError, match="path lengths"):
        path_weight(-1, 3)


def test_gc_counts_only_conditions_unsatisfied_at_the_start():
    # 4 conditions, 2 already true at the start, 3 true at the end: the agent did 1 of the 2 left.
    e = ep(False, 3, 4, 2, 4, 10, 10)
    assert e.to_complete == 2 and e.completed == 1 and e.gc == 0.5
    # nothing left to do at the start: GC 1 (TEACh would divide by zero)
    assert ep(True, 2, 2, 2, 2, 0, 5).gc == 1.0
    # the old formula (satisfied / total at the end) would give 0.75 here
    assert aggregate([e])["gc"] == 0.5


def test_gc_is_negative_when_the_agent_undoes_conditions():
    # 3 conditions, 2 true at the start, the agent undid one and did nothing: completed = 1 - 2 = -1
    e = ep(False, 1, 3, 2, 3, 40, 20)
    assert e.completed == -1 and e.gc == -1.0
    m = aggregate([e, ep(True, 3, 3, 0, 3, 20, 20)])
    # pooled: (-1 + 3) / (1 + 3) = 0.5; per-episode mean: (-1 + 1) / 2 = 0
    assert m["gc"] == pytest.approx(0.5) and m["gc_mean"] == pytest.approx(0.0)
    # PLW-GC: (gc*w*L) = (-1 * 0.5 * 20 + 1 * 1 * 20) / 40 = 0.25
    assert m["plw_gc"] == pytest.approx(0.25)


def test_satisfied_counts_above_totals_are_clipped():
    e = ep(True, 5, 4, 6, 4, 10, 10)  # TEACh's checker can report these; TEACh clips with min
    assert (e.satisfied, e.init_satisfied) == (4, 4) and e.gc == 1.0
    with pytest.raises(ValueError, match=">= 0"):
        ep(True, -1, 4, 0, 4, 1, 1)


def test_plw_is_weighted_by_reference_length():
    eps = [ep(True, 2, 2, 0, 2, 20, 10),   # w = 10/20 = 0.5, L = 10
           ep(True, 1, 1, 0, 1, 30, 30),   # w = 1,  L = 30
           ep(False, 0, 1, 0, 1, 5, 60)]   # failed, L = 60
    m = aggregate(eps)
    # PLW-SR = (1*0.5*10 + 1*1*30 + 0) / (10 + 30 + 60) = 35 / 100
    assert m["plw_sr"] == pytest.approx(0.35)
    # PLW-GC = (1*0.5*10 + 1*1*30 + 0*1*60) / 100 = 0.35 (GC per episode 1, 1, 0)
    assert m["plw_gc"] == pytest.approx(0.35)
    # the unweighted mean of s*w would be (0.5 + 1 + 0) / 3 = 0.5: not TEACh's number
    assert m["plw_sr"] != pytest.approx(0.5)
    assert m["sr"] == pytest.approx(2 / 3) and m["spl"] == pytest.approx(0.5)


def test_episodes_without_reference_length_are_excluded_from_path_metrics():
    eps = [ep(True, 1, 1, 0, 1, 50, None),  # the expert failed: no reference length
           ep(True, 1, 1, 0, 1, 20, 10)]    # w = 0.5
    m = aggregate(eps)
    assert m["n"] == 2 and m["n_ref"] == 1 and m["n_no_ref"] == 1
    assert m["sr"] == 1.0 and m["gc"] == 1.0          # SR and GC still count it
    assert m["plw_sr"] == pytest.approx(0.5)           # only the second episode: 1*0.5*10/10
    assert m["spl"] == pytest.approx(0.5)
    # with the agent's own length as reference (the old behaviour) PLW-SR would have been 0.75
    assert spl([True, True], [None, 10], [50, 20]) == pytest.approx(0.5)
    assert aggregate([ep(True, 1, 1, 0, 1, 5, None)])["plw_sr"] == 0.0


def test_spl_definition_and_empty_inputs():
    assert spl([True, True, False], [4, 4, 4], [4, 8, 4]) == pytest.approx((1 + 0.5 + 0) / 3)
    assert spl([], [], []) == 0.0
    with pytest.raises(ValueError, match="equal-length"):
        spl([True], [1, 2], [1])
    empty = aggregate([])
    assert empty["n"] == 0 and empty["sr"] == 0.0 and empty["plw_gc"] == 0.0


def test_edit_distance():
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance([], ["a"]) == 1
    a = [("Pickup", "Mug"), ("Put", "Sink")]
    b = [("Pickup", "Mug"), ("Open", "Fridge"), ("Put", "Sink")]
    assert normalized_edit_distance(a, b) == pytest.approx(1 / 3)
    assert normalized_edit_distance([], []) == 0.0
    assert normalized_edit_distance("abc", "xyz") == 1.0


def test_table_by_task_type_and_records_without_initial_counts():
    recs = [{"task_type": "Coffee", "success": True, "satisfied": 2, "total": 2, "init_satisfied": 0,
             "init_total": 2, "steps": 10, "ref_len": 10},
            {"task_type": "Coffee", "success": False, "satisfied": 1, "total": 2, "init_satisfied": 1,
             "init_total": 2, "steps": 10, "ref_len": 10},
            {"task_type": "Boil X", "success": True, "satisfied": 1, "total": 1, "init_satisfied": 0,
             "init_total": 1, "steps": 20, "ref_len": 10}]
    rows = {r["task_type"]: r for r in table_by(recs)}
    assert rows["Coffee"]["sr"] == 0.5 and rows["Boil X"]["plw_sr"] == 0.5
    # all: completed (2 + 0 + 1) / to complete (2 + 1 + 1) = 0.75
    assert rows["all"]["n"] == 3 and rows["all"]["gc"] == pytest.approx(3 / 4)
    with pytest.raises(ValueError, match="init_satisfied"):
        Episode.from_record({"success": True, "satisfied": 1, "total": 1, "steps": 1, "ref_len": 1})


def _teach_evaluate_traj(success, init_total, init_sat, traj_len, final_total, final_sat, gt_path_len):
    """TEACh's ``evaluate_traj`` (compute_metrics.py), restated from its code."""
    init_sat = min(init_total, init_sat)
    final_sat = min(final_total, final_sat)
    gc = 1.0 - (final_total - final_sat) / (init_total - init_sat)
    s_spl = (1 if success else 0) * min(1.0, gt_path_len / float(max(traj_len, gt_path_len)))
    pc_spl = gc * min(1.0, gt_path_len / float(max(traj_len, gt_path_len)))
    return {"completed": (init_total - init_sat) - (final_total - final_sat), "total": init_total - init_sat,
            "plw_s": s_spl * gt_path_len, "plw_pc": pc_spl * gt_path_len, "L": gt_path_len, "success": success}


def test_matches_teach_formulas_on_random_episodes():
    import random

    rng = random.Random(7)
    for _ in range(200):
        cases = []
        for _ in range(rng.randint(1, 8)):
            init_total = rng.randint(1, 6)
            init_sat = rng.randint(0, init_total - 1) if rng.random() < 0.9 else init_total + 1  # some clipped
            if init_sat >= init_total:
                init_sat = init_total + 1
                init_total += 1  # keep something to do (TEACh divides by it)
                init_sat = min(init_sat, init_total - 1)
            final_total = init_total
            final_sat = rng.randint(0, final_total + 1)
            success = final_sat >= final_total and rng.random() < 0.8
            cases.append((success, init_total, init_sat, rng.randint(0, 80), final_total, final_sat,
                          rng.randint(1, 60)))
        ref = [_teach_evaluate_traj(*c) for c in cases]
        mine = aggregate(Episode(c[0], c[5], c[4], c[2], c[1], c[3], c[6]) for c in cases)
        total_l = sum(r["L"] for r in ref)
        assert mine["sr"] == pytest.approx(sum(r["success"] for r in ref) / len(ref))
        assert mine["gc"] == pytest.approx(sum(r["completed"] for r in ref) / sum(r["total"] for r in ref))
        assert mine["plw_sr"] == pytest.approx(sum(r["plw_s"] for r in ref) / total_l)
        assert mine["plw_gc"] == pytest.approx(sum(r["plw_pc"] for r in ref) / total_l)
