# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``gpufleet.dra_gate.claim_lifecycle``: the module, with its progress shown live.

A run of a thousand lifecycles takes minutes; the module appends a progress line (claims done / total,
failures so far) to ``<evidence_dir>/dra-acceptance-<run_id>.progress`` every ``progress_every``
lifecycles. When the module runs on this machine (a ``local`` connection: it is a controller-side
module), this plugin follows that file while the module runs and prints each new line as it appears.
Elsewhere the lines are only in the result's ``progress``, as they always are.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import threading

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases.claim_lifecycle import progress_path

display = Display()

POLL_SECONDS = 0.5


def size_of(path):
    """Where following ``path`` starts: what it holds now is not shown (taken before the module starts)."""
    return os.path.getsize(path) if os.path.isfile(path) else 0


def follow(path, offset, stop, show, poll=POLL_SECONDS):
    """Call ``show(line)`` for every line appended to ``path`` after ``offset``, until ``stop`` is set (then
    the lines written up to that moment are shown too). A missing file is waited for."""
    pending = b""
    while True:
        stopping = stop.wait(poll)
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                chunk = handle.read()
        except (IOError, OSError):
            chunk = b""
        offset += len(chunk)
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if line.strip():
                show(line.decode("utf-8", "replace"))
        if stopping:
            return


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = self._task.args
        wrap_async = bool(self._task.async_val) and not self._connection.has_native_async
        thread, stop = None, threading.Event()
        local = getattr(self._connection, "transport", None) == "local"
        if (local and not wrap_async and not self._task.check_mode and args.get("state", "present") == "present"
                and args.get("evidence_dir") and args.get("run_id")):
            path = progress_path(os.path.expanduser(str(args["evidence_dir"])), str(args["run_id"]))
            host = (task_vars or {}).get("inventory_hostname", "")

            def show(line):
                display.display("claim_lifecycle [%s]: %s" % (host, line))
            thread = threading.Thread(target=follow, args=(path, size_of(path), stop, show), name="claim-lifecycle-progress")
            thread.daemon = True
            thread.start()
        try:
            result.update(self._execute_module(task_vars=task_vars, wrap_async=wrap_async))
        finally:
            stop.set()
            if thread is not None:
                thread.join(POLL_SECONDS * 4)
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)  # pylint: disable=protected-access
        return result
