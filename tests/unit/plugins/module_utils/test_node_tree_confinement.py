# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A recorded node tree is read like a chroot: links and ``..`` never leave the root, only regular files are
opened (a FIFO never blocks), bad node paths and recorded results are problems with their path, never tracebacks.

Every hostile tree is built in tmp_path; a sentinel file lies next to the root (tmp_path/outside/secret) and its
content must never show up in anything the tree or ``gpu_node.collect`` returns.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import socket
import stat
import threading

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import gpu_node
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import tree as node_tree
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.config import complete
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import (
    MAX_SYMLINKS,
    NodeTree,
    PathError,
    RecordedCommands,
    node_path,
)

import node_trees

SENTINEL = "SENTINEL"
CONTAINERD_2 = "containerd github.com/containerd/containerd/v2 v2.3.1 3f5c8c8d4b8e1f6c0e5f7a9b2d4c6e8f0a1b3c5d"
GPU_DEV = "/sys/bus/pci/devices/0000:17:00.0"
SMI_JSON = "/.gpufleet/commands/nvidia-smi.json"
CALL_SECONDS = 10


def sentinel(tmp_path):
    """tmp_path/outside/secret (and a TOML and a CDI spec beside it) holding SENTINEL; returns the secret's path."""
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret").write_text(SENTINEL + "\n")
    (outside / "evil.toml").write_text('version = 3\n# %s\n' % SENTINEL)
    (outside / "evil.yaml").write_text('cdiVersion: "0.5.0"\nkind: %s.com/gpu\ndevices: []\n' % SENTINEL.lower())
    return str(outside / "secret")


def empty_root(tmp_path):
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    return str(root)


def gpu_root(tmp_path, files=None):
    """A constructed one-GPU tree (recorded nvidia-smi result, numa_node, driver version file)."""
    spec = dict(node_trees.shapes()["smi-fails"], containerd_version=CONTAINERD_2, files=files or {})
    return node_trees.build_tree(str(tmp_path / "root"), spec)


def host(root, path):
    return os.path.join(root, path.lstrip("/"))


def replace_with_link(root, path, target):
    full = host(root, path)
    if os.path.lexists(full):
        os.unlink(full)
    parent = os.path.dirname(full)
    if not os.path.isdir(parent):
        os.makedirs(parent)
    os.symlink(target, full)


def call_with_deadline(func, *args):
    """``func(*args)`` in a daemon thread; fails (instead of hanging the run) when it blocks."""
    box = {}

    def target():
        try:
            box["result"] = func(*args)
        except BaseException as exc:  # pylint: disable=broad-except  # handed to the test below
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.daemon = True
    thread.start()
    thread.join(CALL_SECONDS)
    assert not thread.is_alive(), "%s blocked for more than %d s" % (getattr(func, "__name__", func), CALL_SECONDS)
    if "error" in box:
        raise box["error"]
    return box["result"]


def release_fifos(paths):
    """Open each FIFO for writing (non-blocking) so that a reader stuck in open() returns."""
    for path in paths:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def collect(root, containerd_config="/etc/containerd/config.toml"):
    tree = NodeTree(root)
    facts, raw = call_with_deadline(gpu_node.collect, tree, RecordedCommands(tree), containerd_config)
    dumped = json.dumps([facts, raw])  # always serialisable
    assert SENTINEL not in dumped and SENTINEL.lower() not in dumped
    completed = complete(json.loads(json.dumps(facts)), json.loads(json.dumps(raw)))
    assert SENTINEL not in json.dumps(completed)
    return facts, raw, completed


def problems_at(problems, path):
    return [p["reason"] for p in problems if p["path"] == path]


def assert_below(root, path, follow=True):
    """``path`` lies below ``root``: lexically (no ``..``), and on the host once its links are followed
    (all of them with ``follow``, else all but the last component, which may be a link left as is)."""
    assert path == root or path.startswith(root.rstrip("/") + "/"), path
    assert ".." not in path[len(root):].split("/"), path
    real_root = os.path.realpath(root)
    real = os.path.realpath(path if follow else os.path.dirname(path))
    assert real == real_root or real.startswith(real_root + os.sep), path


# ---------------------------------------------------------------------------------------------------------------
# Links and .. never leave the root


@pytest.mark.parametrize("target", [
    "/outside/secret",
    "/../../../../outside/secret",
    "../../../../../../../../outside/secret",
    "../outside/secret",
    "HOST",  # the real host path of the sentinel
])
def test_link_to_the_sentinel_is_resolved_inside_the_root(tmp_path, target):
    secret = sentinel(tmp_path)
    root = empty_root(tmp_path)
    replace_with_link(root, "/etc/os-release", secret if target == "HOST" else target)
    tree = NodeTree(root)
    assert tree.read_text("/etc/os-release") is None  # resolves to <root>/outside/secret: missing
    assert tree.is_file("/etc/os-release") is False
    assert tree.exists("/etc/os-release") is True  # the link itself is there
    assert tree.readlink("/etc/os-release") == (secret if target == "HOST" else target)  # raw text, not followed
    assert_below(root, tree.host_path("/etc/os-release", follow=True))
    assert tree.problems == []


@pytest.mark.parametrize("target", ["/outside/secret", "../../../outside/secret", "../outside/secret"])
def test_link_target_is_taken_from_the_root_as_a_chroot_would(tmp_path, target):
    sentinel(tmp_path)
    root = empty_root(tmp_path)
    os.makedirs(host(root, "/outside"))
    with open(host(root, "/outside/secret"), "w") as handle:
        handle.write("inside the root\n")
    replace_with_link(root, "/etc/os-release", target)
    tree = NodeTree(root)
    assert tree.read_value("/etc/os-release") == "inside the root"
    assert tree.host_path("/etc/os-release", follow=True) == host(root, "/outside/secret")


@pytest.mark.parametrize("link,path", [
    ("../..", "/etc/up/outside/secret"),  # relative: <root>/etc/../.. is tmp_path on the host
    ("../../../../../..", "/etc/up/outside/secret"),
    ("/..", "/etc/up/outside/secret"),
    ("HOSTDIR", "/etc/up/secret"),  # absolute host path of the sentinel's directory
])
def test_directory_link_out_of_the_root_is_confined(tmp_path, link, path):
    secret = sentinel(tmp_path)
    root = empty_root(tmp_path)
    replace_with_link(root, "/etc/up", os.path.dirname(secret) if link == "HOSTDIR" else link)
    tree = NodeTree(root)
    assert tree.read_text(path) is None
    assert tree.listdir(posixpath_dirname(path)) is None
    assert tree.find_binary("secret", [posixpath_dirname(path)]) is None
    assert tree.problems == []


def posixpath_dirname(path):
    return path.rsplit("/", 1)[0]


@pytest.mark.parametrize("path", [
    "/../outside/secret",
    "/../../../../../../outside/secret",
    "/etc/../../outside/secret",
    "/etc/./../../../outside/secret",
    "//..//..//outside/secret",
])
def test_dotdot_in_a_node_path_stops_at_the_root(tmp_path, path):
    sentinel(tmp_path)
    root = empty_root(tmp_path)
    tree = NodeTree(root)
    assert tree.read_text(path) is None
    assert tree.exists(path) is False
    assert tree.listdir(path.rsplit("/", 1)[0]) is None
    assert tree.host_path(path, follow=True) == host(root, "/outside/secret")
    assert tree.problems == []


def test_dotdot_after_a_link_goes_to_the_targets_parent(tmp_path):
    root = empty_root(tmp_path)
    os.makedirs(host(root, "/a/b"))
    with open(host(root, "/a/marker"), "w") as handle:
        handle.write("a\n")
    replace_with_link(root, "/etc/l", "/a/b")
    tree = NodeTree(root)
    assert tree.read_value("/etc/l/../marker") == "a"  # like the kernel: .. of the link's target


@pytest.mark.parametrize("links", [{"/etc/a": "/etc/b", "/etc/b": "/etc/a"},
                                   {"/etc/a": "a"},
                                   {"/etc/a": "./a"},
                                   {"/etc/a": "../etc/a/x"}])
def test_link_loops_are_a_problem(tmp_path, links):
    root = empty_root(tmp_path)
    for path, target in links.items():
        replace_with_link(root, path, target)
    tree = NodeTree(root)
    assert call_with_deadline(tree.read_text, "/etc/a") is None
    assert tree.listdir("/etc/a") is None
    assert tree.read_text("/etc/a/deeper/file") is None
    reasons = problems_at(tree.problems, "/etc/a") + problems_at(tree.problems, "/etc/a/deeper/file")
    assert reasons and all(r == "too many levels of symbolic links" for r in reasons)
    assert len(tree.problems) == 3
    # Not followed: the link itself is there, and its text is what it says.
    assert tree.exists("/etc/a") is True
    assert tree.readlink("/etc/a") == links["/etc/a"]


def link_chain(root, count):
    """/etc/l1 -> /etc/l2 -> ... -> /etc/l<count> -> /etc/real."""
    with open(host(root, "/etc/real"), "w") as handle:
        handle.write("end of chain\n")
    for number in range(1, count + 1):
        replace_with_link(root, "/etc/l%d" % number, "/etc/l%d" % (number + 1) if number < count else "real")


def test_a_chain_of_forty_links_is_followed(tmp_path):
    root = empty_root(tmp_path)
    link_chain(root, MAX_SYMLINKS)
    tree = NodeTree(root)
    assert tree.read_value("/etc/l1") == "end of chain"
    assert tree.problems == []


def test_a_chain_of_forty_one_links_is_a_problem(tmp_path):
    root = empty_root(tmp_path)
    link_chain(root, MAX_SYMLINKS + 1)
    tree = NodeTree(root)
    assert tree.read_value("/etc/l1") is None
    assert tree.read_value("/etc/l2") == "end of chain"
    assert problems_at(tree.problems, "/etc/l1") == ["too many levels of symbolic links"]
    with pytest.raises(PathError):
        tree.host_path("/etc/l1", follow=True)
    assert_below(root, tree.host_path("/etc/l1"), follow=False)  # not followed: the link itself


def test_link_swapped_in_after_resolution_is_not_followed(tmp_path, monkeypatch):
    """Between resolving and opening, the file becomes a link: O_NOFOLLOW refuses it (ELOOP), no read."""
    secret = sentinel(tmp_path)
    root = empty_root(tmp_path)
    replace_with_link(root, "/etc/os-release", secret)
    link = host(root, "/etc/os-release")
    real_lstat = os.lstat
    regular = real_lstat(secret)

    def lstat(path, *args, **kwargs):
        # What resolution and the type check saw just before the swap: a regular file.
        return regular if path == link else real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(node_tree.os, "lstat", lstat)
    tree = NodeTree(root)
    assert tree.read_text("/etc/os-release") is None
    monkeypatch.undo()
    assert problems_at(tree.problems, "/etc/os-release") == ["became a symbolic link while being read; not followed"]


def test_host_path_is_always_below_the_root(tmp_path):
    secret = sentinel(tmp_path)
    root = empty_root(tmp_path)
    replace_with_link(root, "/etc/abs", "/")
    replace_with_link(root, "/etc/host", os.path.dirname(secret))
    replace_with_link(root, "/etc/up", "../../../../..")
    tree = NodeTree(root)
    for path in ("/", "/..", "/etc/abs/..", "/etc/up", "/etc/up/outside/secret", "/etc/host/secret",
                 "/etc/abs/etc/up/../../..", "/missing/../../outside/secret", "/etc/up/missing/../../x"):
        for follow in (False, True):
            assert_below(root, tree.host_path(path, follow=follow), follow=follow)


# ---------------------------------------------------------------------------------------------------------------
# Only regular files are opened


FIFO_PATHS = ["/etc/os-release", "/proc/driver/nvidia/version", GPU_DEV + "/numa_node", SMI_JSON,
              "/etc/containerd/config.toml", "/etc/cdi/nvidia.yaml"]


@pytest.mark.parametrize("path", FIFO_PATHS)
def test_fifo_where_a_file_is_expected_is_a_problem_and_never_blocks(tmp_path, path):
    root = gpu_root(tmp_path, {"/etc/containerd/config.toml": "version = 3\n",
                               "/etc/cdi/nvidia.yaml": node_trees.fixture_text("cdi", "nvidia-ctk-0.5.0.yaml")})
    full = host(root, path)
    os.unlink(full)
    os.mkfifo(full)
    try:
        facts, raw, completed = collect(root)
    finally:
        release_fifos([full])
    assert "not a regular file: fifo" in problems_at(facts["problems"], path)
    if path in raw["files"]:
        assert raw["files"][path] == {"text": None, "error": "not a regular file: fifo"}
    if path == SMI_JSON:
        assert facts["nvidia_smi"]["status"] == "missing"
    assert facts["gpu_count"] == 1  # the other sources still describe the GPU
    assert completed["problems"]


def test_all_fifos_at_once_return_quickly(tmp_path):
    root = gpu_root(tmp_path, {"/etc/containerd/config.toml": "version = 3\n", "/etc/cdi/nvidia.yaml": "x: 1\n"})
    fulls = []
    for path in FIFO_PATHS:
        full = host(root, path)
        os.unlink(full)
        os.mkfifo(full)
        fulls.append(full)
    try:
        facts, _raw, _completed = collect(root)
    finally:
        release_fifos(fulls)
    for path in FIFO_PATHS:
        assert "not a regular file: fifo" in problems_at(facts["problems"], path), path


def test_fifo_through_a_link_and_for_every_reader(tmp_path):
    root = empty_root(tmp_path)
    fifo = host(root, "/etc/fifo")
    os.mkfifo(fifo)
    replace_with_link(root, "/etc/os-release", "fifo")
    tree = NodeTree(root)
    try:
        assert call_with_deadline(tree.read_text, "/etc/os-release") is None
        assert call_with_deadline(tree.read_value, "/etc/fifo") is None
        assert call_with_deadline(RecordedCommands(tree).run, "x", ["x"]) is None  # absent: no problem
        assert tree.is_file("/etc/fifo") is False
        assert tree.exists("/etc/fifo") is True
        assert tree.listdir("/etc/fifo") is None
    finally:
        release_fifos([fifo])
    assert problems_at(tree.problems, "/etc/os-release") == ["not a regular file: fifo"]
    assert problems_at(tree.problems, "/etc/fifo") == ["not a regular file: fifo"]


def test_fifo_as_recorded_command_result(tmp_path):
    root = empty_root(tmp_path)
    os.makedirs(host(root, "/.gpufleet/commands"))
    fifo = host(root, "/.gpufleet/commands/kubelet-version.json")
    os.mkfifo(fifo)
    tree = NodeTree(root)
    try:
        assert call_with_deadline(RecordedCommands(tree).run, "kubelet-version", ["kubelet"]) is None
    finally:
        release_fifos([fifo])
    assert problems_at(tree.problems, "/.gpufleet/commands/kubelet-version.json") == ["not a regular file: fifo"]


def test_socket_where_a_file_is_expected_is_a_problem(tmp_path, monkeypatch):
    root = gpu_root(tmp_path)
    os.unlink(host(root, "/etc/os-release"))
    monkeypatch.chdir(host(root, "/etc"))  # AF_UNIX paths are short: bind by relative name
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind("os-release")
        server.listen(1)
        facts, _raw, _completed = collect(root)
    finally:
        server.close()
    assert "not a regular file: socket" in problems_at(facts["problems"], "/etc/os-release")


def test_character_device_where_a_file_is_expected_is_a_problem(tmp_path):
    root = gpu_root(tmp_path)
    path = host(root, "/proc/driver/nvidia/version")
    os.unlink(path)
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # like /dev/null
    except (OSError, AttributeError) as exc:
        pytest.skip("cannot create a device node here: %s" % exc)
    facts, _raw, _completed = collect(root)
    assert "not a regular file: character device" in problems_at(facts["problems"], "/proc/driver/nvidia/version")
    assert facts["driver"]["loaded"] is False


def test_directory_where_a_file_is_expected_is_a_problem(tmp_path):
    root = gpu_root(tmp_path)
    path = host(root, GPU_DEV + "/numa_node")
    os.unlink(path)
    os.mkdir(path)
    facts, _raw, _completed = collect(root)
    assert problems_at(facts["problems"], GPU_DEV + "/numa_node") == ["not a regular file: directory"]
    assert facts["gpus"][0]["numa_node"] is None


# ---------------------------------------------------------------------------------------------------------------
# Bad node paths


@pytest.mark.parametrize("path,reason", [
    ("/etc/os\x00-release", "node path contains a NUL byte; not read"),
    ("etc/os-release", "not an absolute node path; not read"),
    ("", "not an absolute node path; not read"),
])
def test_bad_node_path_is_a_problem_naming_it(tmp_path, path, reason):
    root = gpu_root(tmp_path)
    tree = NodeTree(root, record=True)
    assert tree.read_text(path) is None
    assert tree.read_value(path) is None
    assert tree.listdir(path) is None
    assert tree.readlink(path) is None
    assert tree.exists(path) is False
    assert tree.is_file(path) is False
    assert tree.find_binary("x", [path]) is None
    assert problems_at(tree.problems, path)[:6] == [reason] * 6
    assert tree.reads == []  # never handed on to a support bundle
    with pytest.raises(ValueError):
        tree.host_path(path)
    json.dumps(tree.problems)


def test_bad_node_path_with_root_slash(tmp_path):
    tree = NodeTree("/")
    assert tree.read_text(str(tmp_path) + "/\x00") is None
    assert tree.read_text("relative") is None
    assert [p["reason"] for p in tree.problems] == ["node path contains a NUL byte; not read",
                                                    "not an absolute node path; not read"]


@pytest.mark.parametrize("value,expected", [
    ("conf.d/*.toml", "/etc/containerd/conf.d/*.toml"),
    ("./conf.d/../x.toml", "/etc/containerd/x.toml"),
    ("../../../../../outside/secret", "/outside/secret"),
    ("/../../outside//secret/", "/outside/secret"),
    ("/", "/"),
])
def test_node_path_cleans_and_clamps(value, expected):
    assert node_path(value, "/etc/containerd") == expected


def test_node_path_refuses_nul():
    with pytest.raises(PathError):
        node_path("/etc/\x00x")
    with pytest.raises(PathError):
        node_path(None)


# ---------------------------------------------------------------------------------------------------------------
# Paths from configuration


HOSTILE_CONFIG = """version = 3
imports = ["../../../outside/*.toml", "/../../outside/evil.toml", "../../outside/secret", "conf.d/*.toml",
           "HOSTDIR/*.toml", "up/outside/*.toml", "link.d/*.toml"]
[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/../../outside", "/etc/cdi/../../../outside", "HOSTDIR", "/etc/up/outside"]
"""


def test_hostile_config_paths_never_leave_the_root(tmp_path):
    secret = sentinel(tmp_path)
    outside = os.path.dirname(secret)
    root = gpu_root(tmp_path, {"/etc/containerd/config.toml": HOSTILE_CONFIG.replace("HOSTDIR", outside),
                               "/etc/containerd/conf.d/10-ok.toml": "version = 3\n"})
    replace_with_link(root, "/etc/containerd/up", "../../..")
    replace_with_link(root, "/etc/up", "../..")
    replace_with_link(root, "/etc/containerd/link.d", outside)
    replace_with_link(root, "/etc/containerd/conf.d/20-evil.toml", os.path.join(outside, "evil.toml"))
    replace_with_link(root, "/etc/cdi/evil.yaml", "../../../outside/evil.yaml")
    facts, raw, completed = collect(root)
    imports = raw["containerd"]["imports"]
    # Relative patterns are cleaned against /etc/containerd with .. stopping at /: that is what is reported.
    assert imports["../../../outside/*.toml"] == []
    assert imports["/../../outside/evil.toml"] == []
    assert imports["../../outside/secret"] == []
    assert imports["conf.d/*.toml"] == ["/etc/containerd/conf.d/10-ok.toml", "/etc/containerd/conf.d/20-evil.toml"]
    assert imports[outside + "/*.toml"] == []
    assert imports["link.d/*.toml"] == []
    assert raw["files"]["/etc/containerd/conf.d/10-ok.toml"]["text"] == "version = 3\n"
    assert raw["files"]["/etc/containerd/conf.d/20-evil.toml"] == {"text": None, "error": "missing"}
    for directory in ("/../../outside", "/etc/cdi/../../../outside", outside, "/etc/up/outside"):
        assert raw["cdi"]["dirs"][directory] is None
    assert raw["cdi"]["dirs"]["/etc/cdi"] == ["evil.yaml"]
    assert raw["files"]["/etc/cdi/evil.yaml"] == {"text": None, "error": "missing"}
    assert completed["containerd"]["imported_files"] == ["/etc/containerd/conf.d/10-ok.toml"]


def test_config_dotdot_is_read_at_the_root_of_the_tree(tmp_path):
    sentinel(tmp_path)
    root = gpu_root(tmp_path, {"/etc/containerd/config.toml": 'version = 3\nimports = ["../../../../drop/*.toml"]\n',
                               "/drop/in.toml": "version = 3\n"})
    _facts, raw, completed = collect(root)
    assert raw["containerd"]["imports"]["../../../../drop/*.toml"] == ["/drop/in.toml"]
    assert completed["containerd"]["imported_files"] == ["/drop/in.toml"]


@pytest.mark.parametrize("option,reported", [
    ("etc/containerd/config.toml", "/etc/containerd/config.toml"),
    ("./etc/../etc/containerd/config.toml", "/etc/containerd/config.toml"),
    ("/../../etc/containerd//config.toml", "/etc/containerd/config.toml"),
])
def test_relative_or_dotted_containerd_config_option(tmp_path, option, reported):
    root = gpu_root(tmp_path, {"/etc/containerd/config.toml": "version = 3\n"})
    facts, raw, completed = collect(root, option)
    assert facts["containerd"]["config_path"] == reported
    assert raw["containerd"]["config_path"] == reported
    assert raw["files"][reported]["text"] == "version = 3\n"
    assert completed["containerd"]["config_version"] == 3


@pytest.mark.parametrize("option", ["../../outside/secret", "HOST"])
def test_containerd_config_option_pointing_outside_is_confined(tmp_path, option):
    secret = sentinel(tmp_path)
    root = gpu_root(tmp_path)
    facts, raw, _completed = collect(root, secret if option == "HOST" else option)
    assert facts["containerd"]["config_path"] is None
    assert raw["files"] == {}


def test_containerd_config_option_with_nul(tmp_path):
    root = gpu_root(tmp_path)
    facts, raw, _completed = collect(root, "/etc/containerd/config.toml\x00")
    assert problems_at(facts["problems"], "/etc/containerd/config.toml\x00") == [
        "containerd_config not read: path contains a NUL byte"]
    assert raw["containerd"]["config_path"] is None


def test_nul_bytes_in_config_strings_are_problems(tmp_path):
    config = 'version = 3\nimports = ["/etc/\x00x.toml", "conf\x00.d/*.toml"]\ncdi_spec_dirs = ["/etc/\x00cdi"]\n'
    root = gpu_root(tmp_path, {"/etc/containerd/config.toml": config})
    facts, raw, _completed = collect(root)
    assert problems_at(facts["problems"], "/etc/\x00x.toml") == ["imports: not read: path contains a NUL byte"]
    assert problems_at(facts["problems"], "conf\x00.d/*.toml") == ["imports: not read: path contains a NUL byte"]
    assert problems_at(facts["problems"], "/etc/\x00cdi") == ["node path contains a NUL byte; not read"]
    assert raw["containerd"]["imports"]["/etc/\x00x.toml"] == []
    assert raw["cdi"]["dirs"]["/etc/\x00cdi"] is None


# ---------------------------------------------------------------------------------------------------------------
# Undecodable names in listings


def test_undecodable_names_are_left_out_with_one_problem(tmp_path):
    root = gpu_root(tmp_path, {"/etc/cdi/nvidia.yaml": node_trees.fixture_text("cdi", "nvidia-ctk-0.5.0.yaml")})
    cdi = os.fsencode(host(root, "/etc/cdi"))
    with open(os.path.join(cdi, b"bad\xff.yaml"), "w") as handle:
        handle.write('cdiVersion: "0.5.0"\nkind: x.com/y\ndevices: []\n')
    os.mkdir(os.path.join(os.fsencode(host(root, "/sys/bus/pci/devices")), b"0000:18:00.0\xfe"))
    os.mkdir(os.path.join(os.fsencode(host(root, "/sys/kernel/iommu_groups")), b"\xc3\x28"))
    facts, raw, completed = collect(root)
    assert raw["cdi"]["dirs"]["/etc/cdi"] == ["nvidia.yaml"]
    assert problems_at(facts["problems"], "/etc/cdi") == [
        "1 entry with a name that is not valid UTF-8 left out: 'bad\\\\xff.yaml'"]
    assert problems_at(facts["problems"], "/sys/bus/pci/devices") == [
        "1 entry with a name that is not valid UTF-8 left out: '0000:18:00.0\\\\xfe'"]
    assert problems_at(facts["problems"], "/sys/kernel/iommu_groups")
    assert facts["iommu"]["group_count"] == 0
    assert facts["gpu_count"] == 1
    assert [s["path"] for s in completed["cdi"]["specs"]] == ["/etc/cdi/nvidia.yaml"]


def test_listed_names_are_usable_as_paths_again(tmp_path):
    root = empty_root(tmp_path)
    etc = host(root, "/etc")
    names = [u"caf\u00e9", "a b", "x'y", "many" * 20]
    for name in names:
        with open(os.path.join(etc, name), "w") as handle:
            handle.write(name + "\n")
    for number in range(7):
        open(os.path.join(os.fsencode(etc), b"bad%d\x80" % number), "w").close()
    tree = NodeTree(root)
    listed = tree.listdir("/etc")
    assert listed == sorted(names)
    assert [tree.read_value("/etc/" + name) for name in listed] == listed
    reason = problems_at(tree.problems, "/etc")[0]
    assert reason.startswith("7 entries with a name that is not valid UTF-8 left out: 'bad0\\\\x80', ")
    assert reason.endswith(", ...")
    json.dumps(tree.problems).encode("utf-8")


# ---------------------------------------------------------------------------------------------------------------
# Recorded command results


def recorded(tmp_path, text):
    root = empty_root(tmp_path)
    os.makedirs(host(root, "/.gpufleet/commands"))
    with open(host(root, "/.gpufleet/commands/nvidia-smi.json"), "w") as handle:
        handle.write(text)
    tree = NodeTree(root)
    return tree, RecordedCommands(tree).run("nvidia-smi", ["nvidia-smi"])


@pytest.mark.parametrize("rc", ["Infinity", "-Infinity", "NaN", "1.0", "1e400", "true", "false", '"0"', "null",
                                "256", "-256", "[0]", "{}", "9" * 5000])
def test_recorded_rc_must_be_a_small_json_integer(tmp_path, rc):
    tree, result = recorded(tmp_path, '{"argv": ["nvidia-smi"], "rc": %s, "stdout": "", "stderr": ""}' % rc)
    assert result is None
    reasons = problems_at(tree.problems, SMI_JSON)
    assert len(reasons) == 1 and reasons[0].startswith("recorded command result is not valid: ")
    assert len(reasons[0]) < 300  # the bad value is quoted short


@pytest.mark.parametrize("record", ['{"stdout": ""}', "[1]", '"x"', "Infinity", '{"rc": 0, "stderr": NaN}'])
def test_recorded_record_shape_is_checked(tmp_path, record):
    tree, result = recorded(tmp_path, record)
    assert result is None
    assert problems_at(tree.problems, SMI_JSON)


@pytest.mark.parametrize("rc", [0, 9, -1, 255, -255])
def test_recorded_rc_in_range_is_replayed(tmp_path, rc):
    tree, result = recorded(tmp_path, json.dumps({"argv": ["nvidia-smi"], "rc": rc, "stdout": "out", "stderr": "err"}))
    assert result == (rc, "out", "err")
    assert tree.problems == []


def test_recorded_result_over_the_read_bound_is_a_problem(tmp_path, monkeypatch):
    monkeypatch.setattr(node_tree, "MAX_READ_BYTES", 1000)
    monkeypatch.setattr(NodeTree.read_text, "__defaults__", (1000,))
    tree, result = recorded(tmp_path, json.dumps({"rc": 0, "stdout": "x" * 5000, "stderr": ""}))
    assert result is None
    assert problems_at(tree.problems, SMI_JSON) == ["larger than 1000 bytes; not read"]


def test_recorded_timeout_keeps_a_string_error_only(tmp_path):
    _tree, result = recorded(tmp_path, json.dumps({"rc": None, "timed_out": True, "error": {"x": 1}}))
    assert result == (None, "", "nvidia-smi: no usable result")


# ---------------------------------------------------------------------------------------------------------------
# The live node (root /): the kernel resolves, regular files are read as before


def test_root_slash_reads_an_absolute_path(tmp_path):
    path = tmp_path / "plain"
    path.write_text("value\n")
    link = tmp_path / "link"
    os.symlink(str(path), str(link))
    tree = NodeTree("/")
    assert tree.read_value(str(path)) == "value"
    assert tree.read_value(str(link)) == "value"  # links are the host's own on the live node
    assert tree.host_path(str(path)) == str(path)
    assert tree.exists(str(link)) and tree.is_file(str(link))
    assert tree.listdir(str(tmp_path)) == ["link", "plain"]
    assert tree.readlink(str(link)) == str(path)
    assert tree.problems == []


def test_root_slash_reads_procfs(tmp_path):
    tree = NodeTree("/")
    if not os.path.exists("/proc/self/status"):
        pytest.skip("no procfs")
    text = tree.read_text("/proc/self/status")  # size 0 in stat, still read
    assert text and "Name:" in text
    assert tree.problems == []


def test_root_slash_refuses_a_fifo(tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    tree = NodeTree("/")
    try:
        assert call_with_deadline(tree.read_text, fifo) is None
    finally:
        release_fifos([fifo])
    assert problems_at(tree.problems, fifo) == ["not a regular file: fifo"]


def test_root_slash_link_loop_is_a_problem(tmp_path):
    os.symlink("loop", str(tmp_path / "loop"))
    tree = NodeTree("/")
    assert tree.read_text(str(tmp_path / "loop")) is None
    assert problems_at(tree.problems, str(tmp_path / "loop")) == ["cannot read: too many levels of symbolic links"]
