"""One module per `icalkit` sub-command."""
