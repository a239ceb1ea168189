"""The numbers of the README's real-model section, read from a finished `make real` run (prints; not a test).

    .venv/bin/python benchmarks/real_study_numbers.py [--root .]

Per model of results/swapkl.parquet:

* the adjacent and within-3 summaries: mean gap d_repl - d_inter with its bootstrap CI, median gap, the share of
  pairs with d_inter <= d_repl, the I/R ratio (mean, median);
* the four most swap-similar adjacent pairs (smallest d_inter) with how much further apart replacement puts them;
* BI against deletion (results/pruning_agreement.parquet): Spearman over all blocks, exact-rank and severe
  misranking on the interior blocks with their chance levels, and against next-token accuracy relevance
  (results/relevance_stats.parquet);
* the pruning cost (perplexity increase, %) of every guide at every budget (results/pruning.parquet), the
  removal sets of the interchange guide;
* the third test (results/healed_probes): pairs healed, the largest fraction of the interchange KL recovered.

With ``--findings FILE.csv`` it writes the findings table instead (swapkl.studies.findings: each comparison the
README states, its estimate, test and verdict); docs/real_findings.csv is that file for the README's run. With
``--decisions FILE.csv``, the sequential probes' removal-set decisions (results/decisions.parquet): each guide's
blocks at each budget, held or undecided, the share of window resamples that pick them and the windows it took;
docs/real_decisions.csv is that file, docs/real_decisions_signs.csv (written beside it) the gap signs, and
docs/real_decisions_evaluations.csv the variant-window evaluations each probe spent against a uniform probe. With
``--sublayers FILE.csv``, the sublayers study's statements (swapkl.figures.sublayer_statements: which sublayer carries
more of the gap, the interaction, sublayer against block pruning; results/sublayer_gaps.parquet and
results/sublayer_pruning.parquet); docs/real_sublayers.csv is that file. With ``--scored FILE.csv``, the windows
and scored tokens of the uniform probe, the sequential pool, the sublayers study and the pruning perplexity;
docs/real_scored.csv is that file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from swapkl.tables.schemas import read_pruning


def gaps(root: Path, model: str) -> None:
    df = pd.read_parquet(root / "results/swapkl.parquet")
    df = df[df["model"] == model]
    for _, s in df[df["kind"] == "summary"].sort_values("pair_set").iterrows():
        print(f"  {s['pair_set']:<9} n={int(s['n_pairs']):>3}  mean gap {s['gap_mean']:+.3f} "
              f"({s['gap_mean_ci_low']:+.3f} to {s['gap_mean_ci_high']:+.3f})  median {s['gap_median']:+.3f}  "
              f"d_inter<=d_repl {100 * s['frac_inter_le_repl']:.0f}%  I/R mean {s['ratio_ir_mean']:.2f} "
              f"median {s['ratio_ir_median']:.2f}  strong (d < 0.05): repl {int(s['n_strong_repl'])}, "
              f"inter {int(s['n_strong_inter'])}")
    pairs = df[(df["kind"] == "pair") & (df["distance"] == 1)].nsmallest(4, "d_inter")
    text = ", ".join(f"{int(p['layer_i'])}-{int(p['layer_j'])} ({p['d_inter']:.3f}; repl x"
                     f"{p['d_repl_max'] / p['d_inter']:.1f})" for _, p in pairs.iterrows())
    print(f"  most swap-similar adjacent pairs: {text}")
    n_tokens = df[df["kind"] == "directed"]["n_tokens"].iloc[0]
    print(f"  probe tokens: {int(n_tokens)} in {int(df[df['kind'] == 'directed']['n_seqs'].iloc[0])} windows")


def bi(root: Path, model: str) -> None:
    agr = pd.read_parquet(root / "results/pruning_agreement.parquet")
    a = agr[(agr["model"] == model) & (agr["guide"] == "bi") & (agr["reference"] == "deletion")].iloc[0]
    print(f"  BI vs deletion: Spearman {a['spearman']:+.2f} over {int(a['n_compared'])} blocks (chance 0); "
          f"interior {int(a['n_ranked'])} blocks: exact-rank misranking {a['exact_rank_misranking']:.2f} "
          f"(chance {a['exact_rank_chance']:.2f}), severe {a['severe_misranking']:.2f} "
          f"(chance {a['severe_chance']:.2f}); Pearson interior {a['pearson']:+.2f}, all {a['pearson_all_blocks']:+.2f}")
    rel = pd.read_parquet(root / "results/relevance_stats.parquet")
    for _, r in rel[(rel["model"] == model) & (rel["reference"] == "bi")].iterrows():
        print(f"  BI vs relevance ({r['task']}, {r['metric']}): exact-rank misranking {r['exact_rank_misranking']:.2f}"
              f" (chance {r['exact_rank_chance']:.2f}), severe {r['severe_misranking']:.2f} (chance "
              f"{r['severe_chance']:.2f}), Pearson R in the paper's sign (negative: agree) interior "
              f"{r['pearson_paper_sign']:+.2f}, all {r['pearson_all_blocks_paper_sign']:+.2f}")


def pruning(root: Path, model: str) -> None:
    df = read_pruning(root / "results/pruning.parquet")
    df = df[(df["model"] == model) & df["feasible"].astype(bool)]
    base = df[df["guide"] == "base"].iloc[0]
    print(f"  unpruned perplexity {base['ppl']:.2f} on {int(base['n_eval_tokens'])} tokens")
    rows = df[~df["guide"].isin(["base", "random"])]
    table = rows.pivot_table(index="guide", columns="budget", values="delta_ppl_pct", aggfunc="first")
    print("  perplexity increase (%) by guide and budget:")
    for guide, values in table.sort_values(table.columns[-1]).iterrows():
        print(f"    {guide:<16}" + "".join(f"{v:>10.1f}" for v in values))
    chosen = rows[rows["guide"] == "interchange"].sort_values("budget")
    print("  interchange removes: " + ", ".join(str([int(b) for b in r['removed_layers']]) for _, r in chosen.iterrows()))


def healed(root: Path, model: str) -> None:
    for path in sorted((root / "results/healed_probes").glob(f"{model}/*.parquet")):
        h = pd.read_parquet(path)
        h = h[h["final"].astype(bool)] if "final" in h else h
        best = h.nlargest(1, "fraction_recovered").iloc[0]
        print(f"  third test: {len(h)} healed pairs ({', '.join(sorted(set(h['protocol'])))}), "
              f"largest fraction recovered {100 * best['fraction_recovered']:.0f}% "
              f"(pair {int(best['layer_i'])}-{int(best['layer_j'])}), median "
              f"{100 * h['fraction_recovered'].median():.0f}%")


def probe_rows(root: Path) -> pd.DataFrame:
    """Every probe file's rows (their per-window sums), representation files left out."""
    return pd.concat([pd.read_parquet(path) for path in sorted((root / "results/probes").glob("*/*/*.parquet"))
                      if path.name != "representation.parquet"], ignore_index=True)


def write_removal(root: Path, out: Path) -> None:
    """What to remove (swapkl.studies.findings.removal_summary) as CSV, and printed."""
    from swapkl.studies.findings import removal_summary

    table = removal_summary(probe_rows(root), read_pruning(root / "results/pruning.parquet"))
    table.to_csv(out, index=False, float_format="%.6g")
    print(table.to_string(index=False))
    print(f"wrote {out}")


def write_findings(root: Path, out: Path) -> None:
    """The findings table (swapkl.studies.findings) of the run as CSV, and printed."""
    from swapkl.studies.findings import findings

    table = findings(probe_rows(root), read_pruning(root / "results/pruning.parquet"),
                     pd.read_parquet(root / "results/pruning_agreement.parquet"),
                     pd.read_parquet(root / "results/relevance_stats.parquet"))
    table.to_csv(out, index=False, float_format="%.6g")
    for _, r in table.iterrows():
        print(f"{r['model']:<14} {r['verdict']:<11} {r['statement']}")
    print(f"wrote {out}")


def write_decisions(root: Path, out: Path) -> None:
    """The sequential probes' set decisions (results/decisions.parquet) as CSV, and printed."""
    table = pd.read_parquet(root / "results/decisions.parquet")
    sets = table[table["kind"] == "set"].copy()
    sets[["guide", "budget"]] = sets["subject"].str.split("@", expand=True)
    sets["budget"] = sets["budget"].astype(int)
    sets = sets[["model", "guide", "budget", "answer", "state", "estimate", "windows", "confidence"]]
    sets = sets.rename(columns={"answer": "removed", "estimate": "stability"}).sort_values(["model", "guide", "budget"])
    sets.to_csv(out, index=False, float_format="%.6g")
    print(sets.to_string(index=False))
    signs = table[table["kind"] == "sign"]
    print(f"gap signs: {int((signs['state'] == 'holds').sum())} of {len(signs)} decided")
    signs_out = out.with_name(out.stem + "_signs.csv")
    signs[["model", "subject", "state", "answer", "estimate", "low", "high", "windows", "confidence"]].sort_values(
        ["model", "subject"]).to_csv(signs_out, index=False, float_format="%.6g")
    cost_out = out.with_name(out.stem + "_evaluations.csv")
    cost = evaluations(root, sorted(set(table["model"])))
    cost.to_csv(cost_out, index=False, float_format="%.6g")
    print(cost.to_string(index=False))
    print(f"wrote {out}, {signs_out} and {cost_out}")


def sequential_probe(root: Path, model: str) -> Path:
    """The probe table of ``model``'s sequential probe (one checkpoint per model in make real)."""
    (path,) = sorted((root / "results/sequential" / model).glob("*/probe.parquet"))
    return path


def evaluations(root: Path, models: list[str]) -> pd.DataFrame:
    """Per model, the variant-window evaluations its sequential probe spent (the windows of every variant but the
    base row, from results/sequential/MODEL/*/probe.parquet) against a uniform probe of every variant on the cap."""
    out = []
    for model in models:
        path = sequential_probe(root, model)
        probe = pd.read_parquet(path)
        cap = int(json.loads(pq.read_schema(path).metadata[b"swapkl"])["sequential"]["cap"])
        variants = probe[probe["protocol"] != "base"]
        spent = int(variants["n_seqs"].sum())
        out.append({"model": model, "variants": len(variants), "cap": cap, "sequential": spent,
                    "uniform": len(variants) * cap, "saving": len(variants) * cap / spent})
    return pd.DataFrame(out)


def write_sublayers(root: Path, out: Path) -> None:
    """The sublayers study's statements (swapkl.figures.sublayer_statements) as CSV, and printed."""
    from swapkl.figures.sublayer_statements import statements

    table = statements(pd.read_parquet(root / "results/sublayer_gaps.parquet"),
                       pd.read_parquet(root / "results/sublayer_pruning.parquet"))
    table.to_csv(out, index=False, float_format="%.6g")
    print(table.to_string(index=False))
    print(f"wrote {out}")


def scored(root: Path) -> pd.DataFrame:
    """Per model, the windows and the scored tokens of each measurement the pages quote: the uniform probe
    (results/swapkl.parquet), the sequential probe's pool (its base row), the sublayers study
    (results/sublayer_gaps.parquet) and the pruning perplexity (results/pruning.parquet)."""
    agg = pd.read_parquet(root / "results/swapkl.parquet")
    directed = agg[agg["kind"] == "directed"].groupby("model")[["n_seqs", "n_tokens"]].max()
    sub = pd.read_parquet(root / "results/sublayer_gaps.parquet").groupby("model")[["n_windows", "n_tokens"]].max()
    prune = pd.read_parquet(root / "results/pruning.parquet").groupby("model")[["n_eval_windows", "n_eval_tokens"]].max()
    out = []
    for model in sorted(directed.index):
        base = pd.read_parquet(sequential_probe(root, model)).query("protocol == 'base'").iloc[0]
        for study, windows, tokens in (("probe", *directed.loc[model]), ("sequential_pool", base["n_seqs"],
                                                                          base["n_tokens"]),
                                       ("sublayers", *sub.loc[model]), ("pruning_perplexity", *prune.loc[model])):
            out.append({"model": model, "study": study, "windows": int(windows), "scored_tokens": int(tokens)})
    return pd.DataFrame(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path("."), help="the directory `make real` ran in")
    parser.add_argument("--findings", type=Path, metavar="FILE.csv",
                        help="write the findings table (every comparison with its test and verdict) here instead")
    parser.add_argument("--removal", type=Path, metavar="FILE.csv",
                        help="write what to remove (interchange's sets, their cost and stability) here instead")
    parser.add_argument("--decisions", type=Path, metavar="FILE.csv",
                        help="write the sequential probes' removal-set decisions here instead")
    parser.add_argument("--sublayers", type=Path, metavar="FILE.csv",
                        help="write the sublayers study's statements (with intervals and verdicts) here instead")
    parser.add_argument("--scored", type=Path, metavar="FILE.csv",
                        help="write the windows and scored tokens of each measurement here instead")
    args = parser.parse_args(argv)
    if args.scored:
        table = scored(args.root)
        table.to_csv(args.scored, index=False)
        print(table.to_string(index=False))
        print(f"wrote {args.scored}")
        return
    if args.sublayers:
        write_sublayers(args.root, args.sublayers)
        if not (args.findings or args.removal or args.decisions):
            return
    if args.decisions:
        write_decisions(args.root, args.decisions)
    if args.findings or args.removal or args.decisions:
        if args.findings:
            write_findings(args.root, args.findings)
        if args.removal:
            write_removal(args.root, args.removal)
        return
    models = sorted(set(pd.read_parquet(args.root / "results/swapkl.parquet", columns=["model"])["model"]))
    for model in models:
        print(model)
        gaps(args.root, model)
        bi(args.root, model)
        pruning(args.root, model)
        healed(args.root, model)


if __name__ == "__main__":
    main()
