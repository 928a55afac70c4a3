"""Did-you-mean suggestions, shared by every error that names an unknown thing."""

from collections.abc import Iterable


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """Return ' (did you mean 'x'?)' for the closest known name, or '' when none is close."""
    known = list(known)
    lowered = {k.lower(): k for k in known}
    if name.lower() in lowered and lowered[name.lower()] != name:
        return f" (did you mean {lowered[name.lower()]!r}?)"
    import difflib  # only when a name is unknown: importing it costs every command ~2 ms

    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
