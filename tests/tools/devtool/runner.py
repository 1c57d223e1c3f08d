# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stage runner: stages in order, stop at the first failure, a recap and the closing count.

A stage is a callable that returns its exit status (0: passed) or raises ``Skip`` when it has nothing
to run; a skipped stage is never counted as passed. A ``ToolError`` fails the stage with its message.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence

from devtool.common import ToolError, log, say


class Skip(Exception):
    """The stage has nothing to run; the message is the reason shown."""


@dataclasses.dataclass(frozen=True)
class Outcome:
    stage: str
    status: str  # "ok", "FAILED", "skipped" or "not run"
    rc: int = 0
    seconds: int = 0
    reason: str = ""

    def line(self) -> str:
        head = f"== stage: {self.stage} ... "
        if self.status == "ok":
            return f"{head}ok ({self.seconds} s)"
        if self.status == "FAILED":
            return f"{head}FAILED (exit {self.rc}, {self.seconds} s)"
        if self.status == "skipped":
            return f"{head}skipped: {self.reason}"
        return f"{head}not run (an earlier stage failed)"


def run_one(name: str, stage: Callable[[], int], clock: Callable[[], float] = time.monotonic) -> Outcome:
    start = clock()
    try:
        rc = stage()
    except Skip as skip:
        return Outcome(name, "skipped", reason=str(skip))
    except ToolError as error:
        log(f"error: {error}")
        rc = 1
    seconds = int(round(clock() - start))
    if rc == 0:
        return Outcome(name, "ok", seconds=seconds)
    return Outcome(name, "FAILED", rc=rc, seconds=seconds)


def summary(outcomes: Sequence[Outcome]) -> str:
    """The closing line: ``N passed, N failed`` (``, N skipped`` when any was)."""
    passed = sum(1 for outcome in outcomes if outcome.status == "ok")
    failed = sum(1 for outcome in outcomes if outcome.status == "FAILED")
    skipped = sum(1 for outcome in outcomes if outcome.status == "skipped")
    text = f"{passed} passed, {failed} failed"
    return f"{text}, {skipped} skipped" if skipped else text


def run_stages(names: Sequence[str], stages: Mapping[str, Callable[[], int]],
               clock: Callable[[], float] = time.monotonic) -> int:
    """Run the named stages in order and print their report; 0 when none failed, else 1."""
    outcomes: list[Outcome] = []
    for index, name in enumerate(names):
        say()
        say(f"== stage: {name}")
        outcome = run_one(name, stages[name], clock)
        outcomes.append(outcome)
        say(outcome.line())
        if outcome.status == "FAILED":
            outcomes.extend(Outcome(rest, "not run") for rest in names[index + 1:])
            break
    if len(names) > 1:
        say()
        for outcome in outcomes:
            say(outcome.line())
    say(summary(outcomes))
    return 1 if any(outcome.status == "FAILED" for outcome in outcomes) else 0
