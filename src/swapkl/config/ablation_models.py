"""The position-encoding ablation's models, files and job settings, from the config's `pe_ablation` block.

Every (encoding, depth) of the block is one model trained from scratch (rule train_pe_model, arch `matched` of
:mod:`swapkl.demo.architectures`), probed once (rule probe_pe_model) and summarised by pair distance (rule
summarise_pe_ablation, :mod:`swapkl.studies.pe_ablation`). Pure: no torch.
"""

from __future__ import annotations

from swapkl.config import ConfigError
from swapkl.config.job_settings import canonical, settings_hash, without_nulls

PE_RUN_DIR = "resources/demo/pe_ablation"
PE_TABLE = "results/pe_ablation.parquet"
#: what every ablation model is probed with
PE_PROTOCOLS = ("replacement", "interchange")


def pe_label(encoding: str, depth: int) -> str:
    """The model label of one ablation run, e.g. ``pe-rope-6L``."""
    return f"pe-{encoding}-{depth}L"


def pe_models(cfg: dict) -> dict[str, dict]:
    """{label: {"position_encoding", "depth"}} of the enabled block (empty when it is off), depth-major."""
    block = cfg["pe_ablation"]
    if not block["enabled"]:
        return {}
    return {pe_label(e, d): {"position_encoding": e, "depth": d} for d in block["depths"] for e in block["encodings"]}


def pe_revision(cfg: dict) -> str:
    """The probed checkpoint: the end of training."""
    return f"step{cfg['pe_ablation']['steps']}"


def pe_run_dir(label: str) -> str:
    return f"{PE_RUN_DIR}/{label}"


def pe_checkpoint(cfg: dict, label: str) -> str:
    return f"{pe_run_dir(label)}/{pe_revision(cfg)}"


def pe_probe_file(label: str) -> str:
    return f"results/pe_ablation/probes/{label}.parquet"


def pe_train_settings(cfg: dict, label: str) -> dict:
    """Keyword arguments of :func:`swapkl.demo.train.train_demo_model` for one run (``size``: DemoSize's)."""
    block, model = cfg["pe_ablation"], pe_models(cfg)[label]
    size = {"num_layers": model["depth"], "hidden_size": block["hidden_size"], "num_heads": block["num_heads"],
            "num_kv_heads": block["num_heads"], "intermediate_size": 4 * block["hidden_size"],
            "max_position_embeddings": block["seq_len"]}
    return canonical({"arch": "matched", "position_encoding": model["position_encoding"], "size": size,
                      "save_steps": [block["steps"]], "device": block["device"],
                      **{k: block[k] for k in ("steps", "seed", "batch_size", "seq_len", "lr")}})


def pe_probe_data(cfg: dict) -> dict:
    """keyword arguments of swapkl.data.windows.DataSpec for the probe windows."""
    return without_nulls(cfg["pe_ablation"]["data"])


def pe_pairs(cfg: dict) -> str:
    return f"within:{cfg['pe_ablation']['max_distance']}"


def pe_metadata(cfg: dict, label: str) -> dict:
    """The labels and settings hash of one probe file's rows."""
    settings = {"train": pe_train_settings(cfg, label), "data": pe_probe_data(cfg), "pairs": pe_pairs(cfg)}
    return {"model": label, "revision": pe_revision(cfg), "config_sha256": settings_hash(settings)}


def pe_summary_models(cfg: dict) -> dict:
    """The summary job's view of every run: position encoding, probe file, final checkpoint."""
    return {label: {"position_encoding": m["position_encoding"], "probe": pe_probe_file(label),
                    "checkpoint": pe_checkpoint(cfg, label)} for label, m in pe_models(cfg).items()}


def check_pe_ablation(cfg: dict) -> None:
    """The block's values that the schema cannot relate: each depth has pairs at every probed distance, the
    width splits into heads of even size, and no probe window is longer than the trained positions."""
    block = cfg["pe_ablation"]
    where = "pe_ablation"
    if min(block["depths"]) <= block["max_distance"]:
        raise ConfigError(f"{where}.depths: depth {min(block['depths'])} has no pair at distance "
                          f"{block['max_distance']} (max_distance); use depths above it")
    if block["hidden_size"] % block["num_heads"] or (block["hidden_size"] // block["num_heads"]) % 2:
        raise ConfigError(f"{where}.num_heads: hidden_size {block['hidden_size']} must split into "
                          f"{block['num_heads']} heads of even size")
    if block["data"]["seq_len"] > block["seq_len"]:
        raise ConfigError(f"{where}.data.seq_len: probe windows of {block['data']['seq_len']} tokens are longer "
                          f"than the {block['seq_len']} positions the models are trained on (seq_len)")
