# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one writer for files that hold evidence and cluster state: private, crash-safe, append-only.

Standard library only (node modules use it too). Every state-bearing file is written the same way,
the way etcdctl writes a snapshot (``.part``, fsync, rename):

1. a temporary file made by ``mkstemp`` *in the destination directory* (unpredictable name,
   ``O_CREAT|O_EXCL``, so it never follows a planted link), mode 0600 from its first byte;
2. the data written, the file fsynced;
3. the final name given atomically: by ``link`` when an existing artifact must never be replaced
   (the link fails when the name exists, so two writers cannot both win), or by ``rename`` where
   the file is meant to be replaced (an index, a summary);
4. the directory fsynced, so the new name survives a crash.

Directories are created 0700. ``check_private_root`` refuses an evidence root that others could
write to. ``locked`` serialises index updates between concurrent writers (``flock``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import errno
import os
import stat
import tempfile
import time

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None


class PrivateFileError(Exception):
    """A private file or directory could not be written as required (the message names the path)."""


class ArtifactExists(PrivateFileError):
    """The destination already exists and artifacts are never replaced."""


def read_text(path):
    """The file's text (UTF-8), or None when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8")
    except (IOError, OSError):
        return None


def fsync_dir(path):
    """fsync a directory so that a rename or link in it survives a crash (best effort where the
    platform cannot open directories)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def ensure_private_dir(path):
    """Create ``path`` (and missing parents) with mode 0700; an existing directory created here
    earlier keeps its mode. A path that exists but is not a directory, or is a symlink, is an error.
    Returns the list of directories created."""
    created = []
    path = os.path.abspath(path)
    missing = []
    probe = path
    while not os.path.lexists(probe):
        missing.append(probe)
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise PrivateFileError("%s: cannot create the directory: %s" % (directory, exc.strerror))
        else:
            os.chmod(directory, 0o700)
            created.append(directory)
            fsync_dir(os.path.dirname(directory))
    if os.path.islink(path) or not os.path.isdir(path):
        raise PrivateFileError("%s: expected a directory (not a link or a file)" % path)
    return created


def check_private_root(path):
    """Why ``path`` is not a safe evidence root, or None: it must be an absolute, existing
    directory (not a symlink) owned by the running user and not writable by group or others."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return "%r: the evidence root must be an absolute path" % (path,)
    try:
        info = os.lstat(path)
    except OSError as exc:
        return "%s: the evidence root does not exist or cannot be read (%s); create it mode 0700" % (path, exc.strerror)
    if stat.S_ISLNK(info.st_mode):
        return "%s: the evidence root is a symlink; give the real directory" % path
    if not stat.S_ISDIR(info.st_mode):
        return "%s: the evidence root is not a directory" % path
    if info.st_uid != os.geteuid():
        return "%s: the evidence root is owned by uid %d, not by the running user (uid %d)" % (path, info.st_uid, os.geteuid())
    if info.st_mode & 0o022:
        return "%s: the evidence root is writable by group or others (mode %04o); chmod 0700 it" % (path, stat.S_IMODE(info.st_mode))
    return None


def _to_bytes(data):
    if isinstance(data, bytes):
        return data
    return data.encode("utf-8")


def _publish(tmp, path, replace):
    if replace:
        os.rename(tmp, path)
        return
    try:
        os.link(tmp, path)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            raise ArtifactExists("%s: already exists; artifacts are never replaced" % path)
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        # A filesystem without hard links: check, then rename (not race-free, but never silent).
        if os.path.lexists(path):
            raise ArtifactExists("%s: already exists; artifacts are never replaced" % path)
        os.rename(tmp, path)
        return
    os.unlink(tmp)


def make_new_dir(parent, base):
    """Create ``parent`` (0700, with its parents) and a new directory in it, exclusively, mode 0700:
    ``base``, or ``base-2``, ``base-3``... when taken (also when taken between a check and the
    ``mkdir`` by a concurrent writer). Returns its path."""
    ensure_private_dir(parent)
    number = 1
    while True:
        path = os.path.join(parent, base if number == 1 else "%s-%d" % (base, number))
        try:
            os.mkdir(path, 0o700)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise PrivateFileError("%s: cannot create the directory: %s" % (path, exc.strerror))
            number += 1
            continue
        os.chmod(path, 0o700)
        fsync_dir(parent)
        return path


@contextlib.contextmanager
def private_output(path, replace=False):
    """Yield a binary file handle whose content becomes ``path`` (0600) only when the block ends
    without an exception; on an exception the temporary file is removed and ``path`` untouched."""
    directory = os.path.dirname(os.path.abspath(path))
    if not replace and os.path.lexists(path):
        raise ArtifactExists("%s: already exists; artifacts are never replaced" % path)
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".part")
    except OSError as exc:
        raise PrivateFileError("%s: cannot create a temporary file in %s: %s" % (path, directory, exc.strerror))
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        _publish(tmp, path, replace)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(directory)


class PrivateStream(object):
    """A file written a piece at a time that becomes ``path`` (0600) only when :meth:`publish` is called:
    the same steps as :func:`private_output` (a ``mkstemp`` file in the destination directory, fsync, a link
    that never replaces an artifact), for data that arrives over a long run (per-claim records) and must
    not be held in memory. :meth:`discard` removes the temporary file; ``path`` is never half-written."""

    def __init__(self, path):
        self.path = path
        self.directory = os.path.dirname(os.path.abspath(path))
        if os.path.lexists(path):
            raise ArtifactExists("%s: already exists; artifacts are never replaced" % path)
        try:
            fd, self.tmp = tempfile.mkstemp(dir=self.directory, prefix="." + os.path.basename(path) + ".",
                                            suffix=".part")
        except OSError as exc:
            why = exc.strerror
            raise PrivateFileError("%s: cannot create a temporary file in %s: %s" % (path, self.directory, why))
        os.fchmod(fd, 0o600)
        self.handle = os.fdopen(fd, "wb")

    def write(self, data):
        self.handle.write(_to_bytes(data))

    def publish(self):
        """fsync, then give the file its name (ArtifactExists when the name was taken meanwhile)."""
        try:
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.handle.close()
            _publish(self.tmp, self.path, False)
        except BaseException:
            self.discard()
            raise
        fsync_dir(self.directory)

    def discard(self):
        if not self.handle.closed:
            self.handle.close()
        try:
            os.unlink(self.tmp)
        except OSError:
            pass


def write_private(path, data, replace=False):
    """Write ``data`` (text or bytes) to ``path``, mode 0600, crash-safe (see the module doc).

    ``replace=False`` (artifacts, evidence records): an existing ``path`` raises ``ArtifactExists``.
    ``replace=True`` (indexes, summaries): the old content is replaced atomically."""
    with private_output(path, replace=replace) as handle:
        handle.write(_to_bytes(data))


def write_private_files(directory, files):
    """Write ``files`` (``{name: text or bytes}``) into ``directory`` (created 0700), each as
    :func:`write_private` does. Every file is checked before any is written: an existing file with
    the same content is kept (a re-run), a symbolic link or a file with other content raises
    ``ArtifactExists`` naming it, and nothing is written. Returns the paths, sorted by name."""
    ensure_private_dir(directory)
    paths, todo = [], []
    for name in sorted(files):
        path = os.path.join(os.path.abspath(directory), name)
        data = _to_bytes(files[name])
        if os.path.islink(path):
            raise ArtifactExists("%s is a symlink" % path)
        if os.path.lexists(path):
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as handle:
                if handle.read() != data:
                    raise ArtifactExists("%s exists with other content" % path)
        else:
            todo.append((path, data))
        paths.append(path)
    for path, data in todo:
        write_private(path, data)
    return paths


def replace_keeping_mode(path, data, new_mode=0o600):
    """Replace the configuration file ``path`` with ``data`` atomically, keeping what the file was: a
    temporary file in its directory (``mkstemp``), written and fsynced, given the existing file's mode
    and (where permitted) owner -- ``new_mode`` for a file that does not exist yet -- then renamed over
    ``path`` (``os.replace``) and the directory fsynced. On any failure the temporary file is removed
    and ``path`` is untouched. The one atomic replace of node configuration (containerd_cdi writes,
    containerd_runtime restores)."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        before = os.stat(path)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise
        before = None
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".part", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(_to_bytes(data))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, stat.S_IMODE(before.st_mode) if before is not None else new_mode)
        if before is not None:
            try:
                os.chown(tmp, before.st_uid, before.st_gid)
            except OSError:
                pass  # not root: the file stays ours, with the old mode
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(directory)


def append_private_line(path, line):
    """Append one line to a log that is read while it grows (a long run's progress): mode 0600 from its
    creation, never through a symbolic link (``O_NOFOLLOW``), one ``write`` per line."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise PrivateFileError("%s: %s" % (path, exc.strerror or exc))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PrivateFileError("%s: not a regular file" % path)
        os.write(fd, _to_bytes(line.rstrip("\n") + "\n"))
    finally:
        os.close(fd)


def copy_private(src, path, replace=False, chunk=1024 * 1024):
    """Copy the file ``src`` to ``path`` as ``write_private`` would; returns the bytes copied."""
    copied = 0
    with open(src, "rb") as source:
        with private_output(path, replace=replace) as handle:
            while True:
                block = source.read(chunk)
                if not block:
                    break
                handle.write(block)
                copied += len(block)
    return copied


@contextlib.contextmanager
def locked(directory, name=".lock", timeout=60.0, poll=0.05):
    """Hold an exclusive ``flock`` on ``<directory>/<name>`` (0600) for the block; raises
    ``PrivateFileError`` naming the lock when it cannot be had within ``timeout`` seconds."""
    path = os.path.join(directory, name)
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise PrivateFileError("%s: cannot open the lock file: %s" % (path, exc.strerror))
    try:
        if fcntl is not None:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except (IOError, OSError) as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                    if time.monotonic() >= deadline:
                        raise PrivateFileError("%s: held by another writer for more than %g s" % (path, timeout))
                    time.sleep(poll)
        yield path
    finally:
        os.close(fd)
