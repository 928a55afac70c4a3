"""The one error of the trigger engine: a bad spec or request, answered as HTTP 400."""


class TriggerError(ValueError):
    """A trigger spec, registration or removal the engine refuses; the message names the field."""
