# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark compat.evaluate over a generated fleet (default 10,000 nodes), with the play's coverage.

Goals: wall time < 1 s and peak traced memory < 200 MiB for 10,000 nodes. Prints a table and
PASS/MISS per goal; always exits 0. Run from the checkout:

    .venv/bin/python bench/bench_compat_check.py [--nodes 10000] [--repeat 5] [--distinct 0]

``--distinct N`` gives every N-th node unique version strings (a worst case for the memo);
the default fleet mixes eight realistic node shapes, as real fleets share versions.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import copy
import os
import resource
import sys
import time
import tracemalloc

from goals import goal, quick_flag  # bench/ is the script's directory, first on the path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _import_collection():
    parts = ROOT.split(os.sep)
    if parts[-3:] == ["ansible_collections", "gpufleet", "dra_gate"]:
        sys.path.insert(0, os.sep.join(parts[:-3]))
    else:
        collections = os.path.join(ROOT, ".cache", "collections")
        link = os.path.join(collections, "ansible_collections", "gpufleet", "dra_gate")
        if not os.path.exists(link):
            os.makedirs(os.path.dirname(link), exist_ok=True)
            os.symlink(os.path.join(os.pardir, os.pardir, os.pardir, os.pardir), link)
        sys.path.insert(0, collections)


_import_collection()

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.evaluate import evaluate  # noqa: E402
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.matrix import load_matrix  # noqa: E402

GOAL_SECONDS = 1.0
GOAL_MIB = 200.0

BASE = {
    "os": {"id": "ubuntu", "version_id": "24.04", "pretty_name": "Ubuntu 24.04.3 LTS"},
    "kernel": {"release": "6.8.0-45-generic"},
    "driver": {"loaded": True, "version": "595.91.07", "flavor": "open"},
    "gpus": [{"pci_bus_id": "0000:%02x:00.0" % bus, "device_id": "0x2335", "name": "NVIDIA H200",
              "uuid": "GPU-%08x-0000-0000-0000-000000000000" % bus, "numa_node": bus // 0x80, "iommu_group": bus,
              "kernel_driver": "nvidia", "mig_mode": "disabled", "memory_mib": 143771}
             for bus in (0x17, 0x3d, 0x63, 0x89, 0x9d, 0xc3, 0xd1, 0xdf)],
    "iommu": {"enabled": True, "group_count": 200, "iommufd": True},
    "cdi": {"spec_dirs": ["/etc/cdi", "/var/run/cdi"],
            "specs": [{"path": "/var/run/cdi/nvidia.yaml", "cdi_version": "0.5.0", "kind": "nvidia.com/gpu",
                       "devices": ["0", "1", "2", "3", "4", "5", "6", "7", "all"], "error": None}]},
    "containerd": {"present": True, "version": "2.3.1", "config_path": "/etc/containerd/config.toml",
                   "config_version": 3, "cdi_enabled": True, "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"],
                   "nvidia_runtime": True, "imports": []},
    "kubelet": {"present": True, "version": "1.37.0"},
    "problems": [],
}

SHAPES = [
    {},
    {"driver": {"loaded": True, "version": "580.159.04", "flavor": "open"}},
    {"driver": {"loaded": True, "version": "570.172.08", "flavor": "proprietary"}},
    {"driver": {"loaded": False, "version": None, "flavor": None}, "gpus": []},
    {"containerd": {"present": True, "version": "2.2.1", "cdi_enabled": False}},
    {"containerd": {"present": True, "version": "1.7.28", "cdi_enabled": None}},
    {"containerd": {"present": False, "version": None}, "kubelet": {"present": False, "version": None}},
    {"kubelet": {"present": True, "version": "1.33.4"}, "iommu": {"enabled": False, "group_count": 0, "iommufd": False}},
]


def make_fleet(count, distinct):
    shapes = []
    for change in SHAPES:
        facts = copy.deepcopy(BASE)
        facts.update(copy.deepcopy(change))
        shapes.append(facts)
    nodes = {}
    for index in range(count):
        facts = shapes[index % len(shapes)]
        if distinct and index % distinct == 0:
            facts = copy.deepcopy(facts)
            facts["driver"] = dict(facts["driver"], version="580.%d.%02d" % (index % 997, index % 89))
            facts["kubelet"] = dict(facts["kubelet"], version="1.3%d.%d" % (4 + index % 4, index % 50))
        nodes["gpu-%05d.example.internal" % index] = facts
    return nodes


def make_cluster_facts(nodes):
    """The gpu_cluster_facts form for the fleet: one Kubernetes node per host (short name), mixed backends."""
    k8s_nodes = {}
    for index, host in enumerate(nodes):
        backend = ("device_plugin", "dra", "both", "none")[index % 4]
        k8s_nodes[host.split(".", 1)[0]] = {
            "kubelet_version": "1.3%d.%d" % (4 + index % 4, index % 7), "labels": {"pool": "p%d" % (index % 20)},
            "taints": [], "unschedulable": False, "ready": True,
            "allocatable_gpu": 8 if backend in ("device_plugin", "both") else None, "gpu_backend": backend,
            "dra_devices": [{"name": "gpu-%d" % i} for i in range(8)] if backend in ("dra", "both") else []}
    return {
        "schema_version": 1, "api_server": {"version": "1.37.0"}, "apis": {"resource_k8s_io_v1": True},
        "nodes": k8s_nodes,
        "operator": {"helm_release": {"name": "gpu-operator", "namespace": "gpu-operator", "chart": "gpu-operator",
                                      "chart_version": "v26.3.1", "status": "deployed"},
                     "cluster_policies": [{"name": "cluster-policy", "state": "ready", "conditions": []}],
                     "gpu_clusters": []},
        "device_classes": [{"name": "gpu-legacy", "extended_resource_name": "nvidia.com/gpu"}],
        "resource_claims": {"total": 100, "allocated": 50, "deleting_allocated": 3, "stuck": []},
    }


def measure(nodes, matrix, cluster, target, coverage):
    tracemalloc.start()
    start = time.perf_counter()
    result = evaluate(nodes, cluster=cluster, target=target, matrix=matrix, coverage=coverage)
    elapsed = time.perf_counter() - start
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return elapsed, peak, result


def _measure_action(nodes, cluster, target, repeat):
    """The action plugin's whole run (option validation, matrix load, evaluate), if Ansible imports."""
    try:
        from unittest.mock import MagicMock

        from ansible.playbook.play_context import PlayContext
        from ansible_collections.gpufleet.dra_gate.plugins.action.compat_check import ActionModule
    except ImportError:
        return None
    task = MagicMock()
    task.args = {"nodes": nodes, "cluster": cluster, "target": target, "fail_on": "never",
                 "expected_hosts": list(nodes), "inventory_hosts": list(nodes)}
    task.async_val = 0
    task.check_mode = False
    connection = MagicMock()
    connection._shell.tmpdir = None
    action = ActionModule(task, connection, PlayContext(), MagicMock(), MagicMock(), None)
    times = []
    result = None
    for _run in range(max(1, repeat)):
        start = time.perf_counter()
        result = action.run(task_vars={})
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    action.run(task_vars={})
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return ("action plugin", len(result["findings"]), result["verdict"], min(times), sorted(times)[len(times) // 2],
            peak / 1048576.0)


def main():
    parser = quick_flag(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--nodes", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--distinct", type=int, default=0, help="every N-th node gets unique version strings")
    args = parser.parse_args()
    if args.quick:
        args.repeat = 2

    matrix = load_matrix(os.path.join(ROOT, "data", "matrix"))
    nodes = make_fleet(args.nodes, args.distinct)
    cluster = {"kubernetes_version": "1.36.4", "operator_version": "26.3.1", "cluster_policy": True,
               "gpu_cluster": False, "distribution": "upstream",
               "kubelet_versions": dict((host, "1.36.4") for host in list(nodes)[: args.nodes // 10])}
    scenarios = [
        ("device_plugin", {"kubernetes_version": "1.37.0"}),
        ("dra+passthrough", {"kubernetes_version": "1.37.0", "allocation_mode": "dra", "passthrough": True,
                             "accept_alpha_passthrough": True}),
    ]
    scenarios = [(name, cluster, target) for name, target in scenarios]
    dra_target = {"kubernetes_version": "1.37.0", "allocation_mode": "dra"}
    scenarios.append(("facts form, dra", make_cluster_facts(nodes), dra_target))
    # The play's coverage: every host expected and in the inventory, two of them did not answer.
    coverage = {"expected_hosts": list(nodes) + ["gpu-late-1", "gpu-late-2"], "inventory_hosts": list(nodes)}
    rows = []
    for name, cluster, target in scenarios:
        times = []
        peaks = []
        result = None
        for _run in range(max(1, args.repeat)):
            # Wall time without tracemalloc (it slows allocation), then peak memory with it.
            start = time.perf_counter()
            result = evaluate(nodes, cluster=cluster, target=target, matrix=matrix, coverage=coverage)
            times.append(time.perf_counter() - start)
        _elapsed, peak, _result = measure(nodes, matrix, cluster, target, coverage)
        peaks.append(peak)
        rows.append((name, len(result["findings"]), result["verdict"], min(times), sorted(times)[len(times) // 2],
                     max(peaks) / 1048576.0))
    action_row = _measure_action(nodes, scenarios[-1][1], scenarios[-1][2], args.repeat)
    if action_row:
        rows.append(action_row)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    print("compat.evaluate over %d nodes (%s), %d runs each" % (
        args.nodes, "every %d-th distinct" % args.distinct if args.distinct else "%d shapes" % len(SHAPES), args.repeat))
    header = ("scenario", "findings", "verdict", "best s", "median s", "peak MiB")
    print("%-18s %9s %8s %8s %9s %9s" % header)
    for row in rows:
        print("%-18s %9d %8s %8.3f %9.3f %9.1f" % row)
    print("process max RSS (interpreter, Ansible and PyYAML imports, the generated fleet): %.1f MiB" % rss_mib)
    worst_time = max(row[4] for row in rows)
    worst_peak = max(row[5] for row in rows)
    goal("compat_check over %d nodes, wall (median, worst scenario)" % args.nodes, "%.3f s" % worst_time,
         "< %.1f s" % GOAL_SECONDS, worst_time < GOAL_SECONDS, "%d runs each" % args.repeat)
    goal("compat_check over %d nodes, peak memory (tracemalloc, worst scenario)" % args.nodes, "%.1f MiB" % worst_peak,
         "< %.0f MiB" % GOAL_MIB, worst_peak < GOAL_MIB)
    return 0


if __name__ == "__main__":
    sys.exit(main())
