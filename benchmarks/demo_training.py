"""Training throughput of the demo models: the previous demo settings next to those of config/demo.yaml
(prints measured figures; not a test).

    .venv/bin/python benchmarks/demo_training.py [--arch llama gpt_neox] [--threads 1] [--steps 8] [--repeats 5]

Each setting builds its 12-layer model (swapkl.demo.architectures) and times optimizer updates through
swapkl.demo.train.train_step on random token windows of the setting's batch shape (throughput does not
depend on the text). The settings are timed in turns, ``--repeats`` rounds of ``--steps`` updates each after
two warm-up updates, so a machine shared with other jobs slows all of them alike; the figures are medians
over the rounds. ``tokens/s`` counts trained tokens (batch x sequence length) per second of updates;
``s / demo training`` is the setting's number of updates at that speed (evaluations and checkpoints not
included).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import yaml

from swapkl.demo.architectures import DemoSize, demo_config, demo_model_class
from swapkl.demo.train import OPTIMIZER_BETAS, OPTIMIZER_EPS, _param_groups, make_optimizer, train_step

VOCAB = 2048


@dataclass(frozen=True)
class Setting:
    name: str
    size: DemoSize
    batch_size: int
    seq_len: int
    steps: int
    fused: bool


BEFORE_SIZE = DemoSize(num_layers=12)  # config/demo.yaml before: hidden 128, MLP 512


def settings(config: Path, arch: str) -> list[Setting]:
    """The previous demo's settings, two steps towards the current ones, and the current ones (read from the
    demo model of family ``arch`` in ``config``)."""
    demo = next(m["demo"] for m in yaml.safe_load(config.read_text())["models"].values()
                if m.get("demo", {}).get("arch") == arch)
    size = DemoSize(num_layers=demo["num_layers"], hidden_size=demo["hidden_size"],
                    intermediate_size=demo["intermediate_size"])
    return [
        # 200 updates of 16 x 64 tokens, per-parameter AdamW
        Setting("before", BEFORE_SIZE, 16, 64, 200, fused=False),
        Setting("before + fused AdamW", BEFORE_SIZE, 16, 64, 200, fused=True),
        Setting("narrow, 16 x 64, fused", size, 16, 64, 200, fused=True),
        Setting("now", size, demo["batch_size"], demo["seq_len"], demo["steps"], fused=True),
    ]


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    flags = next((ln for ln in open("/proc/cpuinfo") if ln.startswith("flags")), "")
                    extras = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f" {f}" in flags]
                    return f"{name} ({', '.join(extras)})" if extras else name
    except OSError:
        pass
    return platform.processor() or platform.machine()


def build(setting: Setting, arch: str):
    torch.manual_seed(0)
    cfg = demo_config(arch, setting.size, vocab_size=VOCAB, eos_token_id=0, pad_token_id=0)
    model = demo_model_class(arch)(cfg).float().train()
    if setting.fused:
        optimizer = make_optimizer(model, lr=1e-3, weight_decay=0.1)
    else:
        optimizer = torch.optim.AdamW(_param_groups(model, 0.1), lr=1e-3, betas=OPTIMIZER_BETAS, eps=OPTIMIZER_EPS)
    ids = torch.randint(0, VOCAB, (setting.batch_size, setting.seq_len), generator=torch.Generator().manual_seed(0))
    for _ in range(2):
        train_step(model, optimizer, ids, lr=1e-3, grad_clip=1.0)
    return model, optimizer, ids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", nargs="+", default=["llama", "gpt_neox"], choices=["gpt_neox", "llama", "qwen3"])
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the demo profile trains with 1)")
    ap.add_argument("--steps", type=int, default=8, help="updates per timed round")
    ap.add_argument("--repeats", type=int, default=5, help="timed rounds per setting")
    ap.add_argument("--config", type=Path, default=Path(__file__).resolve().parents[1] / "config" / "demo.yaml",
                    help="demo config whose settings are 'now'")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)  # as swapkl.demo.train trains
    print(f"CPU: {cpu_name()}; torch {torch.__version__}; {args.threads} thread(s); "
          f"{args.repeats} rounds of {args.steps} updates, medians")
    for arch in args.arch:
        rows = settings(args.config, arch)
        built = {s.name: build(s, arch) for s in rows}
        seconds: dict[str, list[float]] = {s.name: [] for s in rows}
        for _ in range(args.repeats):
            for s in rows:
                model, optimizer, ids = built[s.name]
                start = time.perf_counter()
                for _ in range(args.steps):
                    train_step(model, optimizer, ids, lr=1e-3, grad_clip=1.0)
                seconds[s.name].append((time.perf_counter() - start) / args.steps)
        base = rows[0]
        base_tps = base.batch_size * base.seq_len / statistics.median(seconds[base.name])
        print(f"\n{arch}, 12 layers")
        print(f"  {'setting':<24} {'hidden':>6} {'params':>9} {'tokens/update':>13} {'s/update':>9} "
              f"{'tokens/s':>9} {'ratio':>6} {'s / demo training':>18}")
        for s in rows:
            step_s = statistics.median(seconds[s.name])
            tps = s.batch_size * s.seq_len / step_s
            n_params = sum(p.numel() for p in built[s.name][0].parameters())
            print(f"  {s.name:<24} {s.size.hidden_size:>6} {n_params:>9} {s.batch_size:>4} x {s.seq_len:<6} "
                  f"{step_s:>9.4f} {tps:>9.0f} {tps / base_tps:>5.2f}x {s.steps * step_s:>11.1f} ({s.steps} upd.)")


if __name__ == "__main__":
    main()
