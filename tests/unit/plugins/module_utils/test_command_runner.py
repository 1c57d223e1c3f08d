# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""command_runner: deadlines that kill the whole process group, bounded output, no expansion."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys
import time

import pytest

import processes

from ansible_collections.gpufleet.dra_gate.plugins.module_utils import command_runner


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
