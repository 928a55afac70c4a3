"""The trigger engine behind the gateway's `urn:agentenv:triggers/v1` extension.

`spec` validates trigger specs, `durations` parses ISO 8601 durations and random delays,
`hours` computes executor working hours, `templates` fills action arguments, `executor` calls an
A2A agent for natural-language actions, and `engine` schedules and fires them on the env clock.
"""

from agentenv_protocol.gateway.triggers.errors import TriggerError

__all__ = ["TriggerError"]
