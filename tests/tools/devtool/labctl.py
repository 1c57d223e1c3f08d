# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Start, settle and stop the lab cluster (``python -m kubelab``, lab/), for ``preflight``."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from devtool.common import Layout, ToolError, log, quiet, run


def _kubelab(*args: str | os.PathLike) -> list[str | os.PathLike]:
    return ["python", "-m", "kubelab", *args]


def _env(layout: Layout) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(layout.root / "lab"))


def stop(layout: Layout, directory: Path) -> None:
    """Stop the lab in ``directory`` if one runs there; quiet, never fails."""
    quiet(_kubelab("stop", "--dir", directory), env=_env(layout))


@contextlib.contextmanager
def running(layout: Layout, scenario: str, directory: Path) -> Iterator[Path]:
    """A fresh lab of ``scenario`` in ``directory``, settled, stopped again on the way out; its inventory."""
    stop(layout, directory)
    shutil.rmtree(directory, ignore_errors=True)
    log(f"starting the lab cluster (scenario {scenario}) in {directory}")
    scenario_file = layout.root / "lab" / "scenarios" / f"{scenario}.yml"
    try:
        if run(_kubelab("start", "--dir", directory, "--scenario", scenario_file, "--background"),
               env=_env(layout)) != 0:
            raise ToolError("the lab cluster did not start")
        if run(_kubelab("settle", "--dir", directory, "--timeout", "180"), env=_env(layout)) != 0:
            log("warning: the lab has not settled")
        yield directory / "inventory.yml"
    finally:
        stop(layout, directory)
