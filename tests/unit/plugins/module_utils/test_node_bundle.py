# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Support bundles: written private and never replaced unasked; extracted without links out, devices or absolute names."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import os
import tarfile

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import bundle as node_bundle
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.bundle import BundleError, extract_bundle, write_bundle
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.config import gather
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import NodeTree, RecordedCommands
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence.private_files import ArtifactExists

import node_trees


def make_tar(path, members):
    """``members``: (name, type, linkname or data)."""
    with tarfile.open(str(path), "w:gz") as tar:
        for name, kind, extra in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.REGTYPE:
                data = extra or b"x"
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                info.linkname = extra or ""
                tar.addfile(info)
    return str(path)


BAD = [
    ("symlink out", [("etc/evil", tarfile.SYMTYPE, "../../../../etc/shadow")], "is a link to '../../../../etc/shadow', outside the destination"),
    ("absolute symlink", [("etc/evil", tarfile.SYMTYPE, "/etc/shadow")], "is a link to the absolute path '/etc/shadow'"),
    ("absolute name", [("/etc/passwd", tarfile.REGTYPE, b"x")], "has an absolute name"),
    ("dot-dot name", [("../outside", tarfile.REGTYPE, b"x")], "would be written outside"),
    ("hard link out", [("etc/h", tarfile.LNKTYPE, "../../etc/passwd")], "is a hard link to '../../etc/passwd', outside"),
    ("device", [("dev/sda", tarfile.BLKTYPE, "")], "is a device or special file"),
    ("fifo", [("run/fifo", tarfile.FIFOTYPE, "")], "is a device or special file"),
    # A link inside, then a file written through it to outside.
    ("through a link", [("sys", tarfile.SYMTYPE, "."), ("sys/../../x", tarfile.REGTYPE, b"x")], "outside"),
]


@pytest.mark.parametrize("with_filter", [True, False], ids=["data-filter", "fallback"])
@pytest.mark.parametrize("label,members,message", BAD, ids=[b[0] for b in BAD])
def test_unsafe_bundle_is_refused_and_nothing_is_written(tmp_path, monkeypatch, with_filter, label, members, message):
    if not with_filter:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    bundle = make_tar(tmp_path / "b.tar.gz", [("etc/os-release", tarfile.REGTYPE, b"ID=ubuntu\n")] + members)
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(BundleError, match="member .*" if label != "through a link" else "outside") as info:
        extract_bundle(bundle, str(dest))
    assert message in str(info.value)
    assert os.listdir(str(dest)) == []  # refused before anything was extracted
    assert not (tmp_path / "outside").exists()


@pytest.mark.parametrize("with_filter", [True, False], ids=["data-filter", "fallback"])
def test_a_member_that_escapes_only_through_an_extracted_link_is_refused(tmp_path, monkeypatch, with_filter):
    # "s" -> "x/.." is inside (it names the destination itself), but "s/../z" then resolves outside.
    if not with_filter:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    bundle = make_tar(tmp_path / "b.tar.gz", [("x", tarfile.DIRTYPE, ""), ("s", tarfile.SYMTYPE, "x/.."),
                                              ("s/../z", tarfile.REGTYPE, b"x")])
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(BundleError, match="'s/../z'"):
        extract_bundle(bundle, str(dest))
    assert not (tmp_path / "z").exists()


@pytest.mark.parametrize("with_filter", [True, False], ids=["data-filter", "fallback"])
def test_the_real_h200_bundle_extracts_with_its_links(tmp_path, monkeypatch, with_filter):
    if not with_filter:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    root = node_trees.h200_tree(tmp_path / "h200")
    link = os.path.join(root, "sys/bus/pci/devices/0000:00:06.0/driver")
    assert os.path.islink(link) and os.readlink(link).endswith("/drivers/nvidia")
    tree = NodeTree(root)
    facts = gather(tree, RecordedCommands(tree))
    assert facts["gpus"][0]["kernel_driver"] == "nvidia" and facts["problems"] == []


def test_bundle_is_private_and_never_replaced_unless_asked(tmp_path):
    source = node_trees.build_tree(tmp_path / "src", node_trees.shapes()["vfio-passthrough"])
    tree = NodeTree(source, record=True)
    facts = gather(tree, RecordedCommands(tree))
    dest = str(tmp_path / "b.tar.gz")
    write_bundle(dest, tree, {}, facts, {"host": "test"})
    assert oct(os.stat(dest).st_mode & 0o777) == "0o600"
    before = os.stat(dest).st_ino
    with pytest.raises(ArtifactExists, match="already exists"):
        write_bundle(dest, tree, {}, facts, {"host": "test"})
    assert os.stat(dest).st_ino == before
    write_bundle(dest, tree, {}, facts, {"host": "test"}, replace=True)
    assert oct(os.stat(dest).st_mode & 0o777) == "0o600"
    assert [n for n in os.listdir(str(tmp_path)) if n not in ("src", "b.tar.gz")] == []  # no temporary left


def test_class_links_are_recorded_as_links_and_replay(tmp_path):
    """/sys/class/net/<if> and /sys/class/infiniband/<dev> are links: the bundle keeps them as links
    (never also as directories) and the network facts replay the same."""
    source = node_trees.build_tree(tmp_path / "src", node_trees.shapes()["hgx-8gpu-2numa"])
    tree = NodeTree(source, record=True)
    facts = gather(tree, RecordedCommands(tree))
    write_bundle(str(tmp_path / "b.tar.gz"), tree, {}, facts, {"host": "test"})
    with tarfile.open(str(tmp_path / "b.tar.gz")) as tar:
        kinds = dict((m.name, m.type) for m in tar.getmembers() if m.name.startswith("sys/class/"))
    assert kinds["sys/class/net/ens1np0"] == tarfile.SYMTYPE
    assert kinds["sys/class/infiniband/mlx5_0"] == tarfile.SYMTYPE
    out = tmp_path / "out"
    out.mkdir()
    extract_bundle(str(tmp_path / "b.tar.gz"), str(out))
    replay = NodeTree(str(out))
    assert gather(replay, RecordedCommands(replay))["network"] == facts["network"]


def test_check_member_is_the_data_filter_rule():
    assert node_bundle.check_member(tarfile.TarInfo("a/b"), "/tmp/x") is None


def test_a_bundle_of_a_rooted_tree_holds_nothing_from_outside_the_root(tmp_path):
    """Links in a recorded tree that point out of it are resolved inside the root, like the reads were."""
    outside = tmp_path / "host-secret"
    outside.write_text(u"SECRET=1\n")
    (tmp_path / "host-dir").mkdir()
    (tmp_path / "host-dir" / "sub").mkdir()
    root = tmp_path / "node"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "os-release").symlink_to(str(outside))           # absolute, to the host
    (root / "etc" / "machine-id").symlink_to("../../host-secret")     # relative, climbing out
    (root / "etc" / "d").symlink_to(str(tmp_path / "host-dir"))
    tree = NodeTree(str(root), record=True)
    assert tree.read_text("/etc/os-release") is None
    assert tree.read_text("/etc/machine-id") is None
    assert tree.listdir("/etc/d") is None
    tree.reads.extend([("file", "/etc/os-release"), ("exists", "/etc/machine-id"), ("dir", "/etc/d")])
    dest = tmp_path / "b.tar.gz"
    write_bundle(str(dest), tree, {}, {}, {})
    with tarfile.open(str(dest)) as tar:
        names = tar.getnames()
        for member in tar.getmembers():
            if member.isfile():
                assert b"SECRET" not in tar.extractfile(member).read()
    assert "etc/d/sub" not in names and "etc/d" not in names
