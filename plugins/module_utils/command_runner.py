# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one command runner every binary wrapper goes through: a deadline, bounded output.

Standard library only (it runs on GPU nodes, Python 3.8+). ``AnsibleModule.run_command`` has no
deadline, expands ``~`` and variables in argv and keeps unbounded output; this runner:

- takes an argv list of strings only (never a shell string) and expands nothing in it;
- runs with ``LC_ALL=C`` (and ``LANG=C``) so that parsers see the C locale's output;
- starts the command in its own session and, when the deadline expires, kills the whole process
  group (``SIGKILL``), so a hung child (``nvidia-smi`` in D-state, ``etcdctl`` against a slow
  member, a ``helm --wait`` that never ends) cannot hang the play;
- never blocks on a process that does not die: a process in uninterruptible sleep survives
  ``SIGKILL``, so after a short grace the runner returns anyway (``unreaped``);
- keeps at most ``max_output`` bytes of each stream (the rest is drained and dropped, ``truncated``).

``Runner`` is a callable ``(argv, environ_update=None, timeout=None) -> (rc, stdout, stderr)``, the
shape the wrappers (``etcd_cli``, ``helm_cli``, ``node_tree.LiveCommands``) already take, that raises
``CommandTimedOut`` on expiry; ``run()`` returns the full ``CommandResult``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import signal
import subprocess
import threading
import time

DEFAULT_MAX_OUTPUT = 4 * 1024 * 1024
# After SIGKILL, how long to wait for the process to be reaped before giving up on it.
KILL_GRACE_SECONDS = 2.0
# After the command exited, how long its output pipes may stay open (held by a grandchild).
DRAIN_GRACE_SECONDS = 2.0
_CHUNK = 65536


class CommandError(Exception):
    """A command could not be run as asked (bad argv, bad timeout)."""


class CommandTimedOut(CommandError):
    """The command did not finish within its deadline; its process group was killed."""

    def __init__(self, result):
        self.result = result
        CommandError.__init__(self, result.describe())


def _check_argv(argv):
    if isinstance(argv, (str, bytes)) or not isinstance(argv, (list, tuple)) or not argv:
        raise CommandError("argv must be a non-empty list of strings, got %r" % (argv,))
    for item in argv:
        if not isinstance(item, str):
            raise CommandError("argv items must be strings, got %r in %r" % (item, list(argv)))
        if "\0" in item:
            raise CommandError("argv items must not contain NUL bytes: %r" % (item,))
    return list(argv)


def _check_timeout(timeout):
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise CommandError("timeout must be a positive number of seconds, got %r" % (timeout,))
    return float(timeout)


class CommandResult(object):
    """What one command did: rc (None when it did not exit), the decoded streams and how it ended."""

    __slots__ = ("argv", "timeout", "rc", "stdout", "stderr", "timed_out", "truncated", "unreaped",
                 "duration", "error")

    def __init__(self, argv, timeout):
        self.argv = argv
        self.timeout = timeout
        self.rc = None
        self.stdout = ""
        self.stderr = ""
        self.timed_out = False
        self.truncated = False
        self.unreaped = False
        self.duration = 0.0
        self.error = None

    def command_line(self):
        return " ".join(self.argv)

    def describe(self):
        """One line naming the command and how it ended (for ``fail_json`` and problems entries)."""
        if self.timed_out:
            text = "%s: timed out after %g s (deadline); process group killed" % (self.command_line(), self.timeout)
            if self.unreaped:
                text += ", but the process did not exit (uninterruptible sleep?)"
            return text
        if self.error:
            return "%s: could not be run: %s" % (self.command_line(), self.error)
        text = "%s: exit code %s" % (self.command_line(), self.rc)
        if self.truncated:
            text += " (output truncated)"
        return text

    def as_dict(self):
        return dict((name, getattr(self, name)) for name in self.__slots__)


def _reader(stream, keep, sink, flags):
    """Read ``stream`` to EOF, keeping at most ``keep`` bytes in ``sink``."""
    kept = 0
    try:
        while True:
            chunk = stream.read1(_CHUNK)
            if not chunk:
                break
            if kept < keep:
                part = chunk[:keep - kept]
                sink.append(part)
                kept += len(part)
                if len(part) < len(chunk):
                    flags["truncated"] = True
            else:
                flags["truncated"] = True
    except (IOError, OSError, ValueError):
        pass


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):
        try:
            proc.kill()
        except OSError:
            pass


def _decode(chunks):
    return b"".join(chunks).decode("utf-8", "replace")


def run(argv, timeout, environ_update=None, max_output=DEFAULT_MAX_OUTPUT, data=None, cwd=None,
        clock=time.monotonic):
    """Run ``argv`` with a deadline of ``timeout`` seconds; return a ``CommandResult``.

    A binary that cannot be started gives ``rc=127`` and ``error`` (like a shell would), never an
    exception; bad arguments raise ``CommandError``.
    """
    argv = _check_argv(argv)
    timeout = _check_timeout(timeout)
    result = CommandResult(argv, timeout)
    env = dict(os.environ)
    env.update({"LC_ALL": "C", "LANG": "C"})
    if environ_update:
        env.update(dict((str(k), str(v)) for k, v in environ_update.items()))
    started = clock()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
                                close_fds=True, start_new_session=True)
    except (IOError, OSError) as exc:
        result.rc = 127
        result.error = str(exc)
        result.stderr = str(exc)
        result.duration = clock() - started
        return result
    out, err, flags = [], [], {"truncated": False}
    threads = [threading.Thread(target=_reader, args=(proc.stdout, max_output, out, flags)),
               threading.Thread(target=_reader, args=(proc.stderr, max_output, err, flags))]
    for thread in threads:
        thread.daemon = True
        thread.start()
    if data is not None:
        try:
            proc.stdin.write(data if isinstance(data, bytes) else data.encode("utf-8"))
            proc.stdin.close()
        except (IOError, OSError):
            pass
    deadline = started + timeout
    try:
        proc.wait(timeout=max(deadline - clock(), 0.001))
    except subprocess.TimeoutExpired:
        result.timed_out = True
        _kill_group(proc)
        try:
            proc.wait(timeout=KILL_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            result.unreaped = True
    else:
        # The leader exited; a grandchild may still hold the pipes. Give the readers a short grace
        # (never past the deadline), then kill what is left of the group.
        grace_end = min(deadline, clock() + DRAIN_GRACE_SECONDS)
        for thread in threads:
            thread.join(max(grace_end - clock(), 0.05))
        if any(thread.is_alive() for thread in threads):
            _kill_group(proc)
    for thread in threads:
        thread.join(0.5)
    if not result.unreaped:
        result.rc = proc.returncode if not result.timed_out else None
    result.truncated = flags["truncated"]
    result.stdout = _decode(out)
    result.stderr = _decode(err)
    result.duration = clock() - started
    for stream in (proc.stdout, proc.stderr):
        try:
            stream.close()
        except (IOError, OSError):
            pass
    return result


class Runner(object):
    """``runner(argv, environ_update=None, timeout=None) -> (rc, stdout, stderr)`` with a default
    deadline; raises ``CommandTimedOut`` (its message names the command and the deadline).

    ``results`` keeps every ``CommandResult`` in order (for evidence and support bundles).
    """

    def __init__(self, timeout, max_output=DEFAULT_MAX_OUTPUT, environ_update=None):
        self.timeout = _check_timeout(timeout)
        self.max_output = max_output
        self.environ_update = dict(environ_update or {})
        self.results = []

    def run(self, argv, environ_update=None, timeout=None, data=None):
        env = dict(self.environ_update)
        env.update(environ_update or {})
        result = run(argv, timeout if timeout is not None else self.timeout, environ_update=env,
                     max_output=self.max_output, data=data)
        self.results.append(result)
        return result

    def __call__(self, argv, environ_update=None, timeout=None, data=None):
        result = self.run(argv, environ_update=environ_update, timeout=timeout, data=data)
        if result.timed_out:
            raise CommandTimedOut(result)
        return result.rc, result.stdout, result.stderr
