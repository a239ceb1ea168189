"""The probe engine: one cached base pass per batch, then every variant resumes from
the first slot it changes.

Nothing before that slot is recomputed, no weights are copied (a moved block is the
same module object called at another slot), and the unembedding + KL run in token
chunks (see :mod:`swapkl.model.kl`).

Variants that agree beyond their first changed slot share that work too. Replacement
``M_{i<-j}`` and interchange ``M_{i<->j}`` (i<j) run the same blocks at slots i..j-1 (block j,
then i+1..j-1), and deletion ``M_{-i}`` shares slot i with ``M_{i<-i+1}``. After
:meth:`ProbeEngine.plan` has put the variants in lexicographic order of their block orders
(where such variants are neighbours), computing a variant keeps the one residual stream the
next planned variant can resume from. The shared stream is the very tensor the next variant
would recompute (same blocks, slots, inputs), so the numbers are bit-identical.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from swapkl.adapters import BlockContext, get_adapter
from swapkl.errors import SwapKLError
from swapkl.model.kl import BaseTargets, Unembedding, base_targets, kl_and_nll, last_positions
from swapkl.model.kl_options import KLOptions
from swapkl.options import require_int
from swapkl.model.variant import Variant
from swapkl.model.heads import head_swapped_block
from swapkl.model.merge import averaged_block
from swapkl.model.sublayers import sublayer_skipped_block, sublayer_swapped_block


#: ids of blocks added with add_block start below every id a variant's recipe uses (swapkl.probes.protocols)
_FIRST_ADDED = 2**40


@dataclass
class BatchState:
    """Everything a batch's variants need from the base pass."""

    residuals: list[torch.Tensor]  # residuals[s]: stream entering slot s; residuals[L]: before final norm
    ctx: BlockContext
    valid: torch.Tensor  # [B, T] bool
    token_seq: torch.Tensor  # [N] sequence index of each valid token
    n_seqs: int
    targets: BaseTargets
    base_nll: torch.Tensor  # [N] float64
    kl_counted: torch.Tensor | None = None  # [N] bool: the valid tokens whose KL counts (None: all of them)


@dataclass
class _Carry:
    """The stream entering ``slot`` of a variant whose blocks at slots < ``slot`` were ``prefix``."""

    state: BatchState
    slot: int
    prefix: tuple[int, ...]
    h: torch.Tensor


@dataclass
class SeqStats:
    """Per-sequence sums over valid positions (float64 numpy-ready tensors)."""

    kl_sum: torch.Tensor
    tokens: torch.Tensor
    nll_sum: torch.Tensor
    nll_tokens: torch.Tensor


def _where_non_finite(residuals: list[torch.Tensor], valid: torch.Tensor) -> str:
    """Where the base residual stream (valid positions) first stops being finite."""
    for slot, h in enumerate(residuals):
        if not bool(torch.isfinite(h[valid.to(h.device)]).all()):
            return ("the embeddings are non-finite" if slot == 0
                    else f"the residual stream is first non-finite after block {slot - 1}")
    return "the residual stream is finite, the final norm or unembedding overflows"


class ProbeEngine:
    """``kl``: which positions' KL count and whether it is clamped at 0 (:class:`swapkl.model.kl_options.KLOptions`; its
    ``average`` is the caller's business: the engine returns per-sequence sums and counts). ``logits_dtype``:
    ``float32`` (clean) or ``bfloat16`` (the float32 logits rounded to bf16 before every softmax: KL, NLL and
    perplexity alike, as the paper's JAX forwards did; :mod:`swapkl.model.kl`)."""

    def __init__(self, model, *, chunk_tokens: int = 2048, kl: KLOptions | None = None,
                 logits_dtype: str = "float32"):
        require_int("chunk_tokens", chunk_tokens, 1)
        self.kl = kl or KLOptions()
        self.model = model.eval()
        self.adapter = get_adapter(model)
        self.n_layers = self.adapter.n_layers
        self.unemb = Unembedding.from_head(self.adapter.head, logits_dtype)
        self.chunk_tokens = int(chunk_tokens)
        self.layer_evals = 0  # number of block evaluations so far (for benchmarks)
        self._successor: dict[tuple[int, ...], tuple[int, ...]] = {}  # planned order -> next planned order
        self._carry: _Carry | None = None

    def add_block(self, module) -> int:
        """Register a block built outside the model (:mod:`swapkl.model.merge`); variants name it by the returned
        negative id in their block order."""
        extra = self.adapter.extra_blocks
        block = min(extra, default=-_FIRST_ADDED) - 1
        extra[block] = module
        return block

    def drop_block(self, block: int) -> None:
        self.adapter.extra_blocks.pop(block, None)
        self._carry = None

    def plan(self, variants: list[Variant]) -> list[Variant]:
        """The variants in the order to compute them so that neighbours share the most work.

        Computing them in this order (any subset, any batch) lets each variant leave behind the
        stream its successor resumes from; other orders are still exact, just without sharing.
        """
        return [variants[k] for k in self.plan_indices(variants)]

    def plan_indices(self, variants: list[Variant]) -> list[int]:
        """:meth:`plan` as positions in ``variants`` (callers that tell equal variants apart by position)."""
        ks = sorted(range(len(variants)), key=lambda k: variants[k].order)
        ordered = [variants[k].order for k in ks]
        self._successor = {a: b for a, b in zip(ordered, ordered[1:]) if a != b}
        return ks

    @torch.inference_mode()
    def base_pass(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, targets: bool = True) -> BatchState:
        """Run the base model and cache the stream entering every slot.

        ``targets=False`` skips the base distribution's summaries and NLL (their fields are None; the
        labels are still there): callers that score accuracy instead of KL need no unembedding here.
        """
        a = self.adapter
        self._carry = None  # a new batch: nothing carried over from the previous one
        h, ctx = a.prepare(input_ids, attention_mask)
        residuals = [h]
        for slot in range(self.n_layers):
            h = a.run_block(slot, slot, h, ctx)
            residuals.append(h)
        self.layer_evals += self.n_layers
        valid = attention_mask.bool()
        # next-token labels: position t predicts token t+1 when that position is valid
        nxt = torch.full_like(input_ids, -1)
        nxt[:, :-1] = torch.where(valid[:, 1:], input_ids[:, 1:], torch.full_like(input_ids[:, 1:], -1))
        labels = nxt[valid].to(self.unemb.device)
        token_seq = torch.arange(input_ids.shape[0], device=input_ids.device).unsqueeze(1).expand_as(input_ids)[valid]
        counted = last_positions(valid)[valid] if self.kl.positions == "last" else None
        if not targets:
            return BatchState(residuals, ctx, valid, token_seq, input_ids.shape[0],
                              BaseTargets(None, None, None, labels), None, counted)
        hf = self.final_normed(h, valid)
        base = base_targets(self.unemb, hf, labels, self.chunk_tokens)
        _, base_nll = kl_and_nll(self.unemb, hf, base, self.chunk_tokens)
        if not torch.isfinite(base.negent).all():
            raise SwapKLError(f"the base model produced non-finite logits: {_where_non_finite(residuals, valid)}")
        return BatchState(residuals, ctx, valid, token_seq, input_ids.shape[0], base, base_nll, counted)

    @contextlib.contextmanager
    def variant_blocks(self, variant: Variant):
        """The blocks a weight-changing variant runs, built from the model's blocks, registered under the
        variant's ids while inside and freed on leaving (one variant's blocks alive at a time)."""
        blocks = self.adapter.blocks
        try:
            for bid, recipe in variant.blocks:
                if recipe[0] == "average":
                    module = averaged_block(blocks[recipe[1]], blocks[recipe[2]])
                elif recipe[0] == "head":
                    module = head_swapped_block(blocks[recipe[1]], blocks[recipe[2]], self.adapter.config, recipe[3])
                elif recipe[0] == "sublayer":
                    module = sublayer_swapped_block(blocks[recipe[1]], blocks[recipe[2]], self.adapter, recipe[3])
                else:
                    module = sublayer_skipped_block(blocks[recipe[1]], self.adapter, recipe[2])
                self.adapter.extra_blocks[bid] = module
            yield
        finally:
            for bid, _ in variant.blocks:
                self.adapter.extra_blocks.pop(bid, None)

    @torch.inference_mode()
    def final_hidden(self, state: BatchState, variant: Variant) -> torch.Tensor:
        """Residual stream after the last block of ``variant`` (before the final norm)."""
        if variant.blocks:
            with self.variant_blocks(variant):
                return self._final_hidden(state, variant)
        return self._final_hidden(state, variant)

    def _final_hidden(self, state: BatchState, variant: Variant) -> torch.Tensor:
        order = variant.order
        start = variant.first_changed_slot(self.n_layers)
        h = state.residuals[start]
        carry, self._carry = self._carry, None
        if carry is not None and carry.state is state and carry.slot > start and order[: carry.slot] == carry.prefix:
            start, h = carry.slot, carry.h  # the previous variant ran exactly these blocks at these slots
        keep = self._keep_slot(order)
        for slot in range(start, len(order)):
            if slot == keep:
                self._carry = _Carry(state, slot, order[:slot], h)
            h = self.adapter.run_block(order[slot], slot, h, state.ctx)
        if keep == len(order):
            self._carry = _Carry(state, keep, order, h)
        self.layer_evals += len(order) - start
        return h

    def _keep_slot(self, order: tuple[int, ...]) -> int | None:
        """Slot whose incoming stream the planned successor of ``order`` can resume from, if any."""
        nxt = self._successor.get(order)
        if nxt is None:
            return None
        shared = 0
        for a, b in zip(order, nxt):
            if a != b:
                break
            shared += 1
        first = next((k for k, b in enumerate(nxt) if b != k), min(len(nxt), self.n_layers))
        return shared if shared > first else None

    @torch.inference_mode()
    def token_stats(self, state: BatchState, variant: Variant) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-valid-token KL and NLL of a variant (float64)."""
        return self.hidden_stats(state, self.final_hidden(state, variant), variant.key)

    @torch.inference_mode()
    def hidden_stats(self, state: BatchState, h: torch.Tensor, key: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-valid-token KL and NLL (float64) of the stream ``h`` after the last block of the variant ``key``."""
        hv = self.final_normed(h, state.valid)
        kl, nll = kl_and_nll(self.unemb, hv, state.targets, self.chunk_tokens)
        if not torch.isfinite(kl).all():
            raise SwapKLError(f"variant {key} produced non-finite logits")
        if self.kl.clamp:
            kl = kl.clamp(min=0.0)
        return kl, nll

    def final_normed(self, h: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """The final norm of the stream at the valid positions, on the unembedding's device (a model placed
        across devices leaves the stream on the device of the block that ran last)."""
        h = self.adapter.final_norm(h)
        return h[valid.to(h.device)].to(self.unemb.device)

    def seq_stats(self, state: BatchState, kl: torch.Tensor, nll: torch.Tensor) -> SeqStats:
        """Sum per-token values into per-sequence sums (padding never counts; with ``positions: last`` the KL
        and its count only at each sequence's last valid position)."""
        b = state.n_seqs
        idx = state.token_seq.to(kl.device)
        z = torch.zeros(b, dtype=torch.float64, device=kl.device)
        has = torch.isfinite(nll)
        kl_idx, kl_vals = (idx, kl) if state.kl_counted is None else (idx[state.kl_counted], kl[state.kl_counted])
        return SeqStats(
            kl_sum=z.clone().index_add_(0, kl_idx, kl_vals),
            tokens=z.clone().index_add_(0, kl_idx, torch.ones_like(kl_vals)),
            nll_sum=z.clone().index_add_(0, idx, torch.where(has, nll, torch.zeros_like(nll))),
            nll_tokens=z.clone().index_add_(0, idx, has.double()),
        )

    def variant_seq_stats(self, state: BatchState, variant: Variant) -> SeqStats:
        kl, nll = self.token_stats(state, variant)
        return self.seq_stats(state, kl, nll)

    def base_seq_stats(self, state: BatchState) -> SeqStats:
        return self.seq_stats(state, torch.zeros_like(state.base_nll), state.base_nll)
