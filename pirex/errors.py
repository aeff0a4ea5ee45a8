"""The one exception type the CLI turns into a clear message and a non-zero exit."""


class PirexError(Exception):
    """A problem the user can act on: the message names it and says what to do."""
