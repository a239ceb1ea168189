"""User-facing error type: one line, names the culprit, no traceback at the CLI."""


class SwapKLError(Exception):
    """An error caused by the user's input or environment, reported as one line."""
