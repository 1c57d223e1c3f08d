# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight over a fleet of inventory hosts against ``ansible.builtin.ping`` over the same inventory and forks.

Every host is a node tree (tests/node_trees.py's ``hgx-8gpu-2numa`` shape: 8 GPUs on 2 NUMA nodes, containerd 2,
the driver, IOMMU groups, CDI specs), reached with the local connection, as the lab's GPU nodes are; the cluster is
given as data (``dra_gate_cluster``), so no API server is in the measurement. Each round runs both playbooks in turn
(the order alternating), each as its own ansible-playbook process: ``playbooks/preflight.yml`` (node facts on every
host, the compatibility check, the evidence record and summary) and a one-task play of ``ansible.builtin.ping``.

Goal (issue 33): the preflight <= 1.3x ping's wall time over 200 hosts (the median of the per-round ratios).
``--quick``: 50 hosts, 1 round.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

from goals import goal, quick_flag  # bench/ is the script's directory, first on the path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))

import node_trees  # noqa: E402  pylint: disable=wrong-import-position

GOAL_RATIO = 1.3
PING = """---
- name: Ping every GPU node (the baseline)
  hosts: gpu_nodes
  gather_facts: false
  tasks:
    - name: Ping
      ansible.builtin.ping:
"""
CLUSTER = {"kubernetes_version": "1.36.4", "operator_version": "26.3.1", "cluster_policy": True, "gpu_cluster": False}


def inventory(path, root, count):
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "dra_gate_node_root": root,
            "dra_gate_node_commands": "recorded"}
    hosts = {"gpu-%03d" % n: dict(host) for n in range(count)}
    with open(path, "w") as handle:
        yaml.safe_dump({"all": {"children": {"gpu_nodes": {"hosts": hosts}}}}, handle)
    return path


def run_playbook(argv, env):
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=3600, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit("%s failed (%d): %s" % (" ".join(argv[:4]), proc.returncode, proc.stdout[-3000:]))
    return seconds


def main():
    parser = quick_flag(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--forks", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.quick:
        args.hosts, args.rounds = 50, 1
    work = tempfile.mkdtemp(prefix="bench-preflight-")
    try:
        root = node_trees.build_tree(os.path.join(work, "tree"), node_trees.shapes()["hgx-8gpu-2numa"])
        hosts = inventory(os.path.join(work, "hosts.yml"), root, args.hosts)
        ping = os.path.join(work, "ping.yml")
        with open(ping, "w") as handle:
            handle.write(PING)
        evidence = os.path.join(work, "evidence")
        os.mkdir(evidence, 0o700)
        cluster = os.path.join(work, "cluster.yml")
        with open(cluster, "w") as handle:
            yaml.safe_dump({"dra_gate_cluster": CLUSTER}, handle)
        bindir = os.path.dirname(sys.executable)
        env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_NOCOLOR="1",
                   ANSIBLE_COLLECTIONS_PATH=os.environ.get("ANSIBLE_COLLECTIONS_PATH",
                                                           os.path.join(REPO, ".cache", "collections")),
                   PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
        playbook = os.path.join(bindir, "ansible-playbook")
        commands = {
            "ping": [playbook, "-i", hosts, "-f", str(args.forks), ping],
            "preflight": [playbook, "-i", hosts, "-f", str(args.forks), "playbooks/preflight.yml",
                          "-e", "@" + cluster, "-e", "dra_gate_evidence_root=" + evidence,
                          "-e", "dra_gate_fail_on=never", "-e", "dra_gate_target_kubernetes_version=1.37.0",
                          "-e", "dra_gate_target_operator_version=26.7.0"],
        }
        run_playbook(commands["ping"], env)  # warm caches (bytecode, the collection loader) unmeasured
        times = {name: [] for name in commands}
        for number in range(args.rounds):
            order = ["ping", "preflight"] if number % 2 == 0 else ["preflight", "ping"]
            for name in order:
                times[name].append(run_playbook(commands[name] + (["-e", "dra_gate_run_id=r%d" % number]
                                                                  if name == "preflight" else []), env))
        ratios = [p / q for p, q in zip(times["preflight"], times["ping"])]
        print("%-12s %s" % ("playbook", "wall s per round"))
        for name, values in times.items():
            print("%-12s %s" % (name, " ".join("%.1f" % v for v in values)))
        ratio = statistics.median(ratios)
        goal("preflight vs ping over %d hosts, %d forks" % (args.hosts, args.forks), "%.2fx (%.1f vs %.1f s)" % (
            ratio, statistics.median(times["preflight"]), statistics.median(times["ping"])), "<= %.1fx" % GOAL_RATIO,
            ratio <= GOAL_RATIO, "median of %d rounds" % args.rounds)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
