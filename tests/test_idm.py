"""Inverse dynamics model: model parts, data (frames stored once), training with resume, labelling."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from icalkit.models.idm import IDMConfig, build
from icalkit.models.idm.modeling_idm import InverseDynamicsModel, class_weights
from icalkit.models.idm.position_encoding import sine_position_encoding

TINY = dict(image_size=32, backbone="resnet10t", backbone_channels=[8, 8, 16, 16], backbone_stage=2,
            d_model=16, n_heads=2, enc_layers=1, dec_layers=2, ffn_dim=32, dropout=0.0)


def tiny_config(**kw) -> IDMConfig:
    from icalkit.data_gen.idm_data import household_vocabulary

    actions, objects = household_vocabulary()
    return IDMConfig(**{**TINY, "actions": actions, "objects": objects, **kw})


@pytest.fixture(scope="module")
def demos(tmp_path_factory) -> dict[str, Path]:
    """Two tiny demonstration folders: one training layout set, one held-out (valid_unseen)."""
    from icalkit.data_gen.demos import collect
    from icalkit.envs.factory import make_env
    from icalkit.envs.household.tasks.sampler import sample_tasks

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("idm_demos")
    env = make_env("household", frame_size=32)
    out = {}
    for split, types in (("train", ["Coffee"]), ("valid_unseen", ["Coffee"])):
        out[split] = root / split
        collect(env, sample_tasks(types, 1, split, 0), out[split], ("expert",), progress=False)
    return out


@pytest.fixture(scope="module")
def dataset(demos, tmp_path_factory) -> Path:
    from icalkit.data_gen.idm_data import build_idm_dataset

    cfg = tiny_config()
    out = tmp_path_factory.mktemp("idm_data")
    build_idm_dataset([str(demos["train"]), str(demos["valid_unseen"])], out, 32, cfg.actions, cfg.objects,
                      progress=False)
    return out


def test_position_encoding_is_fixed_and_distinct() -> None:
    pe = sine_position_encoding(4, 4, 16)
    assert pe.shape == (16, 16)
    assert torch.equal(pe, sine_position_encoding(4, 4, 16))
    assert torch.cdist(pe, pe).add(torch.eye(16) * 10).min() > 0.1  # every position encoded differently
    with pytest.raises(ValueError, match="divisible by 4"):
        sine_position_encoding(2, 2, 6)


def test_model_shapes_and_bad_frames() -> None:
    cfg = tiny_config()
    model, _ = build(cfg)
    out = model(torch.rand(3, 2, 3, 32, 32))
    assert out["action_logits"].shape == (3, len(cfg.actions))
    assert out["object_logits"].shape == (3, len(cfg.objects))
    assert len(out["aux_outputs"]) == cfg.dec_layers - 1
    with pytest.raises(ValueError, match=r"\(batch, 2, 3, 32, 32\)"):
        model(torch.rand(3, 2, 3, 48, 48))
    with pytest.raises(ValueError, match="got"):
        model(torch.rand(3, 2, 1, 32, 32))


def test_save_load_roundtrip_and_errors(tmp_path: Path) -> None:
    model, _ = build(tiny_config())
    model.eval()
    x = torch.rand(2, 2, 3, 32, 32)
    model.save_pretrained(tmp_path / "m")
    assert (tmp_path / "m" / "config.json").is_file() and (tmp_path / "m" / "model.safetensors").is_file()
    loaded = InverseDynamicsModel.from_pretrained(tmp_path / "m").eval()
    assert torch.allclose(model(x)["action_logits"], loaded(x)["action_logits"])
    with pytest.raises(FileNotFoundError, match="model.safetensors is missing"):
        (tmp_path / "m" / "model.safetensors").unlink()
        InverseDynamicsModel.from_pretrained(tmp_path / "m")
    with pytest.raises(ValueError, match="object vocabulary differs"):
        model.config.check_vocabulary(model.config.actions, ["Mug", "None"], "dataset x")
    with pytest.raises(ValueError, match="needs its action and object vocabularies"):
        InverseDynamicsModel(IDMConfig(**TINY))


def test_class_weights_and_loss_learns() -> None:
    w = class_weights(torch.tensor([90, 10, 0]))
    assert w[1] > w[0] and w[2] == 10.0
    torch.manual_seed(0)
    model, criterion = build(tiny_config(), torch.tensor([5] * 17), torch.tensor([5] * 93))
    x = torch.rand(8, 2, 3, 32, 32)
    a, o = torch.randint(0, 17, (8,)), torch.randint(0, 93, (8,))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    first = None
    for _ in range(30):
        loss = criterion(model(x), a, o)
        assert {"loss", "loss_action", "loss_object", "loss_action_0"} <= set(loss)
        opt.zero_grad()
        loss["loss"].backward()
        opt.step()
        first = first if first is not None else loss["loss"].item()
    assert loss["loss"].item() < 0.6 * first


def test_dataset_stores_each_frame_once(demos, dataset) -> None:
    from icalkit.data_gen.demos import read_episodes
    from icalkit.data_gen.idm_data import FramePairs, read_meta, to_model_input

    meta = read_meta(dataset)
    eps = [ep for d in demos.values() for ep in read_episodes(d / "episodes.jsonl")]
    assert meta["frames"] == sum(ep["n_steps"] + 1 for ep in eps)
    assert meta["pairs"] == sum(ep["n_steps"] for ep in eps)
    assert meta["pairs_per_split"]["heldout"] == eps[-1]["n_steps"]
    train = FramePairs(dataset, "train")
    frames, action, obj = train[0]
    assert frames.shape == (2, 32, 32, 3) and frames.dtype == torch.uint8
    first = eps[0]
    assert train.meta["actions"][int(action)] == first["steps"][0]["action"]
    assert train.frames.shape[0] == meta["frames"]  # one copy of every frame, pairs are indices
    x = to_model_input(frames[None])
    assert x.shape == (1, 2, 3, 32, 32) and 0 <= x.min() and x.max() <= 1
    with pytest.raises(ValueError, match="frame pairs must be uint8"):
        to_model_input(frames)


def test_corrupt_frames_are_skipped_and_counted(demos, tmp_path: Path) -> None:
    import shutil

    from icalkit.data_gen.idm_data import build_idm_dataset

    src = tmp_path / "demos"
    shutil.copytree(demos["train"], src)
    shutil.copytree(demos["valid_unseen"] / "frames", src / "frames", dirs_exist_ok=True)
    with open(src / "episodes.jsonl", "a") as fh:
        fh.write((demos["valid_unseen"] / "episodes.jsonl").read_text())
    victim = next((src / "frames").glob("*.npz"))
    victim.write_bytes(b"not a zip file")
    cfg = tiny_config()
    with pytest.warns(UserWarning, match=victim.name):
        meta = build_idm_dataset([str(src)], tmp_path / "out", 32, cfg.actions, cfg.objects, progress=False)
    assert meta["skipped_episodes"] == 1 and victim.name in meta["skipped"][0]
    for f in (src / "frames").glob("*.npz"):
        f.write_bytes(b"")
    with pytest.raises(ValueError, match="no frame pairs"), pytest.warns(UserWarning):
        build_idm_dataset([str(src)], tmp_path / "out2", 32, cfg.actions, cfg.objects, progress=False)
    with pytest.raises(FileNotFoundError, match="no demonstrations"):
        build_idm_dataset([str(tmp_path / "nowhere")], tmp_path / "out3", 32, cfg.actions, cfg.objects)


def _train_cfg(dataset: Path, out: Path, **train):
    from accelerate.state import AcceleratorState

    from icalkit.config import load_config
    from icalkit.training.train_idm import Config

    AcceleratorState._reset_state(reset_partial_state=True)  # other tests may have set another precision

    overrides = [f"data.dir={dataset}", "data.build=false", f"out_dir={out}", "wandb.enabled=false",
                 "progress=false", "train.batch_size=8", "train.lr=0.001", "train.torch_threads=1"]
    overrides += [f"model.{k}={json.dumps(v)}" for k, v in TINY.items()]
    overrides += [f"train.{k}={v}" for k, v in train.items()]
    return load_config(Config, "configs/idm.yaml", overrides)


def test_train_resume_mid_epoch_and_finish(dataset, tmp_path: Path) -> None:
    from icalkit.training.train_idm import main

    out = tmp_path / "run"
    # a deadline already passed: stops after the first batch and checkpoints mid-epoch
    assert main(_train_cfg(dataset, out, epochs=2, pairs_per_epoch=32, time_limit_min="0.000001")) == 0
    state = json.loads((out / "checkpoint" / "trainer_state.json").read_text())
    assert state["epoch"] == 0 and state["batch"] == 1 and not state["done"]
    assert main(_train_cfg(dataset, out, epochs=2, pairs_per_epoch=32)) == 0
    state = json.loads((out / "checkpoint" / "trainer_state.json").read_text())
    assert state["epoch"] == 2 and state["done"]
    ev = json.loads((out / "eval.json").read_text())
    assert 0 <= ev["action_accuracy"] <= 1 and ev["pairs"] > 0
    assert (out / "confusion_action.png").is_file() and (out / "best" / "model.safetensors").is_file()
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert sum("val/loss" in x for x in lines) == 2


def test_short_training_on_real_frames_learns(dataset, tmp_path: Path) -> None:
    """The training command, run briefly on real simulator frames, fits its training pairs:
    the plain loss falls well below the untrained model's and the action accuracy beats always
    predicting the most frequent action."""
    from icalkit.data_gen.idm_data import FramePairs, to_model_input
    from icalkit.models.idm.modeling_idm import IDMCriterion
    from icalkit.training.train_idm import load_model, main

    train = FramePairs(dataset, "train")
    frames = to_model_input(torch.stack([train[i][0] for i in range(len(train))]))
    criterion = IDMCriterion()

    def fit(model) -> tuple[float, float]:
        model.eval()
        with torch.no_grad():
            out = model(frames)
            loss = criterion(out, train.actions, train.objects)["loss"].item()
        return loss, (out["action_logits"].argmax(-1) == train.actions).float().mean().item()

    out = tmp_path / "run"
    cfg = _train_cfg(dataset, out, epochs=8, pairs_per_epoch=64, lr=0.003, action_balance=0.0,
                     class_weighting="none")
    cfg.model.actions, cfg.model.objects = list(train.meta["actions"]), list(train.meta["objects"])
    torch.manual_seed(0)
    before, _ = fit(build(cfg.model)[0])
    assert main(cfg) == 0
    after, accuracy = fit(load_model(out / "model"))
    majority = torch.bincount(train.actions).max().item() / len(train)
    assert after < 0.5 * before
    assert accuracy > majority


def test_train_rejects_other_vocabulary_checkpoint(dataset, tmp_path: Path) -> None:
    from icalkit.training.train_idm import main

    out = tmp_path / "run"
    assert main(_train_cfg(dataset, out, epochs=1, pairs_per_epoch=8, time_limit_min="0.000001")) == 0
    saved = json.loads((out / "checkpoint" / "config.json").read_text())
    saved["objects"] = ["Mug", "None"]
    (out / "checkpoint" / "config.json").write_text(json.dumps(saved))
    with pytest.raises(ValueError, match="checkpoint .* object vocabulary differs"):
        main(_train_cfg(dataset, out, epochs=1, pairs_per_epoch=8))


def test_label_output_feeds_ical(demos, tmp_path: Path) -> None:
    from icalkit.data_gen.demos import read_episodes
    from icalkit.data_gen.ical import select_episodes
    from icalkit.data_gen.label import label_demos
    from icalkit.data_gen.programs import trajectory_to_program
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.tasks.task import Task

    model, _ = build(tiny_config())
    summary = label_demos(model, demos["valid_unseen"], tmp_path / "lab", progress=False)
    assert summary["episodes"] == 1 and summary["pairs"] > 0
    assert 0 <= summary["action_accuracy"] <= 1 and summary["program_success_true"] == 1.0
    episodes = select_episodes(read_episodes(tmp_path / "lab" / "episodes.jsonl"), ["expert"])
    ep = episodes[0]
    assert ep["source"] == "visual-idm" and len(ep["steps"]) == len(ep["true_steps"])
    assert {s["action"] for s in ep["steps"]} <= set(model.config.actions)
    trajectory_to_program(build_world(Task.from_dict(ep["task"])), ep["steps"])  # what ical does; must not raise
    again = label_demos(model, demos["valid_unseen"], tmp_path / "lab", progress=False)  # resumable: nothing new
    assert again["episodes"] == 1 and again["new_pairs"] == 0


def test_label_rejects_bad_frames() -> None:
    from icalkit.data_gen.label import predict_pairs

    model, _ = build(tiny_config())
    with pytest.raises(ValueError, match="clip.npz: expected uint8 frames"):
        predict_pairs(model, np.zeros((3, 32, 32, 4), np.uint8), source="clip.npz")
    acts, objs = predict_pairs(model, np.zeros((3, 48, 48, 3), np.uint8))  # other sizes are resized
    assert len(acts) == len(objs) == 2


def test_video_labels_with_a_wrong_turn_keep_their_interactions() -> None:
    """A wrong navigation label leaves the replay out of reach of the next interaction: the strict
    conversion drops it (and everything depending on it), ``reach`` (visual demos) walks there as the
    program's go_to would, so the program still replays the demonstration."""
    from icalkit.data_gen.expert import expert_actions
    from icalkit.data_gen.ical_steps import execute
    from icalkit.data_gen.programs import trajectory_to_program
    from icalkit.envs.factory import make_env
    from icalkit.envs.household.scene import build_world
    from icalkit.envs.household.tasks.sampler import sample_task

    task = sample_task("Coffee", 0, "valid_unseen")
    steps = [{"action": s["action"], "target": s["target"]} for s in expert_actions(task)]
    first = next(i for i, s in enumerate(steps) if s["target"] is not None)
    assert first > 0
    turn = {"action": "Turn Left", "target": None}
    wrong = [*steps[:first - 1], turn, turn, *steps[first - 1:]]  # two mislabelled turns before the first interaction
    world = build_world(task)
    strict = trajectory_to_program(world, wrong)
    reached = trajectory_to_program(world, wrong, reach=True)
    assert "pickup" not in strict and "pickup" in reached  # strict: the out-of-reach Pickup and all after it drop
    env = make_env("household", render_obs=False)
    assert execute(env, task, reached).success
    assert trajectory_to_program(world, steps, reach=True) == trajectory_to_program(world, steps)  # true steps: unchanged
