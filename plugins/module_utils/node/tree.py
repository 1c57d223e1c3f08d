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
import stat

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.command_runner import CommandTimedOut, Runner

COMMANDS_DIR = ".gpufleet/commands"
MAX_READ_BYTES = 4 * 1024 * 1024
#: Symbolic links followed while resolving one path (Linux's MAXSYMLINKS).
MAX_SYMLINKS = 40
#: Entries with undecodable names named in the one problem of a listing.
MAX_NAMED_ENTRIES = 5
#: A recorded command's exit status is a JSON integer in this range.
RC_RANGE = (-255, 255)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_MISSING = (errno.ENOENT, errno.ENOTDIR)
_LOOP = "too many levels of symbolic links"


class PathError(ValueError):
    """A node path that is not read: relative, with a NUL byte, or not resolvable inside the root."""


class NotRegularFile(OSError):
    """A path where a regular file is expected holds something else (``kind`` says what)."""

    def __init__(self, kind):
        super(NotRegularFile, self).__init__("not a regular file: %s" % kind)
        self.kind = kind


def file_kind(mode):
    """``fifo``, ``socket``, ``directory``... for an ``st_mode`` (the words of the problems)."""
    for test, kind in ((stat.S_ISREG, "regular file"), (stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "fifo"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISLNK, "symbolic link")):
        if test(mode):
            return kind
    return "unknown file type"


def read_bytes(path, limit, follow=True):
    """Read at most ``limit`` bytes of the regular file ``path`` in small chunks (procfs may refuse one huge read).

    Anything but a regular file (a FIFO would block ``open`` forever, a device may act on being
    opened) raises :class:`NotRegularFile` and is never opened; the type is checked again on the
    open descriptor, so a file swapped in between is refused too. ``follow=False`` refuses a link
    as the last component (``ELOOP``). ``st_size`` is not used: procfs files report 0.
    """
    st = os.stat(path) if follow else os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(file_kind(st.st_mode))
    fd = os.open(path, _OPEN_FLAGS | (0 if follow else _O_NOFOLLOW))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(file_kind(st.st_mode))
        chunks = []
        total = 0
        while total < limit:
            chunk = os.read(fd, min(65536, limit - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def node_path(path, base="/"):
    """``path`` from configuration as an absolute, normalized node path (what is reported).

    A relative ``path`` is taken relative to the node directory ``base`` (containerd resolves
    ``imports`` against the config file's directory); ``.``, ``..`` and repeated slashes are
    resolved lexically, as Go's ``filepath.Clean`` does, and ``..`` never climbs above ``/``
    (``/..`` is ``/``, as in a chroot). Raises :class:`PathError` for a value that is no
    string or holds a NUL byte. Reading the result goes through :class:`NodeTree`, which confines
    symbolic links as well.
    """
    if not isinstance(path, str) or not isinstance(base, str):
        raise PathError("not a path: %r" % (path,))
    if "\x00" in path or "\x00" in base:
        raise PathError("path contains a NUL byte")
    if not path.startswith("/"):
        path = base.rstrip("/") + "/" + path
    parts = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part and part != ".":
            parts.append(part)
    return "/" + "/".join(parts)


def escaped_name(name):
    """A file name from ``os.listdir`` as printable text: undecodable bytes as ``\\xNN``."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _utf8_name(name):
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class NodeTree(object):
    """Read files, directories and links of a node below ``root``; collect problems, not tracebacks.

    Missing paths are normal (a node without a GPU has no ``/proc/driver/nvidia``) and return None
    silently; the caller decides whether absence is a finding. Any other failure (permission,
    I/O error, undecodable bytes, oversized file, not a regular file, a link loop, a relative node
    path or one with a NUL byte) is recorded in ``problems`` with path and reason.

    Below a root other than ``/`` every path is resolved the way a chroot would (see
    :meth:`host_path`): absolute link targets start again at the root, ``..`` stops at the root,
    so nothing outside the root is ever read, whatever links a hostile tree holds. With root ``/``
    the kernel resolves paths as usual. Where a file is expected only a regular file is opened
    (never a FIFO, socket or device), without blocking, and at most ``max_bytes`` are read.
    """

    def __init__(self, root="/", record=False):
        self.root = root or "/"
        self._prefix = None if self.root.rstrip("/") == "" else self.root.rstrip("/")
        self.problems = []
        self.record = record
        self.reads = []  # (kind, node path) in read order, kind in file|dir|link|exists

    def _walk(self, path, follow):
        """``(host path, missing)`` for the node path ``path`` resolved inside the root.

        ``missing`` is true when a component does not exist (or is no directory): the host path
        then lies below that component and is not looked at further. Raises :class:`PathError`.
        """
        if not isinstance(path, str):
            raise PathError("not a node path: %r" % (path,))
        if "\x00" in path:
            raise PathError("node path contains a NUL byte; not read")
        if not path.startswith("/"):
            raise PathError("not an absolute node path; not read")
        if self._prefix is None:
            return path, False
        todo = [part for part in path.split("/") if part]
        todo.reverse()
        resolved = []
        links = 0
        while todo:
            part = todo.pop()
            if part == ".":
                continue
            if part == "..":
                if resolved:
                    resolved.pop()
                continue
            host = self._prefix + "/" + "/".join(resolved + [part])
            if not todo and not follow:
                resolved.append(part)
                break
            try:
                st = os.lstat(host)
            except OSError as exc:
                if exc.errno in _MISSING:
                    rest = [p for p in reversed(todo) if p not in (".", "..")]
                    return self._prefix + "/" + "/".join(resolved + [part] + rest), True
                raise
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > MAX_SYMLINKS:
                    raise PathError(_LOOP)
                target = os.readlink(host)
                if not target:
                    return host, True
                if target.startswith("/"):
                    resolved = []
                todo.extend(reversed([p for p in target.split("/") if p]))
                continue
            if todo and not stat.S_ISDIR(st.st_mode):
                return host + "/" + "/".join(p for p in reversed(todo) if p not in (".", "..")), True
            resolved.append(part)
        return self._prefix + "/" + "/".join(resolved), False

    def host_path(self, path, follow=False):
        """The path on this machine for the node path ``path`` (absolute, as seen on the node).

        Below a root other than ``/`` it is resolved component by component like a chroot: a
        link's absolute target is taken from the root, a relative one from the link's directory,
        ``..`` stops at the root, at most :data:`MAX_SYMLINKS` links are followed. The last
        component is followed only with ``follow=True`` (what gets opened); without, a link
        there stays a link (for ``lstat`` and ``readlink``). The result always lies below the
        root. Raises :class:`PathError` (a ``ValueError``) for a relative path, a NUL byte or a
        link loop; a missing component is no error (the returned path does not exist).
        """
        return self._walk(path, follow)[0]

    def problem(self, path, reason):
        self.problems.append({"path": path, "reason": reason})

    def _note(self, kind, path):
        if self.record:
            self.reads.append((kind, path))

    def _locate(self, kind, path, follow):
        """The host path to use for ``path``, or None (missing, or a problem recorded)."""
        try:
            host, missing = self._walk(path, follow)
        except PathError as exc:
            self.problem(path, str(exc))
            return None
        except (IOError, OSError) as exc:
            self.problem(path, "cannot resolve: %s" % self._reason(exc))
            return None
        self._note(kind, path)
        return None if missing else host

    @staticmethod
    def _reason(exc):
        if isinstance(exc, NotRegularFile):
            return str(exc)
        if getattr(exc, "errno", None) == errno.ELOOP:
            return _LOOP
        return exc.strerror or str(exc)

    def read_text(self, path, max_bytes=MAX_READ_BYTES):
        """File contents as text (UTF-8, undecodable bytes replaced), or None.

        Only a regular file is read: a FIFO, socket, device or directory there is a problem
        (``not a regular file: fifo``) and is never opened.
        """
        host = self._locate("file", path, True)
        if host is None:
            return None
        try:
            data = read_bytes(host, max_bytes + 1, follow=self._prefix is None)
        except NotRegularFile as exc:
            self.problem(path, str(exc))
            return None
        except (IOError, OSError) as exc:
            if exc.errno in _MISSING:
                return None
            if exc.errno == errno.ELOOP and self._prefix is not None:
                self.problem(path, "became a symbolic link while being read; not followed")
            else:
                self.problem(path, "cannot read: %s" % self._reason(exc))
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
        """Sorted directory entries, or None when the directory does not exist.

        Entries whose names are not valid UTF-8 are left out, with one problem for ``path`` that
        names the first few in escaped form (``\\xNN`` for each undecodable byte): every name
        returned is text that serializes as is and is usable as a node path again.
        """
        host = self._locate("dir", path, True)
        if host is None:
            return None
        try:
            names = os.listdir(host)
        except (IOError, OSError) as exc:
            if exc.errno in _MISSING:
                return None
            self.problem(path, "cannot list: %s" % self._reason(exc))
            return None
        bad = sorted(name for name in names if not _utf8_name(name))
        if bad:
            shown = ", ".join(repr(escaped_name(name)) for name in bad[:MAX_NAMED_ENTRIES])
            self.problem(path, "%d entr%s with a name that is not valid UTF-8 left out: %s%s" % (
                len(bad), "y" if len(bad) == 1 else "ies", shown, ", ..." if len(bad) > MAX_NAMED_ENTRIES else ""))
            names = [name for name in names if _utf8_name(name)]
        return sorted(names)

    def readlink(self, path):
        """The target of a symbolic link (its raw text, not followed), or None when it is absent or not a link."""
        host = self._locate("link", path, False)
        if host is None:
            return None
        try:
            return os.readlink(host)
        except (IOError, OSError) as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EINVAL):
                return None
            self.problem(path, "cannot read link: %s" % self._reason(exc))
            return None

    def exists(self, path):
        """Whether ``path`` exists (a link counts, even a dangling one)."""
        host = self._locate("exists", path, False)
        if host is None:
            return False
        return os.path.lexists(host)

    def _stat(self, path):
        """``os.stat`` of ``path`` (links followed inside the root), or None."""
        try:
            host, missing = self._walk(path, True)
        except PathError as exc:
            self.problem(path, str(exc))
            return None, None
        if missing:
            return None, None
        try:
            return host, os.stat(host)
        except (IOError, OSError) as exc:
            if exc.errno not in _MISSING:
                self.problem(path, "cannot stat: %s" % self._reason(exc))
            return None, None

    def is_file(self, path):
        st = self._stat(path)[1]
        return st is not None and stat.S_ISREG(st.st_mode)

    def find_binary(self, name, dirs):
        """The first ``dirs/name`` that is an executable file in the tree (node path), or None."""
        for directory in dirs:
            candidate = directory.rstrip("/") + "/" + name
            host, st = self._stat(candidate)
            if st is not None and stat.S_ISREG(st.st_mode) and os.access(host, os.X_OK):
                return candidate
        return None


def _refuse_constant(name):
    raise ValueError("%s is not a JSON number" % name)


def _quote(value, limit=64):
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        text = "<%s>" % type(value).__name__
    return text if len(text) <= limit else text[:limit] + "..."


class RecordedCommands(object):
    """Replays command results recorded in a tree under ``.gpufleet/commands/<name>.json``.

    ``run`` returns ``(rc, stdout, stderr)``; ``rc`` is None for a command that gave no usable
    result when it was recorded (``"timed_out"`` or ``"truncated"``), ``stderr`` is then its
    ``error`` (command and deadline). The file is read like any node file (inside the root, a
    regular file, at most ``MAX_READ_BYTES``); ``rc`` must be a JSON integer in ``RC_RANGE``
    (not a boolean, float, string, ``Infinity`` or ``NaN``): anything else is a problem for the file.
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
            record = json.loads(text, parse_constant=_refuse_constant)
            if not isinstance(record, dict):
                raise TypeError("not a JSON object")
            stdout, stderr = record.get("stdout", ""), record.get("stderr", "")
            if not isinstance(stdout, str) or not isinstance(stderr, str):
                raise TypeError("stdout and stderr must be strings")
            if record.get("timed_out") or record.get("truncated"):
                error = record.get("error")
                return None, "", error if isinstance(error, str) and error else "%s: no usable result" % name
            if "rc" not in record:
                raise ValueError("rc is missing")
            rc = record["rc"]
            if isinstance(rc, bool) or not isinstance(rc, int):
                raise TypeError("rc is not an integer: %s" % _quote(rc))
            if not RC_RANGE[0] <= rc <= RC_RANGE[1]:
                raise ValueError("rc is not within %d..%d: %s" % (RC_RANGE[0], RC_RANGE[1], _quote(rc)))
            return rc, stdout, stderr
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            self.tree.problem(path, "recorded command result is not valid: %s" % (
                "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]))
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
