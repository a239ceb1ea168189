"""Speed and memory of the probe engine against the naive reference (prints measured figures).

Not a test: run it by hand and read the numbers.

    .venv/bin/python benchmarks/bench_engine.py                       # the default CPU shape
    .venv/bin/python benchmarks/bench_engine.py --device cuda --shape pythia-1.4b --pairs adjacent

Sections:
1. float32 engine vs the naive reference (stock transformers forward on a reordered
   ``nn.ModuleList``, KL from the full logits), same model, tokens and dtype, timed side by
   side in one run (median of ``--repeats``), with peak memory (CPU: ru_maxrss growth in a
   fresh subprocess; CUDA: torch.cuda.max_memory_allocated), the theoretical bound from
   counted layer evaluations, and max |KL diff| against the float64 reference of the tests.
2. ``--dtype bfloat16`` engine vs the float32 naive reference: speed, KL relative to the
   float32 engine, and the top-10 pair ranking.
3. Chunking: peak memory of unembedding + KL (base targets and one variant) at N and 2N tokens.
4. (CUDA) throughput and model-FLOPs utilisation.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the naive reference lives with the tests

import naive_reference as ref  # noqa: E402

from swapkl.model.engine import ProbeEngine  # noqa: E402
from swapkl.model.kl import Unembedding, base_targets, kl_and_nll  # noqa: E402
from swapkl.probes.protocols import build_variants  # noqa: E402

SHAPES = {
    "issue": dict(layers=12, hidden=256, heads=8, vocab=8192, intermediate=1024),
    "pythia-1.4b": dict(layers=24, hidden=2048, heads=16, vocab=50304, intermediate=8192),
}
PROTOCOLS = ["replacement", "interchange", "deletion"]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


# -- setup ------------------------------------------------------------------------------------

def build_model(a, dtype: torch.dtype):
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(a.seed)
    cfg = GPTNeoXConfig(vocab_size=a.vocab, hidden_size=a.hidden, num_hidden_layers=a.layers,
                        num_attention_heads=a.heads, intermediate_size=a.intermediate,
                        max_position_embeddings=max(2048, a.seq_len), rotary_pct=0.25, use_parallel_residual=True,
                        tie_word_embeddings=False, initializer_range=a.init)
    model = GPTNeoXForCausalLM(cfg).eval()
    with torch.no_grad():  # non-trivial norms and biases, as in tests/tiny_models.py
        for p in model.parameters():
            if p.ndim == 1:
                p.add_(0.1 * torch.randn_like(p))
    return model.to(device=a.device, dtype=dtype)


def tokens(a):
    g = torch.Generator().manual_seed(a.seed + 1)
    ids = torch.randint(0, a.vocab, (a.n_seqs, a.seq_len), generator=g)
    return ids.to(a.device), torch.ones_like(ids).to(a.device)


def sync(a):
    if a.device.startswith("cuda"):
        torch.cuda.synchronize()


def ref_order(v, n_layers):
    if v.protocol == "replacement":
        return ref.replacement_order(v.layer_i, v.layer_j, n_layers)
    if v.protocol == "interchange":
        return ref.interchange_order(v.layer_i, v.layer_j, n_layers)
    return ref.deletion_order(v.layer_i, n_layers)


# -- the two implementations ----------------------------------------------------------------

def run_engine(model, ids, mask, variants, a) -> dict[str, torch.Tensor]:
    """Per-sequence mean KL of every variant, batch by batch as run_probe does."""
    engine = ProbeEngine(model, chunk_tokens=a.chunk_tokens)
    out: dict[str, list[torch.Tensor]] = {v.key: [] for v in variants}
    planned = engine.plan(variants) if a.share else variants
    for lo in range(0, ids.shape[0], a.batch_size):
        state = engine.base_pass(ids[lo : lo + a.batch_size], mask[lo : lo + a.batch_size])
        engine.base_seq_stats(state)
        for v in planned:
            s = engine.variant_seq_stats(state, v)
            out[v.key].append((s.kl_sum / s.tokens).cpu())
        del state
    run_engine.layer_evals = engine.layer_evals
    return {k: torch.cat(x) for k, x in out.items()}


@torch.inference_mode()
def run_naive(model, ids, mask, variants, a, float64: bool = False) -> dict[str, torch.Tensor]:
    """Stock forward of every reordered model and KL from the full logits.

    Timed version: KL in float32 (the cheapest textbook form); ``float64=True`` is the
    tests' reference (tests/naive_reference.py), used for accuracy only.
    """
    n_layers = len(ref.block_list(model))
    out: dict[str, list[torch.Tensor]] = {v.key: [] for v in variants}
    for lo in range(0, ids.shape[0], a.batch_size):
        x, m = ids[lo : lo + a.batch_size], mask[lo : lo + a.batch_size]
        base = ref.logits(model, x, m)
        if float64:
            for v in variants:
                out[v.key].append(ref.per_sequence(model, x, m, ref_order(v, n_layers), base).kl_mean.cpu())
            continue
        lp = torch.log_softmax(base.float(), dim=-1)
        p = lp.exp()
        neg = (p * lp).sum(-1)
        for v in variants:
            z = ref.logits(model, x, m, ref_order(v, n_layers)).float()
            kl = neg - (p * torch.log_softmax(z, dim=-1)).sum(-1)
            if v.protocol == "deletion":  # the NLL the engine also reports for deletion
                (torch.logsumexp(z[:, :-1], -1) - z[:, :-1].gather(-1, x[:, 1:, None])[..., 0]).mean()
            out[v.key].append(((kl * m).sum(1) / m.sum(1)).double().cpu())
    return {k: torch.cat(x) for k, x in out.items()}


# -- counting ---------------------------------------------------------------------------------

def layer_flops(a) -> float:
    """Forward FLOPs of one GPT-NeoX block per token: QKV + out + MLP matmuls and attention."""
    d, f, t = a.hidden, a.intermediate, a.seq_len
    return 2 * (4 * d * d + 2 * d * f) + 4 * t * d


def unembed_flops(a) -> float:
    return 2 * a.hidden * a.vocab


def _lcp(a, b) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def counts(variants, n_layers: int, n_batches: int) -> dict:
    """Block evaluations and unembeddings of both implementations (per run, all batches)."""
    first = {v.key: v.first_changed_slot(n_layers) for v in variants}
    resume_layers = n_layers + sum(len(v.order) - first[v.key] for v in variants)
    # with sharing: in lexicographic order of block orders each variant also skips the prefix it shares
    # with the variant before it (when that is longer than its own unchanged prefix)
    ordered = sorted(variants, key=lambda v: v.order)
    shared_layers = n_layers + sum(
        len(v.order) - max(first[v.key], _lcp(v.order, prev.order) if prev is not None else 0)
        for prev, v in zip([None] + ordered[:-1], ordered))
    naive_layers = n_layers + sum(len(v.order) for v in variants)
    # engine: base = logits for targets + p @ W (same FLOPs) + logits for the base NLL; 1 per variant
    eng_unemb = 3 + len(variants)
    naive_unemb = 1 + len(variants)
    return {k: n_batches * v for k, v in dict(resume_layers=resume_layers, shared_layers=shared_layers,
                                                 naive_layers=naive_layers, eng_unemb=eng_unemb,
                                                 naive_unemb=naive_unemb).items()}


# -- memory in a fresh subprocess -----------------------------------------------------------------

def _status_mib(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    raise KeyError(field)


class PeakRSS:
    """Growth of the resident set over its size at the start (Linux: the peak is reset first)."""

    def __enter__(self):
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM, the peak resident size
            self.start = _status_mib("VmRSS")
            self.read = lambda: _status_mib("VmHWM")
        except OSError:  # no /proc: ru_maxrss cannot be reset, so earlier peaks may hide this one
            self.read = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
            self.start = self.read()
        return self

    def __exit__(self, *exc):
        self.growth = self.read() - self.start


def child(a) -> None:
    """One measurement in this fresh process; prints a JSON line."""
    if a.child == "kl":
        g = torch.Generator().manual_seed(0)
        w = torch.randn(a.vocab, a.hidden, generator=g) * 0.05
        h = torch.randn(a.kl_tokens, a.hidden, generator=g)
        labels = torch.randint(0, a.vocab, (a.kl_tokens,), generator=g)
        unemb = Unembedding(w, None)
        h2 = h + 0.1
        with PeakRSS() as peak:
            t = base_targets(unemb, h, labels, a.chunk_tokens)
            kl_and_nll(unemb, h2, t, a.chunk_tokens)
        print(json.dumps({"peak_growth_mib": peak.growth}))
        return
    dtype = DTYPES[a.dtype]
    model = build_model(a, dtype)
    ids, mask = tokens(a)
    # peak memory does not grow with the number of variants: a few of each protocol are enough
    variants = build_variants(PROTOCOLS, a.pairs, a.layers)
    variants = [v for v in variants if v.layer_i in (0, a.layers - 1)][:8]
    if a.device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    with PeakRSS() as peak:
        (run_engine if a.child == "engine" else run_naive)(model, ids, mask, variants, a)
    res = {"peak_growth_mib": peak.growth}
    if a.device.startswith("cuda"):
        torch.cuda.synchronize()
        res["cuda_peak_mib"] = (torch.cuda.max_memory_allocated() - base) / 2**20
    print(json.dumps(res))


def measure_child(a, what: str, **over) -> dict:
    args = [sys.executable, __file__, "--child", what]
    for k, v in {**vars(a), **over}.items():
        if k in ("child", "shape") or v is None or isinstance(v, bool):
            continue
        args += [f"--{k.replace('_', '-')}", str(v)]
    if not a.share:
        args.append("--no-share")
    r = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


# -- report ---------------------------------------------------------------------------------------

def timed(fn, a):
    sync(a)
    t0 = time.perf_counter()
    res = fn()
    sync(a)
    return time.perf_counter() - t0, res


def d_repl_ranking(kl: dict[str, torch.Tensor], k: int = 10) -> list[str]:
    means = {key: float(v.mean()) for key, v in kl.items()}
    d = {}
    for key, m in means.items():
        proto, i, j = key.split(":")
        if proto == "replacement":
            pair = tuple(sorted((int(i), int(j))))
            d[pair] = max(d.get(pair, 0.0), m)
    return [f"{i}-{j}" for (i, j), _ in sorted(d.items(), key=lambda kv: -kv[1])[:k]]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", choices=sorted(SHAPES), default="issue", help="preset model shape")
    for k in ("layers", "hidden", "heads", "vocab", "intermediate"):
        p.add_argument(f"--{k}", type=int, help=f"override the preset's {k}")
    p.add_argument("--n-seqs", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=None, help="default: all sequences in one batch")
    p.add_argument("--pairs", default="all")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="bfloat16", help="dtype of the low-precision engine run (section 2)")
    p.add_argument("--chunk-tokens", type=int, default=2048)
    p.add_argument("--kl-tokens", type=int, default=4096, help="N of the chunking check (N and 2N)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--init", type=float, default=0.05,
                   help="initializer_range; 0.05 gives per-variant KL of about 0.03-0.4 nats at the issue shape")
    p.add_argument("--check-variants", type=int, default=24,
                   help="variants compared with the (slow) float64 reference (spread over all protocols)")
    p.add_argument("--low-pairs", default=None, help="pair set of section 2 (default: --pairs)")
    p.add_argument("--low-repeats", type=int, default=None, help="repeats of section 2 (default: --repeats)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--peak-tflops", type=float, default=0.0, help="accelerator peak for MFU (default: guess)")
    p.add_argument("--no-share", dest="share", action="store_false",
                   help="compute variants in build order, without prefix sharing (the engine before ProbeEngine.plan)")
    p.add_argument("--skip-bf16", action="store_true")
    p.add_argument("--skip-memory", action="store_true")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    for k, v in SHAPES[a.shape].items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    a.batch_size = a.batch_size or a.n_seqs
    a.low_pairs = a.low_pairs or a.pairs
    a.low_repeats = a.low_repeats or a.repeats
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.child:
        return child(a)

    variants = build_variants(PROTOCOLS, a.pairs, a.layers)
    n_batches = -(-a.n_seqs // a.batch_size)
    cuda = a.device.startswith("cuda")
    cap = "cuda" if cuda else torch.backends.cpu.get_cpu_capability()
    print(f"# swapkl engine benchmark  torch {torch.__version__}  threads {torch.get_num_threads()}  "
          f"device {a.device} ({cap})")
    print(f"# load before (uptime): {os.popen('uptime').read().strip()}")
    print(f"shape: GPT-NeoX L={a.layers} d={a.hidden} heads={a.heads} ffn={a.intermediate} V={a.vocab} "
          f"init={a.init}; tokens {a.n_seqs}x{a.seq_len} (batch {a.batch_size}); pairs={a.pairs}: {len(variants)} "
          f"variants (replacement both directions + interchange + deletion); chunk_tokens={a.chunk_tokens}")

    model = build_model(a, torch.float32)
    ids, mask = tokens(a)
    short = variants[:2]  # warm-up: first calls allocate and pick kernels
    run_engine(model, ids, mask, short, a)
    run_naive(model, ids, mask, short, a)

    # -- 1. float32 -------------------------------------------------------------------------------
    t_eng, t_naive = [], []
    for r in range(a.repeats):
        dt, naive = timed(lambda: run_naive(model, ids, mask, variants, a), a)
        t_naive.append(dt)
        dt, eng = timed(lambda: run_engine(model, ids, mask, variants, a), a)
        t_eng.append(dt)
        eng_layer_evals = run_engine.layer_evals
        print(f"  repeat {r + 1}: naive fp32 {t_naive[-1]:.2f} s   engine fp32 {t_eng[-1]:.2f} s", flush=True)
    med_e, med_n = statistics.median(t_eng), statistics.median(t_naive)

    c = counts(variants, a.layers, n_batches)
    c["eng_layers"] = c["shared_layers"] if a.share else c["resume_layers"]
    assert c["eng_layers"] == eng_layer_evals, (c, eng_layer_evals)
    u = unembed_flops(a) / layer_flops(a)

    def bound_of(layers):
        return (c["naive_layers"] + u * c["naive_unemb"]) / (layers + u * c["eng_unemb"])

    step = max(1, len(variants) // a.check_variants)
    check = variants[::step] + [v for v in variants if v.protocol == "deletion" and v.layer_i in (0, a.layers - 1)]
    check = list({v.key: v for v in check}.values())
    ref64 = run_naive(model, ids, mask, check, a, float64=True)
    diff = max(float((eng[k] - ref64[k]).abs().max()) for k in ref64)
    rel = max(float(((eng[k] - ref64[k]).abs() / ref64[k].abs()).max()) for k in ref64)
    diff_naive32 = max(float((naive[k] - ref64[k]).abs().max()) for k in ref64)
    kl_min = min(float(v.min()) for v in eng.values())
    kl_max = max(float(v.max()) for v in eng.values())
    diff_all = max(float((eng[k] - naive[k]).abs().max()) for k in eng)
    rel_all = max(float(((eng[k] - naive[k]).abs() / naive[k].abs()).max()) for k in eng)

    print("\n## 1. float32: engine vs naive reference (same model, tokens, dtype)")
    print(f"wall time (median of {a.repeats}): engine {med_e:.2f} s   naive {med_n:.2f} s   "
          f"ratio naive/engine {med_n / med_e:.2f}x")
    print(f"layer evaluations: naive {c['naive_layers']}; engine resuming at the first changed slot "
          f"{c['resume_layers']} ({c['resume_layers'] / c['naive_layers']:.1%} of naive); with shared prefixes "
          f"{c['shared_layers']} ({c['shared_layers'] / c['naive_layers']:.1%}); this run: {c['eng_layers']}")
    print(f"unembeddings: engine {c['eng_unemb']} (base: logits, p@W, NLL; +1 per variant)  naive {c['naive_unemb']};"
          f" one unembedding = {u:.2f} layer-equivalents (FLOPs)")
    print(f"bound = naive/engine (layers + unembeddings, FLOPs-weighted): "
          f"resume-only {bound_of(c['resume_layers']):.2f}x"
          f" (layers only {c['naive_layers'] / c['resume_layers']:.2f}x); with shared prefixes "
          f"{bound_of(c['shared_layers']):.2f}x (layers only {c['naive_layers'] / c['shared_layers']:.2f}x)")
    print(f"per-sequence KL range {kl_min:.3g} .. {kl_max:.3g} nats")
    print(f"max |KL diff| engine vs float64 reference ({len(check)} variants x {a.n_seqs} seqs): {diff:.3g} nats, "
          f"max relative {rel:.3g}  (float32 naive vs reference: {diff_naive32:.3g} nats)")
    print(f"max |KL diff| engine vs float32 naive (all {len(variants)} variants x {a.n_seqs} seqs): "
          f"{diff_all:.3g} nats, "
          f"max relative {rel_all:.3g}")
    key = "cuda_peak_mib" if cuda else "peak_growth_mib"
    what = "torch.cuda.max_memory_allocated" if cuda else "peak RSS growth during the run, fresh process"
    if not a.skip_memory:
        me = measure_child(a, "engine", dtype="float32")
        mn = measure_child(a, "naive", dtype="float32")
        print(f"peak memory ({what}): engine {me[key]:.0f} MiB   naive {mn[key]:.0f} MiB")

    # -- 2. low precision ---------------------------------------------------------------------------
    if not a.skip_bf16:
        low = build_model(a, DTYPES[a.dtype])
        low_variants = build_variants(PROTOCOLS, a.low_pairs, a.layers)
        run_engine(low, ids, mask, short, a)
        t_low, t_naive2 = [], []
        for r in range(a.low_repeats):
            if a.low_pairs == a.pairs and r < len(t_naive):
                t_naive2.append(t_naive[r])  # the same naive run, already timed above in this process
            else:
                dt, _ = timed(lambda: run_naive(model, ids, mask, low_variants, a), a)
                t_naive2.append(dt)
            dt, eng_low = timed(lambda: run_engine(low, ids, mask, low_variants, a), a)
            t_low.append(dt)
            print(f"  repeat {r + 1}: naive fp32 {t_naive2[-1]:.2f} s   engine {a.dtype} {t_low[-1]:.2f} s", flush=True)
        med_l, med_n2 = statistics.median(t_low), statistics.median(t_naive2)
        if a.low_pairs == a.pairs:
            med_e2 = med_e
        else:
            med_e2, _ = timed(lambda: run_engine(model, ids, mask, low_variants, a), a)
        eng32 = {k: eng[k] for k in eng_low}
        rel_low = max(abs((eng_low[k].mean() / eng32[k].mean() - 1).item()) for k in eng_low)
        worst_seq = max(float(((eng_low[k] - eng32[k]).abs() / eng32[k]).max()) for k in eng_low)
        top_f, top_l = d_repl_ranking(eng32), d_repl_ranking(eng_low)
        print(f"\n## 2. engine with {a.dtype} weights (float32 KL) vs float32 naive reference; pairs={a.low_pairs}: "
              f"{len(low_variants)} variants")
        print(f"wall time (median of {a.low_repeats}): engine {a.dtype} {med_l:.2f} s   naive fp32 {med_n2:.2f} s   "
              f"ratio {med_n2 / med_l:.2f}x   (engine fp32 {med_e2:.2f} s: {a.dtype} is "
              f"{med_e2 / med_l:.2f}x its speed)")
        print(f"KL {a.dtype} vs float32 engine: per-variant mean max |relative diff| {rel_low:.2%}; "
              f"per sequence {worst_seq:.2%}")
        print(f"top-10 pairs by d_repl  float32:  {' '.join(top_f)}")
        print(f"                        {a.dtype}: {' '.join(top_l)}   same ranking: {top_f == top_l}")
        if not a.skip_memory:
            ml = measure_child(a, "engine", dtype=a.dtype)
            print(f"peak memory engine {a.dtype} ({what}): {ml[key]:.0f} MiB")

    # -- 3. chunking ----------------------------------------------------------------------------------
    if not a.skip_memory and not cuda:
        n = a.kl_tokens
        rows = []
        for chunk in (a.chunk_tokens, 10**9):
            rows.append([measure_child(a, "kl", kl_tokens=t, chunk_tokens=chunk)["peak_growth_mib"]
                         for t in (n, 2 * n)])
        print(f"\n## 3. chunking: peak memory growth of unembedding + KL (base targets + one variant), V={a.vocab}, "
              f"d={a.hidden}")
        print(f"chunk {a.chunk_tokens}: {n} tokens {rows[0][0]:.0f} MiB, {2 * n} tokens {rows[0][1]:.0f} MiB  "
              f"(x{rows[0][1] / max(rows[0][0], 1e-9):.2f})")
        print(f"unchunked, for comparison: {n} tokens {rows[1][0]:.0f} MiB, {2 * n} tokens {rows[1][1]:.0f} MiB  "
              f"(x{rows[1][1] / max(rows[1][0], 1e-9):.2f})")
        print(f"([tokens x vocab] in float32: {n * a.vocab * 4 / 2**20:.0f} / {2 * n * a.vocab * 4 / 2**20:.0f} MiB)")

    # -- 4. accelerator throughput ------------------------------------------------------------------------
    if cuda and not a.skip_bf16:
        lc = counts(low_variants, a.layers, n_batches)
        lc["eng_layers"] = lc["shared_layers"] if a.share else lc["resume_layers"]
        tok = a.n_seqs * a.seq_len
        flops = tok * (lc["eng_layers"] * layer_flops(a) + lc["eng_unemb"] * unembed_flops(a)) / n_batches
        peak = a.peak_tflops or _guess_peak_tflops()
        print(f"\n## 4. {a.dtype} throughput on {torch.cuda.get_device_name()}")
        print(f"{len(low_variants) * tok / med_l:,.0f} variant-tokens/s; {flops / med_l / 1e12:.1f} TFLOP/s of model "
              f"FLOPs; MFU {flops / med_l / 1e12 / peak:.1%} of {peak:.0f} TFLOP/s (unembedding counted at its "
              f"float32 cost as bf16 FLOPs)")
    print(f"\n# load after (uptime): {os.popen('uptime').read().strip()}")


def _guess_peak_tflops() -> float:
    name = torch.cuda.get_device_name()
    for key, tf in (("H200", 989.0), ("H100", 989.0), ("A100", 312.0), ("L4", 121.0)):
        if key in name:
            return tf
    return float("nan")


if __name__ == "__main__":
    main()
