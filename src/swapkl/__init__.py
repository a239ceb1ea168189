"""swapkl: output-grounded layer-equivalence probes for decoder-only transformers.

The Python API (:mod:`swapkl.api`): ``swapkl.probe``, ``swapkl.aggregate``, ``swapkl.select_blocks``,
``swapkl.prune`` and ``swapkl.plot``. They are imported on first use, so that ``import swapkl`` (and every torch-free module of the
workflow) does not import torch.
"""

__version__ = '0.1.0'

#: the functions of swapkl.api, offered here
API = ("aggregate", "plot", "probe", "prune", "select_blocks")
__all__ = ["__version__", *API]


def __getattr__(name: str):
    if name in API:
        import swapkl.api as api  # torch side: imported when a function of the API is first used

        return getattr(api, name)
    raise AttributeError(f"module 'swapkl' has no attribute {name!r}")
