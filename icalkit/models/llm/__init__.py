"""LLM backends behind one interface: transformers (default, CPU), vLLM, OpenAI-compatible HTTP.

>>> from icalkit.models.llm import build_llm
>>> llm = build_llm("hf")  # default SmolLM2-135M-Instruct, response cache on
>>> llm.generate(["What is 2+2?"], max_new_tokens=16)[0].text
"""

from icalkit.models.llm.base import (
    LLM,
    AdapterError,
    BackendUnavailableError,
    Generation,
    GenerationError,
    LLMError,
    ModelLoadError,
    ModelNotFoundError,
    SamplingParams,
    ServerUnreachableError,
    UnknownBackendError,
    UnknownModelError,
)
from icalkit.models.llm.convert import default_model_dir
from icalkit.models.llm.factory import LLMConfig, build_llm, build_llm_from_config

__all__ = [
    "LLM", "AdapterError", "BackendUnavailableError", "Generation", "GenerationError", "LLMError",
    "LLMConfig", "ModelLoadError", "ModelNotFoundError", "SamplingParams", "ServerUnreachableError",
    "UnknownBackendError", "UnknownModelError", "build_llm", "build_llm_from_config",
    "default_model_dir",
]
