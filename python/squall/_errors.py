"""squall.ScenarioError: a scenario that does not load."""

from typing import Optional


class ScenarioError(ValueError):
    """A scenario file, built-in scenario or ``set`` override that does not load.

    ``str(error)`` is the message ``squall sim`` prints for the same
    scenario (``file:line:column: `key`: what was expected``, then the
    source line with the key marked).

    Attributes:
        message: the CLI's message.
        file: the scenario's name as given (its path, or ``builtin:NAME``).
        line: 1-based line of the offending text, or None (an override,
            an unreadable file).
        column: 1-based column (in characters), or None.
        key: the dotted key (``links[0].downlink[0].rate``), or None.
        reason: the message without its place and key.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str,
        line: Optional[int] = None,
        column: Optional[int] = None,
        key: Optional[str] = None,
        reason: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.key = key
        self.reason = reason

    def __reduce__(self):  # picklable, for executors that send errors back
        return (
            _rebuild,
            (self.message, self.file, self.line, self.column, self.key, self.reason),
        )


def _rebuild(message, file, line, column, key, reason):
    return ScenarioError(message, file=file, line=line, column=column, key=key, reason=reason)
