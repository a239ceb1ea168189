"""docs/bad_inputs.md's sections of issues 49 and 50: the tests of those sections check that they show their
messages."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "bad_inputs.md"
HEADING = "## GGUF loads, the Python API, task templates and changed inputs (issue 49)"
HEADING_50 = "## Friction at the command line (issue 50)"


def assert_listed(message: str, heading: str = HEADING, **placeholders: str) -> None:
    """``message`` with each value of ``placeholders`` written ``{name}`` is shown, in backticks, in the section
    under ``heading``."""
    section = DOC.read_text().split(heading, 1)[1].split("\n## ", 1)[0]
    template = message
    for name, value in sorted(placeholders.items(), key=lambda kv: -len(kv[1])):  # longest first: paths in paths
        template = template.replace(value, "{" + name + "}")
    assert f"`{template}`" in section, template
