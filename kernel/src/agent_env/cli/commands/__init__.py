"""One module per `agent-env` command; the root group imports a module only to run its command."""
