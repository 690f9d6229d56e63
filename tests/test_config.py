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


def test_float_in_exponent_notation_without_a_dot(tmp_path: Path) -> None:
    """YAML 1.1 reads `1e-4` as a string; a float setting still takes it (file and override)."""
    path = tmp_path / "c.yaml"
    path.write_text("inner:\n  rate: 1e-4\n")
    assert load_config(Outer, path, []).inner.rate == 1e-4
    assert load_config(Outer, None, ["inner.rate=3E+2"]).inner.rate == 300.0
    with pytest.raises(ConfigError, match="inner.rate: expected float"):
        load_config(Outer, None, ["inner.rate=1e-4x"])


@pytest.mark.parametrize("override, message", [
    (["inner.sise=3"], "unknown config key(s) ['sise'] in section 'inner'"),
    (["inner.size=big"], "inner.size: expected int"),
    (["inner.size=1e3"], "inner.size: expected int"),
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

    name = command.replace("-", "_")  # `icalkit train-retriever` -> commands/train_retriever.py
    path = Path(__file__).parents[1] / "configs" / f"{name}.yaml"
    assert path.is_file(), f"configs/{name}.yaml is missing"
    module = importlib.import_module(f"icalkit.commands.{name}")
    cfg = load_config(module.Config, path)
    assert cfg is not None


VARIANTS = {"eval_alfworld": "eval", "eval_copies": "eval", "finetune_alfworld": "finetune", "finetune_gpu": "finetune",
            "finetune_rag": "finetune", "finetune_rag_review": "finetune", "finetune_reground": "finetune",
            "finetune_copies": "finetune", "finetune_copies_gpu": "finetune", "finetune_copies_100": "finetune",
            "finetune_reviews_gpu": "finetune",
            "finetune_reground_review": "finetune", "finetune_ical": "finetune",
            "finetune_zero_shot": "finetune", "finetune_zero_shot_plans": "finetune", "finetune_reader": "finetune",
            "prag_alfworld": "prag", "idm": "train_idm", "idm_gpu": "train_idm",
            "train_retriever_trained8": "train_retriever"}


def test_every_shipped_config_variant_and_method_is_valid() -> None:
    import importlib

    from icalkit.eval.methods import load_method

    configs = Path(__file__).parents[1] / "configs"
    names = {p.stem for p in configs.glob("*.yaml")}
    assert names == {c.replace("-", "_") for c in COMMANDS} | set(VARIANTS)  # a new file is named here
    for name, command in VARIANTS.items():
        assert load_config(importlib.import_module(f"icalkit.commands.{command}").Config, configs / f"{name}.yaml")
    for path in sorted((configs / "methods").glob("*.yaml")):
        load_method(path.stem).validate()
    from icalkit.commands.train_retriever import Config as RetrieverConfig

    trained8 = load_config(RetrieverConfig, configs / "train_retriever_trained8.yaml")
    trained8.validate()  # one pair per type in a batch: 8 types, batches of 8
    assert len(trained8.task_types) == 8 and "Breakfast" not in trained8.task_types


def test_cli_reports_config_errors(capsys: pytest.CaptureFixture) -> None:
    assert main(["demos", "--config", "configs/demos.yaml", "n_per_type=zero"]) == 2
    assert "n_per_type: expected int" in capsys.readouterr().err
    assert main(["demos", "task_types=[Cofee]"]) == 2
    assert "Cofee" in capsys.readouterr().err
    assert main(["sim", "--print-config", "env.frame_size=96"]) == 0
    assert "frame_size: 96" in capsys.readouterr().out


def test_explicit_keys_tell_given_keys_from_defaults(tmp_path: Path) -> None:
    from icalkit.config import explicit_keys, refuse_keys

    path = tmp_path / "c.yaml"
    path.write_text("inner:\n  size: 64\n")
    cfg = load_config(Outer, path, ["flag=false"])
    assert explicit_keys(cfg) == {"inner", "flag"} and explicit_keys(cfg.inner) == {"size"}
    assert explicit_keys(Outer()) == frozenset()  # built in code: nothing was given
    refuse_keys(cfg.inner, "inner", {"rate": "rate elsewhere"})  # not given: fine
    with pytest.raises(ValueError, match="inner.size is not read by this command; set other.size instead"):
        refuse_keys(cfg.inner, "inner", {"size": "other.size"})
    # given at its default it changes nothing: a saved config.yaml (every key written) loads back
    refuse_keys(load_config(Outer, None, ["inner.size=128"]).inner, "inner", {"size": "other.size"})


def test_ical_config_has_one_key_per_setting() -> None:
    from dataclasses import fields

    from icalkit.commands.ical import Config
    from icalkit.data_gen.ical_settings import ICALSettings

    values = {"n_feedbacks": 3, "abstraction": False, "hitl": True, "raw_demos": False, "prune": False, "transfer": True,
              "transfer_tasks": 2, "transfer_types": ["Coffee"], "relabel": True, "keep_demo": True,
              "k": 4, "use_dialogue": False, "max_program_chars": 99, "max_example_chars": 98,
              "max_state_objects": 7, "source": "agent"}
    assert set(values) == {f.name for f in fields(ICALSettings)}  # every setting is tried below
    cfg = load_config(Config, None, [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in values.items()]
                      + ["env.max_steps=500", "env.max_failures=7", "oracle_object_map=false", "llm.max_new_tokens=64"])
    assert {f.name: getattr(cfg.settings(), f.name) for f in fields(ICALSettings)} == values
    api = cfg.limits().api
    assert (api.max_steps, api.max_failures, api.oracle_object_map) == (500, 7, False)
    assert cfg.llm.max_new_tokens == 64
    for override, message in ((["max_new_tokens=64"], "unknown config key(s) ['max_new_tokens']"),
                              (["api.max_steps=5"], "unknown config key(s) ['api']"),
                              (["llm.threads=2"], "llm.threads is not read by this command; set torch_threads"),
                              (["memory.text_embedder.num_threads=1"], "set torch_threads"),
                              (["llm.max_new_tokens=8"], "llm.max_new_tokens must be >= 16"),
                              (["loop_repeats=1"], "loop_repeats must be 0 (off) or >= 2")):
        with pytest.raises(ConfigError) as err:
            load_config(Config, None, override)
        assert message in str(err.value)


def test_prag_config_refuses_duplicate_keys() -> None:
    from icalkit.commands.prag import Config

    cfg = load_config(Config, Path(__file__).parents[1] / "configs" / "prag.yaml", ["llm.max_new_tokens=12"])
    assert cfg.llm.max_new_tokens == 12
    for override, message in ((["prag.max_new_tokens=12"], "set llm.max_new_tokens instead"),
                              (["llm.threads=1"], "set torch_threads"),
                              (["embedder.num_threads=1"], "set torch_threads")):
        with pytest.raises(ConfigError) as err:
            load_config(Config, None, override)
        assert message in str(err.value)

