# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drain waves: each wave's wall time against the lab's configured unavoidable waits for the same wave.

The lab runs as its own process (``python -m kubelab start``, scenario ``drain-waves``: 5 device-plugin GPU nodes
and a DRA node; pods stop in ``pod_stop_seconds`` 0.2 s; the device plugin registers ``device_plugin_register_seconds``
0.5 s after a reboot). Workloads: a Deployment of 12 one-GPU pods, a StatefulSet of 3, a DaemonSet on every GPU
node and a pod with a ResourceClaim on the DRA node. One ansible-playbook run of ``playbooks/drain_waves.yml``
rolls the 6 nodes out in the waves ``--waves`` (default 1, 2, 3) with a lab reboot of ``--reboot`` seconds as
the maintenance (``dra_gate_drain_expect_reboot``); PDB-refused evictions are retried every ``--retry`` s.

Per wave it prints the wave's wall time (its record's ``started_at`` .. ``finished_at``), the unavoidable waits
of the wave (the slowest of its nodes, which run in parallel: the evicted pods' termination, the reboot, the
device plugin's registration on device-plugin nodes - what the lab is configured to take) and the orchestration
overhead = (wall - unavoidable) / wall, against the goal <= 10 %. The waits scale with ``--reboot``; real reboots
take minutes, so the overhead there is smaller than here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from goals import goal, quick_flag  # bench/ is the script's directory, first on the path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
SCENARIO = os.path.join(REPO, "lab", "scenarios", "drain-waves.yml")
GOAL = 0.10
NODES = ["gpu-%d" % i for i in range(1, 7)]
MAINTENANCE = """---
- name: Reboot the node (lab fault)
  ansible.builtin.uri:
    url: "{{ bench_lab_url }}/kubelab/faults"
    method: POST
    body_format: json
    body: {reboot: {node: "{{ drain_waves_node }}", seconds: %s}}
    status_code: [201]
"""


def lab_env():
    return dict(os.environ, PYTHONPATH=os.path.join(REPO, "lab"))


def start_lab(work):
    subprocess.run([sys.executable, "-m", "kubelab", "start", "--dir", work, "--scenario", SCENARIO, "--background",
                    "--wait-timeout", "90"], env=lab_env(), check=True, capture_output=True, timeout=120)
    subprocess.run([sys.executable, "-m", "kubelab", "settle", "--dir", work, "--timeout", "120"], env=lab_env(), check=True,
                   capture_output=True, timeout=180)
    with open(os.path.join(work, "lab.json")) as handle:
        return json.load(handle)


def stop_lab(work):
    subprocess.run([sys.executable, "-m", "kubelab", "stop", "--dir", work, "--timeout", "30"], env=lab_env(), check=False,
                   capture_output=True, timeout=90)


def kubectl_apply(kubeconfig, docs):
    proc = subprocess.run([os.path.join(VENV_BIN, "kubectl"), "--kubeconfig", kubeconfig, "create", "--validate=false", "-f", "-"],
                          input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}), text=True, check=False,
                          capture_output=True, timeout=120)
    if proc.returncode != 0:
        raise SystemExit("kubectl apply failed: %s" % proc.stderr.strip())


def wait_running(kubeconfig, count, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run([os.path.join(VENV_BIN, "kubectl"), "--kubeconfig", kubeconfig, "get", "pods", "-n", "apps", "-o",
                              "json"], capture_output=True, text=True, check=True, timeout=60)
        pods = json.loads(out.stdout)["items"]
        if len([p for p in pods if (p.get("status") or {}).get("phase") == "Running"]) >= count:
            return
        time.sleep(0.5)
    raise SystemExit("the workloads did not run within %d s" % timeout)


def meta(name):
    return {"name": name, "namespace": "apps"}


def template(app, spec):
    return {"metadata": {"labels": {"app": app}}, "spec": dict(spec, terminationGracePeriodSeconds=1)}


def workloads():
    pause = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("trainer"), "spec": {
            "replicas": 12, "selector": {"matchLabels": {"app": "trainer"}},
            "template": template("trainer", {"containers": [dict(pause, resources={"limits": {"nvidia.com/gpu": "1"}})]})}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta("trainer"),
         "spec": {"maxUnavailable": 4, "selector": {"matchLabels": {"app": "trainer"}}}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta("db"), "spec": {
            "replicas": 3, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": template("db", {"containers": [pause]})}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta("agent"), "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": template("agent", {"nodeSelector": {"nvidia.com/gpu.present": "true"}, "containers": [pause]})}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": meta("one-gpu"),
         "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("dra"), "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": "dra"}},
            "template": template("dra", {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                                         "containers": [dict(pause, resources={"claims": [{"name": "gpu"}]})]})}},
    ]


def seconds(text):
    text = text.rstrip("Z")
    whole, _dot, frac = text.partition(".")
    stamp = datetime.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()
    return stamp + (float("0." + frac) if frac else 0.0)


def run(args):
    import yaml  # pylint: disable=import-outside-toplevel
    with open(SCENARIO) as handle:
        scenario = yaml.safe_load(handle)
    stop, register = float(scenario["pod_stop_seconds"]), float(scenario["device_plugin_register_seconds"])
    work = tempfile.mkdtemp(prefix="bench-drain-")
    lab_dir = os.path.join(work, "lab")
    try:
        info = start_lab(lab_dir)
        kubeconfig = os.path.join(lab_dir, "kubeconfig")
        kubectl_apply(kubeconfig, workloads())
        wait_running(kubeconfig, 12 + 3 + 6 + 1)
        evidence = os.path.join(work, "evidence")
        os.makedirs(evidence, mode=0o700)
        maintenance = os.path.join(work, "maintenance.yml")
        with open(maintenance, "w") as handle:
            handle.write(MAINTENANCE % args.reboot)
        inventory = {"all": {"children": {"gpu_nodes": {"hosts": {n: {"ansible_connection": "local"} for n in NODES}}}, "vars": {
            "ansible_python_interpreter": os.path.join(VENV_BIN, "python"), "dra_gate_kubeconfig": kubeconfig,
            "dra_gate_evidence_root": evidence, "bench_lab_url": info["server_url"], "dra_gate_drain_maintenance_tasks": maintenance,
            "dra_gate_drain_expect_reboot": True, "dra_gate_drain_poll_interval": args.poll,
            "dra_gate_drain_retry_interval": args.retry}}}
        inv = os.path.join(work, "hosts.yml")
        with open(inv, "w") as handle:
            yaml.safe_dump(inventory, handle)
        # pipelining (kubespray sets it in its ansible.cfg): each module runs without copying files first
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_FORKS="6",
                   ANSIBLE_PIPELINING="1" if args.pipelining else "0")
        started = time.monotonic()
        proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", inv, os.path.join(REPO, "playbooks", "drain_waves.yml"),
                               "-e", json.dumps({"dra_gate_run_id": "bench", "dra_gate_drain_waves": args.waves})],
                              env=env, capture_output=True, text=True, check=False, timeout=3600)
        playbook_seconds = time.monotonic() - started
        records = sorted(f for f in os.listdir(os.path.join(evidence, "bench")) if f.startswith("drain-") and f.endswith(".json"))
        if proc.returncode != 0 or not records:
            print(proc.stdout[-4000:])
            raise SystemExit("the drain waves failed (rc %d)" % proc.returncode)
        with open(os.path.join(evidence, "bench", records[-1])) as handle:
            results = json.load(handle)["results"]
    finally:
        stop_lab(lab_dir)
        shutil.rmtree(work, ignore_errors=True)
    nodes = dict((n["node"], n) for n in results["nodes"])
    print("drain waves: %d GPU nodes in waves %s, reboot %g s, pods stop in %g s, device plugin registers in %g s "
          "(lab scenario drain-waves); pipelining %s" % (len(NODES), args.waves, args.reboot, stop, register,
                                                         "on" if args.pipelining else "off"))
    print("  playbook %.1f s; evicted %d pods (%d PDB retries); failed reschedules %d of %d" % (
        playbook_seconds, sum(len(n["evictions"]) for n in nodes.values()), results["pdb_retries"],
        results["failed_reschedule_rate"]["numerator"], results["failed_reschedule_rate"]["denominator"]))
    total_wall = total_waits = 0.0
    for wave in results["waves"]:
        wall = seconds(wave["finished_at"]) - seconds(wave["started_at"])
        waits = max((stop if nodes[n]["evictions"] else 0.0) + args.reboot
                    + (register if nodes[n]["before"]["allocatable_gpu"] else 0.0) for n in wave["nodes"])
        total_wall += wall
        total_waits += waits
        steps = "; ".join("%s drain %.2f maint %.2f restore %.2f resched %.2f" % (
            n, nodes[n]["steps"]["drain_seconds"]["evict_seconds"], nodes[n]["steps"]["maintenance_seconds"],
            nodes[n]["steps"]["restore_seconds"], nodes[n]["steps"]["reschedule_seconds"]) for n in wave["nodes"])
        print("  wave %d (%s): wall %6.2f s, unavoidable %6.2f s, overhead %5.2f s = %4.1f %%  [%s]" % (
            wave["wave"], ", ".join(wave["nodes"]), wall, waits, wall - waits, 100.0 * (wall - waits) / wall, steps))
    overhead = (total_wall - total_waits) / total_wall
    print("  all waves: wall %.2f s, unavoidable %.2f s, overhead %.2f s = %.1f %%" % (
        total_wall, total_waits, total_wall - total_waits, 100.0 * overhead))
    goal("drain waves' orchestration overhead", "%.1f %% (%.1f of %.1f s)" % (
        100.0 * overhead, total_wall - total_waits, total_wall), "<= %d %%" % int(GOAL * 100), overhead <= GOAL,
        "waves %s, reboot %.0f s" % (args.waves, args.reboot))
    print("  (the overhead is about a fixed number of seconds per wave - Ansible's tasks, the PDB retries' and the polls'"
          " granularity - so its share falls as the reboot gets longer)")


def main():
    parser = quick_flag(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--waves", type=json.loads, default=[1, 2, 3], help='serial sizes as JSON, e.g. "[1, 2, 3]"')
    parser.add_argument("--reboot", type=float, default=60.0,
                        help="seconds a reboot keeps a node down (a fast VM; bare-metal GPU servers take minutes)")
    parser.add_argument("--retry", type=float, default=1.0, help="dra_gate_drain_retry_interval (PDB-refused evictions)")
    parser.add_argument("--poll", type=float, default=0.5, help="dra_gate_drain_poll_interval")
    parser.add_argument("--no-pipelining", dest="pipelining", action="store_false", help="ANSIBLE_PIPELINING off")
    args = parser.parse_args()
    if args.quick:
        args.reboot = 20.0
    run(args)


if __name__ == "__main__":
    main()
