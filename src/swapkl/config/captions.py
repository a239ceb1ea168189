"""Plain words for the settings behind each figure, from the validated config (the report's captions)."""

from __future__ import annotations

from swapkl.probes.pair_sets import widest_pair_set


def describe_source(spec: dict) -> str:
    """Plain words for where a text spec's text comes from."""
    if "text_file" in spec:
        return spec["text_file"]
    if spec.get("dataset_config"):
        return f"{spec['dataset']}/{spec['dataset_config']} ({spec['split']} split)"
    return f"{spec['dataset']} ({spec['split']} split)"


def describe_windows(spec: dict) -> str:
    source = describe_source(spec)
    padding = ("; right-padded, padding counted as positions, no attention mask (the paper's compatibility mode)"
               if spec.get("padding") == "counted" else "")
    return (
        f"{spec['n_seqs']} windows of up to {spec['seq_len']} tokens (paragraphs of at least "
        f"{spec['min_tokens']} tokens, drawn with seed {spec['seed']}) from {source}{padding}"
    )


def describe_setup(cfg: dict, model: str) -> str:
    entry = cfg["models"][model]
    owner = cfg["models"][entry.get("same_weights_as", model)]
    where = owner.get("source") or owner.get("local") or owner.get("gguf") or f"demo {owner['demo']['arch']} model trained by the workflow"
    return (
        f"{model} ({where}); {describe_windows(entry['data'])}; weights in {entry['dtype']}, KL in float32; "
        f"pairs probed: {widest_pair_set(entry['pair_sets'])}; 95% bootstrap CIs over windows with "
        f"{cfg['probe']['n_boot']} resamples (seed {cfg['probe']['seed']})"
    )


def describe_text(spec: dict) -> str:
    source = describe_source(spec)
    return (
        f"perplexity on the first {spec['max_words']} words of {source}, sliding window of "
        f"{spec['window']} tokens with stride {spec['stride']}"
    )


def describe_pruning(model: dict) -> str:
    prune = model["prune"]
    return (
        f"budgets n = 1..{prune['max_budget']}, removed blocks at least {prune['spacing']} apart "
        f"(spacing Delta), {prune['n_random']} random draws per budget (seed {prune['seed']}); "
        f"{describe_text(prune['eval'])}; calibration: {describe_windows(prune['calibration'])}"
    )


def describe_demo_training(cfg: dict, demo_models: list[str]) -> str:
    corpus = cfg["demo"]["corpus"]
    parts = [
        f"{model}: {d['arch']}, {d['steps']} steps of {d['batch_size']} windows x {d['seq_len']} tokens, "
        f"peak learning rate {d['lr']}, seed {d['seed']}"
        for model, d in ((m, cfg["models"][m]["demo"]) for m in demo_models)
    ]
    return (
        "; ".join(parts) + f"; byte-level BPE tokenizer of {cfg['demo']['tokenizer']['vocab_size']} tokens; "
        f"corpus split with seed {corpus['seed']} ({corpus['valid_fraction']:.0%} valid, "
        f"{corpus['test_fraction']:.0%} test)"
    )


def describe_spans(model: dict) -> str:
    spans = model["spans"]
    return (f"{', '.join(spans['variants'])}; spans [s, L-s) with s >= {spans['min_start']} and at least "
            f"{spans['min_width']} blocks; looped parallel x{', x'.join(map(str, spans['loops']))}; shuffle seed "
            f"{spans['seed']}")


def describe_family(cfg: dict, members: dict) -> str:
    """A seed family's caption (``members``: {model: seed}, the entry first)."""
    entry = next(iter(members))
    return f"seeds {sorted(members.values())} ({', '.join(members)}); probes as {describe_setup(cfg, entry)}"
