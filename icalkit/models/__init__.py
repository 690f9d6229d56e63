"""Models: LLM backends (transformers, vLLM, OpenAI-compatible HTTP) and their response cache."""
