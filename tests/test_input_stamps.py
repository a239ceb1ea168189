"""swapkl.config.input_stamps: a content change is seen whatever the modification time says, and a copy or a
touch with the same content changes nothing (issue 49, item 4). The reference is the file system itself: times
set with os.utime as `cp -p` and `rsync -a` set them."""

from __future__ import annotations

import os
import shutil

from swapkl.config import input_stamps
from swapkl.config.input_stamps import refresh, stamp_path, with_stamps


def _restore_times(path, st):
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_replaced_file_with_its_old_time_is_seen(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = tmp_path / "valid.txt"
    text.write_text("first text\n")
    os.utime(text, ns=(10**18, 10**18))
    assert refresh(["valid.txt"]) == [] and with_stamps(["valid.txt"]) == ["valid.txt", stamp_path("valid.txt")]
    stamp = tmp_path / stamp_path("valid.txt")
    assert stamp.stat().st_mtime_ns == 10**18  # a new stamp takes the input's time: earlier results stay current
    assert refresh(["valid.txt"]) == []  # nothing changed
    st = text.stat()
    text.write_text("other text\n")  # the same size
    _restore_times(text, st)  # as `cp -p` does
    assert text.stat().st_mtime_ns == 10**18 and text.stat().st_size == st.st_size
    assert refresh(["valid.txt"]) == ["valid.txt"]
    assert stamp.stat().st_mtime_ns > 10**18
    assert refresh(["valid.txt"]) == []


def test_the_same_content_copied_or_touched_keeps_the_stamps_time(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "model.safetensors").write_bytes(b"\1" * 1000)
    (ckpt / "config.json").write_text("{}")
    refresh(["ckpt"])
    stamp = tmp_path / stamp_path("ckpt")
    before = stamp.stat().st_mtime_ns
    shutil.copy2(ckpt / "model.safetensors", tmp_path / "copy")
    os.replace(tmp_path / "copy", ckpt / "model.safetensors")  # a new inode, the same bytes and time
    os.utime(ckpt / "config.json")  # a touch
    assert refresh(["ckpt"]) == [] and stamp.stat().st_mtime_ns == before
    st = (ckpt / "model.safetensors").stat()
    (ckpt / "model.safetensors").write_bytes(b"\2" * 1000)
    _restore_times(ckpt / "model.safetensors", st)
    assert refresh(["ckpt"]) == ["ckpt"] and stamp.stat().st_mtime_ns > before


def test_inputs_not_made_yet_get_their_stamp_from_the_workflow(tmp_path, monkeypatch):
    """refresh leaves them alone; rule stamp_input writes the stamp once the input exists, dated now."""
    monkeypatch.chdir(tmp_path)
    assert refresh(["later.txt"]) == [] and with_stamps("later.txt") == ["later.txt", stamp_path("later.txt")]
    assert not (tmp_path / input_stamps.STAMP_DIR).exists()
    (tmp_path / "later.txt").write_text("made\n")
    os.utime(tmp_path / "later.txt", ns=(10**18, 10**18))
    input_stamps.write_stamp("later.txt", stamp_path("later.txt"))
    assert (tmp_path / stamp_path("later.txt")).stat().st_mtime_ns > 10**18
    assert refresh(["later.txt"]) == []  # the stamp is current


def test_the_study_plan_stamps_every_checkpoint_and_text_file():
    from swapkl.config.job_settings import config_text_files

    cfg = {"models": {"m": {"data": {"text_file": "a.txt"}, "prune": {"eval": {"text_file": "b.txt"},
                                                                       "calibration": {"text_file": "a.txt"}}}},
           "pe_ablation": {"data": {"text_file": "c.txt"}}}
    assert config_text_files(cfg) == ["a.txt", "b.txt", "c.txt"]
