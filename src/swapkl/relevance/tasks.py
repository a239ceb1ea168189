"""Multiple-choice tasks in lm-evaluation-harness's own format (task YAML + local JSONL), read by swapkl.

swapkl scores the zero-shot subset of that format itself; the same files run unchanged under
lm-eval (``TaskManager(include_path=...)``), which is the reference in the tests and the backend
for anything outside the subset. The subset, with lm-eval's meaning:

* ``output_type: multiple_choice``, ``dataset_path: json`` with ``dataset_kwargs.data_files`` naming
  the split given by ``test_split`` (or ``validation_split``);
* ``doc_to_text``, ``doc_to_choice``, ``doc_to_target``: a field of the document or a Jinja template
  (rendered as lm-eval does, strict about undefined names, but in Jinja's sandbox: a template that reaches
  for Python internals is refused, see :func:`template_environment`; and in a child process bounded in time,
  output and memory, :mod:`swapkl.relevance.template_sandbox`; a rendered choice list is a Python literal, a
  rendered all-digit target an index);
* ``target_delimiter`` (default one space) between the context and each choice.

Every other key that changes the prompt (few-shot examples, descriptions, ``process_docs``, ...)
is refused with an error naming it, so a task is never scored differently from lm-eval.

The request for choice ``c`` of a document is ``(context, target_delimiter + c)``; its score is the
summed log-likelihood of the continuation's tokens. ``acc`` picks the choice with the largest score,
``acc_norm`` the largest score divided by the choice's length in characters (lm-eval's definitions; ties
go to the first choice). The random baseline of a task is the mean over its documents of
``1 / number of choices``.
"""

from __future__ import annotations

import ast
import json
import math
import os
from dataclasses import dataclass, replace

from swapkl.errors import SwapKLError
from swapkl.relevance.template_sandbox import TemplateRenderer, template_environment  # noqa: F401 (re-exported)
from swapkl.tables.file_checks import open_input

#: keys of a task YAML that swapkl understands (all others are refused)
KNOWN_KEYS = frozenset({"task", "tag", "dataset_path", "dataset_kwargs", "output_type", "test_split",
                        "validation_split", "doc_to_text", "doc_to_choice", "doc_to_target", "target_delimiter",
                        "metric_list", "metadata", "num_fewshot"})
METRICS = ("acc", "acc_norm")


@dataclass(frozen=True)
class Document:
    context: str
    choices: tuple[str, ...]
    gold: int


@dataclass(frozen=True)
class Task:
    name: str
    yaml_path: str
    data_path: str
    target_delimiter: str
    docs: tuple[Document, ...]

    @property
    def random_baseline(self) -> float:
        return random_baseline([len(d.choices) for d in self.docs])


def random_baseline(n_choices: list[int]) -> float:
    """Expected accuracy of a uniform guess: the mean over documents of 1 / number of choices."""
    return sum(1.0 / n for n in n_choices) / len(n_choices)


def acc_rel(accuracy: float, base_accuracy: float, random_baseline: float) -> float:
    """AccRel (:mod:`swapkl.relevance.accrel`) of a variant with ``accuracy``:
    ``1 - max(accuracy - r, 0) / max(base_accuracy - r, 0)`` for the random baseline r; NaN when the base model is not above chance."""
    denom = max(base_accuracy - random_baseline, 0.0)
    if denom == 0.0:
        return math.nan
    return 1.0 - max(accuracy - random_baseline, 0.0) / denom


@dataclass
class _Reader:
    """Reads the fields of one task file's documents: a field by name, or a template rendered by ``renderer``
    (bounded in time, output and memory, :mod:`swapkl.relevance.template_sandbox`)."""

    renderer: TemplateRenderer

    def field(self, doc: dict, spec, what: str, task: str, where: str):
        if isinstance(spec, str) and spec in doc:
            return doc[spec]
        if isinstance(spec, int) and not isinstance(spec, bool):
            return spec
        if not isinstance(spec, str):
            raise SwapKLError(f"task {task!r}: {what} must be a field name or a template, got {spec!r}")
        return self.renderer.render(spec, doc, what, where)


def _document(reader: _Reader, doc: dict, cfg: dict, task: str, where: str) -> Document:
    text = reader.field(doc, cfg["doc_to_text"], "doc_to_text", task, where)
    if not isinstance(text, str):
        raise SwapKLError(f"task {task!r} {where}: doc_to_text gives {type(text).__name__}, not text "
                          "(multiple-input tasks run only under lm-eval)")
    choices = reader.field(doc, cfg["doc_to_choice"], "doc_to_choice", task, where)
    if isinstance(choices, str):
        try:
            choices = ast.literal_eval(choices)
        except (ValueError, SyntaxError) as e:
            raise SwapKLError(f"task {task!r} {where}: doc_to_choice does not give a list: {choices!r}") from e
    if not isinstance(choices, list) or len(choices) < 2 or not all(isinstance(c, str) and c for c in choices):
        raise SwapKLError(f"task {task!r} {where}: doc_to_choice must give two or more non-empty strings")
    target = reader.field(doc, cfg["doc_to_target"], "doc_to_target", task, where)
    if isinstance(target, str):
        target = int(target) if target.isdigit() else (choices.index(target) if target in choices else None)
    if not isinstance(target, int) or isinstance(target, bool) or not 0 <= target < len(choices):
        raise SwapKLError(f"task {task!r} {where}: doc_to_target is not one of its {len(choices)} choices")
    if not text:
        raise SwapKLError(f"task {task!r} {where}: empty context")
    return Document(text, tuple(choices), target)


def load_task(yaml_path: str) -> Task:
    """Read one task YAML and its JSONL documents; a one-line error naming the culprit otherwise."""
    import yaml

    try:
        with open_input(yaml_path, "task file", "r", encoding="utf-8") as f:
            cfg = yaml.safe_load(f)
    except OSError as e:
        raise SwapKLError(f"cannot read task file {yaml_path!r}: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise SwapKLError(f"task file {yaml_path!r} is not valid YAML: {' '.join(str(e).split())}") from e
    if not isinstance(cfg, dict) or not isinstance(cfg.get("task"), str):
        raise SwapKLError(f"task file {yaml_path!r} has no 'task' name")
    name = cfg["task"]
    unknown = sorted(set(cfg) - KNOWN_KEYS)
    if unknown:
        raise SwapKLError(f"task {name!r} uses {', '.join(unknown)}, which swapkl does not score; run it with lm-eval")
    if cfg.get("output_type") != "multiple_choice":
        raise SwapKLError(f"task {name!r}: swapkl scores output_type multiple_choice, not {cfg.get('output_type')!r} "
                          "(generative tasks are scored through lm-eval by task-calibrated pruning's curve_tasks)")
    if cfg.get("num_fewshot", 0) != 0:
        raise SwapKLError(f"task {name!r}: swapkl scores zero-shot only (num_fewshot {cfg['num_fewshot']})")
    if cfg.get("dataset_path") != "json":
        raise SwapKLError(f"task {name!r}: dataset_path must be 'json' (local JSONL)")
    for key in ("doc_to_text", "doc_to_choice", "doc_to_target"):
        if key not in cfg:
            raise SwapKLError(f"task {name!r} lacks {key}")
    split = cfg.get("test_split") or cfg.get("validation_split")
    files = (cfg.get("dataset_kwargs") or {}).get("data_files") or {}
    data = files.get(split) if isinstance(files, dict) else None
    if not split or not isinstance(data, str):
        raise SwapKLError(f"task {name!r}: dataset_kwargs.data_files must name one JSONL file for split {split!r}")
    docs = []
    try:
        with TemplateRenderer(yaml_path) as renderer, \
                open_input(data, f"data file of task {name!r}", "r", encoding="utf-8") as f:
            reader = _Reader(renderer)
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        doc = json.loads(line)
                    except ValueError as e:
                        raise SwapKLError(f"task {name!r}: {data}:{n} is not JSON: {e}") from e
                    docs.append(_document(reader, doc, cfg, name, f"{data}:{n}"))
    except OSError as e:
        raise SwapKLError(f"task {name!r}: cannot read {data!r}: {e.strerror}") from e
    if not docs:
        raise SwapKLError(f"task {name!r}: {data!r} has no documents")
    return Task(name, os.path.abspath(yaml_path), data, str(cfg.get("target_delimiter", " ")), tuple(docs))


def write_task(folder: str, name: str, docs: list[dict], *, text="query", choices="choices", target="gold") -> str:
    """Write ``docs`` as ``<folder>/<name>.jsonl`` plus the task YAML naming it (absolute path); return the YAML."""
    import yaml

    os.makedirs(folder, exist_ok=True)
    data = os.path.abspath(os.path.join(folder, f"{name}.jsonl"))
    with open(data, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False, sort_keys=True) + "\n")
    cfg = {"task": name, "dataset_path": "json", "dataset_kwargs": {"data_files": {"test": data}},
           "output_type": "multiple_choice", "test_split": "test", "doc_to_text": text, "doc_to_choice": choices,
           "doc_to_target": target, "target_delimiter": " ",
           "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in METRICS]}
    path = os.path.join(folder, f"{name}.yaml")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(cfg, f, sort_keys=False, allow_unicode=True)
    return path


def first_docs(task, max_docs: int | None):
    """The task cut to its first ``max_docs`` documents (all of them when ``None``)."""
    if max_docs is None:
        return task
    if max_docs < 1:
        raise SwapKLError(f"max_docs {max_docs} must be at least 1")
    return replace(task, docs=task.docs[:max_docs])
