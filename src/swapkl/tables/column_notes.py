"""What the columns of swapkl's results tables mean, in one line each, for the tables' HTML pages in the report
(:mod:`swapkl.tables.table_html`). docs/outputs.md explains the tables at length; this is the short form a reader
needs beside the numbers.

:func:`describe` looks a column up in the table's own notes (:data:`PER_TABLE`, for names that mean something
else in that table), then in :data:`COLUMNS`, then derives it from a suffix rule (:data:`SUFFIXES`: ``X_ci_low``
is the lower end of the CI of ``X``, ``X_mean`` the mean of ``X`` over pairs, ...). A column none of them covers
gets an empty description, which the page shows as such (tests/test_column_notes.py checks every schema's
columns).
"""

from __future__ import annotations

import re

from swapkl.study import column_note

#: column -> meaning, for every table that has the column
COLUMNS = {
    # identity and provenance of a row
    "model": "config name of the model",
    "revision": "checkpoint label (stepN, main, or a named revision)",
    "step": "training step N of a stepN revision (null otherwise)",
    "n_layers": "blocks (layers) in the model",
    "duplicate_of": "earlier revision with byte-identical weights (null: none)",
    "kind": "which kind of row this is; it says which other columns the row fills",
    "family": "seed family (training runs of one recipe that differ in their random seed)",
    "seed": "training seed of the family member",
    "architecture": "architecture adapter of the model",
    "position_encoding": "position encoding of the model (rope, learned, alibi, none)",
    "n_params": "parameters of the model",
    "source": "where the published number comes from (paper, table or figure)",
    # probes
    "protocol": "probe protocol: base, replacement, interchange, deletion, averaging, head_interchange, ...",
    "layer_i": "first block of the variant (replacement: the slot overwritten; deletion: the block skipped)",
    "layer_j": "second block of the variant (replacement: the block whose weights run in slot i)",
    "layer": "block (layer index)",
    "head": "head_interchange: the key/value head unit exchanged; null otherwise",
    "kl_mean": "KL(p_base ‖ p_variant) in nats, mean over scored tokens",
    "nll_mean": "mean next-token negative log-likelihood of the variant (nats)",
    "n_seqs": "token windows (sequences) measured",
    "n_tokens": "scored token positions",
    "seq_kl_sum": "per window: KL summed over its scored tokens (the bootstrap resamples these)",
    "seq_tokens": "per window: scored tokens",
    "seq_nll_sum": "per window: NLL summed over its scored tokens",
    "seq_nll_tokens": "per window: tokens with an NLL",
    "distance": "pair distance j − i in blocks",
    "r_ij": "replacement KL r(i←j): slot i runs block j's weights (nats)",
    "r_ji": "replacement KL r(j←i): slot j runs block i's weights (nats)",
    "d_repl_max": "replacement distance of the pair: max of r(i←j) and r(j←i) (nats)",
    "d_repl_mean": "mean of the two replacement directions (nats)",
    "d_repl_fwd": "replacement distance in one direction, r(i←j) for i < j, as the paper's Pythia trajectory (nats)",
    "d_inter": "interchange KL of the pair: blocks i and j swap slots (nats)",
    "gap": "protocol gap d_repl_max − d_inter (nats)",
    "gap_fwd": "one-direction gap d_repl_fwd − d_inter (nats)",
    "ratio_ir": "I/R ratio d_inter / d_repl_max",
    "ratio_ir_fwd": "one-direction I/R ratio d_inter / d_repl_fwd",
    "class_repl": "swap-similarity class of d_repl_max: strong (< 0.05), conditional (< 0.10) or none",
    "class_inter": "swap-similarity class of d_inter: strong (< 0.05), conditional (< 0.10) or none",
    "pair_set": "the configured pair set the row summarises (adjacent, within:k, all)",
    "n_pairs": "pairs counted",
    "gap_max_share": "the largest pair's share of the summed gap (above 1 when other gaps are negative)",
    "gap_fwd_max_share": "the largest pair's share of the summed one-direction gap",
    "frac_inter_le_repl": "share of the pairs whose interchange KL is at most their replacement KL (d_inter ≤ d_repl_max)",
    "n_strong_repl": "pairs whose d_repl_max is strongly swap-similar (< 0.05 nats)",
    "n_strong_inter": "pairs whose d_inter is strongly swap-similar (< 0.05 nats)",
    "n_boot": "bootstrap resamples behind the CIs",
    "metric": "which measurement or score the row holds",
    "width": "representation rows: blocks spanned (1 for BI)",
    "value": "the metric's value",
    "ci_low": "lower end of the 95% bootstrap CI of the row's value (pair rows: of gap)",
    "ci_high": "upper end of the 95% bootstrap CI of the row's value (pair rows: of gap)",
    "seq_value_sum": "per window: the metric summed over its tokens",
    "seq_count": "per window: tokens behind the metric",
    # pruning
    "guide": "selection rule that chose the removed blocks (the guide registry's name)",
    "budget": "blocks removed (n)",
    "random_draw": "random guide: index of the draw (null otherwise)",
    "fixed_set": "fixed guide: name of the configured layer set",
    "removed_layers": "blocks removed",
    "feasible": "whether the rule found a set of this size under the spacing constraint",
    "ppl": "perplexity of the pruned model on the evaluation text",
    "base_ppl": "perplexity of the unpruned model",
    "delta_ppl_pct": "relative perplexity increase over the unpruned model (%)",
    "n_draws": "random draws behind the row",
    "delta_ppl_pct_sd": "random_mean: standard deviation of delta_ppl_pct over the draws",
    "delta_ppl_pct_min": "random_mean: lowest delta_ppl_pct of the draws",
    "delta_ppl_pct_max": "random_mean: highest delta_ppl_pct of the draws",
    "kl_ci_low": "lower end of the 95% bootstrap CI of kl_mean",
    "kl_ci_high": "upper end of the 95% bootstrap CI of kl_mean",
    "nll_ci_low": "lower end of the 95% bootstrap CI of nll_mean",
    "nll_ci_high": "upper end of the 95% bootstrap CI of nll_mean",
    "spacing": "removed blocks are kept more than this many indices apart",
    "eval_split": "evaluation text",
    "calibration_split": "text the search guides score candidate removals on",
    "probe_split": "text of the probe windows (KL to the unpruned model)",
    "eval_window": "sliding-window length of the perplexity evaluation (tokens)",
    "eval_stride": "stride of the sliding window (tokens)",
    "eval_max_words": "words of the evaluation text used (null: all)",
    "n_eval_windows": "evaluation windows",
    "n_eval_tokens": "scored evaluation tokens",
    "n_probe_seqs": "probe windows",
    "n_probe_tokens": "scored probe tokens",
    "window_nll_sum": "per evaluation window: NLL summed over its scored tokens",
    "window_tokens": "per evaluation window: scored tokens",
    "n_evals": "search guides: pruned models scored on the calibration text to choose this row's blocks",
    "merged_layers": "LaCo: slots running the average of themselves and the next block (which is removed)",
    "probe_kl_sum": "per probe window: the pruned model's KL to the unpruned one, summed over its tokens",
    "probe_tokens": "per probe window: scored tokens",
    "set_stability": "probe-guided guides: the share of 1,000 resamples of the probe windows on which the guide "
                     "picks the same blocks (how much the set rests on these windows; not a confidence level)",
    # agreement between rankings
    "reference": "the score or ranking the row compares with",
    "n_compared": "blocks both scores rank",
    "spearman": "Spearman rank correlation",
    "kendall": "Kendall's tau",
    "pearson": "Pearson correlation (positive: agreement)",
    "pearson_paper_sign": "−pearson, the sign convention of the paper",
    "pearson_all_blocks": "Pearson correlation over every block, the first and last included",
    "pearson_all_blocks_paper_sign": "−pearson_all_blocks, the sign convention of the paper",
    "misranking_rate": "share of block pairs the two rankings order differently",
    "excluded_layers": "blocks left out of the rank statistics (the first and the last)",
    "n_ranked": "blocks ranked (m)",
    "exact_rank_misranking": "share of blocks off the diagonal of the rank confusion matrix (chance 1 − 1/m)",
    "severe_misranking": "share of blocks whose two ranks differ by at least severe_offset",
    "severe_offset": "rank offset counted as severe: ceil(m / 4)",
    "exact_rank_chance": "chance level of exact_rank_misranking",
    "exact_rank_p": "one-sided permutation p-value of exact_rank_misranking",
    "severe_chance": "chance level of severe_misranking",
    "severe_p": "one-sided permutation p-value of severe_misranking",
    "layers": "the ranked blocks",
    "guide_rank": "rank of each ranked block by the guide",
    "reference_rank": "rank of each ranked block by the reference",
    # relevance and tasks
    "task": "evaluation task",
    "accuracy": "accuracy with the block (or blocks) removed",
    "base_accuracy": "accuracy of the unpruned model",
    "random_baseline": "accuracy of guessing at random",
    "relevance": "accuracy-based relevance: accuracy lost by removing the block, relative to the margin over chance",
    "n_items": "task items scored",
    # seeds
    "n_seeds": "seeds with a measurement at this revision",
    "seeds": "the seeds measured",
    "absent_seeds": "seeds whose revision is not on the model hub (left out)",
    "quantity": "which quantity the row decomposes (gap or gap_fwd)",
    "data_family": "the family of runs that differ in their data order",
    "init_family": "the family of runs that differ in their initialisation",
    "var_data": "sample variance (ddof 1) of the members' mean gap over data seeds",
    "var_init": "sample variance (ddof 1) of the members' mean gap over init seeds",
    "n_data": "members of the data family",
    "n_init": "members of the init family",
    "share_data": "var_data / (var_data + var_init)",
    "share_init": "1 − share_data",
    "n_chosen": "members whose pruned set removes the block",
    "share_chosen": "n_chosen / n_seeds",
    # prompt-set convergence
    "draws": "random subsets drawn per size",
    "top_pair_share": "share of the draws whose lowest-KL pair is the full set's",
    "top_kl": "the full set's lowest pair KL (nats)",
    "top_kl_rel_width": "width of the 2.5-97.5% range of that pair's KL over draws, relative to top_kl",
    # healed probes (the third test)
    "base_protocol": "the protocol the healed variant starts from",
    "heal_steps": "heal (LoRA) steps taken when this row was measured (0: before healing)",
    "final": "whether this is the variant's last measured heal step",
    "kl_before": "KL(p_base ‖ p_variant) before healing (nats)",
    "kl_after": "KL(p_base ‖ p_variant) after heal_steps steps (nats)",
    "fraction_recovered": "1 − kl_after / kl_before",
    "gap_before": "the pair's protocol gap before healing (nats)",
    "gap_after": "the pair's protocol gap after healing (nats)",
    "too_few_items": "whether the two rankings have too few items to test",
    # Jacobian norms
    "iterations": "power iterations of the spectral-norm estimate",
    "seq_len": "tokens per prompt",
    "n_prompts": "prompts averaged",
    "norm_mean": "||J_k||₂: largest singular value of the block's residual-update Jacobian, mean over prompts",
    "norm_max": "||J_k||₂, largest over prompts",
    "norm_min": "||J_k||₂, smallest over prompts",
    "table": "which of the second paper's tables the row belongs to",
    # optimal removal sets
    "method": "search method (exhaustive, best-first, greedy SLEB-iterative, beam)",
    "cost": "the found set's cost (calibration NLL with the set removed)",
    "base_cost": "the unpruned model's cost",
    "gap_to_best": "cost minus the best cost any method found for this budget",
    "n_enumeration": "sets an exhaustive search scores: C(L, n)",
    "bound": "best-first: least cost left on the frontier when the search stopped (a lower bound only if the "
             "cost is monotone)",
    "monotone_violations": "scored sets cheaper than their parent set (counterexamples to a monotone cost)",
    "certified": "optimal with an unconditional proof (exhaustive enumeration only)",
    "objective": "what the cost measures",
    # recovery after pruning
    "phase": "base, control (unpruned, healed), pruned or healed",
    "kl": "KL(p_base ‖ p_model) on the probe windows (nats)",
    "task_accuracy": "accuracy on the task",
    "task_relevance": "accuracy lost relative to the unpruned model's margin over chance",
    "net_recovery": "1 − (PPL_healed − PPL_control) / (PPL_pruned − PPL_base): share of the pruning damage the "
                    "heal removes",
    "steps": "heal (LoRA) training steps",
    "checkpoint": "path of the checkpoint scored",
    # covariates of the gap
    "rel_update_i": "block i's relative update size on its own input, ‖f(h)‖ / ‖h‖",
    "rel_update_j": "block j's relative update size on its own input",
    "rel_update_absdiff": "|rel_update_i − rel_update_j|",
    "update_cos": "cosine between the two blocks' updates on the same input",
    "commutator": "how much the order of the two blocks matters on the same input (relative norm)",
    "weight_dist": "relative Frobenius distance of the two blocks' weights",
    "attn_entropy_i": "entropy (nats) of block i's attention over keys on its own input",
    "attn_entropy_j": "entropy (nats) of block j's attention over keys on its own input",
    "attn_entropy_absdiff": "|attn_entropy_i − attn_entropy_j|",
    "scope": "how the rows are grouped (all, model, checkpoint, ...)",
    "group": "the group of rows, as column=value",
    "covariate": "the covariate correlated with the target",
    "target": "the quantity correlated with (gap or gap_fwd)",
    "resampled": "what the bootstrap resamples (pairs)",
    # spans
    "variant": "span variant: base, reverse, shuffle, repeat, parallel or looped_parallel",
    "start": "first slot s of the span",
    "end": "slot after the span's last (L − s)",
    "loops": "looped_parallel: times the parallel step is applied",
    "order": "the block order of a reordering (null for the parallel variants)",
    "middle": "repeat: the middle block every slot of the span runs",
    "d_inter_adjacent": "the checkpoint's median adjacent interchange KL (nats)",
    "d_repl_adjacent": "the checkpoint's median adjacent replacement KL (max of both directions, nats)",
    # downstream and task-calibrated pruning
    "acc_norm": "length-normalised accuracy (multiple choice)",
    "perplexity": "perplexity on the task text (LAMBADA)",
    "score": "acc_norm where lm-eval reports it, else accuracy (what the paper's downstream table reports)",
    "retention": "score relative to the unpruned model's",
    "n": "items scored",
    "calibration": "the calibration the blocks were chosen on (a task's name: that task's calibration split)",
    "calibration_kind": "task, mix (every task's calibration split) or lm (language-modelling windows)",
    "n_calibration_docs": "calibration documents",
    "split": "the task split scored",
    "n_docs": "documents (items) scored",
    # snowball construction
    "block": "block (layer index)",
    "bi": "ShortGPT block influence 1 − cos(h_in, h_out)",
    "bi_rank": "rank of the block by BI (1 = lowest, the block BI-guided pruning removes first)",
    "critical": "whether this is the constructed critical block",
    "accuracy_without_block": "task accuracy with the block removed",
    "acc_rel": "accuracy-based relevance of the block",
    "eps": "the critical block's constructed BI",
    # relevance statistics
    "n_tasks": "tasks compared",
    "n_blocks": "blocks every task defines",
    "mean_spread_relevance": "mean over blocks of the spread of the standardised relevance across tasks",
    "heterogeneity_q": "Cochran's Q of relevance across tasks",
    "heterogeneity_df": "degrees of freedom of Q",
    "heterogeneity_p": "upper-tail p-value of Q (every block equally relevant to every task)",
    "pearson_p": "one-sided permutation p-value of pearson (agreement beyond a random pairing of the blocks)",
    "outlying_layers": "compared blocks outside Tukey's fences (1.5 IQR beyond the quartiles) on either score",
    "n_without_outliers": "compared blocks that are not outlying",
    "pearson_without_outliers": "pearson over the compared blocks without the outlying ones",
    "pearson_without_outliers_paper_sign": "−pearson_without_outliers, the sign convention of the paper",
    "pearson_without_outliers_p": "one-sided permutation p-value of pearson_without_outliers",
    # disagreement of tests
    "level": "pair or block level of the two tests",
    "test_a": "first test compared",
    "test_b": "second test compared",
    "n_ratio": "pairs whose I/R ratio is defined",
    # scorecard
    "published": "the published number",
    "swapkl": "swapkl's value of the same quantity",
    "rel_diff": "relative difference (swapkl − published) / |published|",
    "setting": "the setting the number belongs to",
    "status": "how swapkl's value compares: reproduced, differs, or not run (with the reason)",
    "tolerance": "what counts as reproduced: |swapkl - published| <= max(abs A, rel R x |published|), as text",
    "chance": "misranking rates: the rate's chance level",
    "p_value": "misranking rates: the rate's permutation p-value",
    "answer": "a decision's answer (a sign, or the removed blocks)",
    "estimate": "the estimate a decision rests on",
    "low": "lower end of the estimate's interval at the stated confidence",
    "high": "upper end of the estimate's interval at the stated confidence",
    "look": ("the look of a sequential run that a decision stands at: where a sign or half-width first held, else "
             "the last"),
    "confidence": "stated confidence of the intervals",
    "state": "whether a decision holds, or is undecided",
    "subject": "what a decision is about",
    "windows": "windows a result rests on",
}

#: per table (its name under results/, without .parquet; a regex for per-model tables): column -> meaning, where
#: the column means something else there
PER_TABLE = {
    "seeds": {
        "gap_mean": "member rows: mean over pairs of the member's per-pair gap (nats)",
        "gap_fwd_mean": "member rows: mean over pairs of the member's one-direction gap (nats)",
        "d_repl_max_mean": "member rows: mean over pairs of d_repl_max (nats)",
        "d_repl_fwd_mean": "member rows: mean over pairs of d_repl_fwd (nats)",
        "d_inter_mean": "member rows: mean over pairs of d_inter (nats)",
    },
    "relevance_stats": {"reference": "the representation score compared with (cosine of BI)"},
    "decisions": {"kind": "what is decided: sign (a pair's gap), halfwidth (a pair set's mean gap) or set (a "
                          "guide's removal set at a budget)",
                  "subject": "what the decision is about: a pair i-j, a pair set, or guide@budget",
                  "state": "holds (at the stated confidence, or stability for a set) or undecided at the cap",
                  "answer": "the sign (+ or -) of the gap, or the removed blocks",
                  "estimate": "the gap, the mean gap, or the share of window resamples that pick the set",
                  "low": "lower end of the interval at the stated confidence (nats)",
                  "high": "upper end of the interval at the stated confidence (nats)",
                  "windows": "windows the decision rests on",
                  "look": ("the look (of the planned ones) the decision stands at: where a sign or half-width first "
                           "held (it is kept), else the one the run stopped at"),
                  "confidence": "stated confidence of every interval, over all looks together"},
    "jacobian": {"method": "how the spectral norm was computed (exact, or power iteration)",
                 "eps": "finite-difference step of the estimate (null: exact Jacobian-vector products)"},
    "seed003_pruning|seed003_tables": {"method": "pruning method (original = the unpruned model)"},
    "convergence": {"n": "sequences in each random subset",
                    "spearman_median": "median over draws of Spearman's rho between the subset's pair scores and "
                                       "the full set's",
                    "spearman_q05": "5th percentile over draws of that Spearman's rho",
                    "spearman_q95": "95th percentile over draws of that Spearman's rho"},
}

#: suffix rules, in order: (pattern on the name, meaning with {0} for the base column's name)
SUFFIXES = (
    (r"(.+)_ci_low", "lower end of the 95% bootstrap CI of {0}"),
    (r"(.+)_ci_high", "upper end of the 95% bootstrap CI of {0}"),
    (r"(.+)_seed_mean", "mean over seeds of {0}_mean"),
    (r"(.+)_seed_sd", "standard deviation over seeds (ddof 1) of {0}_mean"),
    (r"(.+)_seed_min", "minimum over seeds of {0}_mean"),
    (r"(.+)_seed_max", "maximum over seeds of {0}_mean"),
    (r"spearman_(.+)", "mean Spearman correlation over pairs of seeds of the per-pair {0}"),
    (r"kendall_w_(.+)", "Kendall's W of the seeds' rankings of the per-pair {0}"),
    (r"(.+)_mean", "mean over the pairs of {0}"),
    (r"(.+)_median", "median over the pairs of {0}"),
    (r"(.+)_p75", "75th percentile over the pairs of {0}"),
    (r"(.+)_max", "maximum over the pairs of {0}"),
    (r"(.+)_min", "minimum over the pairs of {0}"),
    (r"(.+)_sd", "standard deviation of {0}"),
    (r"in_(.+)", "whether the pair is in pair set {0}"),
    (r"best_i_(.+)", "{0}: first block of the pair with the lowest KL"),
    (r"best_j_(.+)", "{0}: second block of the pair with the lowest KL"),
    (r"best_kl_(.+)", "{0}: the lowest KL over the pairs (nats)"),
    (r"n_strong_(.+)", "pairs whose {0} KL is strongly swap-similar (< 0.05 nats)"),
    (r"n_conditional_(.+)", "pairs whose {0} KL is conditionally swap-similar (0.05 to 0.10 nats)"),
)


def describe(column: str, table: str | None = None) -> str:
    """The meaning of ``column`` in results table ``table`` ("" when none is known); a study kept in a folder
    declares its tables' columns (:func:`swapkl.study.column_note`)."""
    declared = column_note(table, column) if table is not None else None
    if declared is not None:
        return declared
    for pattern, notes in PER_TABLE.items():
        if table is not None and re.fullmatch(pattern, table) and column in notes:
            return notes[column]
    if column in COLUMNS:
        return COLUMNS[column]
    for pattern, meaning in SUFFIXES:
        m = re.fullmatch(pattern, column)
        if m:
            return meaning.format(m.group(1))
    return ""
