# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``preflight``: playbooks/preflight.yml against the lab cluster (or this machine) and the verdict.

The embedded default: the lab cluster with the prod-26.3-device-plugin scenario (GPU nodes built from
recorded and constructed node trees, a GPU Operator 26.3-like release), node facts through the trees'
root prefixes and cluster facts through the lab's API. ``--localhost`` checks this machine instead
(inventories/local). The lab is stopped again when the preflight ends.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from devtool import labctl
from devtool.common import Layout, log, run, say

DEFAULT_SCENARIO = "prod-26.3-device-plugin"


def newest_summary(evidence_root: Path) -> tuple[float, Path] | None:
    """(mtime, path) of the newest summary.md under ``evidence_root``, or None."""
    newest = None
    if not evidence_root.is_dir():
        return None
    for directory, _dirs, files in os.walk(evidence_root):
        if "summary.md" in files:
            path = Path(directory) / "summary.md"
            if not path.is_file():
                continue
            mtime = path.stat().st_mtime
            if newest is None or mtime > newest[0]:
                newest = (mtime, path)
    return newest


def make_private_dir(path: Path) -> None:
    """``mkdir -p -m 0700 PATH``: the parents as usual, PATH itself 0700 when made here."""
    if path.is_dir():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.mkdir()
    path.chmod(0o700)


def show_summary(evidence_root: Path, started: int) -> None:
    newest = newest_summary(evidence_root)
    if newest is None:
        log(f"no summary.md under {evidence_root}")
        return
    mtime, summary = newest
    if int(mtime) < started:
        log("warning: this run wrote no summary.md; the newest one is from an earlier run")
    say()
    say(str(summary))
    say()
    sys.stdout.buffer.write(summary.read_bytes())
    sys.stdout.buffer.flush()
    say()


def preflight(layout: Layout, args: Sequence[str], environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    args = list(args)
    localhost = bool(args) and args[0] == "--localhost"
    if localhost:
        args = args[1:]
    scenario = environ.get("DRA_GATE_SCENARIO") or DEFAULT_SCENARIO
    started = int(time.time())
    with contextlib.ExitStack() as stack:
        inventory: Path | str = "inventories/local"
        if not localhost:
            inventory = stack.enter_context(labctl.running(layout, scenario, layout.cache / "lab" / scenario))
        # The phases refuse a missing or shared evidence root; the default one is made here, private.
        make_private_dir(layout.evidence_root)
        rc = run(["ansible-playbook", "-i", inventory, "playbooks/preflight.yml",
                  "-e", f"dra_gate_evidence_root={layout.evidence_root}", *args])
        show_summary(layout.evidence_root, started)
        say("verdict recorded; see summary above")
    return rc
