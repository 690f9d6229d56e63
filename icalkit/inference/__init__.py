"""Serving a finetuned planner (planned; vLLM serving helpers live in icalkit.models.llm)."""
