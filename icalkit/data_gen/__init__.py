"""Loops that produce data: demonstrations, trajectories to programs, ICAL learning, P-RAG rounds."""
