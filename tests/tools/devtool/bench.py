# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``bench [--quick]``: every bench/bench_*.py with the venv's python, one after the other, then every goal they
reported (bench/goals.py: one JSON line each in ``DRA_GATE_BENCH_RESULTS``) in one table, with the machine's
description. ``--quick`` passes ``--quick`` to each (smaller runs, the same goals) and skips those listed in
``SLOW`` (reported as skipped, never as passed)."""

from __future__ import annotations

import json
import os
import platform
import tempfile

from devtool.common import Layout, log, run, say

# Benchmarks that have no quick form: the whole gate's rehearsal (three labs, every phase; about ten minutes).
SLOW = ("bench/bench_rehearsal.py",)


def machine() -> str:
    model = ""
    try:
        with open("/proc/cpuinfo") as handle:
            model = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), "")
    except OSError:
        pass
    return "%s, %d CPUs (%s), Python %s, %s" % (
        platform.node() or "this machine", os.cpu_count() or 0, model or platform.machine(),
        platform.python_version(), platform.platform(terse=True))


def table(rows: list) -> list:
    """The goals as aligned lines: bench, goal, measured, target, status."""
    header = ("bench", "goal", "measured", "target", "status")
    cells = [header] + [(r.get("bench", ""), r.get("goal", ""), r.get("measured", ""), r.get("target", ""),
                         r.get("status", "")) for r in rows]
    widths = [max(len(str(row[i])) for row in cells) for i in range(len(header))]
    return ["  ".join(str(value).ljust(width) for value, width in zip(row, widths)).rstrip() for row in cells]


def bench(layout: Layout, quick: bool = False) -> int:
    scripts = sorted(path for path in (layout.root / "bench").glob("bench_*.py") if path.is_file())
    if not scripts:
        log("no bench/bench_*.py")
        return 0
    failed, rows = [], []
    handle, results = tempfile.mkstemp(prefix="dra-gate-bench-", suffix=".jsonl")
    os.close(handle)
    os.environ["DRA_GATE_BENCH_RESULTS"] = results
    try:
        for script in scripts:
            relative = script.relative_to(layout.root).as_posix()
            say()
            if quick and relative in SLOW:
                say(f"== bench: {relative} skipped (--quick)")
                rows.append({"bench": script.stem, "goal": "(all)", "measured": "-", "target": "-",
                             "status": "SKIPPED (--quick)"})
                continue
            say(f"== bench: {relative}{' --quick' if quick else ''}")
            if run([layout.venv_python, relative] + (["--quick"] if quick else [])) != 0:
                failed.append(relative)
                rows.append({"bench": script.stem, "goal": "(the run)", "measured": "failed", "target": "exit 0",
                             "status": "FAILED"})
        with open(results) as source:
            measured = [json.loads(line) for line in source if line.strip()]
    finally:
        os.environ.pop("DRA_GATE_BENCH_RESULTS", None)
        os.unlink(results)
    order = {script.stem: index for index, script in enumerate(scripts)}
    rows = sorted(measured + rows, key=lambda r: order.get(r.get("bench"), len(order)))
    say()
    say(f"== bench{' --quick' if quick else ''}: every goal ({machine()})")
    for line in table(rows):
        say(line)
    misses = [r for r in rows if r.get("status") not in ("PASS",) and not str(r.get("status")).startswith("SKIPPED")]
    say(f"{sum(1 for r in rows if r.get('status') == 'PASS')} met, {len(misses)} missed or failed, "
        f"{sum(1 for r in rows if str(r.get('status')).startswith('SKIPPED'))} skipped")
    if failed:
        log(f"benchmarks failed: {' '.join(failed)}")
        return 1
    return 0
