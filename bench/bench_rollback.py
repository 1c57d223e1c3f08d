# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scripted rollback's wall time against the sum of the lab's configured waits for the same steps.

A lab cluster (scenario ``operator-upgrade``: 2 device-plugin GPU nodes) runs in this process with
waits of the order a real cluster has (pods take seconds to start and stop, the operator tens of
seconds to report ready). The operator-shaped test chart 26.3.1 is installed with the Helm library,
the gate run's snapshot is taken (playbooks/snapshot.yml), and the release is upgraded
with the Helm library (26.3.1 -> 26.6.2, untimed). Then each round rolls back (playbooks/rollback.yml)
and upgrades again, and the rollback record gives the rollback time
(``duration_seconds``: from the decision to the control suite passing).

The baseline is what the lab makes any rollback wait, whatever tool runs it: every GPU node's operand
pods replaced one node at a time (``pod_stop_seconds`` + ``pod_start_seconds`` + ``pod_ready_seconds``
per node, the DaemonSets' maxUnavailable 1), then ``operator_ready_seconds`` until the ClusterPolicy
is ready, then the control suite, whose workloads run side by side (control_suite's default): the
longest of them (a run-to-completion pod: ``pod_start_seconds`` + ``job_pod_seconds``; a Deployment:
``pod_start_seconds`` + ``pod_ready_seconds``), then the cleanup (``pod_stop_seconds``). Reported: the medians, the overhead ratio
(rollback time / waits) and PASS/MISS against the goal (overhead <= 20 %, ratio <= 1.2).

Each round also runs a bare rollback in the same lab, as a script without Ansible would: the Helm
library's ``rollback`` with its ``watcher`` wait to the recorded revision, a poll (0.05 s) until the
ClusterPolicy is ready, then the shipped control suite through control_suite's ``Runner`` called
directly (create, poll every 0.05 s, clean up). Its time splits the rollback into the floor that the
lab and Helm set (bare / waits: Helm's own apply, the lab's controllers reacting) and what the
collection adds (rollback / bare: ansible-playbook, the phase's tasks, the modules' start-up).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from goals import goal, quick_flag  # bench/ is the script's directory, first on the path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "lab"))
sys.path.insert(0, os.path.join(REPO, "tests"))
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))

from kubelab.testing import start_lab, stop_lab, wait_for  # noqa: E402  pylint: disable=wrong-import-position
import operator_charts  # noqa: E402  pylint: disable=wrong-import-position

GOAL_RATIO = 1.2
VENV_BIN = os.path.join(REPO, ".venv", "bin")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
RUN = "bench"
# Waits of the order of a real cluster's (seconds).
KNOBS = {"pod_start_seconds": 3.0, "pod_stop_seconds": 2.0, "pod_ready_seconds": 1.0, "job_pod_seconds": 3.0,
         "operator_ready_seconds": 20.0}
# The shipped control suite: a run-to-completion Pod, a Job, a Deployment (data/control_suite/default.yml).
SUITE = ("completion", "completion", "deployment")


def configured_waits(knobs, gpu_nodes):
    """The seconds the lab makes a rollback wait, step by step (see the module docstring)."""
    per_node = knobs["pod_stop_seconds"] + knobs["pod_start_seconds"] + knobs["pod_ready_seconds"]
    # the suite's workloads run side by side: the longest one, then the cleanup
    suite = max(knobs["pod_start_seconds"] + (knobs["job_pod_seconds"] if kind == "completion" else knobs["pod_ready_seconds"])
                for kind in SUITE)
    suite += knobs["pod_stop_seconds"]
    return {"operand_rollout": per_node * gpu_nodes, "operator_ready": knobs["operator_ready_seconds"], "control_suite": suite}


def env():
    result = dict(os.environ)
    result.update(ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="false",
                  ANSIBLE_INVENTORY_UNPARSED_WARNING="false", PATH=VENV_BIN + os.pathsep + result.get("PATH", ""),
                  PYTHONPATH=os.path.join(REPO, "lab"))
    return result


def playbook(lab, work, evidence, charts, path, **variables):
    extra = {"dra_gate_evidence_root": evidence, "dra_gate_run_id": RUN, "dra_gate_kubeconfig": lab.kubeconfig,
             "dra_gate_operator_charts": charts, "dra_gate_helm_backend": "library", "dra_gate_etcd_group": ""}
    extra.update(variables)
    argv = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", os.path.join(work, "inventory.yml"), path,
            "-e", json.dumps(extra)]
    proc = subprocess.run(argv, env=env(), cwd=REPO, capture_output=True, text=True, timeout=1200, check=False)
    if proc.returncode != 0:
        raise SystemExit("%s failed:\n%s\n%s" % (path, proc.stdout[-4000:], proc.stderr[-2000:]))


def last_record(evidence, phase):
    with open(os.path.join(evidence, RUN, "index.json")) as handle:
        index = json.load(handle)
    name = [e["file"] for e in index["records"] if e["phase"] == phase][-1]
    with open(os.path.join(evidence, RUN, name)) as handle:
        return json.load(handle)["results"]


def seconds_between(start, end):
    """Seconds between two RFC 3339 UTC timestamps of the record."""
    import datetime  # pylint: disable=import-outside-toplevel

    def parse(text):
        return datetime.datetime.strptime(text.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    return (parse(end) - parse(start)).total_seconds()


def policy_ready(lab):
    """The ClusterPolicy is ready (the simulated operator's status)."""
    from kubernetes import client, config  # pylint: disable=import-outside-toplevel
    api = config.new_client_from_config(config_file=lab.kubeconfig)
    try:
        cr = client.CustomObjectsApi(api).get_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy")
    finally:
        api.close()
    return (cr.get("status") or {}).get("state") == "ready"


def bare_rollback(lab, revision):
    """Seconds a bare script takes for the same rollback (see the module docstring)."""
    import time  # pylint: disable=import-outside-toplevel
    import helm_python  # pylint: disable=import-outside-toplevel
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import client as k8s_client
    from ansible_collections.gpufleet.dra_gate.plugins.modules import control_suite  # pylint: disable=import-outside-toplevel
    started = time.monotonic()
    helm = helm_python.Config(kubeconfig_path=lab.kubeconfig, namespace="gpu-operator", storage_driver="secret")
    try:
        helm.rollback(operator_charts.CHART, version=revision, wait="watcher", timeout=300)
    finally:
        helm.close()
    wait_for(lambda: policy_ready(lab), 300, "the rolled-back operator ready", interval=0.05)
    params = {"kubeconfig": lab.kubeconfig, "suite_file": None, "suite": None, "namespace": None, "poll_interval": 0.05,
              "cleanup_timeout": 120.0, "serial": False}
    suite, _source = control_suite.load_suite(params)
    api = k8s_client.build_api_client({"kubeconfig": lab.kubeconfig})
    try:
        runner = control_suite.Runner(k8s_client.K8sReader(api), suite, "bare-%d" % int(started), params)
        runner.run()
        cleanup = runner.clean()
    finally:
        api.close()
    passed = all(r and r.get("passed") for r in runner.records) and cleanup["complete"]
    if not passed:
        raise SystemExit("the bare rollback's control suite did not pass: %s %s" % (runner.records, cleanup))
    return time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    quick_flag(parser)
    args = parser.parse_args()
    if args.quick:
        args.rounds = 1
    work = tempfile.mkdtemp(prefix="bench-rollback-")
    lab = start_lab(work, "operator-upgrade")
    try:
        lab.server.scenario.update(KNOBS)
        evidence = os.path.join(work, "evidence")
        os.mkdir(evidence, 0o700)
        charts = operator_charts.write_mapping(os.path.join(work, "charts"))
        operator_charts.install(lab.kubeconfig, charts["26.3.1"]["path"])
        playbook(lab, work, evidence, charts, "playbooks/snapshot.yml")
        gpu_nodes = len([n for n in lab.server.scenario.get("nodes") or [] if n.get("gpu")]) or 2
        waits = configured_waits(KNOBS, gpu_nodes)
        baseline = sum(waits.values())
        times, steps, bare = [], {}, []
        for _round in range(args.rounds):
            operator_charts.upgrade(lab.kubeconfig, charts["26.6.2"]["path"])
            wait_for(lambda: policy_ready(lab), 300, "the 26.6.2 operator ready")
            bare.append(round(bare_rollback(lab, 1), 3))  # the install: the revision the snapshot recorded
            operator_charts.upgrade(lab.kubeconfig, charts["26.6.2"]["path"])
            wait_for(lambda: policy_ready(lab), 300, "the 26.6.2 operator ready")
            playbook(lab, work, evidence, charts, "playbooks/rollback.yml")
            record = last_record(evidence, "rollback")
            if record.get("verdict") != "pass" or record.get("duration_seconds") is None:
                raise SystemExit("rollback did not pass: %s" % json.dumps(record, indent=2)[:4000])
            times.append(record["duration_seconds"])
            for step in record["steps"]:
                steps.setdefault(step["name"], []).append(seconds_between(step["started_at"], step["finished_at"]))
        median = statistics.median(times)
        ratio = median / baseline
        bare_median = statistics.median(bare)
        print("lab waits per rollback (s): %s = %.1f" % (json.dumps(waits), baseline))
        print("bare rollback (Helm library + control suite Runner, no Ansible) (s): %s; median %.1f; "
              "floor ratio (bare / lab waits) %.2f" % (bare, bare_median, bare_median / baseline))
        print("collection's own overhead (rollback time / bare): %.2f" % (median / bare_median))
        print("rollback time, decision -> control suite passing (s): %s; median %.1f" % (times, median))
        print("median seconds per step: %s (the rest: the play's own tasks between the steps)"
              % json.dumps({name: round(statistics.median(values), 1) for name, values in steps.items()}))
        goal("rollback time / the lab's waits", "%.2fx (%.1f of %.1f s)" % (ratio, median, baseline),
             "<= %.2fx" % GOAL_RATIO, ratio <= GOAL_RATIO, "median of %d" % len(times))
        return 0
    finally:
        stop_lab(lab)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
