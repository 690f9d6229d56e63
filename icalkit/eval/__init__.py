"""Evaluation harness, benchmark splits and reports (planned; metrics live in icalkit.metrics)."""
