# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a node's recorded tree (a support bundle) as a gzip tarball.

The bundle holds exactly what :func:`gpu_node.collect` read (files with their real bytes, directories
even when empty, symbolic links with their targets, device nodes as empty marker files), the
command results under ``.gpufleet/commands/<name>.json`` and ``.gpufleet/bundle.json`` (when,
where, which module version, and the facts as the node read them). Unpacked, it is a root prefix
for ``gpu_node_facts`` and a test fixture. Standard library only.

Written with ``private_files.private_output`` (mkstemp in the destination directory, 0600, fsync,
never replacing an existing bundle unless asked). Extracted with the tarfile ``data`` filter
where the Python has it, and with the same rules enforced here where it does not: no absolute
names or ``..``, no link whose target leaves the destination, no hard links to outside, no
devices or FIFOs. A bundle with such a member is refused as a whole (:class:`BundleError`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import json
import os
import stat
import tarfile
import time

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import COMMANDS_DIR, MAX_READ_BYTES, read_bytes
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence.private_files import private_output


class BundleError(Exception):
    """A bundle cannot be extracted safely; the message names the member and why."""


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


def _resolve(tree, path, follow):
    """``(host path, st)`` for the node path ``path`` resolved inside the tree's root, or None.

    Below a root other than ``/`` the host path is resolved like a chroot (:meth:`NodeTree.host_path`)
    and only ``lstat`` is used on it, so nothing outside the root is looked at or read; a path the
    tree cannot resolve (a loop, a NUL byte) is left out of the bundle.
    """
    try:
        host = tree.host_path(path, follow=follow)
    except (ValueError, OSError):
        return None
    try:
        confined = tree.root.rstrip("/") != ""
        st = os.lstat(host) if (confined or not follow) else os.stat(host)
    except OSError:
        return None
    return host, st


def _entries(tree):
    """(tar name, kind, payload) for every path the tree read that exists, without duplicates."""
    seen = set()
    confined = tree.root.rstrip("/") != ""
    # Paths read as links: a listing must not also record them as directories (sysfs class entries
    # such as /sys/class/net/eth0 are links to directories).
    links = set(path for kind, path in tree.reads if kind == "link")
    for kind, path in tree.reads:
        if path in seen:
            continue
        seen.add(path)
        name = path.lstrip("/")
        if kind == "link":
            found = _resolve(tree, path, False)
            if found is not None and stat.S_ISLNK(found[1].st_mode):
                try:
                    yield name, tarfile.SYMTYPE, os.readlink(found[0])
                except OSError:
                    pass
            continue
        found = _resolve(tree, path, True)
        if found is None:
            continue
        host, st = found
        if stat.S_ISDIR(st.st_mode) and kind in ("dir", "exists"):
            # A directory even when reached through a link (sysfs device paths are links), with
            # its subdirectories: a listing such as /sys/kernel/iommu_groups is itself a fact.
            yield name, tarfile.DIRTYPE, None
            if kind == "dir":
                try:
                    children = sorted(os.listdir(host))
                except OSError:
                    children = []
                for child in children:
                    child_path = path.rstrip("/") + "/" + child
                    if child_path in links or child_path in seen:
                        continue
                    sub = _resolve(tree, child_path, True)
                    if sub is not None and stat.S_ISDIR(sub[1].st_mode):
                        yield name.rstrip("/") + "/" + child, tarfile.DIRTYPE, None
        elif stat.S_ISREG(st.st_mode) and kind in ("file", "exists"):
            # Contents, never the link: a link's target may point outside the recorded tree.
            try:
                yield name, tarfile.REGTYPE, read_bytes(host, MAX_READ_BYTES, follow=not confined)
            except (IOError, OSError):
                continue
        elif kind == "exists" and not stat.S_ISDIR(st.st_mode):
            # A device node (/dev/iommu): its existence is the fact; keep an empty marker file.
            yield name, tarfile.REGTYPE, b""


def write_bundle(dest, tree, command_results, facts, meta, replace=False):
    """Write the bundle to ``dest``: mode 0600 from the first byte, fsynced, published atomically.

    An existing ``dest`` raises ``private_files.ArtifactExists`` unless ``replace`` is true.
    """
    with private_output(dest, replace=replace) as raw:
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


def _inside(root, path):
    return path == root or path.startswith(root + os.sep)


def check_member(member, dest):
    """Refuse what the tarfile ``data`` filter refuses; return None or raise :class:`BundleError`.

    ``dest`` is the real path of the destination. Used where the Python has no extraction filters
    (before 3.8.17/3.9.17/3.10.12/3.11.4), and before extraction everywhere so that one bad member
    refuses the whole bundle before anything is written.
    """
    name = member.name
    if name.startswith("/") or os.path.isabs(name):
        raise BundleError("member %r has an absolute name" % name)
    target = os.path.realpath(os.path.join(dest, name))
    if not _inside(dest, target):
        raise BundleError("member %r would be written outside %s" % (name, dest))
    if member.isdev() or member.isfifo() or not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        raise BundleError("member %r is a device or special file" % name)
    if member.issym():
        if os.path.isabs(member.linkname):
            raise BundleError("member %r is a link to the absolute path %r" % (name, member.linkname))
        link_target = os.path.realpath(os.path.join(dest, os.path.dirname(name), member.linkname))
        if not _inside(dest, link_target):
            raise BundleError("member %r is a link to %r, outside the destination" % (name, member.linkname))
    elif member.islnk():
        link_target = os.path.realpath(os.path.join(dest, member.linkname))
        if os.path.isabs(member.linkname) or not _inside(dest, link_target):
            raise BundleError("member %r is a hard link to %r, outside the destination" % (name, member.linkname))


def extract_bundle(path, dest):
    """Unpack a bundle into ``dest`` safely and return the parsed ``.gpufleet/bundle.json``.

    Raises :class:`BundleError` (naming the member) for a bundle with an absolute or escaping
    name, a link out of ``dest`` or a device; nothing is extracted then.
    """
    root = os.path.realpath(dest)
    with tarfile.open(path, "r:*") as tar:
        members = tar.getmembers()
        for member in members:
            check_member(member, root)
        has_filter = hasattr(tarfile, "data_filter")
        for member in members:
            member.mode = (member.mode | 0o600) if member.isfile() else (member.mode | 0o700)
            if has_filter:
                try:
                    tar.extract(member, root, set_attrs=False, filter="data")
                except tarfile.FilterError as exc:
                    raise BundleError("member %r refused: %s" % (member.name, exc))
            else:
                # The checks above are those of the data filter; re-check against what is on disk
                # now (an earlier member may have made a link that a later name goes through).
                check_member(member, root)
                tar.extract(member, root, set_attrs=False)
    meta_path = os.path.join(dest, ".gpufleet", "bundle.json")
    if os.path.exists(meta_path):
        with open(meta_path) as handle:
            return json.load(handle)
    return None
