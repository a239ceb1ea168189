"""User-facing error type: one line, names the culprit, no traceback at the CLI."""


class SwapKLError(Exception):
    """An error caused by the user's input or environment, reported as one line."""


class ConfigError(ValueError):
    """A config value that cannot work; the message starts with its key path (or the config file's path).

    Defined here, below every package, so that the pure helpers the config validation shares with the runs
    (pair-set names, seed families) raise it without importing :mod:`swapkl.config`."""
