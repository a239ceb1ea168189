"""The path arguments of the subcommands and the one check they all go through before a command runs.

Every option that names a file or folder is declared with :func:`input_arg` or :func:`output_arg`, which
record on the argparse action what it is (:class:`PathRole`). :func:`checked` then runs for every command
(from :func:`swapkl.cli.main`), before any computation:

* every input is opened through :func:`swapkl.tables.file_checks.open_input` (FIFOs, devices, directories and
  missing files refused, naming the path), and a token file must really be ``.npy``;
* every output must be a non-empty path whose folder can be made and written;
* no output may be an input or another output, or lie inside one (symbolic links resolved, hard links
  compared by inode; :func:`swapkl.tables.file_checks.require_distinct`);
* while the command runs it holds an advisory lock on each output (:mod:`swapkl.tables.locks`): a second run
  given the same ``--out`` or progress file is refused instead of deleting the first one's live state.

A command whose path option is declared with plain ``add_argument`` skips all of this;
``tests/test_path_arguments.py`` finds such options in the parsers and fails.
"""

from __future__ import annotations

import argparse
import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from swapkl.hub.gguf import is_gguf_spec, locate
from swapkl.model.checkpoint_dir import is_local_spec, resolve_checkpoint_dir
from swapkl.tables import locks
from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import describe, require_distinct, require_npy, require_regular_file

ROLE = "swapkl_path"  # attribute of an argparse action that names a file or folder
CHECK = "swapkl_check"  # attribute of an argparse action: a check of the parsed options that only it knows
SETS_PATHS = "swapkl_sets_paths"  # attribute of an action that names no path itself but sets these declared ones


@dataclass(frozen=True)
class PathRole:
    io: str  # "in" or "out"
    kind: str  # "file", "dir" or "model" (a local checkpoint folder, a hub id or a GGUF: swapkl.hub.gguf)
    what: str  # what the path is, in the words of the error messages, e.g. "token file"
    fmt: str | None = None  # "npy": the content must be a NumPy array, whatever the name says
    named: bool = False  # the value is NAME=PATH


def input_arg(p, *flags, what: str, kind: str = "file", fmt: str | None = None, named: bool = False,
              **kwargs) -> argparse.Action:
    """``p.add_argument(*flags, **kwargs)`` for an option that names something the command reads."""
    action = p.add_argument(*flags, **kwargs)
    setattr(action, ROLE, PathRole("in", kind, what, fmt, named))
    return action


def output_arg(p, *flags, what: str = "output", kind: str = "file", **kwargs) -> argparse.Action:
    """``p.add_argument(*flags, **kwargs)`` for an option that names something the command writes."""
    action = p.add_argument(*flags, **kwargs)
    setattr(action, ROLE, PathRole("out", kind, what))
    return action


def leaf_parser(parser: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    """The (sub-)subparser that parsed ``args``."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or getattr(args, subs[0].dest, None) is None:
            return parser
        parser = subs[0].choices[getattr(args, subs[0].dest)]


def path_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if hasattr(a, ROLE)]


def option_name(action: argparse.Action) -> str:
    return max(action.option_strings, key=len) if action.option_strings else action.dest


def path_values(action: argparse.Action, args) -> list[str]:
    value = getattr(args, action.dest, None)
    items = [] if value is None else list(value) if isinstance(value, (list, tuple)) else [value]
    if getattr(action, ROLE).named:
        items = [str(x).partition("=")[2] if "=" in str(x) else None for x in items]  # NAME=PATH; the
        # command itself names a value without '='
    return [str(x) for x in items if x is not None]


def _check_input(name: str, path: str, role: PathRole, args) -> None:
    if role.kind == "model":
        if is_gguf_spec(path):
            locate(path)  # the file, or the package and its chunks, are there (converted when the model loads)
        elif is_local_spec(path):
            resolve_checkpoint_dir(path, getattr(args, "revision", None))
    elif role.kind == "dir":
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            raise SwapKLError(f"{role.what} {path!r} does not exist") from None
        if not stat.S_ISDIR(mode):
            raise SwapKLError(f"{role.what} {path!r} is {describe(mode)}, not a folder")
    elif role.fmt == "npy":
        require_npy(path, role.what)
    else:
        require_regular_file(path, role.what)


def _check_output(path: str, role: PathRole) -> None:
    if role.kind == "file" and os.path.isdir(path):
        raise SwapKLError(f"cannot write {path!r}: it is a directory")
    folder = os.path.dirname(os.path.abspath(path))
    existing = folder
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise SwapKLError(f"cannot write to folder {folder!r}: a path component is a file, not a folder")
    if os.statvfs(existing).f_flag & os.ST_RDONLY:
        raise SwapKLError(f"cannot write to folder {folder!r}: read-only file system")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise SwapKLError(f"cannot write to folder {folder!r}: permission denied")


def check_paths(parser: argparse.ArgumentParser, args) -> list[tuple[str, str]]:
    """Check every declared input and output of the command that parsed ``args``; return the outputs
    as (option, path) pairs, ``--out`` first."""
    for action in leaf_parser(parser, args)._actions:
        if hasattr(action, CHECK):
            getattr(action, CHECK)(args)
    ins, outs = [], []
    for action in path_actions(leaf_parser(parser, args)):
        role = getattr(action, ROLE)
        for path in path_values(action, args):
            (ins if role.io == "in" else outs).append((option_name(action), path, role))
    for name, path, role in ins + outs:
        if path == "":
            raise SwapKLError(f"{name} is an empty path; give a {'folder' if role.kind == 'dir' else 'file'}")
    for name, path, role in ins:
        _check_input(name, path, role, args)
    outs.sort(key=lambda o: o[0] != "--out")
    require_distinct([(n, p) for n, p, _ in outs], [(n, p) for n, p, _ in ins if os.path.lexists(p)])
    for name, path, role in outs:
        _check_output(path, role)
    return [(n, p) for n, p, _ in outs]


@contextmanager
def checked(parser: argparse.ArgumentParser, args) -> Iterator[None]:
    """Check the command's paths (:func:`check_paths`), then hold its outputs' locks while it runs."""
    with locks.held(check_paths(parser, args)):
        yield
