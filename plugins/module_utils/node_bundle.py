# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a node's recorded tree (a support bundle) as a gzip tarball.

The bundle holds exactly what :func:`gpu_node.gather` read (files with their real bytes, directories
even when empty, symbolic links with their targets, device nodes as empty marker files), the
command results under ``.gpufleet/commands/<name>.json`` and ``.gpufleet/bundle.json`` (when,
where, which module version, and the facts as gathered). Unpacked, it is a root prefix for
``gpu_node_facts`` and a test fixture. Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import json
import os
import stat
import tarfile
import time

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node_tree import COMMANDS_DIR, MAX_READ_BYTES, read_bytes

BUNDLE_FORMAT = 1


def _info(name, kind, size=0, mode=0o644, linkname=""):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size
    info.mode = mode
    info.mtime = int(time.time())
    info.linkname = linkname
    return info


def _add_bytes(tar, name, data, mode=0o644):
    tar.addfile(_info(name, tarfile.REGTYPE, len(data), mode), io.BytesIO(data))


def _entries(tree):
    """(tar name, kind, payload) for every path the tree read that exists, without duplicates."""
    seen = set()
    for kind, path in tree.reads:
        if path in seen:
            continue
        seen.add(path)
        host = tree.host_path(path)
        name = path.lstrip("/")
        if not os.path.lexists(host):
            continue
        try:
            st = os.lstat(host)
        except OSError:
            continue
        if kind == "link":
            if stat.S_ISLNK(st.st_mode):
                yield name, tarfile.SYMTYPE, os.readlink(host)
            continue
        if kind == "dir" or (kind == "exists" and stat.S_ISDIR(os.stat(host).st_mode)):
            # A directory even when reached through a link (sysfs device paths are links), with
            # its subdirectories: a listing such as /sys/kernel/iommu_groups is itself a fact.
            yield name, tarfile.DIRTYPE, None
            if kind == "dir":
                for child in sorted(os.listdir(host)):
                    if os.path.isdir(os.path.join(host, child)) and path.rstrip("/") + "/" + child not in seen:
                        yield name.rstrip("/") + "/" + child, tarfile.DIRTYPE, None
        elif kind == "file" or (kind == "exists" and stat.S_ISREG(os.stat(host).st_mode)):
            # Contents, never the link: a link's target may point outside the recorded tree.
            try:
                yield name, tarfile.REGTYPE, read_bytes(host, MAX_READ_BYTES)
            except (IOError, OSError):
                continue
        else:
            # A device node (/dev/iommu): its existence is the fact; keep an empty marker file.
            yield name, tarfile.REGTYPE, b""


def write_bundle(dest, tree, command_results, facts, meta):
    """Write the bundle to ``dest`` (mode 0600, written to a temporary name then renamed)."""
    tmp = dest + ".tmp-%d" % os.getpid()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as raw:
            with tarfile.open(fileobj=raw, mode="w:gz") as tar:
                for name, kind, payload in _entries(tree):
                    if kind == tarfile.REGTYPE:
                        _add_bytes(tar, name, payload)
                    elif kind == tarfile.SYMTYPE:
                        tar.addfile(_info(name, kind, linkname=payload))
                    else:
                        tar.addfile(_info(name, kind, mode=0o755))
                for command, result in sorted(command_results.items()):
                    data = json.dumps(result, indent=2, sort_keys=True).encode("utf-8")
                    _add_bytes(tar, "%s/%s.json" % (COMMANDS_DIR, command), data)
                record = dict(meta, format=BUNDLE_FORMAT, facts=facts)
                _add_bytes(tar, ".gpufleet/bundle.json", json.dumps(record, indent=2, sort_keys=True).encode("utf-8"))
        os.chmod(tmp, 0o600)
        os.rename(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def safe_members(tar, dest):
    """Members of ``tar`` that stay inside ``dest`` when extracted (no absolute or .. paths,
    no hard links, no device files); symbolic links are kept as they are (never followed)."""
    root = os.path.realpath(dest)
    for member in tar.getmembers():
        target = os.path.realpath(os.path.join(root, member.name))
        if not (target == root or target.startswith(root + os.sep)):
            continue
        if member.islnk() or member.isdev():
            continue
        yield member


def extract_bundle(path, dest):
    """Unpack a bundle into ``dest`` safely and return the parsed ``.gpufleet/bundle.json``."""
    with tarfile.open(path, "r:*") as tar:
        members = list(safe_members(tar, dest))
        for member in members:
            member.mode = (member.mode | 0o600) if member.isfile() else (member.mode | 0o700)
            if hasattr(tarfile, "fully_trusted_filter"):
                # Members were checked by safe_members(); keep symlink targets as recorded.
                tar.extract(member, dest, set_attrs=False, filter="fully_trusted")
            else:
                tar.extract(member, dest, set_attrs=False)
    meta_path = os.path.join(dest, ".gpufleet", "bundle.json")
    if os.path.exists(meta_path):
        with open(meta_path) as handle:
            return json.load(handle)
    return None
