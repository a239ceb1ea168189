"""The command line reads alike everywhere: every command's --help works, option groups name their own options,
no required option claims a default, one output-flag scheme, --label wherever a model's rows are written, and
descriptions that list a registry say what the registry holds."""

from __future__ import annotations

import argparse

import pytest

from swapkl.cli import build_parser
from swapkl.commands.arguments import with_flags
from swapkl.commands.paths import leaf_parser
from swapkl.pruning.guides import registered

ROW_WRITERS = ("probe", "prune", "relevance")  # commands that write a model's rows


def _commands(parser=None, prefix=()):
    parser = parser or build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield prefix + (name,), sub
                yield from _commands(sub, prefix + (name,))


COMMANDS = dict(_commands())


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_help_is_clean(path):
    parser = COMMANDS[path]
    text = parser.format_help()
    assert "(default: None)" not in text
    for group in parser._action_groups:
        flags = [s for a in group._group_actions for s in a.option_strings if s.startswith("--")]
        named = [w.strip("(),") for w in (group.title or "").split() if w.startswith("--")]
        assert all(n in flags for n in named), f"{' '.join(path)}: group {group.title!r} lists options it lacks"
    out_flags = {s for a in parser._actions for s in a.option_strings if s in ("--png", "--pdf", "--out-png",
                                                                               "--out-pdf")}
    if out_flags:
        assert {"--out-png", "--out-pdf"} <= out_flags, f"{' '.join(path)} uses {sorted(out_flags)}"


@pytest.mark.parametrize("command", ROW_WRITERS)
def test_row_writers_take_labels(command):
    opts = {s for a in COMMANDS[(command,)]._actions for s in a.option_strings}
    assert {"--label", "--revision-label"} <= opts


def test_probe_label_reaches_the_run(monkeypatch):
    seen = {}
    monkeypatch.setattr("swapkl.probes.probe.run_probe", lambda job: seen.update(job=job))
    args = build_parser().parse_args(["probe", "--model", "/some/path/ckpt", "--label", "tiny", "--revision-label",
                                      "step5", "--tokens", "t.npy", "--out", "o.parquet"])
    args.func(args)
    assert seen["job"].metadata == {"model": "tiny", "revision": "step5"}


def test_prune_description_lists_every_guide():
    text = COMMANDS[("prune",)].format_help()
    flat = " ".join(text.split())
    for g in registered():
        if g.name != "base":
            assert g.name in flat, g.name


def test_figures_accepts_the_old_output_flags():
    a = build_parser().parse_args(["figures", "heatmaps", "--aggregate", "a", "--model", "m", "--revision", "r",
                                   "--png", "x.png", "--pdf", "x.pdf"])
    b = build_parser().parse_args(["figures", "heatmaps", "--aggregate", "a", "--model", "m", "--revision", "r",
                                   "--out-png", "x.png", "--out-pdf", "x.pdf"])
    assert (a.out_png, a.out_pdf) == (b.out_png, b.out_pdf) == ("x.png", "x.pdf")


def test_figures_take_one_out_for_both_files(tmp_path, capsys):
    """`--out X` writes X.png and X.pdf (issue 50: "--out could match --out-png, --out-pdf"); giving it with
    --out-png / --out-pdf, or neither, is a one-line error naming the options."""
    import pyarrow as pa

    import synthetic_tables as syn
    from swapkl import cli
    from swapkl.tables.parquet_io import write_parquet
    from swapkl.tables.schemas import SEEDS_SCHEMA
    from swapkl.studies.seeds import to_table

    seeds = tmp_path / "seeds.parquet"
    write_parquet(to_table(syn.seeds_table().reindex(columns=SEEDS_SCHEMA.names)), str(seeds), {"kind": "test"})
    base = ["figures", "seed-band", "--seeds", str(seeds), "--family", "fam"]
    for given, stem in (("band", "band"), ("other.png", "other"), ("third.PDF", "third")):
        assert cli.main([*base, "--out", str(tmp_path / given)]) == 0
        assert (tmp_path / f"{stem}.png").read_bytes()[:4] == b"\x89PNG"
        assert (tmp_path / f"{stem}.pdf").read_bytes()[:4] == b"%PDF"
    capsys.readouterr()
    assert cli.main([*base, "--out", str(tmp_path / "a"), "--out-png", str(tmp_path / "b.png")]) == 2
    assert "not both" in capsys.readouterr().err
    assert cli.main(base) == 2
    assert "give --out FILE" in capsys.readouterr().err
    assert not (tmp_path / "a.png").exists() and not (tmp_path / "b.png").exists()


def test_seed_band_and_covariate_figures_from_the_command_line(tmp_path):
    import pyarrow as pa

    import synthetic_tables as syn
    from swapkl import cli
    from swapkl.tables.parquet_io import write_parquet
    from swapkl.tables.schemas import COVARIATE_CORRELATIONS_SCHEMA, SEEDS_SCHEMA
    from swapkl.studies.seeds import to_table

    seeds, corr = tmp_path / "seeds.parquet", tmp_path / "corr.parquet"
    write_parquet(to_table(syn.seeds_table().reindex(columns=SEEDS_SCHEMA.names)), str(seeds), {"kind": "test"})
    write_parquet(pa.Table.from_pandas(syn.covariate_correlations(), schema=COVARIATE_CORRELATIONS_SCHEMA,
                                       preserve_index=False), str(corr), {"kind": "test"})
    for argv in (["seed-band", "--seeds", str(seeds), "--family", "fam"],
                 ["covariates", "--correlations", str(corr), "--family", "both=toy:0,other:1"]):
        png, pdf = tmp_path / f"{argv[0]}.png", tmp_path / f"{argv[0]}.pdf"
        assert cli.main(["figures", *argv, "--out-png", str(png), "--out-pdf", str(pdf)]) == 0
        assert png.read_bytes()[:4] == b"\x89PNG" and pdf.read_bytes()[:4] == b"%PDF"
    assert cli.main(["figures", "covariates", "--correlations", str(corr), "--family", "bad",
                     "--out-png", str(tmp_path / "x.png"), "--out-pdf", str(tmp_path / "x.pdf")]) == 2


@pytest.mark.parametrize("argv, message, shown", [
    (["prune", "--model", "m", "--probe", "p", "--out", "o"], "`out` 'a' is the input `probe_files` 'b'",
     "--out 'a' is the input --probe 'b'"),
    (["healed-probe", "--model", "m", "--probe-files", "p", "--out", "o"], "`probe_files` 'b' and `foo`",
     "--probe-files 'b' and `foo`"),
    (["export", "--model", "m", "--remove", "1", "--out", "o"], "`merge` 2 names block 2, which `remove` removes",
     "--merge 2 names block 2, which --remove removes"),
])
def test_library_errors_name_parameters_and_the_cli_shows_its_flags(argv, message, shown):
    """The library names a parameter in backticks; the command line shows the option that set it (a parameter
    the command has no option for stays as it is)."""
    parser = build_parser()
    assert with_flags(message, leaf_parser(parser, parser.parse_args(argv))) == shown
