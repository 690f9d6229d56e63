"""The `icalkit` command end to end on tiny settings."""

from pathlib import Path

import pytest

from icalkit.cli import main


def test_sim_plays_expert_and_saves_frames(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "sim"
    assert main(["sim", "task_type=Coffee", "expert=true", f"out_dir={out}", "env.frame_size=64"]) == 0
    text = capsys.readouterr().out
    assert "success=True" in text and "instruction:" in text
    frames = sorted(out.glob("frame_*.png"))
    assert len(frames) > 5


def test_sim_reports_bad_actions(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["sim", f"out_dir={tmp_path}", "save_frames=false",
                 "actions=[Pickup Mug_99, Look Down, Place Toaster_1]"]) == 0
    text = capsys.readouterr().out
    assert "FAILED: There is no object called 'Mug_99'." in text
    with pytest.raises(ValueError, match="unknown action 'Jump'"):
        main(["sim", f"out_dir={tmp_path}", "actions=[Jump]"])


def test_demos_command_writes_tables_and_datasets(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "demos"
    args = ["demos", "task_types=[Coffee]", "n_per_type=1", f"out_dir={out}", "env.frame_size=48",
            "wandb.mode=disabled"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "| Coffee | expert | 1 | 1.000 |" in printed
    for name in ("summary.md", "summary.csv", "summary.png", "episodes.jsonl", "config.yaml"):
        assert (out / name).is_file(), name
    assert (out / "hf" / "visual").is_dir() and list((out / "examples").glob("*.png"))
    assert main(args) == 0  # resume: nothing new to do
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 2


def test_default_config_is_found_from_any_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture) -> None:
    """Without --config, the shipped configs/<command>.yaml is used whatever the working directory."""
    shipped = Path(__file__).resolve().parents[1] / "configs" / "prag.yaml"
    assert main(["prag", "--print-config", "--config", str(shipped)]) == 0
    expected = capsys.readouterr().out
    assert "pick_heat_then_place" in expected  # a value of the YAML file, not a dataclass default
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "prag.yaml").write_text("rounds: 99\n")  # a stray file here is not read
    assert main(["prag", "--print-config"]) == 0
    assert capsys.readouterr().out == expected


def test_training_commands_put_large_tensors_on_huge_pages(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture) -> None:
    """Training commands turn on torch's huge-page allocation before torch loads; a user's setting stands."""
    import os

    for command, expected in (("finetune", "1"), ("eval", None)):
        monkeypatch.delenv("THP_MEM_ALLOC_ENABLE", raising=False)
        assert main([command, "--print-config"]) == 0
        assert os.environ.get("THP_MEM_ALLOC_ENABLE") == expected, command
    monkeypatch.setenv("THP_MEM_ALLOC_ENABLE", "0")
    assert main(["finetune", "--print-config"]) == 0
    assert os.environ["THP_MEM_ALLOC_ENABLE"] == "0"
    capsys.readouterr()
