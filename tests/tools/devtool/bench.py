# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``bench``: every bench/bench_*.py with the venv's python, one after the other."""

from __future__ import annotations

from devtool.common import Layout, log, run, say


def bench(layout: Layout) -> int:
    scripts = sorted(path for path in (layout.root / "bench").glob("bench_*.py") if path.is_file())
    if not scripts:
        log("no bench/bench_*.py")
        return 0
    failed = []
    for script in scripts:
        relative = script.relative_to(layout.root).as_posix()
        say()
        say(f"== bench: {relative}")
        if run([layout.venv_python, relative]) != 0:
            failed.append(relative)
    if failed:
        log(f"benchmarks failed: {' '.join(failed)}")
        return 1
    return 0
