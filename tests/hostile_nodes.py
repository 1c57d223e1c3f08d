# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A corpus of hostile node trees: what a fleet's nodes, support bundles and hand edits produce.

Every case starts from a good recorded tree (``ubuntu2204-containerd2-cdi``: two GPUs, containerd 2
with CDI, a NIC) and breaks one thing the way nodes break: links that leave the root (absolute,
relative, through directories, through configuration paths), link loops, FIFOs and directories where
files are expected, truncated, binary, non-UTF-8 and huge files, odd sysfs values, hostile
nvidia-smi and containerd output, recorded results that are not JSON a command could print, TOML and
YAML edge cases (NUL bytes, deep nesting, alias bombs), names that are not UTF-8 and directories
with thousands of entries.

``CASES`` is a list of :class:`Case`: ``build(root, outside)`` breaks the tree at ``root``; files
under ``outside`` (beside the root, holding :data:`SENTINEL`) must never be read; ``option`` is the
module's ``containerd_config`` option; ``expect`` is a text that must appear in the facts (a
problems entry or a spec's or config's error: what the node gets reported), or None where the facts are expected to carry on unharmed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import socket

#: Written into every file outside the root; must never appear in the facts.
SENTINEL = "SENTINEL-OUTSIDE-THE-ROOT-7f3a"

GPU = "sys/bus/pci/devices/0000:18:00.0"
CONFIG = "etc/containerd/config.toml"
SMI = ".gpufleet/commands/nvidia-smi.json"
CONTAINERD = ".gpufleet/commands/containerd-version.json"
SMI_ROW = ("%s, 00000000:18:00.0, 0x233510DE, NVIDIA H200, GPU-f06f0ae7-4822-3c65-0972-1d839772e142, "
           "Disabled, %s, 580.173.02, 96.00.A5.00.1A\n")


class Case(object):
    def __init__(self, name, build, expect, option="/etc/containerd/config.toml"):
        self.name = name
        self.build = build
        self.expect = expect
        self.option = option


def _path(root, rel):
    return os.path.join(root, rel)


def _clear(path):
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


def write(root, rel, data):
    path = _path(root, rel)
    _clear(path)
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        os.makedirs(parent)
    with open(path, "wb") as handle:
        handle.write(data if isinstance(data, bytes) else data.encode("utf-8"))


def link(root, rel, target):
    path = _path(root, rel)
    _clear(path)
    os.symlink(target, path)


def fifo(root, rel):
    path = _path(root, rel)
    _clear(path)
    os.mkfifo(path)


def sparse(root, rel, size):
    """A file of ``size`` bytes that takes no disk space (a reader that is not bounded would hold it all)."""
    path = _path(root, rel)
    _clear(path)
    with open(path, "wb") as handle:
        handle.truncate(size)


def append(root, rel, text):
    with open(_path(root, rel), "a") as handle:
        handle.write(text)


def recorded(root, rel, record):
    """A recorded command result; ``record`` is a dict (dumped) or the raw text of the file."""
    write(root, rel, record if isinstance(record, (bytes, str)) else json.dumps(record))


def smi(root, stdout):
    recorded(root, SMI, {"argv": ["nvidia-smi"], "rc": 0, "stdout": stdout, "stderr": ""})


def outside_tree(outside):
    """Files beside the root that look like node files and hold the sentinel."""
    for rel in ("secret", "etc/os-release", "etc/containerd/config.toml", "cdi/evil.yaml", "pci/vendor",
                "pci/class", "pci/device", "pci/numa_node", "commands/nvidia-smi.json", "version"):
        path = os.path.join(outside, rel)
        if not os.path.isdir(os.path.dirname(path)):
            os.makedirs(os.path.dirname(path))
        with open(path, "w") as handle:
            if rel.endswith(".json"):
                json.dump({"argv": ["nvidia-smi"], "rc": 0, "stdout": SMI_ROW % ("0", SENTINEL), "stderr": ""}, handle)
            elif rel.endswith(".yaml"):
                handle.write('cdiVersion: "0.6.0"\nkind: %s.com/gpu\ndevices: [{name: all}]\n' % SENTINEL.lower())
            elif rel.endswith(".toml"):
                handle.write('version = 3\n[plugins."%s"]\nx = 1\n' % SENTINEL)
            else:
                handle.write("ID=%s\n%s\n" % (SENTINEL, SENTINEL))


def _deep_json(depth):
    return "[" * depth + "]" * depth


def _alias_bomb():
    """YAML whose aliases expand to 10**12 scalars from 12 lines (a "billion laughs")."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"]
    for level in range(1, 12):
        lines.append("a%d: &a%d [%s]\n" % (level, level, ", ".join(["*a%d" % (level - 1)] * 10)))
    return "".join(lines)


def _socket(root, rel):
    path = _path(root, rel)
    _clear(path)
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(path)
    except OSError:
        # A tmp path beyond the 107 bytes of sun_path: bind through a short relative path.
        cwd = os.getcwd()
        os.chdir(os.path.dirname(path))
        try:
            server.bind(os.path.basename(path))
        finally:
            os.chdir(cwd)
    server.close()


def _many(root, rel_dir, count, name, data):
    directory = _path(root, rel_dir)
    for index in range(count):
        with open(os.path.join(directory, name % index), "w") as handle:
            handle.write(data)


def _cases():
    yield Case("os-release absolute link out", lambda r, x: link(r, "etc/os-release", os.path.join(x, "secret")), None)
    yield Case("os-release relative link out", lambda r, x: link(r, "etc/os-release", "../../outside/secret"), None)
    yield Case("etc is a link to the host's etc", lambda r, x: link(r, "etc", os.path.join(x, "etc")), None)
    yield Case("driver version link to the host path", lambda r, x: link(
        r, "proc/driver/nvidia/version", os.path.join(x, "version")), None)
    yield Case("pci device link out of the root", lambda r, x: link(r, GPU, os.path.join(x, "pci")), None)
    yield Case("pci device link climbing out", lambda r, x: link(r, GPU, "../../../../../outside/pci"), None)
    yield Case("cdi dir link out", lambda r, x: link(r, "etc/cdi", os.path.join(x, "cdi")), None)
    yield Case("recorded commands link out", lambda r, x: link(r, ".gpufleet/commands", os.path.join(x, "commands")),
               None)
    yield Case("recorded nvidia-smi link out", lambda r, x: link(r, SMI, os.path.join(x, "commands/nvidia-smi.json")),
               None)
    yield Case("config imports climbing out", lambda r, x: write(
        r, CONFIG, 'version = 3\nimports = ["../../../../outside/etc/containerd/config.toml", "/../../outside/secret",'
        ' "%s"]\n' % os.path.join(x, "etc/containerd/config.toml")), None)
    yield Case("config cdi_spec_dirs climbing out", lambda r, x: write(
        r, CONFIG, 'version = 3\n[plugins."io.containerd.cri.v1.runtime"]\nenable_cdi = true\n'
        'cdi_spec_dirs = ["/etc/../../../../outside/cdi", "%s"]\n' % os.path.join(x, "cdi")), None)
    yield Case("containerd_config option climbing out", lambda r, x: None, None,
               option="/../../../outside/etc/containerd/config.toml")
    yield Case("containerd_config option relative", lambda r, x: None, None, option="../outside/secret")
    yield Case("link loop", lambda r, x: (link(r, "etc/os-release", "/etc/a"), link(r, "etc/a", "/etc/os-release")),
               "symbolic link")
    yield Case("self link", lambda r, x: link(r, "proc/driver/nvidia/version", "/proc/driver/nvidia/version"),
               "symbolic link")
    yield Case("chain of 45 links", lambda r, x: [link(r, "etc/l%d" % i, "/etc/l%d" % (i + 1)) for i in range(45)] + [
        link(r, "etc/os-release", "/etc/l0")], "symbolic link")
    yield Case("pci device link climbing far above the root", lambda r, x: link(r, GPU, "../" * 40 + "outside/pci"), None)
    yield Case("etc links to the root", lambda r, x: link(r, "etc", "/"), None)
    yield Case("fifo os-release", lambda r, x: fifo(r, "etc/os-release"), "fifo")
    yield Case("fifo driver version", lambda r, x: fifo(r, "proc/driver/nvidia/version"), "fifo")
    yield Case("fifo numa_node", lambda r, x: fifo(r, GPU + "/numa_node"), "fifo")
    yield Case("fifo config.toml", lambda r, x: fifo(r, CONFIG), "fifo")
    yield Case("fifo cdi spec", lambda r, x: fifo(r, "etc/cdi/nvidia.yml"), "fifo")
    yield Case("fifo recorded nvidia-smi", lambda r, x: fifo(r, SMI), "fifo")
    yield Case("socket cdi spec", lambda r, x: _socket(r, "var/run/cdi/nvidia.yaml"), "socket")
    yield Case("directory where config.toml is", lambda r, x: (os.unlink(_path(r, CONFIG)), os.mkdir(_path(r, CONFIG))),
               "directory")
    yield Case("4 GiB sparse config.toml", lambda r, x: sparse(r, CONFIG, 4 << 30), "larger than")
    yield Case("4 GiB sparse os-release", lambda r, x: sparse(r, "etc/os-release", 4 << 30), "larger than")
    yield Case("truncated config.toml", lambda r, x: write(r, CONFIG, 'version = 3\n[plugins."io.containerd.cri'), CONFIG[3:])
    yield Case("binary os-release", lambda r, x: write(r, "etc/os-release", bytes(bytearray(range(256))) * 8), "UTF-8")
    yield Case("non-UTF-8 driver version", lambda r, x: write(
        r, "proc/driver/nvidia/version", b"NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.\xff\xfe  Thu\n"), "UTF-8")
    yield Case("empty files", lambda r, x: [write(r, rel, b"") for rel in (
        "etc/os-release", "proc/driver/nvidia/version", GPU + "/numa_node", GPU + "/vendor", CONFIG,
        "etc/cdi/nvidia.yml")], None)
    yield Case("numa_node superscript", lambda r, x: write(r, GPU + "/numa_node", u"\u00b9\n"), "numa_node")
    yield Case("numa_node 5000 digits", lambda r, x: write(r, GPU + "/numa_node", "9" * 5000 + "\n"), "numa_node")
    yield Case("vendor with a NUL", lambda r, x: write(r, GPU + "/vendor", b"0x10de\x00\n"), None)
    yield Case("nvidia-smi superscript index", lambda r, x: smi(r, SMI_ROW % (u"\u00b9", "143771")), "index")
    yield Case("nvidia-smi 5000-digit memory", lambda r, x: smi(r, SMI_ROW % ("0", "9" * 5000)), "memory")
    yield Case("nvidia-smi short and long rows", lambda r, x: smi(
        r, "0, 00000000:18:00.0\n" + SMI_ROW.strip() % ("1", "1") + ", x, y, z\n"), "nvidia-smi")
    yield Case("nvidia-smi 20000 rows", lambda r, x: smi(r, "".join(SMI_ROW % (i, "143771") for i in range(20000))),
               "nvidia-smi")
    yield Case("recorded rc Infinity", lambda r, x: recorded(
        r, SMI, '{"argv": ["nvidia-smi"], "rc": Infinity, "stdout": "", "stderr": ""}'), "Infinity")
    yield Case("recorded rc a string", lambda r, x: recorded(
        r, SMI, {"argv": ["nvidia-smi"], "rc": "0", "stdout": "", "stderr": ""}), "rc")
    yield Case("recorded result nested 100000 deep", lambda r, x: recorded(r, SMI, _deep_json(100000)), "nvidia-smi")
    yield Case("recorded result binary", lambda r, x: recorded(r, CONTAINERD, b"\x00\xff" * 100), "containerd-version")
    yield Case("containerd version garbage", lambda r, x: recorded(
        r, CONTAINERD, {"argv": ["containerd", "--version"], "rc": 0, "stdout": "\x1b[31mcontainerd v" + "9" * 4000,
                        "stderr": ""}), "containerd --version")
    yield Case("NUL in a TOML string", lambda r, x: write(
        r, CONFIG, u'version = 3\nimports = ["/etc/containerd/a\\u0000b.toml"]\n'), "NUL")
    yield Case("2000-deep dotted TOML key", lambda r, x: append(
        r, CONFIG, "\n" + ".".join("k%d" % i for i in range(2000)) + " = 1\n"), None)
    yield Case("TOML array nested 50000 deep", lambda r, x: append(r, CONFIG, "\nx = " + _deep_json(50000) + "\n"),
               CONFIG[3:])
    yield Case("huge hex version on containerd 1.6", lambda r, x: (recorded(
        r, CONTAINERD, {"argv": ["containerd", "--version"], "rc": 0, "stdout":
                        "containerd github.com/containerd/containerd 1.6.20 1.6.20\n", "stderr": ""}),
        write(r, CONFIG, "version = 0x" + "f" * 400 + "\n")), "version")
    yield Case("CDI alias bomb", lambda r, x: write(
        r, "etc/cdi/nvidia.yml", _alias_bomb() + "cdiVersion: *a11\nkind: nvidia.com/gpu\ndevices: [{name: all}]\n"), "alias")
    yield Case("CDI nested 100000 deep", lambda r, x: write(
        r, "etc/cdi/nvidia.yml", "cdiVersion: " + _deep_json(100000) + "\n"), "nvidia.yml")
    yield Case("CDI JSON spec nested deep", lambda r, x: write(r, "etc/cdi/deep.json", _deep_json(100000)), "deep.json")
    yield Case("CDI file name not UTF-8", lambda r, x: write(r, "etc/cdi/nv\xff.yaml".encode("latin-1").decode(
        "utf-8", "surrogateescape"), 'cdiVersion: "0.6.0"\nkind: nvidia.com/gpu\ndevices: [{name: all}]\n'), "UTF-8")
    yield Case("3000 CDI specs", lambda r, x: _many(r, "var/run/cdi", 3000, "s%d.yaml",
                                                    'cdiVersion: "0.6.0"\nkind: x.com/gpu\ndevices: [{name: all}]\n'), None)
    yield Case("NIC name not UTF-8", lambda r, x: link(
        r, "sys/class/net/eth\udcff", "../../devices/pci0000:1a/0000:1a:00.0/net/ens1np0"), "UTF-8")
    yield Case("PCI device name not UTF-8", lambda r, x: os.mkdir(_path(r, "sys/bus/pci/devices/0000:\udcff:00.0")), "UTF-8")
    yield Case("driver link target not UTF-8", lambda r, x: link(r, GPU + "/driver", "../../../bus/pci/drivers/nv\udcff"),
               None)
    yield Case("kubelet config alias bomb", lambda r, x: write(r, "var/lib/kubelet/config.yaml", _alias_bomb()), None)
    yield Case("one-megabyte os-release line", lambda r, x: write(r, "etc/os-release", "PRETTY_NAME=" + "x" * (1 << 20)), None)
    yield Case("iommu group link pointing back at itself", lambda r, x: link(
        r, GPU + "/iommu_group", "../../../../kernel/iommu_groups/../../bus/pci/devices/0000:18:00.0/iommu_group"),
        "not a group number")


CASES = list(_cases())
