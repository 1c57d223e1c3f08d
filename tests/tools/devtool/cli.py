# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The commands ``./dra-gate`` hands over, after it has checked their arguments (usage lives there)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from devtool import bench, environment, preflight, rehearsal, stages
from devtool.common import Layout, ToolError, log
from devtool.runner import run_stages

ROOT = Path(__file__).resolve().parents[3]


def _terminated(signum, _frame):
    # Leave through the finally blocks and context managers (the lab is stopped, scenarios ended).
    raise SystemExit(128 + signum)


def dispatch(layout: Layout, command: str, args: Sequence[str]) -> int:
    if command == "preflight":
        environment.setup(layout)
        return preflight.preflight(layout, args)
    if command == "rehearse":
        if args:
            raise ToolError(f"rehearse takes no arguments, got: {' '.join(args)}")
        environment.setup(layout)
        return rehearsal.rehearse(layout, args)
    if command == "bench":
        if list(args) not in ([], ["--quick"]):
            raise ToolError(f"bench takes only --quick, got: {' '.join(args)}")
        environment.setup(layout)
        return bench.bench(layout, quick=bool(args))
    if args:
        raise ToolError(f"{command} takes no arguments, got: {' '.join(args)}")
    if command == "setup":
        environment.setup(layout)
        log(f"setup done: {layout.venv}, ANSIBLE_COLLECTIONS_PATH={os.environ['ANSIBLE_COLLECTIONS_PATH']}")
        return 0
    if command == "test" or command in stages.ALL_STAGES:
        environment.setup(layout)
        stages.test_environment(layout)
        names = stages.ALL_STAGES if command == "test" else (command,)
        return run_stages(names, stages.registry(layout))
    raise ToolError(f"unknown command: {command}")


def main(argv: Sequence[str], root: Path = ROOT) -> int:
    if not argv:
        log("error: no command (see ./dra-gate help)")
        return 1
    signal.signal(signal.SIGTERM, _terminated)
    os.chdir(root)
    try:
        return dispatch(Layout.of(root), argv[0], argv[1:])
    except ToolError as error:
        log(f"error: {error}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        sys.stdout.flush()
