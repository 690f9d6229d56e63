"""Evaluation: benchmark splits, methods as configs, the parallel episode harness, reports.

TEACh's metrics themselves live in :mod:`icalkit.metrics` (shared with P-RAG in ``data_gen``).
"""
