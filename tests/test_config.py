"""Typed configs: YAML + dotted overrides, clear errors, every shipped YAML valid."""

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from icalkit.cli import COMMANDS, main
from icalkit.config import ConfigError, load_config


@dataclass
class Inner:
    size: int = 128
    rate: float = 0.5
    name: str | None = None


@dataclass
class Outer:
    inner: Inner = field(default_factory=Inner)
    tags: list[str] = field(default_factory=list)
    flag: bool = False

    def validate(self) -> None:
        if self.inner.size < 0:
            raise ValueError("inner.size must be >= 0")


def test_overrides_and_types(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("inner:\n  size: 64\ntags: [a, b]\n")
    cfg = load_config(Outer, path, ["inner.rate=1", "flag=true", "inner.name=x"])
    assert cfg.inner.size == 64 and cfg.inner.rate == 1.0 and isinstance(cfg.inner.rate, float)
    assert cfg.tags == ["a", "b"] and cfg.flag is True and cfg.inner.name == "x"


@pytest.mark.parametrize("override, message", [
    (["inner.sise=3"], "unknown config key(s) ['sise'] in section 'inner'"),
    (["inner.size=big"], "inner.size: expected int"),
    (["flag=3"], "flag: expected true/false"),
    (["tags=notalist"], "tags: expected a list"),
    (["inner.size=-1"], "inner.size must be >= 0"),
    (["novalue"], "not of the form key=value"),
])
def test_bad_overrides_name_the_problem(override: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(Outer, None, override)
    assert message in str(err.value)


def test_malformed_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("inner: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(Outer, path)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(Outer, tmp_path / "missing.yaml")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_shipped_config_is_valid(command: str) -> None:
    import importlib

    path = Path(__file__).parents[1] / "configs" / f"{command}.yaml"
    assert path.is_file(), f"configs/{command}.yaml is missing"
    module = importlib.import_module(f"icalkit.commands.{command}")
    cfg = load_config(module.Config, path)
    assert cfg is not None


def test_cli_reports_config_errors(capsys: pytest.CaptureFixture) -> None:
    assert main(["demos", "--config", "configs/demos.yaml", "n_per_type=zero"]) == 2
    assert "n_per_type: expected int" in capsys.readouterr().err
    assert main(["demos", "task_types=[Cofee]"]) == 2
    assert "Cofee" in capsys.readouterr().err
    assert main(["sim", "--print-config", "env.frame_size=96"]) == 0
    assert "frame_size: 96" in capsys.readouterr().out
