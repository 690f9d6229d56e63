"""The ``icalkit`` command: one sub-command per pipeline stage.

Usage::

    icalkit <command> [--config configs/<command>.yaml] [key=value ...]

Each sub-command lives in ``icalkit/commands/<name>.py`` and declares ``Config`` (a typed
dataclass), ``HELP`` (with a usage example) and ``run(cfg) -> int``. Configs come from the YAML
file (default ``configs/<command>.yaml`` when it exists) plus dotted overrides, and are validated
before anything expensive happens.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from icalkit.config import ConfigError, load_config, to_dict

COMMANDS = {
    "sim": "play or inspect the household simulator",
    "demos": "collect expert and noisy demonstrations",
    "demo": "the end-to-end demo run by `make demo`",
    "ical": "learn abstracted examples from noisy demonstrations (ICAL)",
    "plan": "evaluate the deployment planner (ICAL Algorithm S2, zero-shot, rerank, LLM-Planner)",
    "prag": "P-RAG rounds: progressive retrieval-augmented planning",
}


def _command_module(name: str):
    if name not in COMMANDS:
        raise SystemExit(f"icalkit: unknown command {name!r}; available: {', '.join(COMMANDS)}")
    return importlib.import_module(f"icalkit.commands.{name}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="icalkit",
        description="Teach LLM/VLM agents new tasks from a few noisy demonstrations.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="commands:\n" + "\n".join(f"  {k:8s} {v}" for k, v in COMMANDS.items()),
    )
    parser.add_argument("command", help="sub-command, see below")
    parser.add_argument("--config", help="YAML config (default: configs/<command>.yaml if present)")
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
    module = _command_module(args.command)
    config_path = args.config
    if config_path is None:
        default = Path("configs") / f"{args.command}.yaml"
        config_path = default if default.is_file() else None
    try:
        cfg = load_config(module.Config, config_path, args.overrides)
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
