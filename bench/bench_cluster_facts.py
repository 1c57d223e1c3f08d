# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whole ad-hoc calls of gpu_cluster_facts against kubernetes.core.k8s_info (kind=Node) on a lab
cluster of 100 GPU nodes.

The lab (etcd + API server + controllers) runs in this process (``start_lab``) with the
``scale-100`` scenario; where that scenario does not exist, the ``minimal`` one plus 100 GPU nodes
created through the lab's API. Each round runs both commands in turn (alternating, so drift hits
both alike) as ``ansible localhost -m MODULE -a kubeconfig=...``. Reported: the medians, their
ratio and PASS/MISS against the goal (facts <= 1.5x the plain node list), and the lab's peak
memory (VmHWM of this process, which holds the API server and controller threads, plus etcd's)
against 1 GiB.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import copy
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from goals import goal, quick_flag  # bench/ is the script's directory, first on the path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "lab"))

from kubelab.testing import start_lab, stop_lab  # noqa: E402  pylint: disable=wrong-import-position

GOAL_RATIO = 1.5
GOAL_MEMORY_MIB = 1024.0
FACTS = "gpufleet.dra_gate.gpu_cluster_facts"
BASELINE = "kubernetes.core.k8s_info"


def vm_hwm_mib(pid):
    """Peak resident set (VmHWM) of a process, MiB; None when it cannot be read."""
    try:
        with open("/proc/%s/status" % pid) as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (IOError, OSError, ValueError):
        return None
    return None


def add_nodes(lab, count):
    """``count`` GPU nodes (device plugin, 8 GPUs each) made from a scenario node, through the lab's API."""
    node_type = lab.server.registry.by_kind("v1", "Node")
    template = lab.server.api.list(node_type, None)["items"][-1]
    for index in range(1, count + 1):
        node = copy.deepcopy(template)
        name = "gpu-%d" % index
        node["metadata"] = {"name": name, "labels": dict(template["metadata"].get("labels") or {},
                                                         **{"kubernetes.io/hostname": name})}
        for key in ("capacity", "allocatable"):
            node["status"][key]["nvidia.com/gpu"] = "8"
        lab.server.api.create(node_type, None, node)


def start(workdir, scenario, nodes):
    try:
        lab = start_lab(workdir, scenario=scenario)
        return lab, scenario
    except (IOError, OSError, ValueError) as exc:
        print("scenario %s not usable (%s); minimal + %d nodes made through the API" % (scenario, exc, nodes))
    lab = start_lab(workdir, scenario="minimal")
    add_nodes(lab, nodes)
    return lab, "minimal+%d" % nodes


def run_once(module, args, env):
    argv = ["ansible", "localhost", "-m", module, "-a", args]
    start_time = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=False)
    wall = time.perf_counter() - start_time
    if proc.returncode != 0:
        raise SystemExit("%s failed: %s" % (" ".join(argv), (proc.stdout + proc.stderr).decode()[-800:]))
    return wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scenario", default="scale-100")
    parser.add_argument("--nodes", type=int, default=100, help="nodes to create when the scenario is missing")
    quick_flag(parser)
    opts = parser.parse_args()
    if opts.quick:
        opts.rounds = 2

    workdir = tempfile.mkdtemp(prefix="bench-cluster-facts-")
    lab, used = start(workdir, opts.scenario, opts.nodes)
    try:
        kubeconfig = lab.kubeconfig
        env = lab.env()
        env.update(ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
                   ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".cache", "collections"),
                   ANSIBLE_PYTHON_INTERPRETER=sys.executable)
        node_type = lab.server.registry.by_kind("v1", "Node")
        node_count = len(lab.server.api.list(node_type, None)["items"])
        commands = ((FACTS, "kubeconfig=%s" % kubeconfig), (BASELINE, "kind=Node kubeconfig=%s" % kubeconfig))
        run_once(FACTS, commands[0][1], env)  # warm-up: bytecode caches, the lab's first lists
        run_once(BASELINE, commands[1][1], env)
        times = {FACTS: [], BASELINE: []}
        for round_index in range(opts.rounds):
            order = commands if round_index % 2 == 0 else commands[::-1]
            for module, args in order:
                times[module].append(run_once(module, args, env))
        facts, base = statistics.median(times[FACTS]), statistics.median(times[BASELINE])
        ratio = facts / base
        lab_rss = vm_hwm_mib(os.getpid())
        etcd_rss = vm_hwm_mib(lab.etcd.pid)
        memory = (lab_rss or 0.0) + (etcd_rss or 0.0)
        report = {
            "scenario": used, "nodes": node_count, "rounds": opts.rounds,
            "median_s": {FACTS: round(facts, 3), BASELINE: round(base, 3)},
            "runs_s": {k: [round(v, 3) for v in vs] for k, vs in times.items()},
            "ratio": round(ratio, 3), "goal_ratio": GOAL_RATIO,
            "lab_peak_mib": {"api_server_and_controllers": lab_rss and round(lab_rss, 1),
                             "etcd": etcd_rss and round(etcd_rss, 1), "total": round(memory, 1)},
            "goal_memory_mib": GOAL_MEMORY_MIB,
        }
        print(json.dumps(report, indent=2))
        goal("cluster facts vs the plain node list (%d nodes)" % node_count, "%.2fx (%.3f vs %.3f s)" % (
            ratio, facts, base), "<= %.1fx" % GOAL_RATIO, ratio <= GOAL_RATIO, "median of %d" % opts.rounds)
        goal("cluster facts: the lab's peak memory", "%.0f MiB (API server + controllers %s, etcd %s)" % (
            memory, "%.0f" % lab_rss if lab_rss else "?", "%.0f" % etcd_rss if etcd_rss else "?"),
            "<= %.0f MiB" % GOAL_MEMORY_MIB, memory <= GOAL_MEMORY_MIB)
    finally:
        stop_lab(lab)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
