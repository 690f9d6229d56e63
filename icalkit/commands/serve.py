"""``icalkit serve``: vLLM's OpenAI-compatible server for a fine-tuned planner (base + LoRA, or full)."""

from __future__ import annotations

import signal
import time

from icalkit.inference.serve import ServeConfig

HELP = """icalkit serve — serve a base model with LoRA adapters, or a fully fine-tuned model, with vLLM.

Starts vLLM's OpenAI-compatible server (CPU: .venv-vllm from `make vllm-setup`; GPU: the
interpreter with the regular vllm, see python=) on host:port (127.0.0.1 by default), waits until
it answers, prints the client settings and serves until Ctrl-C or SIGTERM, then stops the whole
server process group. Checked first: model and adapter folders, each adapter's base and rank
(max_lora_rank), a free port; an optional API key is read from the variable api_key_env.

Examples:
  icalkit serve adapters='{tuned: runs/finetune/adapter}' port=8000
  icalkit serve model=runs/finetune/model served_name=planner
  icalkit serve model=runs/finetune/adapter served_name=planner    # an adapter, served merged into its base
  icalkit eval ... llm.backend=openai llm.base_url=http://127.0.0.1:8000/v1 llm.model=tuned
"""

Config = ServeConfig


def run(cfg: Config) -> int:
    from icalkit.inference.serve import serving
    from icalkit.models.llm.base import LLMError

    def stop(signum, frame):  # noqa: ANN001 - signal handler signature
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        with serving(cfg) as url:
            names = [cfg.served_name, *cfg.adapters]
            print(f"serving {', '.join(names)} at {url}")
            print(f"clients: llm.backend=openai llm.base_url={url} llm.model=<one of {names}>"
                  + (f" llm.api_key_env={cfg.api_key_env}" if cfg.api_key_env else ""))
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        print("server stopped")
        return 0
    except (LLMError, ValueError) as exc:
        print(f"icalkit serve: {exc}")
        return 1
