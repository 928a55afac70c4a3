"""agent-env protocol."""
