"""The position-encoding ablation's models, files and job settings, from the config's `pe_ablation` block.

Every (encoding, depth) of the block is one model trained from scratch (rule train_pe_model, arch `matched` of
:mod:`swapkl.demo.architectures`), probed once (rule probe_pe_model) and summarised by pair distance (rule
summarise_pe_ablation, :mod:`swapkl.studies.pe_ablation.summary`). Pure: no torch.
"""

from __future__ import annotations

from swapkl.errors import ConfigError
from swapkl.layout import DEMO_CORPUS_DIR, DEMO_CORPUS_FILES, DEMO_TOKENIZER_DIR, TRAINING_TEXT_FILES
from swapkl.probes.pair_sets import RATIO_PROTOCOLS
from swapkl.study import canonical, settings_hash, without_nulls

PE_RUN_DIR = "resources/demo/pe_ablation"
#: the training text from a named source (rule prepare_pe_text, swapkl.demo.training_text): the demo corpus's
#: layout without the test split, and the named tokenizer
PE_TEXT_DIR = "resources/pe_ablation/text"
PE_TOKENIZER_DIR = "resources/pe_ablation/tokenizer"
#: what every ablation model is probed with
PE_PROTOCOLS = RATIO_PROTOCOLS
#: memory per training token while the trainer tokenises its text (Python lists of ids, then an int64 tensor):
#: tokenising the demo corpus's train.txt peaked at about 67 bytes a token on the Python heap
TEXT_BYTES_PER_TOKEN = 80


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


def pe_training_text(cfg: dict) -> dict | None:
    """The block's ``train_text`` (keyword arguments of :class:`swapkl.demo.training_text.TrainingText`); None
    when the models train on the demo corpus with the demo tokenizer."""
    return without_nulls(cfg["pe_ablation"].get("train_text") or {}) or None


def pe_text_inputs(cfg: dict) -> dict:
    """What every training job reads: ``corpus_dir``, its ``corpus`` files and the ``tokenizer`` folder (the
    demo's, or those rule prepare_pe_text writes from ``train_text``)."""
    if pe_training_text(cfg) is None:
        corpus_dir, names, tokenizer = DEMO_CORPUS_DIR, DEMO_CORPUS_FILES, DEMO_TOKENIZER_DIR
    else:
        corpus_dir, names, tokenizer = PE_TEXT_DIR, TRAINING_TEXT_FILES, PE_TOKENIZER_DIR
    return {"corpus_dir": corpus_dir, "corpus": [f"{corpus_dir}/{name}" for name in names], "tokenizer": tokenizer}


def pe_text_mem_mb(cfg: dict) -> int:
    """Memory a training job needs for its text beyond a demo-corpus job's: ``max_tokens`` tokens of
    :data:`TEXT_BYTES_PER_TOKEN` (0 on the demo corpus)."""
    text = pe_training_text(cfg)
    return 0 if text is None else -(-text["max_tokens"] * TEXT_BYTES_PER_TOKEN // 2**20)


def pe_train_settings(cfg: dict, label: str) -> dict:
    """Keyword arguments of :func:`swapkl.demo.train.train_demo_model` for one run (``size``: DemoSize's)."""
    block, model = cfg["pe_ablation"], pe_models(cfg)[label]
    size = {"num_layers": model["depth"], "hidden_size": block["hidden_size"], "num_heads": block["num_heads"],
            "num_kv_heads": block["num_heads"], "intermediate_size": 4 * block["hidden_size"],
            "max_position_embeddings": block["seq_len"]}
    schedule = without_nulls({k: block.get(k) for k in ("warmup_steps", "min_lr_ratio")})  # trainer defaults
    return canonical({"arch": "matched", "position_encoding": model["position_encoding"], "size": size,
                      "save_steps": [block["steps"]], "device": block["device"], **schedule,
                      **{k: block[k] for k in ("steps", "seed", "batch_size", "seq_len", "lr")}})


def pe_probe_data(cfg: dict) -> dict:
    """keyword arguments of swapkl.data.windows.DataSpec for the probe windows."""
    return without_nulls(cfg["pe_ablation"]["data"])


def pe_pairs(cfg: dict) -> str:
    return f"within:{cfg['pe_ablation']['max_distance']}"


def pe_max_distance(cfg: dict) -> int:
    """The largest pair distance probed and summarised."""
    return cfg["pe_ablation"]["max_distance"]


def pe_gpu(cfg: dict) -> dict:
    """The resources of a training or probe job beyond a CPU's: a GPU when the block trains on `cuda`."""
    return {"gpu": 1} if cfg["pe_ablation"]["device"] == "cuda" else {}


def pe_train_minutes(cfg: dict) -> int:
    """The runtime a training job asks for, in minutes: an hour and a minute per 100 steps."""
    return 60 + cfg["pe_ablation"]["steps"] // 100


def pe_metadata(cfg: dict, label: str) -> dict:
    """The labels and settings hash of one probe file's rows."""
    settings = {"train": pe_train_settings(cfg, label), "data": pe_probe_data(cfg), "pairs": pe_pairs(cfg)}
    text = pe_training_text(cfg)
    if text is not None:  # the demo corpus leaves the hash as it was
        settings["train_text"] = text
    return {"model": label, "revision": pe_revision(cfg), "config_sha256": settings_hash(settings)}


def pe_summary_models(cfg: dict) -> dict:
    """The summary job's view of every run: position encoding, probe file, final checkpoint."""
    return {label: {"position_encoding": m["position_encoding"], "probe": pe_probe_file(label),
                    "checkpoint": pe_checkpoint(cfg, label)} for label, m in pe_models(cfg).items()}


def check_pe_ablation(cfg: dict) -> None:
    """The block's values that the schema cannot relate: each depth has pairs at every probed distance, the
    width splits into heads of even size, a training text names one source, its tokenizer and its token
    budget, warmup ends within the steps, and no probe window is longer than the trained positions."""
    block = cfg["pe_ablation"]
    where = "pe_ablation"
    if min(block["depths"]) <= block["max_distance"]:
        raise ConfigError(f"{where}.depths: depth {min(block['depths'])} has no pair at distance "
                          f"{block['max_distance']} (max_distance); use depths above it")
    if block["hidden_size"] % block["num_heads"] or (block["hidden_size"] // block["num_heads"]) % 2:
        raise ConfigError(f"{where}.num_heads: hidden_size {block['hidden_size']} must split into "
                          f"{block['num_heads']} heads of even size")
    text = block.get("train_text") or {}
    if text and bool(text.get("dataset")) == bool(text.get("text_file")):
        raise ConfigError(f"{where}.train_text: give exactly one of `dataset` and `text_file` (or leave the "
                          "block out to train on the demo corpus)")
    if text and not text.get("max_tokens"):
        raise ConfigError(f"{where}.train_text.max_tokens: give the training text's token budget (the training "
                          "jobs' memory is sized from it)")
    if text and not text.get("tokenizer"):
        raise ConfigError(f"{where}.train_text.tokenizer: name the tokenizer of the training text (a hub name "
                          "such as gpt2, or a local folder)")
    if text.get("text_file") and text.get("text_fields"):
        raise ConfigError(f"{where}.train_text.text_fields: names the fields of a dataset row; it has no effect "
                          "on a text file")
    warmup = block.get("warmup_steps")
    if warmup is not None and warmup > block["steps"]:
        raise ConfigError(f"{where}.warmup_steps: {warmup} warmup steps exceed the {block['steps']} steps")
    if block["data"]["seq_len"] > block["seq_len"]:
        raise ConfigError(f"{where}.data.seq_len: probe windows of {block['data']['seq_len']} tokens are longer "
                          f"than the {block['seq_len']} positions the models are trained on (seq_len)")
