# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run of one module: its timing fields and its end.

Every module result says when the run started and finished and how long it took
(``started_at``, ``finished_at``: the one recorded stamp of :mod:`.clock`; ``duration_seconds``).
:class:`ModuleRun` takes the start when it is made and adds the three fields to whatever the module
returns -- success or failure -- so no module computes them by hand. :meth:`ModuleRun.failing_on`
turns the library's own error types into ``module.fail_json(msg=...)`` with the timing (and any
fields given), never a traceback; a module calls it around a step that changes nothing before it
fails, so nothing is left half-applied.

Standard library only (node-side modules use it); ``module`` is anything with ``exit_json`` and
``fail_json`` (an ``AnsibleModule``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import time

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock


def timing(started, finished, digits=3):
    """``{started_at, finished_at, duration_seconds}`` of two epoch times (``duration_seconds``
    rounded to ``digits``)."""
    return {"started_at": clock.rfc3339(started), "finished_at": clock.rfc3339(finished),
            "duration_seconds": round(finished - started, digits)}


class ModuleRun:
    """One module run. ``digits``: the rounding of ``duration_seconds`` the module documents."""

    def __init__(self, module, digits=3, now=time.time):
        self.module = module
        self.digits = digits
        self.now = now
        self.started = now()

    def timing(self, finished=None):
        """The timing fields up to now (or ``finished``)."""
        return timing(self.started, self.now() if finished is None else finished, self.digits)

    def timed(self, result):
        """``result`` with the timing fields added (in place; returned)."""
        result.update(self.timing())
        return result

    def exit(self, **result):
        self.module.exit_json(**self.timed(result))

    def fail(self, msg, **result):
        result["msg"] = msg
        self.module.fail_json(**self.timed(result))

    @contextlib.contextmanager
    def failing_on(self, errors, prefix="", **result):
        """Run the block; one of ``errors`` (an exception class or a tuple) fails the module with
        ``prefix + str(error)`` and ``result`` (plus the timing)."""
        try:
            yield
        except errors as exc:  # pylint: disable=catching-non-exception
            self.fail(prefix + str(exc), **result)
