"""icalkit."""
