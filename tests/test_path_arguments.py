"""Every path argument of every ``swapkl`` subcommand goes through the one pre-flight check.

The subcommands are enumerated from the real parser. An option that looks like a path (by its name or
metavar, judged here independently of swapkl's declarations) must be declared as an input or an output.
Then each subcommand is run in-process with its work replaced by a stub, so that only the shared check
can refuse: every output set to one of the inputs, every input replaced by a FIFO, every output given as
``''``, and a second run started while the first holds its outputs. A new command or option that bypasses
``input_arg`` / ``output_arg`` fails here.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import pytest

from swapkl import cli
from swapkl.commands.paths import ROLE, SETS_PATHS

# option-name words that mark a path; the last word of the option decides (--pruning-guides is no path)
PATH_WORDS = {"out", "file", "input", "inputs", "png", "pdf", "tokens", "probe", "repr", "pruning", "aggregate",
              "corpus", "tokenizer", "tasks", "log", "model"}
PATH_METAVARS = ("FILE", "DIR", "CSV", ".parquet", ".npy", ".yaml", ".png", ".pdf")
# options whose name looks like a path but that name something else
NOT_PATHS = {"--lm-eval-tasks": "task names that lm-eval loads from the dataset hub"}


def leaves(parser: argparse.ArgumentParser, prefix=()) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [(prefix, parser)]
    return [leaf for name, p in subs[0].choices.items() for leaf in leaves(p, prefix + (name,))]


def looks_like_path(a: argparse.Action) -> bool:
    name = max(a.option_strings, key=len) if a.option_strings else a.dest
    if a.type in (int, float) or a.nargs == 0:
        return False  # a count (--min-tokens) or a switch
    if name in NOT_PATHS or (name == "--model" and any(w in (a.help or "") for w in ("label", "name"))):
        return False  # a model label of a figure, not a checkpoint
    last = name.lstrip("-").replace("_", "-").split("-")[-1]
    return last in PATH_WORDS or any(m in str(a.metavar or "") for m in PATH_METAVARS)


COMMANDS = leaves(cli.build_parser())
IDS = [" ".join(names) for names, _ in COMMANDS]


def test_every_subcommand_is_enumerated():
    names = {n[0] for n, _ in COMMANDS}
    assert {"probe", "prune", "export", "relevance", "aggregate", "figures", "provenance", "demo-train"} <= names
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize("names,parser", COMMANDS, ids=IDS)
def test_every_path_option_is_declared(names, parser):
    declared = {a.dest for a in parser._actions if hasattr(a, ROLE)}
    sets_declared = lambda a: hasattr(a, SETS_PATHS) and set(getattr(a, SETS_PATHS)) <= declared  # noqa: E731
    undeclared = [a.option_strings or a.dest for a in parser._actions
                  if looks_like_path(a) and not hasattr(a, ROLE) and not sets_declared(a)]
    assert not undeclared, f"{' '.join(names)}: path options outside the shared check: {undeclared}"
    roles = [getattr(a, ROLE) for a in parser._actions if hasattr(a, ROLE)]
    assert all(r.io in ("in", "out") and r.kind in ("file", "dir", "model") for r in roles)


# ------------------------------------------------------------------------------- running the shared check


class Invocation:
    """An argv for one subcommand with every path option given, built from (action -> value) choices."""

    def __init__(self, names, parser, root: Path):
        self.names, self.parser, self.root = names, parser, root
        self.values: dict[argparse.Action, str] = {}
        grouped = {a for g in parser._mutually_exclusive_groups if g.required for a in g._group_actions[:1]}
        for a in parser._actions:
            if isinstance(a, argparse._HelpAction):
                continue
            if hasattr(a, ROLE):
                self.values[a] = self.fresh(a)
            elif a.required or not a.option_strings or a in grouped:
                self.values[a] = str(a.choices[0]) if a.choices else {"--pair-sets": "m=adjacent"}.get(
                    max(a.option_strings, key=len) if a.option_strings else "", "1")

    def fresh(self, a: argparse.Action, tag: str = "") -> str:
        role = getattr(a, ROLE)
        path = self.root / f"{role.io}-{a.dest}{tag}"
        if role.io == "out":
            return str(path)
        if role.kind in ("dir", "model"):
            path.mkdir(exist_ok=True)
            (path / "config.json").write_text("{}")
        elif role.fmt == "npy":
            np.save(path.with_suffix(".npy"), np.zeros((2, 4), dtype=np.int64))
            path = path.with_suffix(".npy")
        else:
            path.write_text("x")
        return str(path)

    def argv(self, **changed) -> list[str]:
        out, positional = list(self.names), []
        for a, v in self.values.items():
            v = changed.get(a.dest, v)
            role = getattr(a, ROLE, None)
            item = f"name={v}" if role is not None and role.named else v
            if not a.option_strings:
                positional.append(item)
            else:
                out += [max(a.option_strings, key=len), item]
        return out[:len(self.names)] + positional + out[len(self.names):]

    def actions(self, io: str, kinds=("file", "dir", "model")) -> list[argparse.Action]:
        return [a for a in self.values if hasattr(a, ROLE) and getattr(a, ROLE).io == io
                and getattr(a, ROLE).kind in kinds]


@pytest.fixture
def run(monkeypatch, capsys):
    """Run ``cli.main(argv)`` with every command's work replaced by ``stub``; (exit code, error lines, calls)."""
    def go(argv, stub=None):
        calls = []
        parser = cli.build_parser()
        for _, leaf in leaves(parser):
            leaf.set_defaults(func=lambda args: calls.append(args) or (stub and stub(args)))
        monkeypatch.setattr(cli, "build_parser", lambda load=None: parser)
        capsys.readouterr()
        code = cli.main(argv)
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("swapkl: error:")]
        return code, err, len(calls)
    return go


def listing(root: Path) -> dict:
    return {str(p): (p.is_dir(), p.read_bytes() if p.is_file() and not p.is_fifo() else None)
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("names,parser", COMMANDS, ids=IDS)
def test_shared_check_covers_every_path(names, parser, run, tmp_path):
    inv = Invocation(names, parser, tmp_path)
    code, err, calls = run(inv.argv())
    assert (code, err, calls) == (0, [], 1), "a run with good paths must reach the command"
    before = listing(tmp_path)

    for out in inv.actions("out"):
        code, err, calls = run(inv.argv(**{out.dest: ""}))
        assert code == 2 and calls == 0 and len(err) == 1 and "is an empty path" in err[0], (out.dest, err)
        for inp in inv.actions("in"):
            path = inv.values[inp]
            code, err, calls = run(inv.argv(**{out.dest: path}))
            assert code == 2 and calls == 0 and len(err) == 1, (out.dest, inp.dest, err)
            assert "an output never" in err[0], err
    for inp in inv.actions("in"):
        fifo = tmp_path / f"fifo-{inp.dest}"
        os.mkfifo(fifo)
        code, err, calls = run(inv.argv(**{inp.dest: str(fifo)}))  # would hang if anything opened it blocking
        assert code == 2 and calls == 0 and len(err) == 1 and "is a FIFO" in err[0], (inp.dest, err)
        fifo.unlink()
    assert listing(tmp_path) == before  # nothing written by any refusal


WRITERS = [(n, p) for n, p in COMMANDS if any(getattr(a, ROLE).io == "out" for a in p._actions if hasattr(a, ROLE))]


@pytest.mark.parametrize("names,parser", WRITERS, ids=[" ".join(n) for n, _ in WRITERS])
def test_second_run_on_a_held_output_is_refused(names, parser, run, tmp_path):
    """While one run holds its outputs, a second run naming any one of them (the others fresh) is refused."""
    inv = Invocation(names, parser, tmp_path)
    for held in inv.actions("out"):
        others = {a.dest: inv.fresh(a, "-second") for a in inv.actions("out") if a is not held}
        inner = {}

        def second(_args, argv=inv.argv(**others)):
            inner["result"] = run(argv)

        code, err, calls = run(inv.argv(), stub=second)
        assert (code, err, calls) == (0, [], 1)
        icode, ierr, icalls = inner["result"]
        assert icode == 2 and icalls == 0 and len(ierr) == 1, (held.dest, ierr)
        assert "is in use by another swapkl run" in ierr[0] and repr(inv.values[held]) in ierr[0]
        code, err, calls = run(inv.argv(**others))  # once the first run ended, the path is free again
        assert (code, err, calls) == (0, [], 1)
