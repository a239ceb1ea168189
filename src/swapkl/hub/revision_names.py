"""Checkpoint revision names: the one pattern of a valid revision and the training step a `stepN` names."""

from __future__ import annotations

import re

#: a valid revision, without anchors: `stepN` (no leading zeros), a 40-hex commit, or a branch or tag that
#: starts with a letter and is not `step...` (the schema's `$defs.revision` pattern is `^(REVISION_PATTERN)$`,
#: and the workflow's `revision` wildcard constraint is this pattern)
REVISION_PATTERN = r"step(0|[1-9][0-9]*)|[0-9a-f]{40}|(?!step)[A-Za-z][A-Za-z0-9._-]*"
_STEP = re.compile(r"step([0-9]+)")


def step_of(revision: str | None) -> int | None:
    """The training step N of a `stepN` revision, else None."""
    match = _STEP.fullmatch(revision or "")
    return int(match.group(1)) if match else None


def last_revision(revisions: list[str]) -> str:
    """The final checkpoint: the latest stepN when every revision is one, else the last listed."""
    if all(step_of(r) is not None for r in revisions):
        return max(revisions, key=step_of)
    return revisions[-1]


def chosen_revisions(choice, revisions: list[str]) -> list[str]:
    """The revisions a section's ``revisions`` (a list, ``all`` or ``last``) chooses among a model's
    ``revisions``, in the model's order."""
    if choice == "last":
        choice = [last_revision(revisions)]
    return [r for r in revisions if choice == "all" or r in choice]
