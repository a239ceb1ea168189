"""Degraded inputs of issue 34 (docs/bad_inputs.md, "Degraded inputs (issue 34)"): inputs that lost nothing but
gave a wrong message, no message or a silently changed record. Each now gives one line naming the culprit (CLI:
``swapkl: error: ...``, exit 2; config: ``Invalid config: ...``) or the right result, and writes nothing.

The lint of the workflow (``snakemake --lint`` exits 0) is here too, with the catalogue check of the section.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from direct_config import SCHEMA, RULES, refusal
from swapkl import cli
from swapkl.config import ConfigError
from swapkl.config.strict_yaml import check_config_text
from swapkl.config.validation import invalid_config_message, validate_config
from swapkl.errors import SwapKLError
from swapkl.export import export_checkpoint
from swapkl.model.loading import load_model
from swapkl.relevance.downstream_jobs import PAPER_TASKS
from swapkl.tables.staging import MARK, MARK_TEXT, Staging, remove_stale
from test_bad_inputs import error_lines, snapshot
from test_perplexity import char_tokenizer, save_tiny
from tiny_models import random_tokens

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "bad_inputs.md"
SECTION = "## Degraded inputs (issue 34)"
PARAGRAPH = "the quick brown fox jumps over the lazy dog and keeps running"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A tiny GPT-NeoX checkpoint (4 blocks, vocabulary 97, 64 positions) with a character tokenizer, token
    windows and text."""
    root = tmp_path_factory.mktemp("degraded")
    save_tiny(root / "model", arch="gpt_neox", n_layers=4)
    tokens = root / "tokens.npy"
    np.save(tokens, random_tokens(97, 2, 12).numpy())
    text = root / "text.txt"
    text.write_text("\n\n".join(f"{PARAGRAPH} {k}" for k in range(6)))
    return SimpleNamespace(root=root, model=str(root / "model"), tokens=str(tokens), text=str(text))


def refused(argv, capsys, folder: Path) -> str:
    """The one error line of ``swapkl ARGV`` (exit 2, no traceback), which must leave ``folder`` as it was."""
    before = snapshot(folder)
    capsys.readouterr()
    code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert snapshot(folder) == before
    lines = error_lines(err)
    assert len(lines) == 1, err
    return lines[0]


# --------------------------------------------------------------------------------- windows of one token


def test_min_tokens_below_two_is_refused(env, tmp_path, capsys):
    """Paragraphs of 1 token, which --min-tokens 1 made eligible: no next token, nll_mean NaN (a token file of
    such windows was refused already)."""
    text = tmp_path / "one_token.txt"
    text.write_text("a\n\nb\n\nc\n\nd")
    out = tmp_path / "out.parquet"
    msg = refused(["probe", "--model", env.model, "--text-file", text, "--n-seqs", "2", "--seq-len", "8",
                   "--min-tokens", "1", "--out", out], capsys, tmp_path)
    assert msg == ("min_tokens must be at least 2, got 1: a window of 1 token has no next token to predict "
                   "(next-token KL and NLL need at least 2)")
    assert not out.exists()


def test_min_tokens_below_two_is_refused_in_the_config(tmp_path):
    (tmp_path / "checkpoints" / "step0").mkdir(parents=True)
    cfg = {"models": {"m": {"local": str(tmp_path / "checkpoints"), "revisions": ["step0"],
                            "data": {"text_file": "t.txt", "min_tokens": 1}}}}
    assert refusal(cfg, base_dir=tmp_path) == "Invalid config: models.m.data.min_tokens: 1 is less than the minimum of 2"


# --------------------------------------------------------------------------------- download record


def _recorded(env, folder: Path, **record) -> Path:
    shutil.copytree(env.model, folder)
    (folder / "swapkl_source.json").write_text(json.dumps(record))
    return folder


def test_download_record_never_replaces_the_revision_asked_for(env, tmp_path, capsys):
    models = tmp_path / "models"
    _recorded(env, models / "step1", model_id="EleutherAI/pythia-70m", revision="step2", commit="c" * 40)
    msg = refused(["probe", "--model", models, "--revision", "step1", "--tokens", env.tokens, "--pairs", "adjacent",
                   "--out", tmp_path / "out.parquet"], capsys, tmp_path)
    assert msg == (f"revision 'step1' was asked for, but the download record '{models}/step1/swapkl_source.json' "
                   "says the folder holds revision 'step2' of 'EleutherAI/pythia-70m'; the revision asked for and the "
                   "recorded one must agree")


def test_download_record_never_replaces_the_model_id_asked_for(env, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _recorded(env, tmp_path / "org" / "name", model_id="other/model", revision="main", commit="c" * 40)
    msg = refused(["probe", "--model", "org/name", "--tokens", env.tokens, "--pairs", "adjacent",
                   "--out", tmp_path / "out.parquet"], capsys, tmp_path)
    assert msg == ("model 'org/name' was asked for, but the download record 'org/name/swapkl_source.json' says the "
                   "folder holds revision 'main' of 'other/model'; the model asked for and the recorded one must agree (name "
                   "the folder as ./org/name to take the recorded model)")


def test_download_record_that_agrees_fills_in_the_source(env, tmp_path):
    """The record still names the hub model and commit of a folder swapkl downloaded (nothing asked is replaced)."""
    models = tmp_path / "models"
    _recorded(env, models / "step1", model_id="EleutherAI/pythia-70m", revision="step1", commit="c" * 40)
    loaded = load_model(str(models), "step1", device="cpu", need_tokenizer=False)
    assert (loaded.model_id, loaded.revision, loaded.commit) == ("EleutherAI/pythia-70m", "step1", "c" * 40)
    plain = load_model(str(models / "step1"), None, device="cpu", need_tokenizer=False)
    assert plain.revision == "step1"  # no revision asked for: the recorded one


# --------------------------------------------------------------------------------- versioned tokenizer file


def _versioned_tokenizer_checkpoint(env, folder: Path) -> Path:
    """A checkpoint whose tokenizer_config.json names tokenizer.4.0.0.json in fast_tokenizer_files (transformers
    loads it instead of tokenizer.json): the same character vocabulary with the ids of 'a' and 'b' swapped."""
    shutil.copytree(env.model, folder)
    tok = json.loads((folder / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    vocab["a"], vocab["b"] = vocab["b"], vocab["a"]
    (folder / "tokenizer.4.0.0.json").write_text(json.dumps(tok))
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**cfg, "fast_tokenizer_files": ["tokenizer.4.0.0.json"]}))
    return folder


def test_tokenizer_hash_covers_the_versioned_tokenizer_file(env, tmp_path):
    from transformers import AutoTokenizer

    folder = _versioned_tokenizer_checkpoint(env, tmp_path / "m")
    plain = char_tokenizer()
    ab = plain("ab", add_special_tokens=False)["input_ids"]
    assert AutoTokenizer.from_pretrained(folder)("ab", add_special_tokens=False)["input_ids"] == ab[::-1]
    first = load_model(str(folder), device="cpu").tokenizer_sha256
    tok = json.loads((folder / "tokenizer.4.0.0.json").read_text())
    tok["model"]["vocab"]["c"], tok["model"]["vocab"]["d"] = tok["model"]["vocab"]["d"], tok["model"]["vocab"]["c"]
    (folder / "tokenizer.4.0.0.json").write_text(json.dumps(tok))  # another tokenizer, tokenizer.json unchanged
    assert load_model(str(folder), device="cpu").tokenizer_sha256 != first


def test_export_copies_the_versioned_tokenizer_file(env, tmp_path):
    from transformers import AutoTokenizer

    folder = _versioned_tokenizer_checkpoint(env, tmp_path / "m")
    out = tmp_path / "ex"
    prov = export_checkpoint(str(folder), str(out), remove=[1], device="cpu")
    assert "tokenizer.4.0.0.json" in prov["copied_files"]
    assert prov["tokenizer_sha256"] == load_model(str(folder), device="cpu").tokenizer_sha256
    text = "a bad cab"
    assert (AutoTokenizer.from_pretrained(out)(text)["input_ids"]
            == AutoTokenizer.from_pretrained(folder)(text)["input_ids"])


def test_export_refuses_a_tokenizer_that_does_not_load_as_the_source(env, tmp_path, monkeypatch):
    """The check itself: an export whose copied tokenizer does not load (here the versioned file left out, as
    before: transformers then finds no tokenizer file) fails in one line and leaves nothing."""
    import swapkl.export as export

    folder = _versioned_tokenizer_checkpoint(env, tmp_path / "m")
    copy = export.copy_side_files
    monkeypatch.setattr(export, "copy_side_files",
                        lambda src, dst, names: copy(src, dst, [n for n in names if n != "tokenizer.4.0.0.json"]))
    with pytest.raises(SwapKLError, match="^the exported checkpoint's tokenizer does not load: "):
        export_checkpoint(str(folder), str(tmp_path / "ex"), remove=[1], device="cpu")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_versioned_tokenizer_file_outside_the_checkpoint_is_refused(env, tmp_path):
    folder = _versioned_tokenizer_checkpoint(env, tmp_path / "m")
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    cfg["fast_tokenizer_files"] = ["../other/tokenizer.4.0.0.json"]
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    with pytest.raises(SwapKLError) as e:
        load_model(str(folder), device="cpu")
    assert str(e.value) == (f"tokenizer config '{folder}/tokenizer_config.json' names the tokenizer file "
                            "'../other/tokenizer.4.0.0.json' (fast_tokenizer_files), which is not a file of the "
                            "checkpoint folder")


# --------------------------------------------------------------------------------- Python tags in the config


PYTHON_TAG_CONFIG = "models:\n  m:\n    revisions: [main]\n    batch_size: !!python/object/apply:os.system ['touch {trace}']\n"


def test_python_tag_in_a_config_file_is_refused_naming_file_and_line(tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text(PYTHON_TAG_CONFIG.format(trace=tmp_path / "PWNED"))
    with pytest.raises(ConfigError) as e:
        check_config_text([str(path)])
    assert invalid_config_message(e.value) == (
        f"Invalid config: {path}: line 4: the Python tag !!python/object/apply:os.system is refused: a config file "
        "holds data, never Python objects or code")
    assert not (tmp_path / "PWNED").exists()


def test_python_tag_that_snakemakes_loader_takes_is_refused(tmp_path):
    """Snakemake's loader (yte, PyYAML's FullLoader) takes !!python/name into the config as a Python object; the
    workflow's check of the config files refuses it, naming the file and the line."""
    path = tmp_path / "name.yaml"
    path.write_text("models:\n  m:\n    local: ckpts\n    revisions: [step0]\n    label: !!python/name:os.system\n")
    cfg = yaml.load(path.read_text(), Loader=yaml.FullLoader)  # as Snakemake reads it
    assert cfg["models"]["m"]["label"] is os.system
    with pytest.raises(ConfigError) as e:
        validate_config(cfg, schema_path=str(SCHEMA), rules_dir=str(RULES), configfiles=[path], base_dir=str(tmp_path))
    assert str(e.value) == (f"{path}: line 5: the Python tag !!python/name:os.system is refused: a config file holds "
                            "data, never Python objects or code")


@pytest.mark.slow
def test_python_tag_in_config_yaml_stops_snakemake_in_one_line(tmp_path):
    """``snakemake -n`` on a workflow whose config.yaml holds a Python tag: the workflow's line (file and line),
    not Snakemake's message about indentation, and nothing run."""
    work = tmp_path / "wf"
    work.mkdir()
    for name in ("Snakefile", "workflow", "src", "profiles"):
        (work / name).symlink_to(REPO / name)
    text = (REPO / "config.yaml").read_text().splitlines(keepends=True)
    line = next(k for k, ln in enumerate(text) if ln.strip().startswith("batch_size:"))
    indent = text[line][: len(text[line]) - len(text[line].lstrip())]
    text[line] = f"{indent}batch_size: !!python/object/apply:os.system ['touch {tmp_path / 'PWNED'}']\n"
    (work / "config.yaml").write_text("".join(text))
    snakemake = Path(sys.executable).with_name("snakemake")
    proc = subprocess.run([str(snakemake), "-n", "--nolock"], cwd=work, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert proc.returncode == 1
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith("Invalid config:")]
    assert lines == [f"Invalid config: config.yaml: line {line + 1}: the Python tag !!python/object/apply:os.system "
                     "is refused: a config file holds data, never Python objects or code"]
    assert "indentation" not in proc.stdout + proc.stderr
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.slow
def test_a_yte_template_config_yaml_is_refused_before_snakemake_runs_it(tmp_path):
    """``snakemake -n`` on a workflow whose config.yaml is a YTE template: the workflow's line, and the template's
    code never ran (config.yaml is checked before the ``configfile:`` directive reads it)."""
    work = tmp_path / "wf"
    work.mkdir()
    for name in ("Snakefile", "workflow", "src", "profiles"):
        (work / name).symlink_to(REPO / name)
    (work / "config.yaml").write_text(YTE_CONFIG.format(trace=str(tmp_path / "PWNED")))
    snakemake = Path(sys.executable).with_name("snakemake")
    proc = subprocess.run([str(snakemake), "-n", "--nolock"], cwd=work, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert proc.returncode == 1
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith("Invalid config:")]
    assert len(lines) == 1 and lines[0].startswith("Invalid config: config.yaml: line 1: __use_yte__ makes the file "
                                                   "a YTE template"), lines
    assert not (tmp_path / "PWNED").exists()


# --------------------------------------------------------------------------------- heal options


@pytest.mark.parametrize("option, value, message", [
    ("--weight-decay", "inf", "heal weight_decay must be a finite number >= 0, got inf"),
    ("--alpha", "inf", "heal alpha must be a finite number > 0, got inf"),
    ("--lr", "nan", "heal lr must be a finite number > 0, got nan"),
    ("--weight-decay", "-0.1", "heal weight_decay must be a finite number >= 0, got -0.1"),
])
def test_heal_refuses_non_finite_settings(env, tmp_path, capsys, option, value, message):
    out = tmp_path / "healed"
    msg = refused(["heal", "--model", env.model, "--train-text-file", env.text, "--device", "cpu", option, value,
                   "--out", out], capsys, tmp_path)
    assert msg == message and not out.exists()


def test_heal_refuses_chunks_beyond_the_models_positions(env, tmp_path, capsys):
    out = tmp_path / "healed"
    msg = refused(["heal", "--model", env.model, "--train-text-file", env.text, "--device", "cpu", "--preset", "demo",
                   "--train-seq-len", "65", "--out", out], capsys, tmp_path)
    assert msg == "heal seq_len 65 exceeds the model's 64 positions (max_position_embeddings)"
    assert not out.exists()


# --------------------------------------------------------------------------------- killed exports


KILLED_EXPORT = """
import os, signal, sys
import swapkl.export as export
export.verify_export = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)  # killed while it checks the export
export.export_checkpoint(sys.argv[1], sys.argv[2], remove=[1], device="cpu")
"""


def _partials(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".partial"))


def test_next_export_removes_the_staging_folder_of_a_killed_export(env, tmp_path):
    exports = tmp_path / "exports"
    exports.mkdir()
    proc = subprocess.run([sys.executable, "-c", KILLED_EXPORT, env.model, str(exports / "ex")],
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")}, capture_output=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL
    stale = _partials(exports)
    assert len(stale) == 1 and stale[0].startswith(".ex.")  # what kill -9 left behind
    # what is not a dead swapkl staging folder stays: a user's folder of that name without the mark, one whose
    # mark swapkl did not write, a link of that name, and the staging folder of a live export
    (exports / ".ex.useruser.partial").mkdir()
    (exports / ".ex.user0001.partial" / "data").mkdir(parents=True)
    (exports / ".ex.user0001.partial" / MARK).write_text("someone else's lock\n")
    (exports / ".ex.linklink.partial").symlink_to(exports / stale[0], target_is_directory=True)
    live = Staging(str(exports / "other"))
    before = snapshot(exports / ".ex.user0001.partial")
    prov = export_checkpoint(env.model, str(exports / "ex2"), remove=[2], device="cpu")
    assert prov["removed_layers"] == [2]
    assert _partials(exports) == sorted([".ex.useruser.partial", ".ex.user0001.partial", ".ex.linklink.partial",
                                         os.path.basename(live.path)])
    assert snapshot(exports / ".ex.user0001.partial") == before
    assert (Path(live.path) / MARK).read_bytes().startswith(MARK_TEXT)
    live.discard()
    assert not list((exports / "ex2").glob(MARK + "*"))  # the export holds its files only
    assert remove_stale(str(exports)) == []


# --------------------------------------------------------------------------------- downstream offline


@pytest.mark.slow
def test_downstream_offline_with_the_default_tasks_is_one_line(env, tmp_path):
    """The default lm-eval tasks without the dataset hub (offline, an empty cache): one line naming the task, where
    a `datasets` traceback was."""
    hf = tmp_path / "hf"
    offline = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "HF_HOME": str(hf), "HF_DATASETS_CACHE": str(hf / "datasets")}
    out = tmp_path / "downstream.parquet"
    proc = subprocess.run([sys.executable, "-m", "swapkl", "downstream", "--model", env.model, "--device", "cpu",
                           "--out", str(out)], env=offline, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = error_lines(proc.stderr)
    assert len(lines) == 1
    assert lines[0].startswith(f"lm-eval task {PAPER_TASKS[0]!r}: its dataset cannot be loaded (")
    assert lines[0].endswith("; lm-eval fetches its tasks' datasets from the dataset hub, so run where the hub is "
                             "reachable or score local task files (--tasks)")
    assert not out.exists()


# --------------------------------------------------------------------------------- snakemake --lint


@pytest.mark.slow
@pytest.mark.parametrize("profile", [[], ["--workflow-profile", "profiles/demo"]], ids=["config.yaml", "demo"])
def test_snakemake_lint_is_clean(profile):
    snakemake = Path(sys.executable).with_name("snakemake")
    proc = subprocess.run([str(snakemake), "--lint", *profile], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Lints for" not in proc.stdout + proc.stderr


# --------------------------------------------------------------------------------- the catalogue


def test_catalogue_section_lists_every_case():
    """docs/bad_inputs.md has this file's section, last, and it names each message above."""
    doc = DOC.read_text()
    assert SECTION in doc
    section = doc[doc.index(SECTION):]
    for text in ("min_tokens must be at least 2, got 1", "the revision asked for and the recorded one must agree",
                 "the model asked for and the recorded one must agree", "fast_tokenizer_files",
                 "the exported checkpoint's tokenizer does not load",
                 "the Python tag !!python/object/apply:os.system is refused",
                 "heal weight_decay must be a finite number >= 0, got inf",
                 "heal alpha must be a finite number > 0, got inf",
                 "heal seq_len 65 exceeds the model's 64 positions (max_position_embeddings)",
                 ".OUT.XXXXXXXX.partial", "its dataset cannot be loaded", "snakemake --lint"):
        assert text in section, text


YTE_CONFIG = ("__use_yte__: true\nmodels:\n  ?__import__('pathlib').Path({trace!r}).write_text('x') and 'm':\n"
              "    revisions: [main]\n")


def test_a_yte_template_config_is_refused_naming_file_and_line(tmp_path):
    """A config file with ``__use_yte__`` is a YTE template: Snakemake's loader runs its ``?`` expressions as
    Python (shown here with the loader Snakemake calls). The workflow's check refuses such a file, naming it and
    the line, and itself runs nothing; a file without the key passes."""
    import yte

    trace = tmp_path / "PWNED"
    path = tmp_path / "template.yaml"
    path.write_text(YTE_CONFIG.format(trace=str(trace)))
    with pytest.raises(ConfigError) as e:
        check_config_text([str(path)])
    assert str(e.value).startswith(f"{path}: line 1: __use_yte__ makes the file a YTE template, whose expressions "
                                   "Snakemake runs as Python")
    assert not trace.exists()
    with open(path, encoding="utf-8") as f:  # what Snakemake's loader does with the same file
        yte.process_yaml(f, require_use_yte=True)
    assert trace.exists()
    plain = tmp_path / "plain.yaml"
    plain.write_text("models:\n  m:\n    revisions: [main]\n    label: '__use_yte__'\n")
    check_config_text([str(plain)])
