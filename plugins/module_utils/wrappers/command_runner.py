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
- holds the deadline for the whole process tree: a grandchild that left the group (``setsid``,
  a daemonizing double fork) but kept the write end of our stdout/stderr pipes cannot keep the
  runner waiting for end-of-file. On Linux the runner finds such holders in ``/proc/<pid>/fd``
  (a link ``pipe:[INODE]`` naming one of our pipes, opened for writing) and kills them
  (``SIGKILL``; holding the write end of our private pipe proves the process came from our
  command). Without ``/proc``, or when a holder cannot be killed, it closes its read ends and
  returns anyway;
- never blocks on a process that does not die: a process in uninterruptible sleep survives
  ``SIGKILL``, so after a short grace the runner returns anyway (``unreaped``);
- keeps at most ``max_output`` bytes of each stream (the rest is drained and dropped, ``truncated``).

Output is read in the calling thread (``selectors``, non-blocking pipes), so no reader thread can
be left blocked on a pipe that somebody else keeps open.

``Runner`` is a callable ``(argv, environ_update=None, timeout=None) -> (rc, stdout, stderr)``, the
shape the wrappers (``etcd_cli``, ``helm_cli``, ``node_tree.LiveCommands``) already take, that raises
``CommandTimedOut`` on expiry; ``run()`` returns the full ``CommandResult``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import selectors
import signal
import subprocess
import time

DEFAULT_MAX_OUTPUT = 4 * 1024 * 1024
# After the deadline (SIGKILL to the group), or after the drain grace below, how long the runner may
# still spend: waiting for the killed process to be reaped, killing processes that hold the output
# pipes and reading what they had written. The whole call returns within timeout + KILL_GRACE_SECONDS.
KILL_GRACE_SECONDS = 2.0
# After the command exited, how long its output pipes may stay open (held by a grandchild) before
# the holders are killed; never past the deadline.
DRAIN_GRACE_SECONDS = 2.0
# After the SIGKILL, how long to wait for end-of-file before looking for pipe holders in /proc.
HOLDER_WAIT_SECONDS = 0.1
# At most this long for one scan of /proc; a holder killed, scan again after HOLDER_RESCAN_SECONDS
# (it may have forked before it died).
HOLDER_SCAN_SECONDS = 0.5
HOLDER_RESCAN_SECONDS = 0.25
# When no holder can be found or killed (no /proc, another user's process), how long to go on reading.
FINAL_DRAIN_SECONDS = 0.25
_POLL_SECONDS = 0.05
_CHUNK = 65536
_DIGITS = frozenset("0123456789")


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
    """What one command did: rc (None when it did not exit), the decoded streams and how it ended.

    ``pipes_held``: the output pipes were still open after the command had exited (past the drain
    grace) or after its group was killed at the deadline, because some process kept their write
    ends (a grandchild that left the process group). The streams hold what arrived until the
    holders were killed or the runner stopped reading. A command that exited by itself keeps its
    ``rc`` and is not ``timed_out``: its own work is done, only a leftover held the output.
    ``pipe_holders``: the pids of the processes found holding the pipes and killed (sorted).
    """

    __slots__ = ("argv", "timeout", "rc", "stdout", "stderr", "timed_out", "truncated", "unreaped",
                 "duration", "error", "pipes_held", "pipe_holders")

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
        self.pipes_held = False
        self.pipe_holders = []

    def command_line(self):
        return " ".join(self.argv)

    def _holders_text(self):
        if self.pipe_holders:
            return "%d process(es) holding its output pipes killed (pid %s)" % (
                len(self.pipe_holders), ", ".join(str(pid) for pid in self.pipe_holders))
        return "its output pipes were held open by a process that could not be found or killed; output kept up to then"

    def describe(self):
        """One line naming the command and how it ended (for ``fail_json`` and problems entries)."""
        if self.timed_out:
            text = "%s: timed out after %g s (deadline); process group killed" % (self.command_line(), self.timeout)
            if self.unreaped:
                text += ", but the process did not exit (uninterruptible sleep?)"
            if self.pipe_holders or (self.pipes_held and not self.unreaped):
                text += "; " + self._holders_text()
            return text
        if self.error:
            return "%s: could not be run: %s" % (self.command_line(), self.error)
        text = "%s: exit code %s" % (self.command_line(), self.rc)
        if self.truncated:
            text += " (output truncated)"
        if self.pipes_held:
            text += " (output pipes held open after it exited; %s)" % self._holders_text()
        return text

    def as_dict(self):
        return dict((name, getattr(self, name)) for name in self.__slots__)


class _Streams(object):
    """The child's stdout/stderr (read, bounded) and stdin (``data`` written), all non-blocking."""

    def __init__(self, proc, data, max_output):
        self.selector = selectors.DefaultSelector()
        self.keep = max_output
        self.chunks = {"stdout": [], "stderr": []}
        self.kept = {"stdout": 0, "stderr": 0}
        self.truncated = False
        self.inodes = []
        self.files = {}
        self.reading = 0
        for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            fd = stream.fileno()
            self.files[fd] = stream
            try:
                self.inodes.append(os.fstat(fd).st_ino)
            except OSError:
                pass
            os.set_blocking(fd, False)
            self.selector.register(fd, selectors.EVENT_READ, name)
            self.reading += 1
        self.pending = b""
        self.stdin = None
        if data is not None and proc.stdin is not None:
            self.pending = data if isinstance(data, bytes) else data.encode("utf-8")
            self.stdin = proc.stdin
            if self.pending:
                os.set_blocking(proc.stdin.fileno(), False)
                self.selector.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
            else:
                self._close_stdin()

    def busy(self):
        return self.reading > 0 or self.stdin is not None

    def stop_writing(self):
        if self.stdin is not None:
            self._close_stdin()

    def _close_stdin(self):
        stream, self.stdin, self.pending = self.stdin, None, b""
        try:
            self.selector.unregister(stream.fileno())
        except (KeyError, ValueError, OSError):
            pass
        try:
            stream.close()
        except (IOError, OSError, ValueError):
            pass

    def _unregister(self, fd):
        try:
            self.selector.unregister(fd)
        except (KeyError, ValueError, OSError):
            pass
        self.reading -= 1

    def _read(self, fd, name):
        try:
            chunk = os.read(fd, _CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._unregister(fd)
            return
        room = self.keep - self.kept[name]
        if room > 0:
            part = chunk[:room]
            self.chunks[name].append(part)
            self.kept[name] += len(part)
        if len(chunk) > max(room, 0):
            self.truncated = True

    def _write(self, fd):
        try:
            written = os.write(fd, self.pending[:_CHUNK])
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            # The command closed its stdin (EPIPE) or died: the rest of ``data`` is not wanted.
            self._close_stdin()
            return
        self.pending = self.pending[written:]
        if not self.pending:
            self._close_stdin()

    def pump(self, timeout):
        """Wait up to ``timeout`` seconds for the pipes and move what is ready."""
        if not self.busy():
            return
        try:
            events = self.selector.select(max(timeout, 0))
        except (OSError, ValueError):
            events = []
        for key, _mask in events:
            if key.data == "stdin":
                if self.stdin is not None:
                    self._write(key.fd)
            elif key.fd in self.files and self.files[key.fd] is not None:
                self._read(key.fd, key.data)

    def stop_reading(self):
        for fd, stream in list(self.files.items()):
            if stream is not None and fd in self.selector.get_map():
                self._unregister(fd)

    def close(self):
        """Stop reading and close our ends of the pipes (nothing blocks on them: they are non-blocking)."""
        self.stop_reading()
        self.stop_writing()
        for fd, stream in list(self.files.items()):
            self.files[fd] = None
            if stream is None:
                continue
            try:
                stream.close()
            except (IOError, OSError, ValueError):
                pass
        try:
            self.selector.close()
        except (OSError, ValueError):
            pass

    def text(self, name):
        return b"".join(self.chunks[name]).decode("utf-8", "replace")


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):
        try:
            proc.kill()
        except OSError:
            pass


def _is_pid(name):
    return bool(name) and len(name) < 12 and not set(name) - _DIGITS


def _writes_to(pid, fd_name, links):
    """True when ``/proc/<pid>/fd/<fd_name>`` still names one of ``links`` and is open for writing."""
    base = "/proc/%d/" % pid
    try:
        if os.readlink(base + "fd/" + fd_name) not in links:
            return False
        with open(base + "fdinfo/" + fd_name, "rb") as handle:
            info = handle.read(4096)
    except (OSError, ValueError):
        return False
    for line in info.splitlines():
        if line.startswith(b"flags:"):
            try:
                flags = int(line.split(b":", 1)[1].strip()[:24], 8)
            except ValueError:
                return False
            return flags & 3 in (os.O_WRONLY, os.O_RDWR)
    return False


def _find_pipe_holders(inodes, scan_end, clock, exclude, first_pid):
    """``[(pid, fd_name)]`` of processes holding the write end of one of our pipes, or ``None`` without /proc.

    Bounded: stops at ``scan_end`` (what was found so far is returned); unreadable or vanishing
    processes are skipped. Pids from ``first_pid`` up are looked at first (descendants of our child
    usually got higher pids).
    """
    links = frozenset("pipe:[%d]" % inode for inode in inodes)
    if not links or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    pids = sorted((int(name) for name in names if _is_pid(name)), key=lambda pid: (pid < first_pid, pid))
    found = []
    for pid in pids:
        if clock() >= scan_end:
            break
        if pid in exclude:
            continue
        try:
            entries = os.scandir("/proc/%d/fd" % pid)
        except OSError:
            continue
        try:
            for entry in entries:
                if clock() >= scan_end:
                    break
                try:
                    target = os.readlink(entry.path)
                except OSError:
                    continue
                if target in links and _writes_to(pid, entry.name, links):
                    found.append((pid, entry.name))
                    break
        except OSError:
            pass
        finally:
            entries.close()
    return found


def _kill_holder(pid, fd_name, inodes):
    """SIGKILL ``pid`` if it still holds our pipe (checked through a pidfd where there is one, so a
    reused pid is never hit). True when the signal was sent."""
    links = frozenset("pipe:[%d]" % inode for inode in inodes)
    pidfd_open = getattr(os, "pidfd_open", None)
    send = getattr(signal, "pidfd_send_signal", None)
    pidfd = None
    if pidfd_open is not None and send is not None:
        try:
            pidfd = pidfd_open(pid)
        except OSError:
            pidfd = None
    try:
        if not _writes_to(pid, fd_name, links):
            return False
        if pidfd is not None:
            send(pidfd, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
        return True
    except OSError:
        return False
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _clean_up(proc, streams, budget_end, result, clock):
    """After a SIGKILL: read what is left until end-of-file, killing whatever still holds the pipes,
    and wait for ``proc`` to be reaped; never past ``budget_end``."""
    streams.stop_writing()
    scan_at = clock() + HOLDER_WAIT_SECONDS
    read_until = budget_end
    exclude = frozenset((os.getpid(), 1, proc.pid))
    killed = set(result.pipe_holders)
    while True:
        now = clock()
        reaped = proc.poll() is not None
        if now >= budget_end or (reaped and not streams.busy()):
            break
        if not streams.busy():
            try:
                proc.wait(timeout=max(budget_end - now, 0.001))
            except subprocess.TimeoutExpired:
                pass
            continue
        if now >= read_until:
            streams.stop_reading()
            continue
        if now >= scan_at:
            result.pipes_held = True
            holders = _find_pipe_holders(streams.inodes, min(budget_end, now + HOLDER_SCAN_SECONDS), clock,
                                         exclude, proc.pid)
            hit = [pid for pid, fd_name in holders or () if _kill_holder(pid, fd_name, streams.inodes)]
            killed.update(hit)
            if hit:
                scan_at = clock() + HOLDER_RESCAN_SECONDS
            else:
                # Nothing (more) to kill here: no /proc, or a holder we may not see or signal.
                scan_at = budget_end
                read_until = min(read_until, clock() + FINAL_DRAIN_SECONDS)
            continue
        streams.pump(min(_POLL_SECONDS, min(scan_at, read_until, budget_end) - now))
    result.pipe_holders = sorted(killed)


def run(argv, timeout, environ_update=None, max_output=DEFAULT_MAX_OUTPUT, data=None, cwd=None,
        clock=time.monotonic):
    """Run ``argv`` with a deadline of ``timeout`` seconds; return a ``CommandResult``.

    A binary that cannot be started gives ``rc=127`` and ``error`` (like a shell would), never an
    exception; bad arguments raise ``CommandError``.

    Wall time: the call returns within ``timeout + KILL_GRACE_SECONDS`` (plus scheduling slack),
    whatever the command and its descendants do:

    - at the deadline the process group is killed (``timed_out``, ``rc`` None); the runner then
      reads what is left, kills processes outside the group that hold the output pipes and waits
      for the reap, all within ``KILL_GRACE_SECONDS``;
    - when the command exits before the deadline but its output pipes stay open, the runner reads
      on for ``DRAIN_GRACE_SECONDS`` (never past the deadline), then kills the rest of the group and
      the pipe holders and returns the command's own ``rc`` with the output read until then
      (``pipes_held``, not ``timed_out``: the command did finish; only a leftover held the output).
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
    except (IOError, OSError, ValueError) as exc:
        result.rc = 127
        result.error = str(exc)
        result.stderr = str(exc)
        result.duration = clock() - started
        return result
    deadline = started + timeout
    streams = None
    try:
        streams = _Streams(proc, data, max_output)
        exited = False
        while True:
            now = clock()
            if now >= deadline:
                break
            if not streams.busy():
                try:
                    proc.wait(timeout=max(deadline - now, 0.001))
                    exited = True
                except subprocess.TimeoutExpired:
                    pass
                break
            streams.pump(min(_POLL_SECONDS, deadline - now))
            if proc.poll() is not None:
                exited = True
                break
        # The command is done or killed: the rest of ``data`` is not wanted.
        streams.stop_writing()
        if exited:
            # The command exited; a grandchild may still hold the pipes. Give it a short grace (never
            # past the deadline), then kill what is left of the group and whatever holds the pipes.
            grace_end = min(deadline, clock() + DRAIN_GRACE_SECONDS)
            while streams.busy() and clock() < grace_end:
                streams.pump(min(_POLL_SECONDS, grace_end - clock()))
            if streams.busy():
                result.pipes_held = True
                _kill_group(proc)
                _clean_up(proc, streams, max(grace_end, clock()) + KILL_GRACE_SECONDS, result, clock)
        else:
            result.timed_out = True
            _kill_group(proc)
            _clean_up(proc, streams, max(deadline, clock()) + KILL_GRACE_SECONDS, result, clock)
    finally:
        if streams is not None:
            result.truncated = streams.truncated
            result.stdout = streams.text("stdout")
            result.stderr = streams.text("stderr")
            streams.close()
        else:
            _kill_group(proc)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    try:
                        stream.close()
                    except (IOError, OSError, ValueError):
                        pass
    if result.timed_out:
        result.unreaped = proc.poll() is None
    else:
        result.rc = proc.returncode
    result.duration = clock() - started
    return result


class Runner(object):
    """``runner(argv, environ_update=None, timeout=None) -> (rc, stdout, stderr)`` with a default
    deadline; raises ``CommandTimedOut`` (its message names the command and the deadline).

    A command that exited by itself but left a process holding its output pipes is not a timeout:
    its ``rc`` and the output read until the holders were killed come back (``results[-1].pipes_held``).

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
