# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""command_runner: deadlines that kill the whole process group, bounded output, no expansion."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import signal
import subprocess
import sys
import time

import pytest

import processes

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import command_runner


def test_ordinary_command_returns_rc_and_streams():
    result = command_runner.run([sys.executable, "-c", "import sys; print('out'); sys.stderr.write('err'); sys.exit(3)"], 10)
    assert (result.rc, result.stdout, result.stderr, result.timed_out) == (3, "out\n", "err", False)
    assert result.describe().endswith("exit code 3")


def test_c_locale_and_no_expansion_in_argv():
    result = command_runner.run([sys.executable, "-c", "import os, sys; print(os.environ['LC_ALL']); print(sys.argv[1:])",
                                 "~", "$HOME"], 10)
    assert result.stdout.splitlines() == ["C", "['~', '$HOME']"]


def test_hanging_command_is_killed_with_its_children_at_the_deadline(tmp_path):
    pidfile = tmp_path / "child.pid"
    script = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
              "open(%r, 'w').write(str(p.pid)); print('started', flush=True); time.sleep(60)" % str(pidfile))
    started = time.monotonic()
    result = command_runner.run([sys.executable, "-c", script], 2)
    assert time.monotonic() - started < 8
    assert result.timed_out and result.rc is None
    assert result.stdout == "started\n"
    assert "timed out after 2 s" in result.describe() and sys.executable in result.describe()
    child = int(pidfile.read_text())
    assert processes.gone(child, 5), "the grandchild survived the deadline"


def test_runner_raises_named_timeout():
    runner = command_runner.Runner(timeout=1)
    with pytest.raises(command_runner.CommandTimedOut) as info:
        runner([sys.executable, "-c", "import time; time.sleep(30)"])
    assert "timed out after 1 s" in str(info.value)
    assert info.value.result.timed_out
    assert runner([sys.executable, "-c", "print(1)"]) == (0, "1\n", "")
    assert runner([sys.executable, "-c", "print(2)"], timeout=5)[1] == "2\n"


def test_output_is_bounded_and_the_rest_drained():
    result = command_runner.run([sys.executable, "-c", "import sys; sys.stdout.write('x' * 5000000)"], 20, max_output=1000)
    assert result.rc == 0 and len(result.stdout) == 1000 and result.truncated
    assert "truncated" in result.describe()


def test_garbage_bytes_are_decoded_not_raised():
    result = command_runner.run([sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'\\xff\\xfe\\x00ok')"], 10)
    assert result.rc == 0 and result.stdout.endswith("ok")


def test_background_grandchild_holding_pipes_does_not_hold_the_result():
    started = time.monotonic()
    result = command_runner.run(["sh", "-c", "echo hi; (sleep 30 &); exit 0"], 20)
    assert result.rc == 0 and result.stdout == "hi\n"
    assert time.monotonic() - started < 10


def test_missing_binary_is_rc_127_not_an_exception(tmp_path):
    result = command_runner.run([str(tmp_path / "nope")], 5)
    assert result.rc == 127 and result.error and "could not be run" in result.describe()


def test_stdin_data():
    result = command_runner.run([sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"], 10, data="abc")
    assert result.stdout == "ABC\n"


@pytest.mark.parametrize("argv", ["ls -l", b"ls", [], ["ls", 3], None, ["a\0b"]])
def test_bad_argv_is_refused(argv):
    with pytest.raises(command_runner.CommandError):
        command_runner.run(argv, 5)


@pytest.mark.parametrize("timeout", [0, -1, "5", None, True])
def test_bad_timeout_is_refused(timeout):
    with pytest.raises(command_runner.CommandError):
        command_runner.run(["true"], timeout)


# A command whose grandchild leaves the process group (setsid after a fork) but keeps the write end
# of our stdout: the deadline must hold for it too, and the grandchild must not outlive the call.
ESCAPING_SCRIPT = r'''
import os, sys, time
pidfile, mode = sys.argv[1], sys.argv[2]


def record(pid):
    with open(pidfile + ".tmp", "a") as handle:
        handle.write("%d\n" % pid)


def hold():
    if mode == "dup":
        # Keep only a copy of stdout on another descriptor.
        os.dup2(1, 9)
        os.close(1)
        os.close(2)
        os.write(9, b"grandchild\n")
    else:
        sys.stdout.write("grandchild\n")
        sys.stdout.flush()
    while True:
        if mode == "flood":
            os.write(1, b"x" * 65536)
        else:
            time.sleep(30)


middle = os.fork()
if middle == 0:
    os.setsid()
    if os.fork() == 0:
        if mode == "two" and os.fork() == 0:
            os.setsid()
            record(os.getpid())
            hold()
        record(os.getpid())
        if mode == "two":
            time.sleep(0.2)
        os.rename(pidfile + ".tmp", pidfile)
        hold()
    os._exit(0)
os.waitpid(middle, 0)
for _ in range(200):
    if os.path.exists(pidfile):
        break
    time.sleep(0.05)
sys.stdout.write("child\n")
sys.stdout.flush()
if sys.argv[3] == "sleep":
    time.sleep(30)
sys.exit(3)
'''

needs_proc = pytest.mark.skipif(not hasattr(os, "fork") or not os.path.isdir("/proc/self/fd"),
                                reason="needs fork and /proc (Linux)")


def _escaping_command(tmp_path, mode, child):
    script = tmp_path / "escape.py"
    script.write_text(ESCAPING_SCRIPT)
    return [sys.executable, str(script), str(tmp_path / "grandchild.pid"), mode, child]


def _grandchildren(tmp_path):
    path = tmp_path / "grandchild.pid"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return not handle.read().split(") ", 1)[1].startswith("Z")
    except OSError:
        return False


def _kill_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@needs_proc
@pytest.mark.parametrize("mode", ["plain", "dup", "two", "flood"])
def test_setsid_grandchild_holding_stdout_past_the_deadline_is_killed(tmp_path, mode):
    argv = _escaping_command(tmp_path, mode, "sleep")
    started = time.monotonic()
    try:
        result = command_runner.run(argv, 2, max_output=100000)
        elapsed = time.monotonic() - started
        pids = _grandchildren(tmp_path)
        assert pids, "the grandchild never started: %r" % (result.as_dict(),)
        assert elapsed < 2 + 2, "returned after %.1f s" % elapsed
        assert result.timed_out and result.rc is None and not result.unreaped
        assert "grandchild\n" in result.stdout
        if mode != "flood":  # a flood fills the bound before the child's line comes
            assert "child\n" in result.stdout.replace("grandchild\n", "")
        assert result.pipes_held and set(pids) <= set(result.pipe_holders)
        assert os.getpid() not in result.pipe_holders
        assert "timed out after 2 s" in result.describe() and "holding its output pipes killed" in result.describe()
        for pid in pids:
            assert processes.gone(pid, 1), "grandchild %d survived the deadline" % pid
        if mode == "flood":
            assert result.truncated and len(result.stdout) == 100000
    finally:
        _kill_all(_grandchildren(tmp_path))


@needs_proc
@pytest.mark.parametrize("mode", ["plain", "dup", "two"])
def test_command_exits_but_setsid_grandchild_holds_stdout(tmp_path, mode):
    """The command's own rc and the output up to then come back, by the deadline, and not as a timeout."""
    runner = command_runner.Runner(timeout=2)
    started = time.monotonic()
    try:
        rc, out, _err = runner(_escaping_command(tmp_path, mode, "exit"))
        elapsed = time.monotonic() - started
        pids = _grandchildren(tmp_path)
        result = runner.results[-1]
        assert pids, "the grandchild never started: %r" % (result.as_dict(),)
        assert elapsed < 2 + 2, "returned after %.1f s" % elapsed
        assert rc == 3 and not result.timed_out
        assert "grandchild\n" in out and "child\n" in out.replace("grandchild\n", "")
        assert result.pipes_held and set(pids) <= set(result.pipe_holders)
        assert "exit code 3" in result.describe() and "held open" in result.describe()
        for pid in pids:
            assert processes.gone(pid, 1), "grandchild %d outlived the call" % pid
    finally:
        _kill_all(_grandchildren(tmp_path))


@needs_proc
@pytest.mark.parametrize("child", ["sleep", "exit"])
def test_without_proc_the_pipes_are_closed_and_the_call_returns(tmp_path, monkeypatch, child):
    """No way to find the holders (no /proc): close our read ends and return within the bound anyway."""
    monkeypatch.setattr(command_runner, "_find_pipe_holders", lambda *args, **kwargs: None)
    started = time.monotonic()
    try:
        result = command_runner.run(_escaping_command(tmp_path, "plain", child), 2)
        elapsed = time.monotonic() - started
        pids = _grandchildren(tmp_path)
        assert pids
        assert elapsed < 2 + 2, "returned after %.1f s" % elapsed
        assert result.pipes_held and result.pipe_holders == []
        assert "grandchild\n" in result.stdout
        assert "could not be found or killed" in result.describe()
        assert result.timed_out == (child == "sleep")
        assert result.rc == (None if child == "sleep" else 3)
        # The hold was real: nothing killed the grandchild, the runner just stopped waiting for it.
        assert all(_alive(pid) for pid in pids)
    finally:
        _kill_all(_grandchildren(tmp_path))


@needs_proc
def test_pipe_holder_scan_finds_only_writers_and_never_us():
    read_end, write_end = os.pipe()
    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
    writer = subprocess.Popen(sleeper, pass_fds=(write_end,))
    reader = subprocess.Popen(sleeper, pass_fds=(read_end,))
    try:
        inode = os.fstat(read_end).st_ino
        deadline = time.monotonic() + 5
        found = []
        while time.monotonic() < deadline:  # wait until both have exec'd (close_fds is done by then)
            found = command_runner._find_pipe_holders([inode], time.monotonic() + 5, time.monotonic,
                                                      frozenset([os.getpid()]), 0)
            if [pid for pid, _fd in found] == [writer.pid]:
                break
            time.sleep(0.05)
        assert [pid for pid, _fd in found] == [writer.pid]
        assert command_runner._find_pipe_holders([], time.monotonic() + 5, time.monotonic, frozenset(), 0) is None
        assert not command_runner._kill_holder(reader.pid, str(read_end), [inode])
        assert command_runner._kill_holder(writer.pid, found[0][1], [inode])
        assert writer.wait(5) == -signal.SIGKILL
        assert reader.poll() is None
    finally:
        for proc in (writer, reader):
            proc.kill()
            proc.wait()
        os.close(read_end)
        os.close(write_end)


def test_pid_names_are_ascii_digits_only():
    assert command_runner._is_pid("123")
    assert not any(command_runner._is_pid(name) for name in ("", "¹", "12a", "self", "1" * 40))
