"""The offline demo: tiny models the pipeline trains itself, probed like Pythia's hub revisions.

* :mod:`swapkl.demo.corpus` - English text from Python's own docstrings, split train/valid/test;
* :mod:`swapkl.demo.tokenizer` - a byte-level BPE trained on it, loadable with ``AutoTokenizer``;
* :mod:`swapkl.demo.train` - tiny gpt_neox / llama / qwen3 models trained from scratch, checkpointed
  as ``step{N}/`` directories on a Pythia-like schedule (:mod:`swapkl.demo.schedule`).

Submodules import torch/transformers lazily where they can; import them directly.
"""
