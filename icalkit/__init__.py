"""icalkit: teach LLM/VLM agents new tasks from a few noisy demonstrations."""

__version__ = "0.1.0"
