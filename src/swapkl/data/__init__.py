"""Text and token windows: the sources swapkl reads and when two of them are the same text."""
