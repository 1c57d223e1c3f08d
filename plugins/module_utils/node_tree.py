# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every read of a node's filesystem, through a root prefix.

``NodeTree('/')`` reads the live node; ``NodeTree('/path/to/recorded/tree')`` reads a recorded
tree (a support bundle unpacked, or a test fixture) exactly the same way. The tree records which
paths were read so that a support bundle can contain exactly what the facts were built from.

Command outputs (nvidia-smi, containerd --version, kubelet --version) belong to the node too: a
recorded tree keeps them as JSON files under ``.gpufleet/commands/<name>.json``
(``{"argv": [...], "rc": 0, "stdout": "...", "stderr": "..."}``) and :class:`RecordedCommands`
replays them. Standard library only: this runs on GPU nodes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.command_runner import CommandTimedOut, Runner

COMMANDS_DIR = ".gpufleet/commands"
MAX_READ_BYTES = 4 * 1024 * 1024


def read_bytes(path, limit):
    """Read at most ``limit`` bytes in small chunks (procfs may refuse one huge read)."""
    chunks = []
    total = 0
    with open(path, "rb") as handle:
        while total < limit:
            chunk = handle.read(min(65536, limit - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    return b"".join(chunks)


class NodeTree(object):
    """Read files, directories and links of a node below ``root``; collect problems, not tracebacks.

    Missing paths are normal (a node without a GPU has no ``/proc/driver/nvidia``) and return None
    silently; the caller decides whether absence is a finding. Any other failure (permission,
    I/O error, undecodable bytes, oversized file) is recorded in ``problems`` with path and reason.
    """

    def __init__(self, root="/", record=False):
        self.root = root or "/"
        self.problems = []
        self.record = record
        self.reads = []  # (kind, node path) in read order, kind in file|dir|link|exists

    def host_path(self, path):
        """The path on this machine for the node path ``path`` (absolute, as seen on the node)."""
        if not path.startswith("/"):
            raise ValueError("node paths are absolute: %r" % path)
        if self.root == "/":
            return path
        return os.path.join(self.root, path.lstrip("/"))

    def problem(self, path, reason):
        self.problems.append({"path": path, "reason": reason})

    def _note(self, kind, path):
        if self.record:
            self.reads.append((kind, path))

    def read_text(self, path, max_bytes=MAX_READ_BYTES):
        """File contents as text (UTF-8, undecodable bytes replaced), or None."""
        self._note("file", path)
        try:
            data = read_bytes(self.host_path(path), max_bytes + 1)
        except (IOError, OSError) as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return None
            self.problem(path, "cannot read: %s" % (exc.strerror or exc))
            return None
        if len(data) > max_bytes:
            self.problem(path, "larger than %d bytes; not read" % max_bytes)
            return None
        text = data.decode("utf-8", "replace")
        if u"\ufffd" in text:
            self.problem(path, "not valid UTF-8; undecodable bytes replaced")
        return text

    def read_value(self, path):
        """A one-line sysfs/procfs value, stripped, or None."""
        text = self.read_text(path)
        if text is None:
            return None
        return text.strip()

    def listdir(self, path):
        """Sorted directory entries, or None when the directory does not exist."""
        self._note("dir", path)
        try:
            return sorted(os.listdir(self.host_path(path)))
        except (IOError, OSError) as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return None
            self.problem(path, "cannot list: %s" % (exc.strerror or exc))
            return None

    def readlink(self, path):
        """The target of a symbolic link, or None when it is absent or not a link."""
        self._note("link", path)
        try:
            return os.readlink(self.host_path(path))
        except (IOError, OSError) as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EINVAL):
                return None
            self.problem(path, "cannot read link: %s" % (exc.strerror or exc))
            return None

    def exists(self, path):
        self._note("exists", path)
        return os.path.lexists(self.host_path(path))

    def is_file(self, path):
        return os.path.isfile(self.host_path(path))

    def find_binary(self, name, dirs):
        """The first ``dirs/name`` that is an executable file in the tree (node path), or None."""
        for directory in dirs:
            candidate = directory.rstrip("/") + "/" + name
            host = self.host_path(candidate)
            if os.path.isfile(host) and os.access(host, os.X_OK):
                return candidate
        return None


class RecordedCommands(object):
    """Replays command results recorded in a tree under ``.gpufleet/commands/<name>.json``.

    ``run`` returns ``(rc, stdout, stderr)``; ``rc`` is None for a command that gave no usable
    result when it was recorded (``"timed_out"`` or ``"truncated"``), ``stderr`` is then its
    ``error`` (command and deadline).
    """

    mode = "recorded"

    def __init__(self, tree):
        self.tree = tree

    def run(self, name, argv):
        """Return ``(rc, stdout, stderr)`` as recorded, or None when ``name`` was not recorded."""
        path = "/%s/%s.json" % (COMMANDS_DIR, name)
        text = self.tree.read_text(path)
        if text is None:
            return None
        try:
            record = json.loads(text)
            stdout, stderr = record.get("stdout", ""), record.get("stderr", "")
            if not isinstance(stdout, str) or not isinstance(stderr, str):
                raise TypeError("stdout and stderr must be strings")
            if record.get("timed_out") or record.get("truncated"):
                return None, "", str(record.get("error") or "%s: no usable result" % name)
            return int(record["rc"]), stdout, stderr
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            self.tree.problem(path, "recorded command result is not valid: %s" % (
                "nested too deeply" if isinstance(exc, RecursionError) else exc))
            return None


class NoCommands(object):
    """Runs nothing: facts come from files only."""

    mode = "none"

    def run(self, name, argv):
        return None


class LiveCommands(object):
    """Runs commands on this node through ``runner``, with a deadline per command.

    ``runner`` is a :class:`command_runner.Runner` (deadline, process-group kill, bounded output)
    or any callable ``runner(argv) -> (rc, stdout, stderr)`` that may raise
    :class:`command_runner.CommandTimedOut`. ``find(name)`` returns the binary's path or None.

    ``run`` returns ``(rc, stdout, stderr)``; ``rc`` is None when the command did not finish within
    its deadline, and ``stderr`` is then the runner's message (command and deadline); likewise for
    output larger than the runner's bound (never handed on cut). Results are kept in ``results``
    so that a support bundle can record them (``timed_out``/``truncated`` and ``error`` included).
    """

    mode = "run"

    def __init__(self, runner, find):
        self.runner = runner
        self.find = find
        self.results = {}

    def run(self, name, argv):
        binary = self.find(argv[0])
        if binary is None:
            return None
        argv = [binary] + list(argv[1:])
        record = {"argv": argv, "rc": None, "stdout": "", "stderr": ""}
        try:
            if isinstance(self.runner, Runner):
                result = self.runner.run(argv)
                if result.timed_out:
                    raise CommandTimedOut(result)
                rc, out, err = result.rc, result.stdout, result.stderr
                if result.truncated:
                    # A cut output may still parse (fewer GPUs): never hand it on as a result.
                    message = "%s: output larger than %d bytes; not used" % (result.command_line(), self.runner.max_output)
                    record.update(rc=rc, stdout=out, stderr=err, truncated=True, error=message)
                    self.results[name] = record
                    return None, "", message
            else:
                rc, out, err = self.runner(argv)
        except CommandTimedOut as exc:
            message = str(exc)
            record.update(timed_out=True, error=message, stdout=exc.result.stdout, stderr=exc.result.stderr)
            self.results[name] = record
            return None, exc.result.stdout, message
        except (IOError, OSError) as exc:
            rc, out, err = 127, "", str(exc)
        record.update(rc=rc, stdout=out, stderr=err)
        self.results[name] = record
        return rc, out, err
