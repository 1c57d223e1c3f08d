# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test helper: wait until a process is gone (exited or a zombie), for the deadline tests."""

import time


def gone(pid, seconds, poll=0.05):
    """True when process ``pid`` is gone (no such process, or a zombie) within ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with open("/proc/%d/stat" % pid) as handle:
                if handle.read().split(") ", 1)[1].startswith("Z"):
                    return True
        except OSError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)
