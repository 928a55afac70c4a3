"""The error hierarchy. Only the CLI turns these into one-line `Error: ...` messages."""


class AgentEnvError(Exception):
    """Base of every error agent-env raises on purpose (anything else is a bug)."""


class ConfigError(AgentEnvError):
    """The configuration is malformed, names something unknown, or a reference cannot resolve."""


class BundleError(AgentEnvError):
    """A bundle cannot be found, parsed or validated; carries every problem found at once."""

    def __init__(self, message: str, problems: list[str] | None = None):
        self.problems = list(problems or [])
        if self.problems:
            message = message + "\n" + "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(message)


class PluginError(AgentEnvError):
    """A plugin failed to load, registered a duplicate, or a name is not registered."""


class SandboxError(AgentEnvError):
    """A sandbox could not be created, reached, or torn down."""


class StoreError(AgentEnvError):
    """A store backend failed or holds inconsistent data."""


class StepFailed(AgentEnvError):
    """A step of a task failed; names the step."""

    def __init__(self, step_id: str, message: str, *, failure_class: str = "error"):
        self.step_id = step_id
        self.reason = message
        self.failure_class = failure_class
        super().__init__(f"step {step_id!r}: {message}")
