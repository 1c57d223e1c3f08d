# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""private_files: 0600 from the first byte, never replacing an artifact, no partial files."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat
import threading

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import private_files


def mode(path):
    return stat.S_IMODE(os.lstat(str(path)).st_mode)


def test_write_private_is_0600_and_never_replaces(tmp_path):
    path = tmp_path / "record.json"
    private_files.write_private(str(path), "one")
    assert path.read_text() == "one" and mode(path) == 0o600
    with pytest.raises(private_files.ArtifactExists) as info:
        private_files.write_private(str(path), "two")
    assert str(path) in str(info.value)
    assert path.read_text() == "one"
    private_files.write_private(str(path), b"three", replace=True)
    assert path.read_text() == "three" and mode(path) == 0o600
    assert sorted(os.listdir(str(tmp_path))) == ["record.json"]


def test_a_planted_symlink_is_not_followed(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    link = tmp_path / "index.json"
    link.symlink_to(target)
    with pytest.raises(private_files.ArtifactExists):
        private_files.write_private(str(link), "x")
    private_files.write_private(str(link), "new", replace=True)
    assert target.read_text() == "keep"
    assert not link.is_symlink() and link.read_text() == "new"


def test_failure_inside_the_block_leaves_nothing(tmp_path):
    path = tmp_path / "snap.db"
    with pytest.raises(RuntimeError):
        with private_files.private_output(str(path)) as handle:
            handle.write(b"half")
            raise RuntimeError("crash")
    assert os.listdir(str(tmp_path)) == []


def test_copy_private(tmp_path):
    src = tmp_path / "src"
    src.write_bytes(b"a" * 3000000)
    os.chmod(str(src), 0o644)
    dest = tmp_path / "dest"
    assert private_files.copy_private(str(src), str(dest)) == 3000000
    assert mode(dest) == 0o600 and dest.read_bytes() == src.read_bytes()


def test_ensure_private_dir(tmp_path):
    created = private_files.ensure_private_dir(str(tmp_path / "a" / "b"))
    assert created == [str(tmp_path / "a"), str(tmp_path / "a" / "b")]
    assert mode(tmp_path / "a") == 0o700 and mode(tmp_path / "a" / "b") == 0o700
    assert private_files.ensure_private_dir(str(tmp_path / "a" / "b")) == []
    (tmp_path / "file").write_text("")
    with pytest.raises(private_files.PrivateFileError):
        private_files.ensure_private_dir(str(tmp_path / "file"))


def test_check_private_root(tmp_path):
    root = tmp_path / "evidence"
    assert "does not exist" in private_files.check_private_root(str(root))
    assert "absolute" in private_files.check_private_root("relative/path")
    root.mkdir()
    os.chmod(str(root), 0o777)
    assert "writable by group or others" in private_files.check_private_root(str(root))
    os.chmod(str(root), 0o700)
    assert private_files.check_private_root(str(root)) is None
    link = tmp_path / "link"
    link.symlink_to(root)
    assert "symlink" in private_files.check_private_root(str(link))


def test_locked_serialises_writers(tmp_path):
    order = []

    def worker(name):
        with private_files.locked(str(tmp_path)):
            order.append(name + "-in")
            order.append(name + "-out")

    threads = [threading.Thread(target=worker, args=(str(i),)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i in range(0, len(order), 2):
        assert order[i].split("-")[0] == order[i + 1].split("-")[0]
    assert mode(tmp_path / ".lock") == 0o600


def test_make_new_dir_takes_the_next_free_name(tmp_path):
    parent = tmp_path / "helm"
    first = private_files.make_new_dir(str(parent), "rel-rev3")
    second = private_files.make_new_dir(str(parent), "rel-rev3")
    (parent / "rel-rev3-3").write_text("taken by someone else")
    third = private_files.make_new_dir(str(parent), "rel-rev3")
    assert [os.path.basename(p) for p in (first, second, third)] == ["rel-rev3", "rel-rev3-2", "rel-rev3-4"]
    assert mode(parent) == 0o700 and all(mode(p) == 0o700 for p in (first, second, third))


def test_write_private_files_checks_every_file_before_writing(tmp_path):
    directory = str(tmp_path / "evidence" / "run")
    files = {"b.json": "{}\n", "a.txt": b"bytes\n"}
    paths = private_files.write_private_files(directory, files)
    assert [os.path.basename(p) for p in paths] == ["a.txt", "b.json"]
    assert all(os.stat(p).st_mode & 0o777 == 0o600 for p in paths) and os.stat(directory).st_mode & 0o777 == 0o700
    assert private_files.write_private_files(directory, files) == paths  # the same content again: kept
    with pytest.raises(private_files.ArtifactExists, match="b.json exists with other content"):
        private_files.write_private_files(directory, {"0-new.txt": "x", "b.json": "{\"a\": 1}\n"})
    assert not os.path.exists(os.path.join(directory, "0-new.txt"))  # nothing written: the check came first
    os.symlink(str(tmp_path / "elsewhere"), os.path.join(directory, "c.txt"))
    with pytest.raises(private_files.ArtifactExists, match="c.txt is a symlink"):
        private_files.write_private_files(directory, {"c.txt": "x"})
    assert not os.path.exists(str(tmp_path / "elsewhere"))


def test_replace_keeping_mode(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("old\n")
    os.chmod(str(config), 0o644)
    private_files.replace_keeping_mode(str(config), "new\n")
    assert config.read_text() == "new\n" and os.stat(str(config)).st_mode & 0o7777 == 0o644
    fresh = tmp_path / "conf.d" / "99-new.toml"
    fresh.parent.mkdir()
    private_files.replace_keeping_mode(str(fresh), b"x = 1\n")
    assert fresh.read_bytes() == b"x = 1\n" and os.stat(str(fresh)).st_mode & 0o7777 == 0o600
    private_files.replace_keeping_mode(str(tmp_path / "other.toml"), "y\n", new_mode=0o640)
    assert os.stat(str(tmp_path / "other.toml")).st_mode & 0o7777 == 0o640
    assert sorted(os.listdir(str(tmp_path))) == ["conf.d", "config.toml", "other.toml"]  # no temporary left


def test_replace_keeping_mode_leaves_the_file_on_failure(tmp_path, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text("old\n")

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(private_files.os, "replace", refuse)
    with pytest.raises(OSError):
        private_files.replace_keeping_mode(str(config), "new\n")
    assert config.read_text() == "old\n" and os.listdir(str(tmp_path)) == ["config.toml"]
