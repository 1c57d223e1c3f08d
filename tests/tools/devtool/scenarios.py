# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The molecule stage: ``molecule test -s NAME`` for every molecule/NAME/molecule.yml.

Scenarios are independent (each has its own ephemeral directory, lab and free ports): they run
DRA_GATE_MOLECULE_WORKERS (default 2) at a time, each into its own log, printed whole when it ends
(no interleaving); with 1 they run in order, their output straight through. Every scenario runs;
the stage fails when any of them failed.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import BinaryIO

from devtool.common import Layout, log, run, workers
from devtool.runner import Skip


def scenario_names(root: Path) -> list[str]:
    """The scenarios, in name order: every molecule/NAME with a molecule.yml file."""
    return sorted(path.parent.name for path in (root / "molecule").glob("*/molecule.yml") if path.is_file())


def molecule_command(name: str) -> list[str]:
    return ["molecule", "test", "-s", name]


class Pool:
    """Run commands ``count`` at a time, each with its output into a file of its own.

    ``run_all`` returns the names whose command failed (in the order they ended); each command's log
    is printed whole to ``out`` (a binary stream; default stdout), after a line with its exit status,
    as soon as it ends. Interrupted (Ctrl-C, SIGTERM), the
    commands still running are stopped.
    """

    def __init__(self, count: int, command: Callable[[str], list[str]], logs: Path,
                 out: BinaryIO | None = None, env: Mapping[str, str] | None = None):
        self.count = max(count, 1)
        self.command = command
        self.logs = logs
        self.out = out
        self.env = env
        self._lock = threading.Lock()
        self._running: dict[str, subprocess.Popen] = {}

    def _one(self, name: str) -> tuple[str, int]:
        with open(self.logs / f"{name}.log", "wb") as log_file:
            try:
                process = subprocess.Popen(self.command(name), stdout=log_file, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL, env=self.env)
            except FileNotFoundError as error:
                log_file.write(f"{error}\n".encode())
                return name, 127
            with self._lock:
                self._running[name] = process
            rc = process.wait()
            with self._lock:
                self._running.pop(name, None)
        return name, rc

    def _report(self, name: str, rc: int) -> None:
        log(f"molecule test -s {name}: exit {rc}")
        out = self.out if self.out is not None else sys.stdout.buffer
        out.write((self.logs / f"{name}.log").read_bytes())
        out.flush()

    def stop(self) -> None:
        with self._lock:
            for process in self._running.values():
                process.terminate()

    def run_all(self, names: Sequence[str]) -> list[str]:
        failed: list[str] = []
        with ThreadPoolExecutor(max_workers=self.count) as executor:
            pending: set[Future] = set()
            try:
                for name in names:
                    # Start the next one only when a slot is free, so that the start lines come in order.
                    while len(pending) >= self.count:
                        done, pending = wait(pending, return_when=FIRST_COMPLETED)
                        failed.extend(self._collect(done))
                    log(f"molecule test -s {name} (in the background, {self.count} at a time)")
                    pending.add(executor.submit(self._one, name))
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    failed.extend(self._collect(done))
            except BaseException:
                self.stop()
                raise
        return failed

    def _collect(self, done: set[Future]) -> list[str]:
        failed = []
        for future in done:
            name, rc = future.result()
            self._report(name, rc)
            if rc != 0:
                failed.append(name)
        return failed


def stage(layout: Layout, environ: Mapping[str, str] | None = None) -> int:
    names = scenario_names(layout.root)
    if not names:
        raise Skip("no molecule/*/molecule.yml scenarios")
    count = workers(environ, "DRA_GATE_MOLECULE_WORKERS")
    if count <= 1:
        failed = []
        for name in names:
            log(f"molecule test -s {name}")
            if run(molecule_command(name)) != 0:
                failed.append(name)
    else:
        with tempfile.TemporaryDirectory() as logs:
            failed = Pool(count, molecule_command, Path(logs)).run_all(names)
    if failed:
        log(f"molecule scenarios failed: {' '.join(failed)}")
        return 1
    return 0
