"""swapkl.relevance.template_sandbox: a task template that would run without end, or build a huge value, is
stopped in its child process and refused in one line naming the task file (issue 49, item 5); templates of the
harness's kind still render as Jinja's sandbox renders them in this process (the reference)."""

from __future__ import annotations

import time

import pytest

from bad_inputs_doc import assert_listed
from swapkl import cli
from swapkl.errors import SwapKLError
from swapkl.relevance import template_sandbox
from swapkl.relevance.tasks import load_task, write_task

DOCS = [{"query": "a" * 28 + "!", "choices": ["yes", "no"], "gold": 0, "n": 3}]


def _task(tmp_path, text: str) -> str:
    return write_task(str(tmp_path / "tasks"), "t", DOCS, text=text)


@pytest.mark.parametrize("text", [
    "{{ query.strip() }} {{ choices|join(', ') }}?",
    "{% for i in range(n) %}{{ i }}{% endfor %}{{ query | regex_replace('a+', 'b') }}",
])
def test_plain_templates_render_as_in_process(tmp_path, text):
    want = template_sandbox.template_environment().from_string(text).render(**DOCS[0])
    assert load_task(_task(tmp_path, text)).docs[0].context == want


@pytest.mark.parametrize("text, message", [
    # nested loops that write nothing: only the time bound ends them
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}q",
     r"did not finish rendering within 1 s \(.*t\.jsonl:1\); a task template must render a document at once"),
    # catastrophic backtracking in C code (2^28 paths)
    ("{{ query | regex_replace('(a+)+$', '') }}", r"did not finish rendering within 1 s"),
    # nested loops that write: the output bound
    ("{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
     r"renders more than 1,000,000 characters \(.*t\.jsonl:1\)"),
    # a string of 10^10 characters: the memory bound
    ("{{ 'x' * 10000000000 }}", r"needs more than 2,048 MiB of memory to render \(.*t\.jsonl:1\)"),
])
def test_a_template_without_bound_is_stopped_and_named(tmp_path, monkeypatch, text, message):
    monkeypatch.setattr(template_sandbox, "SECONDS", 1.0)
    path = _task(tmp_path, text)
    start = time.monotonic()
    with pytest.raises(SwapKLError, match=rf"^task file {path!r}: doc_to_text template .*{message}") as err:
        load_task(path)
    assert time.monotonic() - start < 30 and "\n" not in str(err.value)
    # the doc names the bound (10 s by default) and the template, quoted as a plain one is
    shown = str(err.value).replace("within 1 s", "within {seconds} s").replace(repr(text), "'{template}'")
    assert_listed(shown, task=path, data=str(tmp_path / "tasks" / "t.jsonl"))


def test_the_command_line_refuses_it_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(template_sandbox, "SECONDS", 1.0)
    path = _task(tmp_path, "{{ query | regex_replace('(a+)+$', '') }}")
    (tmp_path / "nomodel").mkdir()
    (tmp_path / "nomodel" / "config.json").write_text("{}")  # the paths pass: the task file is what is refused
    code = cli.main(["relevance", "--model", str(tmp_path / "nomodel"), "--tasks", path,
                     "--out", str(tmp_path / "r.parquet")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f"swapkl: error: task file {path!r}")
    assert not (tmp_path / "r.parquet").exists()
