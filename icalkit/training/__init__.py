"""Training of the inverse dynamics model and LoRA adapters with accelerate (planned)."""
