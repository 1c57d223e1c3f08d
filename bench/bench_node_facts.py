# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whole ad-hoc calls of gpu_node_facts against ansible.builtin.ping and ansible.builtin.setup.

Each round runs the three commands in turn (alternating, so drift hits all of them alike) as
``ansible localhost -c local -m MODULE``; wall time and the peak resident set of the process tree
(``wait4``'s ``ru_maxrss`` folds in every reaped descendant) are recorded per run. Reported: the
medians and the median ratios against ping in the same run.
Goals (issue 33): facts <= 1.05x ping in wall time, and a peak memory no more than ping's (within 1 MiB: ``ru_maxrss``
is sampled, and one module's process tree is never exactly another's). ``--quick``: 3 rounds.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import os
import statistics
import subprocess
import sys
import time

from goals import goal, quick_flag  # bench/ is the script's directory, first on the path

GOAL_RATIO = 1.05
GOAL_MEMORY_MIB = 1.0
MODULES = ("ansible.builtin.ping", "gpufleet.dra_gate.gpu_node_facts", "ansible.builtin.setup")


def run_once(module):
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-c", "local", "-m", module]
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit("%s failed: %s" % (" ".join(argv), proc.stderr.read().decode()[-500:]))
    return wall, usage.ru_maxrss / 1024.0  # KiB -> MiB


def main():
    parser = quick_flag(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    if args.quick:
        args.rounds = 3
    for module in MODULES:  # warm caches (bytecode, collection loader) once, unmeasured
        run_once(module)
    wall = {m: [] for m in MODULES}
    rss = {m: [] for m in MODULES}
    for _round in range(args.rounds):
        for module in MODULES:
            seconds, mib = run_once(module)
            wall[module].append(seconds)
            rss[module].append(mib)
    ping = MODULES[0]
    print("%-36s %10s %10s %12s %12s" % ("module", "wall s", "x ping", "peak MiB", "- ping MiB"))
    ratios = {}
    for module in MODULES:
        time_ratio = statistics.median(w / p for w, p in zip(wall[module], wall[ping]))
        mem_delta = statistics.median(r - p for r, p in zip(rss[module], rss[ping]))
        ratios[module] = (time_ratio, mem_delta)
        print("%-36s %10.3f %10.2f %12.1f %12.1f" % (
            module, statistics.median(wall[module]), time_ratio, statistics.median(rss[module]), mem_delta))
    facts_ratio, facts_mem = ratios["gpufleet.dra_gate.gpu_node_facts"]
    goal("node facts vs ping on one host, wall", "%.2fx" % facts_ratio, "<= %.2fx" % GOAL_RATIO,
         facts_ratio <= GOAL_RATIO, "median of %d rounds" % args.rounds)
    goal("node facts vs ping on one host, peak memory", "%+.1f MiB" % facts_mem, "<= +%.0f MiB" % GOAL_MEMORY_MIB,
         facts_mem <= GOAL_MEMORY_MIB, "process tree ru_maxrss")
    return 0


if __name__ == "__main__":
    sys.exit(main())
