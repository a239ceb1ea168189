"""Issue 34: inputs that ran code, read weights from outside the checkpoint, or passed a provenance check by
lacking the field it compares. Each case is refused with one line naming the culprit (docs/bad_inputs.md,
section "Security and provenance (issue 34)", lists the messages; the last test checks that it does).

* Task templates are rendered in Jinja's sandbox (:func:`swapkl.relevance.tasks.template_environment`): a
  payload that reaches Python's internals is refused by ``swapkl relevance --tasks``, ``swapkl downstream
  --tasks`` and the workflow's ``relevance.tasks`` job, and nothing runs. The reference for what a template
  must still give is lm-evaluation-harness itself: the templates of its own task files (arc, piqa, sciq,
  openbookqa, siqa, storycloze, hellaswag, mmlu, boolq, ...) render as ``lm_eval.utils.apply_template`` renders
  them, and the tasks that swapkl's reader takes give lm-eval's ``ConfigurableTask`` contexts, choices and gold.
* The shard index of a checkpoint may only name plain files of its folder, and ``weights_sha256`` covers every
  file it names, so a shard edit changes the hash and a probe's progress file is not taken over.
* A table that lacks a provenance field that prune or aggregate compares is refused as written by an older or
  unknown version.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from swapkl import cli
from swapkl.errors import SwapKLError
from swapkl.relevance.tasks import load_task, template_environment, write_task
try:
    from swapkl.relevance.tasks import template_environment
except ImportError:
    template_environment = None

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "bad_inputs.md"


def error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("swapkl:")]


# ----------------------------------------------------------------------------------------- 1. task templates

PAYLOADS = {  # each would create the file PWNED in the working folder if the template ran unsandboxed
    "cycler": "{{ cycler.__init__.__globals__.os.system('touch PWNED') }}{{ query }}",
    "lipsum": "{{ lipsum.__globals__['os'].popen('touch PWNED').read() }}{{ query }}",
    "str class": "{{ ''.__class__.__mro__[1].__subclasses__() }}{{ query }}",
    "joiner": "{% set j = joiner() %}{{ j.__call__.__globals__ }}{{ query }}",
}
REFUSED = ("task file '{yaml}': {field} {template} is refused ({data}:1): access to attribute '{attribute}' of "
           "'{owner}' object is unsafe; a task template may only read the document's fields")
ATTRIBUTE = {"cycler": ("__init__", "type"), "lipsum": ("__globals__", "function"), "str class": ("__class__", "str"),
             "joiner": ("__call__", "Joiner")}
GOOD_DOC = {"query": "a b", "choices": ["x", "y"], "gold": 1}


def evil_task(folder: Path, payload: str, field: str) -> tuple[str, dict]:
    """A task file whose ``field`` carries ``payload``; the values of its refusal's message."""
    spec = {"doc_to_text": "query", "doc_to_choice": "choices", "doc_to_target": "gold"}
    template = PAYLOADS[payload]
    if field != "doc_to_text":  # the payload's own text must still make a valid choice list / target
        template = template.replace("{{ query }}", "{{ choices }}" if field == "doc_to_choice" else "{{ gold }}")
    spec[field] = template
    path = write_task(str(folder), "evil", [GOOD_DOC], text=spec["doc_to_text"], choices=spec["doc_to_choice"],
                      target=spec["doc_to_target"])
    attribute, owner = ATTRIBUTE[payload]
    return path, dict(yaml=path, field=field, template=repr(template), data=folder / "evil.jsonl", attribute=attribute,
                      owner=owner)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A working folder where a payload's PWNED would land, and a model folder whose paths pass (its empty
    config.json is never reached: the task file is refused first)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    return tmp_path


def run_relevance_cli(d: Path, task: str) -> list[str]:
    return ["relevance", "--model", str(d / "model"), "--tasks", task, "--out", str(d / "out.parquet")]


def run_downstream_cli(d: Path, task: str) -> list[str]:
    return ["downstream", "--model", str(d / "model"), "--tasks", task, "--lm-eval-tasks", "--out",
            str(d / "out.parquet")]


@pytest.mark.parametrize("command", [run_relevance_cli, run_downstream_cli], ids=["relevance", "downstream"])
@pytest.mark.parametrize("payload", list(PAYLOADS))
def test_template_payload_is_refused_by_the_command_line(workdir, capsys, command, payload):
    task, values = evil_task(workdir / "tasks", payload, "doc_to_text")
    code = cli.main(command(workdir, task))
    assert code == 2
    assert error_lines(capsys.readouterr().err) == ["swapkl: error: " + REFUSED.format(**values)]
    assert not (workdir / "PWNED").exists() and not (workdir / "out.parquet").exists()


@pytest.mark.parametrize("field", ["doc_to_text", "doc_to_choice", "doc_to_target"])
def test_template_payload_is_refused_by_the_workflow_job(workdir, field):
    """rule score_relevance runs the relevance job of the config's relevance.tasks (workflow/scripts/run_job.py:
    its job and files params)."""
    from swapkl.config.rule_jobs import run_rule_job

    task, values = evil_task(workdir / "tasks", "lipsum", field)
    with pytest.raises(SwapKLError) as e:
        run_rule_job({"kind": "relevance", "model": str(workdir / "model"), "task_files": [task]},
                     {"out": str(workdir / "out.parquet"), "pruning": None}, [str(workdir / "out.parquet")])
    assert str(e.value) == REFUSED.format(**values)
    assert not (workdir / "PWNED").exists() and not (workdir / "out.parquet").exists()


def test_templates_cannot_change_the_document(tmp_path):
    """The immutable sandbox: a template calls the methods of plain values, but none that changes a list or a
    dict (a later template would see another document)."""
    path = write_task(str(tmp_path), "t", [GOOD_DOC], text="{{ choices.append('z') }}{{ query }}")
    with pytest.raises(SwapKLError, match=r"doc_to_text .* is refused .*'append' of 'list' object is unsafe"):
        load_task(path)


# lm-eval's own task files, each with documents as its templates see them (after its process_docs, if any):
# apostrophes and quotes in choices (rendered as a Python list literal), leading and trailing spaces, non-ASCII.
LM_EVAL_TASKS = {
    "arc/arc_easy.yaml": [
        {"question": "Which is a gas at room temperature? ", "answerKey": "B",
         "choices": {"text": ["ice", "steam's \"vapour\"", "rock", "wood"], "label": ["A", "B", "C", "D"]}},
        {"question": " Où est-il ?", "answerKey": "3", "choices": {"text": ["ici", "là"], "label": ["2", "3"]}}],
    "piqa/piqa.yaml": [{"goal": "Open a jar", "sol1": "twist the lid", "sol2": "it's \"stuck\"", "label": 1},
                       {"goal": "  Dry socks\n", "sol1": "hang them up", "sol2": "soak them", "label": 0}],
    "sciq/sciq.yaml": [{"support": "  \nWater boils at 100 C. ", "question": "At what does water boil?",
                        "distractor1": "0 C", "distractor2": "50 C", "distractor3": "-3 C", "correct_answer": "100 C"},
                       {"support": "", "question": "Sky?", "distractor1": "green", "distractor2": "red",
                        "distractor3": "o'range", "correct_answer": "blue"}],
    "openbookqa/openbookqa.yaml": [
        {"question_stem": "The sun is a", "answerKey": " C",
         "choices": {"text": ["moon", "planet", "star", "comet"], "label": ["A", "B", "C", "D"]}},
        {"question_stem": "Ice is", "answerKey": "A", "choices": {"text": ["cold", "hot"], "label": ["A", "B"]}}],
    "siqa/siqa.yaml": [{"context": "Kai gave Ash a book.", "question": "How would Ash feel?", "answerA": "grateful",
                        "answerB": "angry", "answerC": "Ash's \"bored\"", "label": "1"},
                       {"context": "Sam ran.", "question": "Why?", "answerA": "late", "answerB": "fun",
                        "answerC": "cold", "label": "3"}],
    "storycloze/storycloze_2016.yaml": [
        {"input_sentence_1": "Tom woke up.", "input_sentence_2": "He was late.", "input_sentence_3": " He ran.",
         "input_sentence_4": "The bus left.", "sentence_quiz1": "He walked.", "sentence_quiz2": "He's \"happy\".",
         "answer_right_ending": 2},
        {"input_sentence_1": "A", "input_sentence_2": "B", "input_sentence_3": "C", "input_sentence_4": "D",
         "sentence_quiz1": "E", "sentence_quiz2": "F", "answer_right_ending": 1}],
    "hellaswag/hellaswag.yaml": [
        {"query": "Baking: A man mixes flour. He", "choices": ["bakes bread.", "sings.", "it's done.", "runs."],
         "label": "0"},
        {"query": "Sport: She", "choices": ["jumps.", "swims.", "sits.", "reads \"books\"."], "label": "3"}],
    "japanese_leaderboard/ja_leaderboard_jcommonsenseqa.yaml": [
        {"question": "空の色は？", "choices": ["青", "赤", "緑"], "label": 0},
        {"question": "猫は何を飲む？", "choices": ["牛乳", "石", "砂"], "label": 0}],
    # templates only: swapkl's reader refuses these files' list doc_to_choice or process_docs-only partial
    # evaluation, but their templates use what the sandbox must keep (.strip(), indexing, {% set %}, |length,
    # range, a for loop, list.index)
    "commonsense_qa/default.yaml": [
        {"question": " Where do fish live? ", "answerKey": "B",
         "choices": {"text": ["tree", "water", "sky", "road", "car"], "label": ["A", "B", "C", "D", "E"]}}],
    "mmlu/default/_default_template_yaml": [
        {"question": "  2 + 2 = ?\n", "choices": ["3", "4", "5", "22"], "answer": 1}],
    "super_glue/boolq/default.yaml": [{"passage": "Cats are mammals.", "question": "are cats mammals", "label": 1}],
    "wsc273/default.yaml": [{"text": "The trophy didn't fit in the suitcase because it was too big.",
                             "pronoun": "it", "pronoun_loc": 48, "options": ["the trophy", "the suitcase"],
                             "label": 0}],
    "afrobench/uhura-arc-easy/prompt_4/uhura-arc-easy_en.yaml": [
        {"question": "What melts ice?", "answerKey": "C",
         "choices": {"text": ["cold", "dark", "heat", "wind"], "label": ["A", "B", "C", "D"]}}],
    "mathqa/mathqa.yaml": [{"Problem": "1 + 1 ?", "correct": "d"}],
}
TEMPLATE_KEYS = ("doc_to_text", "doc_to_choice", "doc_to_target")


def lm_eval_task_file(relative: str) -> dict:
    """The task file of the installed lm-eval, read by lm-eval's own YAML loader (includes followed,
    ``!function`` left unresolved)."""
    import lm_eval
    from lm_eval.tasks._yaml_loader import load_yaml

    path = Path(lm_eval.__file__).parent / "tasks" / relative
    return load_yaml(str(path), resolve_func=False, recursive=True)


@pytest.mark.parametrize("relative", list(LM_EVAL_TASKS))
def test_lm_eval_templates_render_as_lm_eval_renders_them(relative):
    from lm_eval.utils import apply_template

    cfg = lm_eval_task_file(relative)
    env = template_environment()
    checked = 0
    for doc in LM_EVAL_TASKS[relative]:
        for key in TEMPLATE_KEYS:
            template = cfg.get(key)
            if isinstance(template, str) and template not in doc and "{" in template:
                assert env.from_string(template).render(**doc) == apply_template(template, doc), (key, doc)
                checked += 1
    assert checked >= len(LM_EVAL_TASKS[relative])


# the files whose three fields swapkl's reader takes (a field name, a template or an index); hellaswag and
# jcommonsenseqa on documents as their process_docs leaves them
READABLE = ["arc/arc_easy.yaml", "piqa/piqa.yaml", "sciq/sciq.yaml", "openbookqa/openbookqa.yaml", "siqa/siqa.yaml",
            "storycloze/storycloze_2016.yaml", "hellaswag/hellaswag.yaml",
            "japanese_leaderboard/ja_leaderboard_jcommonsenseqa.yaml"]


@pytest.mark.parametrize("relative", READABLE)
def test_lm_eval_task_files_read_as_lm_eval_reads_them(tmp_path, relative):
    """The task's templates on local JSONL: swapkl's reader gives, document by document, the context, choices,
    gold and delimiter that lm-eval's ConfigurableTask gives (its doc_to_text, doc_to_choice, doc_to_target)."""
    from lm_eval.api.task import ConfigurableTask

    cfg = lm_eval_task_file(relative)
    name = relative.split("/")[-1].removesuffix(".yaml")
    delimiter = cfg.get("target_delimiter") or " "
    path = write_task(str(tmp_path), name, LM_EVAL_TASKS[relative], text=cfg["doc_to_text"],
                      choices=cfg["doc_to_choice"], target=cfg["doc_to_target"])
    if delimiter != " ":
        text = Path(path).read_text().replace("target_delimiter: ' '", f"target_delimiter: {json.dumps(delimiter)}")
        Path(path).write_text(text)
    ours = load_task(path)
    ref = ConfigurableTask(config=yaml.safe_load(Path(path).read_text()))
    theirs = []
    for doc in ref.test_docs():
        choices = ref.doc_to_choice(doc)
        gold = ref.doc_to_target(doc)
        theirs.append((ref.doc_to_text(doc), tuple(choices), gold if isinstance(gold, int) else choices.index(gold)))
    assert [(d.context, d.choices, d.gold) for d in ours.docs] == theirs
    assert ours.target_delimiter == ref.config.target_delimiter == delimiter


# ----------------------------------------------------------------------------------------- fixtures of 2 and 3

N_LAYERS = 4


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """A tiny Llama with a character tokenizer, three sets of token windows (probe, other, calibration), an
    evaluation text, and the probe and representation files of the model on the probe windows."""
    import numpy as np

    from swapkl.data.data_spec import DataSpec
    from swapkl.probes.probe import run_probe
    from swapkl.probes.probe_jobs import ProbeJob
    from test_perplexity import TEXT, save_tiny
    from tiny_models import random_tokens

    root = tmp_path_factory.mktemp("security")
    model = root / "model"
    save_tiny(model, "llama", n_layers=N_LAYERS)  # with a tokenizer: prune's perplexity needs one
    for name, seed in (("tokens", 1), ("other", 9), ("calib", 3)):
        np.save(root / f"{name}.npy", random_tokens(97, 4, 10, seed=seed).numpy())
    (root / "eval.txt").write_text(TEXT)
    probe, rep = root / "probe.parquet", root / "repr.parquet"
    run_probe(ProbeJob(model=str(model), out=str(probe), repr_out=str(rep),
                       data=DataSpec(tokens=str(root / "tokens.npy")),
                       metadata={"model": "m", "revision": "main"}))
    return root


def sharded(src: Path, folder: Path, second: str) -> Path:
    """A copy of checkpoint ``src`` whose tensors lie in two shards: the first in the folder, the second at
    ``second`` (relative to the folder, or absolute), both named so by model.safetensors.index.json."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(src, folder)
    tensors = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    names = sorted(tensors)
    first, rest = names[::2], names[1::2]
    save_file({k: tensors[k] for k in first}, folder / "model-00001-of-00002.safetensors", metadata={"format": "pt"})
    target = Path(second) if os.path.isabs(second) else folder / second
    target.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: tensors[k] for k in rest}, target, metadata={"format": "pt"})
    weight_map = {k: "model-00001-of-00002.safetensors" for k in first} | {k: second for k in rest}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return folder


def scale_shard(path: Path, factor: float) -> None:
    """Edit a weight shard in place: every tensor multiplied by ``factor``."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(path)
    save_file({k: v * factor for k, v in tensors.items()}, path, metadata={"format": "pt"})


# ----------------------------------------------------------------------------------------- 2. weight shards

OUTSIDE = ("shard index '{index}' names '{entry}', which is not a file of the checkpoint folder; only plain file "
           "names (no folder, '..' or absolute path) are loaded")


@pytest.mark.parametrize("where", ["../other/model-00002-of-00002.safetensors",
                                   "sub/model-00002-of-00002.safetensors", "absolute"])
def test_a_shard_outside_the_checkpoint_folder_is_refused(ckpt, tmp_path, capsys, where):
    entry = str(tmp_path / "elsewhere" / "model-00002-of-00002.safetensors") if where == "absolute" else where
    folder = sharded(ckpt / "model", tmp_path / "model", entry)
    out = tmp_path / "out.parquet"
    code = cli.main(["probe", "--model", str(folder), "--tokens", str(ckpt / "tokens.npy"), "--out", str(out)])
    assert code == 2
    assert error_lines(capsys.readouterr().err) == [
        "swapkl: error: " + OUTSIDE.format(index=folder / "model.safetensors.index.json", entry=entry)]
    assert not out.exists()


def test_the_weights_hash_covers_every_file_the_index_names(ckpt, tmp_path):
    """transformers loads a shard whatever its name ends in: one named without ``.safetensors`` is hashed too."""
    from swapkl.model.checkpoint_dir import weights_sha256

    folder = sharded(ckpt / "model", tmp_path / "model", "model-00002-of-00002")
    before = weights_sha256(str(folder))
    scale_shard(folder / "model-00002-of-00002", 1.5)
    assert weights_sha256(str(folder)) != before
    # a checkpoint without such a shard keeps its hash: the hash of its *.safetensors files, as before
    import hashlib

    plain = hashlib.sha256(b"model.safetensors\0" + (ckpt / "model" / "model.safetensors").read_bytes()).hexdigest()
    assert weights_sha256(str(ckpt / "model")) == plain


def test_a_resumed_probe_does_not_take_over_results_of_other_weights(ckpt, tmp_path, monkeypatch, caplog):
    """Killed, a shard edited, started again: the progress file belongs to other weights and is discarded, and
    the table equals an uninterrupted run on the edited checkpoint."""
    import logging

    import pandas as pd

    from crash import crash_after
    from swapkl.data.data_spec import DataSpec
    from swapkl.probes.probe import run_probe
    from swapkl.probes.probe_jobs import ProbeJob
    from test_resume import COMPUTED

    folder = sharded(ckpt / "model", tmp_path / "model", "model-00002-of-00002")
    kw = dict(data=DataSpec(tokens=str(ckpt / "tokens.npy")), batch_size=2, device="cpu")
    progress = tmp_path / "progress.jsonl"
    with crash_after(monkeypatch, 12):
        run_probe(ProbeJob(model=str(folder), out=str(tmp_path / "crashed.parquet"), progress_path=str(progress), **kw))
    assert progress.exists()
    scale_shard(folder / "model-00002-of-00002", 1.5)
    caplog.set_level(logging.INFO)
    run_probe(ProbeJob(model=str(folder), out=str(tmp_path / "resumed.parquet"), progress_path=str(progress), **kw))
    assert "belongs to another run" in caplog.text
    computed, total, taken, records = map(int, COMPUTED.search(caplog.text).groups())
    assert taken == records == 0 and computed == total
    run_probe(ProbeJob(model=str(folder), out=str(tmp_path / "clean.parquet"), **kw))
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "resumed.parquet"),
                                  pd.read_parquet(tmp_path / "clean.parquet"), check_exact=True)


# ----------------------------------------------------------------------------------------- 3. provenance

MISSING = ("{what} '{path}' records no {field} in its provenance, so it cannot be checked: it was written by an "
           "older or unknown version of swapkl; make it again")


def without(src: Path, dst: Path, *fields: str) -> Path:
    """A copy of the table ``src`` whose provenance lacks ``fields`` (as a table of an older version would)."""
    import pyarrow.parquet as pq

    table = pq.read_table(src)
    meta = dict(table.schema.metadata)
    prov = json.loads(meta[b"swapkl"])
    for f in fields:
        prov.pop(f)
    meta[b"swapkl"] = json.dumps(prov).encode()
    dst.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.replace_schema_metadata(meta), dst)
    return dst


def prune_kw(root: Path) -> dict:
    from swapkl.data.data_spec import DataSpec

    return dict(budgets=[1], spacing=1, eval_data=dict(text_file=str(root / "eval.txt"), window=16, stride=8,
                                                       max_words=40),
                calib_data=DataSpec(tokens=str(root / "calib.npy")), n_random=1, device="cpu", batch_size=4)


def test_prune_refuses_probe_files_without_the_config_hash_after_config_json_changed(ckpt, tmp_path):
    from swapkl.pruning.prune import run_pruning
    from swapkl.pruning.prune_jobs import PruneJob

    edited = tmp_path / "edited"
    shutil.copytree(ckpt / "model", edited)
    cfg = json.loads((edited / "config.json").read_text())
    cfg["rms_norm_eps"] = 0.5
    (edited / "config.json").write_text(json.dumps(cfg))
    probe = without(ckpt / "probe.parquet", tmp_path / "old" / "probe.parquet", "model_config_sha256")
    rep = without(ckpt / "repr.parquet", tmp_path / "old" / "repr.parquet", "model_config_sha256")
    out = tmp_path / "pruning.parquet"
    with pytest.raises(SwapKLError) as e:
        run_pruning(PruneJob(model=str(edited), probe_files=[str(probe)], repr_file=str(rep), out=str(out),
                             **prune_kw(ckpt)))
    assert str(e.value) == MISSING.format(what="table", path=probe, field="model_config_sha256")
    # the representation file alone without it: refused too, by name
    with pytest.raises(SwapKLError) as e:
        run_pruning(PruneJob(model=str(ckpt / "model"), probe_files=[str(ckpt / "probe.parquet")], repr_file=str(rep),
                             out=str(out), **prune_kw(ckpt)))
    assert str(e.value) == MISSING.format(what="representation file", path=rep, field="model_config_sha256")
    assert not out.exists()


@pytest.mark.parametrize("stripped", ["probe", "repr"])
def test_prune_of_another_model_refuses_tables_without_the_weights_hash(ckpt, tmp_path, stripped):
    """The probe file without its weights' hash, given to prune another model (same config.json, other weights),
    would rank that model's blocks by foreign scores; the representation file without it, beside the model's own
    probe file, would pick its layers by foreign distances."""
    from swapkl.pruning.prune import run_pruning
    from swapkl.pruning.prune_jobs import PruneJob
    from test_perplexity import save_tiny

    other = tmp_path / "other"
    save_tiny(other, "llama", n_layers=N_LAYERS, seed=7)
    shutil.copy(ckpt / "model" / "config.json", other / "config.json")  # the same config: only the weights differ
    files = {"probe": ckpt / "probe.parquet", "repr": ckpt / "repr.parquet"}
    files[stripped] = without(files[stripped], tmp_path / "old" / f"{stripped}.parquet", "weights_sha256")
    out = tmp_path / "pruning.parquet"
    model, rep = (other, None) if stripped == "probe" else (ckpt / "model", str(files["repr"]))
    with pytest.raises(SwapKLError) as e:
        run_pruning(PruneJob(model=str(model), probe_files=[str(files["probe"])], repr_file=rep, out=str(out),
                             **prune_kw(ckpt)))
    what = "table" if stripped == "probe" else "representation file"
    assert str(e.value) == MISSING.format(what=what, path=files[stripped], field="weights_sha256")
    assert not out.exists()


def test_aggregate_refuses_protocols_without_the_windows_hash(ckpt, tmp_path):
    """Replacement on one set of windows, interchange on another, neither recording its windows: their gap
    would compare two different measurements."""
    from swapkl.data.data_spec import DataSpec
    from swapkl.probes.aggregate import aggregate
    from swapkl.probes.aggregate import AggregateJob
    from swapkl.probes.probe import run_probe
    from swapkl.probes.probe_jobs import ProbeJob

    files = []
    for protocol, tokens in (("replacement", "tokens"), ("interchange", "other")):
        path = tmp_path / "new" / f"{protocol}.parquet"
        run_probe(ProbeJob(model=str(ckpt / "model"), out=str(path), protocols=protocol,
                           data=DataSpec(tokens=str(ckpt / f"{tokens}.npy")),
                           metadata={"model": "m", "revision": "main"}))
        files.append(without(path, tmp_path / "old" / path.name, "tokens_sha256"))
    out = tmp_path / "agg.parquet"
    with pytest.raises(SwapKLError) as e:
        aggregate(AggregateJob(probe_files=files, repr_files=[], out=out, pair_sets={"m": ["adjacent"]}, n_boot=10))
    assert str(e.value) == MISSING.format(what="table", path=files[0], field="tokens_sha256")
    assert not out.exists()


def test_a_pruning_table_without_the_weights_hash_is_refused_for_a_model(tmp_path):
    """relevance --pruning and downstream --pruning read the pruned sets of a table checked against the model."""
    import pyarrow as pa

    from swapkl.relevance.scored_models import pruned_sets_from_table
    from swapkl.tables.parquet_io import write_parquet
    from swapkl.tables.schemas import PRUNING_SCHEMA

    path = tmp_path / "pruning.parquet"
    rows = [dict(model="m", revision="main", n_layers=4, guide="bi", budget=1, removed_layers=[2], feasible=True)]
    write_parquet(pa.Table.from_pylist(rows, schema=PRUNING_SCHEMA), str(path), {})
    with pytest.raises(SwapKLError) as e:
        pruned_sets_from_table(str(path), n_layers=4, weights_sha256="ab" * 32)
    assert str(e.value) == MISSING.format(what="pruning table", path=path, field="weights_sha256")


def test_a_covariate_file_without_the_windows_hash_is_refused(tmp_path):
    from probe_fixtures import probe_files, provenance, random_values, write_checkpoint, write_table
    from swapkl.probes.aggregate import aggregate
    from swapkl.probes.aggregate import AggregateJob
    from swapkl.studies.covariate_stats import aggregate_covariates
    from swapkl.tables.schemas import COVARIATE_COLUMNS, COVARIATE_FILE_SCHEMA

    repl, inter, _ = random_values(4, seed=0)
    agg = tmp_path / "agg.parquet"
    files = probe_files(write_checkpoint(tmp_path / "in", n_layers=4, repl=repl, inter=inter))
    aggregate(AggregateJob(probe_files=files, repr_files=[], out=agg, pair_sets={"toy": ["adjacent"]}, n_boot=10))
    prov = provenance("toy", "step1000")
    del prov["tokens_sha256"]
    rows = [dict(model="toy", revision="step1000", step=1000, n_layers=4, layer_i=i, layer_j=i + 1, distance=1,
                 **{c: 0.5 for c in COVARIATE_COLUMNS}, n_seqs=12, n_tokens=120) for i in range(3)]
    cov = write_table(tmp_path / "cov.parquet", rows, COVARIATE_FILE_SCHEMA, prov)
    with pytest.raises(SwapKLError) as e:
        aggregate_covariates([cov], agg, tmp_path / "x.parquet", tmp_path / "y.parquet", n_boot=5, seed=0)
    assert str(e.value) == MISSING.format(what="covariate file", path=cov, field="tokens_sha256")


def test_current_tables_still_pass_every_check(ckpt, tmp_path):
    """The checks are not over-eager: this version's own tables (every field recorded) aggregate, and prune
    accepts them for their own model."""
    from swapkl.probes.aggregate import aggregate
    from swapkl.probes.aggregate import AggregateJob
    from swapkl.pruning.prune import _read_pruning_inputs, _require_tables_of
    from swapkl.model.loading import load_model
    from swapkl.pruning.eval_spec import EvalSpec

    aggregate(AggregateJob(probe_files=[ckpt / "probe.parquet"], repr_files=[ckpt / "repr.parquet"],
                           out=tmp_path / "agg.parquet",
                           pair_sets={"m": ["adjacent"]}, n_boot=10))
    assert (tmp_path / "agg.parquet").exists()
    kw = prune_kw(ckpt)
    probe, provs, rep, rep_prov, _ = _read_pruning_inputs([ckpt / "probe.parquet"], ckpt / "repr.parquet", None,
                                                          EvalSpec.from_dict(kw["eval_data"]), kw["calib_data"], False)
    loaded = load_model(str(ckpt / "model"), device="cpu")
    _require_tables_of(loaded, str(ckpt / "model"), None, N_LAYERS, probe, [ckpt / "probe.parquet"], provs, rep,
                       ckpt / "repr.parquet", rep_prov)


# ----------------------------------------------------------------------------------------- the catalogue


def test_the_catalogue_shows_every_message():
    """docs/bad_inputs.md's section of issue 34 shows each message above as written (placeholders in braces)."""
    doc = DOC.read_text()
    section = doc[doc.index("## Security and provenance (issue 34)"):]
    rows = [REFUSED, OUTSIDE.format(index="{index}", entry="{entry}")]
    rows += [MISSING.format(what=what, path=path, field=field)
             for what, path, field in (("table", "{probe}", "model_config_sha256"),
                                       ("representation file", "{repr}", "model_config_sha256"),
                                       ("table", "{probe}", "weights_sha256"),
                                       ("representation file", "{repr}", "weights_sha256"),
                                       ("table", "{replacement}", "tokens_sha256"),
                                       ("pruning table", "{pruning}", "weights_sha256"),
                                       ("covariate file", "{covariates}", "tokens_sha256"))]
    assert [r for r in rows if f"`{r}`" not in section] == []
