# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the controller's pure logic scales with the fleet: the compatibility evaluation (compat.evaluate over the
play's node facts, the cluster and the coverage) and the drain-wave planning (the checked serial list and the
waves, for sizes [1, "10%", "25%"], for one node per wave, and for wave groups) at 1,000 and 10,000 nodes.

Goals (issue 33): each < 1 s at 10,000 nodes, and 10x the nodes costs <= 11x the time (linear, not quadratic).
The median of ``--repeat`` samples per size (each as many calls as last about 50 ms), in this one process (the same
interpreter, the same warm caches).
``--quick``: 3 runs per size. Run from the checkout: ``.venv/bin/python bench/bench_scaling.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import os
import statistics
import sys
import time

from bench_compat_check import ROOT, make_fleet  # also puts the collection on the import path
from goals import goal, quick_flag

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.evaluate import evaluate  # noqa: E402
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.matrix import load_matrix  # noqa: E402
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import waves  # noqa: E402

SIZES = (1000, 10000)
GOAL_SECONDS = 1.0
GOAL_RATIO = 11.0


def compat_case(count, matrix):
    nodes = make_fleet(count, 0)
    cluster = {"kubernetes_version": "1.36.4", "operator_version": "26.3.1", "cluster_policy": True,
               "gpu_cluster": False, "distribution": "upstream",
               "kubelet_versions": dict((host, "1.36.4") for host in nodes)}
    target = {"kubernetes_version": "1.37.0"}
    coverage = {"expected_hosts": list(nodes), "inventory_hosts": list(nodes)}

    def run():
        result = evaluate(nodes, cluster=cluster, target=target, matrix=matrix, coverage=coverage)
        assert result["verdict"] in ("pass", "warn", "block")
    return run


def waves_case(count, sizes=None, grouped=False):
    hosts = ["gpu-%05d" % n for n in range(count)]
    groups = {"all": hosts, "gpu_nodes": hosts}
    wave_groups = []
    if grouped:  # ten racks, one wave each
        for rack in range(10):
            name = "rack_%d" % rack
            groups[name] = hosts[rack::10]
            wave_groups.append(name)

    def run():
        serial = waves.serial(sizes or [1], wave_groups, groups)
        pattern = waves.hosts_pattern(wave_groups, "gpu_nodes", groups) if wave_groups else "gpu_nodes"
        planned = waves.plan([h for name in wave_groups for h in groups[name]] if wave_groups else hosts, serial)
        assert sum(len(w["hosts"]) for w in planned) == count and pattern
    return run


def median_seconds(run, repeat, sample=0.05):
    """The median seconds per call over ``repeat`` samples; each sample runs ``run`` often enough to last about
    ``sample`` seconds (a sub-millisecond call timed once is the timer's and the scheduler's noise, not the code's)."""
    start = time.perf_counter()
    run()
    once = max(time.perf_counter() - start, 1e-6)
    number = max(1, int(sample / once))
    times = []
    for _run in range(repeat):
        start = time.perf_counter()
        for _call in range(number):
            run()
        times.append((time.perf_counter() - start) / number)
    return statistics.median(times)


def main():
    parser = quick_flag(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    repeat = 3 if args.quick else args.repeat
    matrix = load_matrix(os.path.join(ROOT, "data", "matrix"))
    cases = [
        ("compat evaluation", lambda n: compat_case(n, matrix)),
        ("wave planning [1, 10%, 25%]", lambda n: waves_case(n, [1, "10%", "25%"])),
        ("wave planning, 1 node per wave", lambda n: waves_case(n, [1])),
        ("wave planning, 10 wave groups", lambda n: waves_case(n, grouped=True)),
    ]
    print("%-32s %12s %12s %8s" % ("case", "1,000 s", "10,000 s", "ratio"))
    results = []
    for name, make in cases:
        seconds = {}
        for count in SIZES:
            run = make(count)
            run()  # warm (memo, imports) unmeasured
            seconds[count] = median_seconds(run, repeat)
        ratio = seconds[SIZES[1]] / seconds[SIZES[0]] if seconds[SIZES[0]] else float("inf")
        results.append((name, seconds, ratio))
        print("%-32s %12.4f %12.4f %8.2f" % (name, seconds[SIZES[0]], seconds[SIZES[1]], ratio))
    for name, seconds, ratio in results:
        goal("%s at 10,000 nodes" % name, "%.3f s" % seconds[SIZES[1]], "< %.0f s" % GOAL_SECONDS,
             seconds[SIZES[1]] < GOAL_SECONDS, "median of %d" % repeat)
        goal("%s, 10x the nodes" % name, "%.2fx the time" % ratio, "<= %.0fx" % GOAL_RATIO, ratio <= GOAL_RATIO,
             "%.4f s at 1,000" % seconds[SIZES[0]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
