# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stage runner: report lines, the recap, pass/fail/skip accounting and the exit status."""

from __future__ import annotations

import itertools

from devtool.common import ToolError
from devtool.runner import Outcome, Skip, run_stages, summary


def ticking(step=3.0):
    """A clock that moves ``step`` seconds each time it is read."""
    counter = itertools.count()
    return lambda: next(counter) * step


def passing():
    return 0


def failing():
    return 7


def skipping():
    raise Skip("no test files under tests/unit")


def erroring():
    raise ToolError("DRA_GATE_UNIT_WORKERS must be a whole number of workers, not 'x'")


def report(capsys):
    return capsys.readouterr().out.splitlines()


def test_all_pass(capsys):
    rc = run_stages(["units", "lint"], {"units": passing, "lint": passing}, clock=ticking())
    assert rc == 0
    assert report(capsys) == [
        "", "== stage: units", "== stage: units ... ok (3 s)",
        "", "== stage: lint", "== stage: lint ... ok (3 s)",
        "", "== stage: units ... ok (3 s)", "== stage: lint ... ok (3 s)",
        "2 passed, 0 failed",
    ]


def test_a_skipped_stage_is_not_a_pass(capsys):
    rc = run_stages(["units", "molecule"], {"units": skipping, "molecule": passing}, clock=ticking())
    assert rc == 0
    lines = report(capsys)
    assert "== stage: units ... skipped: no test files under tests/unit" in lines
    assert lines[-1] == "1 passed, 0 failed, 1 skipped"


def test_the_first_failure_stops_the_rest(capsys):
    calls = []

    def later():
        calls.append("later")
        return 0

    rc = run_stages(["units", "sanity", "lint"], {"units": passing, "sanity": failing, "lint": later},
                    clock=ticking(2))
    assert rc == 1
    assert not calls
    lines = report(capsys)
    assert lines[-4:] == [
        "== stage: units ... ok (2 s)",
        "== stage: sanity ... FAILED (exit 7, 2 s)",
        "== stage: lint ... not run (an earlier stage failed)",
        "1 passed, 1 failed",
    ]


def test_a_tool_error_fails_the_stage_with_its_message(capsys):
    rc = run_stages(["units"], {"units": erroring}, clock=ticking())
    assert rc == 1
    captured = capsys.readouterr()
    assert "dra-gate: error: DRA_GATE_UNIT_WORKERS must be a whole number" in captured.err
    assert captured.out.splitlines()[-2:] == ["== stage: units ... FAILED (exit 1, 3 s)", "0 passed, 1 failed"]


def test_one_stage_has_no_recap(capsys):
    assert run_stages(["lint"], {"lint": passing}, clock=ticking()) == 0
    assert report(capsys) == ["", "== stage: lint", "== stage: lint ... ok (3 s)", "1 passed, 0 failed"]


def test_summary_counts():
    outcomes = [Outcome("a", "ok"), Outcome("b", "skipped", reason="r"), Outcome("c", "FAILED", rc=2),
                Outcome("d", "not run")]
    assert summary(outcomes) == "1 passed, 1 failed, 1 skipped"
    assert summary([]) == "0 passed, 0 failed"
