"""The snowball construction ("Rethinking Layer Relevance", Theorem 1) as a real LLaMA checkpoint.

Given a multiple-choice task and ``eps``, :func:`build_snowball` hand-sets the weights of a 7-block
``LlamaForCausalLM`` (with a word-level tokenizer over the task's words) that answers every document
correctly, whose block :data:`CRITICAL` has block influence ``BI = 1 - cos(h_in, h_out) = eps`` on the
task's requests -- the lowest of all blocks, so cosine/BI calls it the most removable -- and whose
accuracy drops to 0 when that block is removed. The residual stream has named parts:

* ``T``: the token's embedding (random unit vectors), ``b``: a constant 1 in every position;
* ``F``: blocks 0 and 1 attend uniformly over the prefix (zero queries and keys) and each write half
  the mean of the prefix's ``T`` vectors, so at the last context token ``F`` identifies the document;
* ``O``: the answer part written by the gates, ``z``: the snowball coordinate, ``J``: one junk
  coordinate per block.

The prediction reads only ``F + O`` (the readout is solved by least squares so that ``F`` alone gives
the *reversed* answer: gold logit ``-M``, every other token 0, at each document's last context token).

Mechanism 1, the snowball: block 2 (critical) adds a tiny ``delta`` to ``z`` (sized by bisection so that
its BI is exactly ``eps``; it is read off block 1's junk coordinate, so the update needs block 1 before it); blocks 3 and 4 multiply ``z`` by about :data:`GAIN` each; blocks 5 and 6
are SwiGLU gates ``O -= s * silu(z_hat) * F_hat`` that are exactly off when ``z = 0``. With the
critical block, ``F + O = (1 - k) F`` with ``k >= 3`` (each gate alone gives ``k >= 3``): the gold
answer wins by a margin. Without it, ``z`` stays 0, the gates and amplifiers output exactly 0, and
``F`` alone gives the reversed answer: accuracy 0.

Mechanism 2, ignored dimensions: every other block also writes a junk coordinate of its own ``J`` as
large as its input's norm (the readout ignores ``J``), so its BI is about ``1 - 1/sqrt(2) = 0.29``
whatever its real work is.

Limits: every choice must be one token (a word) and documents whose contexts hold the same words
with different answers cannot be told apart; both are refused with an error naming the document.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from swapkl.errors import SwapKLError
from swapkl.model.choice_scores import task_requests
from swapkl.tables.atomic import claim_folder, staged_dir
from swapkl.relevance.tasks import first_docs, load_task
from swapkl.progress import track

N_LAYERS = 7
CRITICAL = 2
GAIN = 30.0  # z's growth per amplifier block
GATE_MIN = 3.0  # each gate alone turns F into (1 - k) F with k at least this
MARGIN = 40.0  # least logit margin of the gold answer, in nats, at the last context token
JUNK = 1.0  # junk update norm relative to the block input's norm
MAX_EPS = 0.2  # above it the junk blocks' BI (about 0.29) would no longer all exceed eps
MANIFEST = "snowball.json"
OWNER_MARK = ".swapkl-snowball"
SPECIALS = ("<unk>", "<pad>", "<eos>")


@dataclass
class Layout:
    m: int  # width of T, F and O
    n_layers: int = N_LAYERS

    @property
    def hidden(self) -> int:
        return 3 * self.m + 2 + self.n_layers

    def T(self) -> slice:
        return slice(0, self.m)

    def F(self) -> slice:
        return slice(self.m, 2 * self.m)

    def O(self) -> slice:  # noqa: E743 (the answer part)
        return slice(2 * self.m, 3 * self.m)

    @property
    def z(self) -> int:
        return 3 * self.m

    @property
    def b(self) -> int:
        return 3 * self.m + 1

    def J(self, block: int) -> int:
        return 3 * self.m + 2 + block


def word_tokenizer(task):
    """A whitespace word-level tokenizer over every word of the task (no special tokens added on encode)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = sorted({w for d in task.docs for text in (d.context, *d.choices) for w in text.split()})
    vocab = {t: i for i, t in enumerate([*SPECIALS, *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>",
                                   clean_up_tokenization_spaces=False)


def _config(layout: Layout, vocab: int):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=vocab, hidden_size=layout.hidden, intermediate_size=layout.m + 3,
                       num_hidden_layers=layout.n_layers, num_attention_heads=1, num_key_value_heads=1,
                       head_dim=layout.m, max_position_embeddings=512, rms_norm_eps=1e-6,
                       tie_word_embeddings=False, pad_token_id=1, eos_token_id=2, bos_token_id=None)


@dataclass
class Requests:
    ids: torch.Tensor  # [n, width], right-padded
    mask: torch.Tensor
    last_context: torch.Tensor  # per request: the position that predicts its (one-token) answer
    doc: np.ndarray  # per request: its document
    token: np.ndarray  # per request: its answer token


def task_requests_tensor(task, tokenizer) -> Requests:
    reqs = task_requests(task, tokenizer, None)
    for r in reqs:
        if r.n_continuation != 1:
            raise SwapKLError(f"task {task.name!r} document {r.doc} choice {r.choice}: {r.continuation!r} is "
                              f"{r.n_continuation} tokens; the snowball construction needs one-word choices")
    width = max(len(r.tokens) for r in reqs)
    ids = torch.full((len(reqs), width), 1, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for k, r in enumerate(reqs):
        ids[k, :len(r.tokens)] = torch.tensor(r.tokens)
        mask[k, :len(r.tokens)] = 1
    return Requests(ids, mask, torch.tensor([len(r.tokens) - 2 for r in reqs]), np.array([r.doc for r in reqs]),
                    np.array([r.tokens[-1] for r in reqs]))


@torch.no_grad()
def residuals(model, req: Requests) -> list[torch.Tensor]:
    """The residual stream before each block and after the last (before the final norm), stock forward."""
    seen = []
    hooks = [layer.register_forward_pre_hook(lambda mod, args, kw: seen.append(args[0] if args else
                                                                                kw["hidden_states"]),
                                             with_kwargs=True) for layer in model.model.layers]
    hooks.append(model.model.norm.register_forward_pre_hook(lambda mod, args: seen.append(args[0])))
    try:
        model.model(input_ids=req.ids, attention_mask=req.mask, use_cache=False)  # no logits needed
    finally:
        for h in hooks:
            h.remove()
    return [s.double() for s in seen]


def block_influence(model, req: Requests) -> np.ndarray:
    """BI of every block, ``1 - cos(h_in, h_out)`` averaged over the requests' valid positions."""
    h = residuals(model, req)
    valid = req.mask.bool()
    return np.array([1.0 - float(torch.nn.functional.cosine_similarity(h[l], h[l + 1], dim=-1)[valid].mean())
                     for l in range(len(h) - 1)])


def _bisect_delta(norms: torch.Tensor, raw: torch.Tensor, eps: float) -> float:
    """The scale s with 1 - mean(|x| / sqrt(|x|^2 + (s raw)^2)) = eps (BI is increasing in s)."""
    def bi(s):
        return float(1.0 - (norms / torch.sqrt(norms ** 2 + (s * raw) ** 2)).mean())

    lo, hi = 0.0, 1.0
    while bi(hi) < eps:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if bi(mid) < eps else (lo, mid)
    return 0.5 * (lo + hi)


def _norm_in(h: torch.Tensor) -> torch.Tensor:
    """Llama's RMSNorm (weight 1) of a residual, as the block's attention and MLP see it."""
    return h / torch.sqrt((h ** 2).mean(-1, keepdim=True) + 1e-6)


@torch.no_grad()
def _set_blocks(model, lay: Layout, req: Requests, eps: float) -> dict:
    """Set every block's weights in order, measuring the residual stream before each (see the module)."""
    valid = req.mask.bool()
    at = (torch.arange(len(req.ids)), req.last_context)
    numbers = {}
    for l, layer in enumerate(track(model.model.layers, "snowball blocks", "block")):
        h = residuals(model, req)[l]
        xn = _norm_in(h)
        mlp = layer.mlp
        if l in (0, 1):  # uniform attention: half the prefix mean of T into F
            layer.self_attn.v_proj.weight[:, lay.T()] = torch.eye(lay.m)
            layer.self_attn.o_proj.weight[lay.F(), :] = 0.5 * torch.eye(lay.m) * float(h[valid].norm(dim=-1)
                                                                                       .mean() / math.sqrt(lay.hidden))
        if l == CRITICAL:  # channel 0: delta * silu(j_hat) * j_hat into z, BI = eps, where j is the junk
            # coordinate of the block before: run in another order, the critical block writes nothing
            j = lay.J(CRITICAL - 1)
            mlp.gate_proj.weight[0, j] = 1.0
            mlp.up_proj.weight[0, j] = 1.0
            raw = (torch.nn.functional.silu(xn[..., j]) * xn[..., j])[valid]
            s = _bisect_delta(h[valid].norm(dim=-1), raw, eps)
            mlp.down_proj.weight[lay.z, 0] = s
            numbers["delta_mean"] = float((s * raw).mean())
            numbers["input_norm_mean"] = float(h[valid].norm(dim=-1).mean())
            continue
        if l in (3, 4):  # channel 1: z *= about GAIN
            mlp.gate_proj.weight[1, lay.b] = 1.0
            mlp.up_proj.weight[1, lay.z] = 1.0
            unit = (torch.nn.functional.silu(xn[..., lay.b]) * xn[..., lay.z])[valid]
            z = h[..., lay.z][valid]
            mlp.down_proj.weight[lay.z, 1] = float((GAIN - 1.0) * z.abs().mean() / unit.abs().mean())
        if l in (5, 6):  # channels 2..: O -= s * silu(z_hat) * F_hat, each gate alone k >= GATE_MIN
            ch = slice(2, 2 + lay.m)
            mlp.gate_proj.weight[ch, lay.z] = 1.0
            mlp.up_proj.weight[ch, lay.F()] = torch.eye(lay.m)
            k_unit = (torch.nn.functional.silu(xn[..., lay.z]) * xn[..., lay.b] / h[..., lay.b])[at]
            # with z > 0 the gate's factor on F is s * k_unit; the positions that score the answers
            mlp.down_proj.weight[lay.O(), ch] = -torch.eye(lay.m) * float(GATE_MIN / k_unit.min())
            numbers[f"gate{l}_factor_min"] = GATE_MIN
        # junk: channel m + 2 writes silu(b_hat) b_hat into J_l, as large as the block's output without it
        out = residuals(model, req)[l + 1]
        j = lay.m + 2
        mlp.gate_proj.weight[j, lay.b] = 1.0
        mlp.up_proj.weight[j, lay.b] = 1.0
        raw = (torch.nn.functional.silu(xn[..., lay.b]) * xn[..., lay.b])[valid]  # its size, about
        mlp.down_proj.weight[lay.J(l), j] = float(JUNK * out[valid].norm(dim=-1).mean() / raw.mean())
    return numbers


@torch.no_grad()
def choice_accuracy(model, req: Requests, n_docs: int, gold: np.ndarray, drop: tuple[int, ...] = ()) -> float:
    """Accuracy (lm-eval's ``acc``) of the stock forward with the blocks ``drop`` removed: each request's
    one-token answer scored by its log-probability at the last context token."""
    layers = model.model.layers
    keep = torch.nn.ModuleList([b for i, b in enumerate(layers) if i not in drop])
    model.model.layers = keep
    try:
        logits = model(input_ids=req.ids, attention_mask=req.mask, use_cache=False).logits.double()
    finally:
        model.model.layers = layers
    lp = torch.log_softmax(logits[torch.arange(len(req.ids)), req.last_context], -1)
    score = lp[torch.arange(len(req.ids)), torch.from_numpy(req.token)].numpy()
    hits = [int(np.argmax(score[req.doc == d])) == gold[d] for d in range(n_docs)]
    return float(np.mean(hits))


@torch.no_grad()
def _set_readout(model, lay: Layout, req: Requests, task) -> None:
    """lm_head on F and O: least squares so that F alone gives logit -1 to each document's gold answer and
    0 to every other token at its last context token; then scaled so the intact margin is MARGIN."""
    first = np.array([int(np.flatnonzero(req.doc == d)[0]) for d in range(len(task.docs))])
    F = residuals(model, req)[CRITICAL][torch.from_numpy(first), req.last_context[first]][:, lay.F()]
    target = torch.zeros(len(task.docs), model.config.vocab_size, dtype=torch.float64)
    gold_tok = [int(req.token[(req.doc == d)][task.docs[d].gold]) for d in range(len(task.docs))]
    target[torch.arange(len(task.docs)), torch.tensor(gold_tok)] = -1.0
    w = torch.linalg.lstsq(F, target, driver="gelsd").solution.T  # [vocab, m]
    head = model.lm_head.weight
    head[:, lay.F()] = w.float()
    head[:, lay.O()] = w.float()
    logits = model(input_ids=req.ids, attention_mask=req.mask, use_cache=False).logits.double()
    at = logits[torch.arange(len(req.ids)), req.last_context]
    margins = []
    for d, doc in enumerate(task.docs):
        rows = np.flatnonzero(req.doc == d)
        x = at[torch.from_numpy(rows), torch.from_numpy(req.token[rows])]
        margins.append(float(x[doc.gold] - torch.cat([x[:doc.gold], x[doc.gold + 1:]]).max()))
    worst = int(np.argmin(margins))
    if margins[worst] <= 1e-6:
        raise SwapKLError(f"task {task.name!r} document {worst}: its context cannot be told apart from another "
                          "document's with a different answer (the same words); the construction needs them distinct")
    head *= MARGIN / margins[worst]


@dataclass
class Snowball:
    model: object
    tokenizer: object
    eps: float
    bi: list[float]  # per block, measured on the task's requests
    accuracy: float
    accuracy_without_critical: float
    numbers: dict

    def manifest(self, task) -> dict:
        return dict(eps=self.eps, critical_block=CRITICAL, n_layers=N_LAYERS, bi=self.bi, accuracy=self.accuracy,
                    accuracy_without_critical=self.accuracy_without_critical, gain=GAIN, gate_min=GATE_MIN,
                    margin=MARGIN, junk=JUNK, task=task.name, task_yaml=task.yaml_path, n_docs=len(task.docs),
                    random_baseline=task.random_baseline, **self.numbers)


def build_snowball(task, eps: float, *, seed: int = 0) -> Snowball:
    """The Theorem 1 model for ``task`` (see the module); checked before it is returned."""
    from transformers import LlamaForCausalLM

    if not 0.0 < eps <= MAX_EPS or not math.isfinite(eps):
        raise SwapKLError(f"eps {eps} must lie in (0, {MAX_EPS}]: the other blocks' BI is about 0.29")
    tokenizer = word_tokenizer(task)
    req = task_requests_tensor(task, tokenizer)
    lay = Layout(m=len(task.docs) + 16)
    model = LlamaForCausalLM(_config(lay, len(tokenizer))).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.ones_like(p) if name.endswith("norm.weight") else torch.zeros_like(p))
        g = torch.Generator().manual_seed(seed)
        emb = torch.randn(len(tokenizer), lay.m, generator=g, dtype=torch.float64)
        model.model.embed_tokens.weight[:, lay.T()] = (emb / emb.norm(dim=1, keepdim=True)).float()
        model.model.embed_tokens.weight[:, lay.b] = 1.0
    numbers = _set_blocks(model, lay, req, eps)
    _set_readout(model, lay, req, task)
    gold = np.array([d.gold for d in task.docs])
    snow = Snowball(model, tokenizer, eps, block_influence(model, req).tolist(),
                    choice_accuracy(model, req, len(task.docs), gold),
                    choice_accuracy(model, req, len(task.docs), gold, (CRITICAL,)), numbers)
    others = [b for i, b in enumerate(snow.bi) if i != CRITICAL]
    if snow.accuracy != 1.0 or snow.accuracy_without_critical != 0.0 or min(others) <= snow.bi[CRITICAL] \
            or abs(snow.bi[CRITICAL] - eps) > 1e-4 * eps + 1e-9:
        raise SwapKLError(f"the snowball construction failed its own check on task {task.name!r}: accuracy "
                          f"{snow.accuracy}, without block {CRITICAL} {snow.accuracy_without_critical}, BI {snow.bi}")
    return snow


def save_snowball(snow: Snowball, task, out: str) -> None:
    """Save the checkpoint (safetensors, tokenizer, ``snowball.json``) into the new or own folder ``out``."""
    out_dir = Path(out)
    claim_folder(out_dir, OWNER_MARK)  # refuses a folder with files swapkl did not write
    with staged_dir(out_dir) as tmp:
        snow.model.save_pretrained(tmp, safe_serialization=True)
        snow.tokenizer.save_pretrained(tmp)
        (tmp / MANIFEST).write_text(json.dumps(snow.manifest(task), indent=2, sort_keys=True) + "\n")
        (tmp / OWNER_MARK).touch()


def construct(task_file: str, eps: float, out: str, *, seed: int = 0, max_docs: int | None = None) -> dict:
    """Build the snowball model for the task in ``task_file`` (its first ``max_docs`` documents) and save it to
    ``out``; return its manifest."""
    out_dir = Path(out)
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / OWNER_MARK).is_file():
        raise SwapKLError(f"refusing to write into {out}: it holds files that swapkl construct did not write; "
                          "give an empty or new folder")
    task = first_docs(load_task(task_file), max_docs)
    snow = build_snowball(task, eps, seed=seed)
    save_snowball(snow, task, out)
    return snow.manifest(task)
