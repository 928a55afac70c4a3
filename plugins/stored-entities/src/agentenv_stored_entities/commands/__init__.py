"""One module per command group (`group` has what the groups share); the root imports a module
only to run its command."""
