"""agent-env built-in step types, env types and verifiers."""
