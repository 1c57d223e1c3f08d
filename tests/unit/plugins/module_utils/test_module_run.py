# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""common/module_run.py: the timing fields and the failure with a message."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import module_run


class Done(Exception):
    pass


class FakeModule:
    def __init__(self):
        self.result = None

    def exit_json(self, **result):
        self.result = dict(result, failed=False)
        raise Done()

    def fail_json(self, **result):
        self.result = dict(result, failed=True)
        raise Done()


def clock(*times):
    values = list(times)
    return lambda: values.pop(0)


def test_timing_fields():
    assert module_run.timing(1796197200.0, 1796197202.123456, 3) == {
        "started_at": "2026-12-02T07:40:00.000000Z", "finished_at": "2026-12-02T07:40:02.123456Z", "duration_seconds": 2.123}
    assert module_run.timing(0, 0.5, 6)["duration_seconds"] == 0.5


def test_exit_and_fail_carry_the_timing():
    module = FakeModule()
    run = module_run.ModuleRun(module, digits=6, now=clock(100.0, 101.25))
    with pytest.raises(Done):
        run.exit(changed=False, value=1)
    assert module.result == {"changed": False, "value": 1, "failed": False, "started_at": "1970-01-01T00:01:40.000000Z",
                             "finished_at": "1970-01-01T00:01:41.250000Z", "duration_seconds": 1.25}
    run = module_run.ModuleRun(module, now=clock(100.0, 103.0))
    with pytest.raises(Done):
        run.fail("x: bad", changed=False)
    assert module.result["failed"] and module.result["msg"] == "x: bad" and module.result["duration_seconds"] == 3.0


def test_failing_on_turns_the_library_error_into_a_message():
    module = FakeModule()
    run = module_run.ModuleRun(module, now=clock(0.0, 1.0))
    with pytest.raises(Done):
        with run.failing_on((ValueError, KeyError), prefix="spec: ", changed=False):
            raise ValueError("not a quantity: 'x'")
    assert module.result["msg"] == "spec: not a quantity: 'x'" and module.result["changed"] is False
    assert module.result["finished_at"] == "1970-01-01T00:00:01.000000Z"
    with run.failing_on(ValueError):
        pass  # nothing raised: nothing happens
    with pytest.raises(TypeError):  # another error is not the library's: it propagates
        with run.failing_on(ValueError):
            raise TypeError("bug")
