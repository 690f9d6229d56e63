"""The ``icalkit`` command: one sub-command per pipeline stage.

Usage::

    icalkit <command> [--config configs/<command>.yaml] [key=value ...]

Each sub-command lives in ``icalkit/commands/<name>.py`` and declares ``Config`` (a typed
dataclass), ``HELP`` (with a usage example) and ``run(cfg) -> int``. Configs come from the YAML
file (default: the ``configs/<command>.yaml`` shipped beside the package, found from the package's
location whatever the working directory; the dataclass defaults where none is shipped) plus dotted
overrides, and are validated before anything expensive happens.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

from icalkit.config import ConfigError, load_config, shipped_config, to_dict

COMMANDS = {
    "sim": "play or inspect the household simulator",
    "demos": "collect expert and noisy demonstrations",
    "demo": "the end-to-end demo run by `make demo`",
    "ical": "learn abstracted examples from noisy demonstrations (ICAL)",
    "eval": "evaluate methods on benchmark splits: ICAL's Table 1, per-type table, learning curve",
    "report": "put evaluation runs side by side",
    "prag": "P-RAG rounds: progressive retrieval-augmented planning",
    "finetune": "fine-tune the planner's LLM on demonstrations (LoRA or full)",
    "serve": "serve a base model + LoRA adapters or a fine-tuned model with vLLM (OpenAI API)",
    "train-retriever": "fine-tune the example retriever's embedder on simulator-generated pairs",
    "train-idm": "train the inverse dynamics model (DETR-style) that labels action-free videos",
    "label": "label visual demonstrations with a trained IDM into noisy programs for ICAL",
    "alfworld-plan": "the flat LLM-Planner on ALFWorld games (needs the alfworld extra)",
}
# Commands that train a torch model. Their tensors of 2 MB and more go on transparent huge pages
# (torch's THP_MEM_ALLOC_ENABLE, read once when torch starts): a CPU training step frees and
# re-allocates gigabytes of activations, and 4 KB pages made that ~3 M page faults per 3 steps
# (0.9 M with huge pages; docs/finetune.md, throughput). Set THP_MEM_ALLOC_ENABLE=0 to opt out.
TRAINING_COMMANDS = ("finetune", "demo", "train-idm", "train-retriever")


def _command_module(name: str):
    if name not in COMMANDS:
        raise SystemExit(f"icalkit: unknown command {name!r}; available: {', '.join(COMMANDS)}")
    return importlib.import_module(f"icalkit.commands.{name.replace('-', '_')}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="icalkit",
        description="Teach LLM/VLM agents new tasks from a few noisy demonstrations.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="commands:\n" + "\n".join(f"  {k:8s} {v}" for k, v in COMMANDS.items()),
    )
    parser.add_argument("command", help="sub-command, see below")
    parser.add_argument("--config", help="YAML config (default: icalkit's shipped configs/<command>.yaml)")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    parser.add_argument("overrides", nargs="*", help="dotted key=value overrides, e.g. env.frame_size=160")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) >= 2 and argv[0] in COMMANDS and argv[1] in ("-h", "--help"):
        module = _command_module(argv[0])
        print(module.HELP)
        return 0
    args = _parser().parse_intermixed_args(argv)
    if args.command in TRAINING_COMMANDS:
        os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")  # before torch loads (see TRAINING_COMMANDS)
    module = _command_module(args.command)
    config_path = args.config if args.config is not None else shipped_config(args.command.replace("-", "_"))
    overrides = list(args.overrides)
    positional = getattr(module, "POSITIONAL", None)
    if positional:  # bare arguments fill the command's list key, e.g. `icalkit report RUN_DIR...`
        bare = [o for o in overrides if "=" not in o]
        overrides = [o for o in overrides if "=" in o] + ([f"{positional}={json.dumps(bare)}"] if bare else [])
    try:
        cfg = load_config(module.Config, config_path, overrides)
    except ConfigError as exc:
        print(f"icalkit {args.command}: config error: {exc}", file=sys.stderr)
        return 2
    if args.print_config:
        import yaml

        print(yaml.safe_dump(to_dict(cfg), sort_keys=False))
        return 0
    return int(module.run(cfg) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
