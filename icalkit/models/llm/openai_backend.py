"""OpenAI-compatible HTTP backend (a ``vllm serve`` server or any hosted API).

On a vLLM server the model name selects the base model or a LoRA adapter served with
``--lora-modules name=path``. Transient failures (connection, timeout, 429, 5xx) are retried with
exponential backoff; anything else raises an :class:`LLMError` subclass naming the cause.
"""

from __future__ import annotations

import os
import random
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from icalkit.models.llm.base import (
    LLM,
    BackendUnavailableError,
    Generation,
    GenerationError,
    Prompt,
    SamplingParams,
    ServerUnreachableError,
    Timer,
    UnknownModelError,
    finish_text,
)
from icalkit.models.llm.cache import weights_stamp

IDENTITY_TTL_S = 30.0
LOCAL_HOSTS = ("127.0.0.1", "localhost", "0.0.0.0", "::1")


def resolve_api_key(api_key_env: str, base_url: str | None) -> str:
    """API key from the environment variable ``api_key_env``; "EMPTY" for a local server."""
    key = os.environ.get(api_key_env)
    if key:
        return key
    if base_url and urlparse(base_url).hostname in LOCAL_HOSTS:
        return "EMPTY"
    raise GenerationError(
        f"no API key: set the environment variable {api_key_env} (or point base_url at a local server)"
    )


class OpenAILLM(LLM):
    """Generate through an OpenAI-compatible API.

    Args:
        model: served model name (base model, or LoRA adapter name on a vLLM server).
        base_url: API root, e.g. http://127.0.0.1:8000/v1 (None: api.openai.com).
        api_key_env: environment variable with the key (unset + local URL → "EMPTY").
        timeout_s: per-request timeout.
        max_retries: retries of a transient failure before giving up.
        backoff_s: first retry delay; doubles on every retry (plus up to 10% jitter).
        concurrency: requests in flight at once for a batch.
        use_chat: send chat completions (strings become one user message); False sends plain
            completions of string prompts.
    """

    backend = "openai"

    def __init__(
        self, model: str, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 120.0, max_retries: int = 4, backoff_s: float = 0.5,
        concurrency: int = 8, use_chat: bool = True,
    ) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - openai is a core dependency
            raise BackendUnavailableError("the openai backend needs `pip install openai`") from exc
        if not model:
            raise ValueError("OpenAILLM needs a model name")
        self._openai = openai
        self.model_name, self.base_url = model, base_url
        self.max_retries, self.backoff_s = max_retries, backoff_s
        self.concurrency, self.use_chat = max(1, concurrency), use_chat
        self.client = openai.OpenAI(
            base_url=base_url, api_key=resolve_api_key(api_key_env, base_url),
            timeout=timeout_s, max_retries=0,
        )
        self._checked = False
        self._identity: tuple[float, dict[str, Any]] | None = None

    def cache_identity(self) -> dict[str, Any]:
        """Backend, served model name, server URL and the served model's identity.

        The identity is the server's model card (``root``: the folder a vLLM server loaded, the
        ``parent`` of a LoRA adapter) plus :func:`weights_stamp` of ``root`` when it is a local
        folder, so re-serving other weights under the same name gives other cache keys. Looked
        up again after ``IDENTITY_TTL_S`` seconds.
        """
        now = time.monotonic()
        if self._identity is None or now - self._identity[0] > IDENTITY_TTL_S:
            self._identity = (now, self._served_identity())
        return {**super().cache_identity(), "base_url": self.base_url, "served": self._identity[1]}

    def _served_identity(self) -> dict[str, Any]:
        cards = {m.id: m for m in self._call(self.client.models.list).data}
        card = cards.get(self.model_name)
        if card is None:
            return {}
        fields = card.model_dump() if hasattr(card, "model_dump") else dict(vars(card))
        ident = {k: fields.get(k) for k in ("root", "parent", "max_model_len", "owned_by") if fields.get(k) is not None}
        if ident.get("root") and Path(ident["root"]).is_dir():
            ident["weights"] = weights_stamp(Path(ident["root"]))
        return ident

    @property
    def _where(self) -> str:
        return self.base_url or "the OpenAI API"

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Call ``fn`` with retries on transient errors; map the rest to LLMError subclasses."""
        oa = self._openai
        transient = (oa.APIConnectionError, oa.RateLimitError, oa.InternalServerError)
        for attempt in range(self.max_retries + 1):
            try:
                return fn(*args, **kwargs)
            except transient as exc:
                if attempt == self.max_retries:
                    if isinstance(exc, oa.APIConnectionError):
                        raise ServerUnreachableError(
                            f"cannot reach the LLM server at {self._where} after "
                            f"{attempt + 1} attempts: {exc}"
                        ) from exc
                    raise GenerationError(f"{self._where} kept failing: {exc}") from exc
                delay = self.backoff_s * 2**attempt
                time.sleep(delay * (1 + 0.1 * random.random()))
            except oa.NotFoundError as exc:
                raise UnknownModelError(self._unknown_model_message(exc)) from exc
            except oa.AuthenticationError as exc:
                raise GenerationError(f"{self._where} rejected the API key: {exc}") from exc
            except oa.APIStatusError as exc:
                raise GenerationError(f"{self._where} refused the request: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def served_models(self) -> list[str]:
        """Model names the server offers (``GET /v1/models``)."""
        return sorted(m.id for m in self._call(self.client.models.list).data)

    def _unknown_model_message(self, exc: Exception) -> str:
        try:
            models = ", ".join(self.served_models()) or "(none)"
        except Exception:  # noqa: BLE001 - the listing is only a hint
            models = "(could not list)"
        return f"{self._where} does not serve model {self.model_name!r} ({exc}); served: {models}"

    def check(self) -> None:
        """Verify the server is reachable and serves ``model`` (done once, before generating)."""
        if self._checked:
            return
        models = self.served_models()
        if self.model_name not in models:
            raise UnknownModelError(
                f"{self._where} does not serve model {self.model_name!r}; served: "
                f"{', '.join(models) or '(none)'}"
            )
        self._checked = True

    def _generate(self, prompts: list[Prompt], params: SamplingParams) -> list[Generation]:
        if not self.use_chat and any(not isinstance(p, str) for p in prompts):
            raise ValueError("use_chat=False sends plain completions: prompts must be strings")
        if self.base_url:  # hosted APIs may not list every model; servers we run always do
            self.check()
        with ThreadPoolExecutor(self.concurrency) as pool:
            return list(pool.map(lambda p: self._one(p, params), prompts))

    def _one(self, prompt: Prompt, params: SamplingParams) -> Generation:
        req: dict[str, Any] = {
            "model": self.model_name, "max_tokens": params.max_new_tokens,
            "temperature": params.temperature, "n": params.n, "seed": params.seed,
        }
        if params.stop:
            req["stop"] = list(params.stop)
        with Timer() as timer:
            if self.use_chat:
                messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
                resp = self._call(self.client.chat.completions.create, messages=messages, **req)
                raw = [c.message.content or "" for c in resp.choices]
            else:
                resp = self._call(self.client.completions.create, prompt=prompt, **req)
                raw = [c.text for c in resp.choices]
        # Stop strings are re-applied: some servers return them, and output is untrusted input.
        done = [finish_text(t, params) for t in raw]
        usage = resp.usage
        return Generation(
            texts=[t for t, _ in done], prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            latency_s=timer.elapsed, model=self.model_name, backend=self.backend,
            finish_reasons=["loop" if cut == "loop" else c.finish_reason or "stop"
                            for (_, cut), c in zip(done, resp.choices, strict=True)],
        )
