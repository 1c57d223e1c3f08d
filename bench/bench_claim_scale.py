# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upstream DRA scale test's shape: 720 long-lived + 80 churn claim lifecycles on 100 DRA nodes.

The lab runs as its own process (scenario ``dra-scale-100``: 100 DRA nodes of 8 GPUs, 800 whole GPUs; pods start
and stop in 0.05 s; no injected latency). One ansible-playbook run of ``gpufleet.dra_gate.claim_lifecycle`` holds
``--long-lived`` lifecycles for the run and cycles ``--churn`` lifecycles beside them, ``--concurrency`` at a time
(the upstream test keeps 80 churn pods; here every churn pod is one lifecycle). Printed, with the goals of issue 33:

- the harness's latency error against the lab's delivered truth (when the lab's watch stream sent the evidence,
  ``GET /kubelab/claims/truth``): per claim |measured - true| of the allocation and start latencies, p95 <= 10 ms;
- the harness's own CPU time per lifecycle (ansible-playbook and the module: the client side);
- the lab's peak memory (VmHWM of its process) <= 1 GiB, and the harness's ``tracked_peak`` (lifecycles tracked at
  once: at most long-lived + concurrency, so its memory does not grow with the churn);
- the counts: success, cleanup defects, objects left behind.

``--quick``: 100 long-lived + 40 churn at concurrency 10.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

from goals import goal, quick_flag  # bench/ is the script's directory, first on the path
from bench_claim_lifecycle import COLLECTIONS, REPO, VENV_BIN, cpu_seconds, nearest_rank, start_lab, stop_lab

sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import claim_stats  # noqa: E402

NS = "dra-scale"
GOAL_ERROR_MS = 10.0
GOAL_LAB_MIB = 1024


def peak_rss_mib(pid):
    with open("/proc/%d/status" % pid) as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return None


def run(args):
    work = tempfile.mkdtemp(prefix="bench-claim-scale-")
    try:
        started = time.monotonic()
        info = start_lab(os.path.join(work, "lab"), "dra-scale-100", timeout=600)
        lab_start = time.monotonic() - started
        pid, url = info.get("pid"), info.get("server_url")
        evidence = os.path.join(work, "evidence")
        os.makedirs(evidence, mode=0o700)
        out = os.path.join(work, "result.json")
        task = {"kubeconfig": os.path.join(work, "lab", "kubeconfig"), "run_id": "scale", "namespace": NS,
                "create_namespace": True, "count": args.churn, "long_lived": args.long_lived,
                "concurrency": args.concurrency, "kinds": ["template"], "delete_grace_seconds": 0,
                "lifecycle_timeout": 600, "cleanup_timeout": 300, "timeout": 3600, "progress_every": 0,
                "evidence_dir": evidence}
        play = [{"hosts": "localhost", "gather_facts": False, "tasks": [
            {"gpufleet.dra_gate.claim_lifecycle": task, "register": "result", "ignore_errors": True},
            {"ansible.builtin.copy": {"content": "{{ result | to_json }}", "dest": out, "mode": "0600"}}]}]
        path = os.path.join(work, "play.yml")
        with open(path, "w") as handle:
            json.dump(play, handle)
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_LOCALHOST_WARNING="false",
                   ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_PYTHON_INTERPRETER=os.path.join(VENV_BIN, "python"))
        lab_cpu_before = cpu_seconds(pid)
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), path], env=env, capture_output=True, check=False,
                       timeout=3600)
        playbook_seconds = time.monotonic() - started
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        client_cpu = (children_after.ru_utime + children_after.ru_stime
                      - children_before.ru_utime - children_before.ru_stime)
        lab_cpu = cpu_seconds(pid) - lab_cpu_before
        lab_mib = peak_rss_mib(pid)
        with open(out) as handle:
            result = json.load(handle)
        with urllib.request.urlopen(url + "/kubelab/claims/truth", timeout=120) as response:
            truth = dict((t["claim"], t) for t in json.load(response) if t["namespace"] == NS and t["claim"])
        with open(result["records_path"]) as handle:
            records = [json.loads(line) for line in handle]
    finally:
        stop_lab(os.path.join(work, "lab"))
        shutil.rmtree(work, ignore_errors=True)
    if "attempted" not in result:
        raise SystemExit("the run failed before it measured anything: %s" % result.get("msg"))
    seconds = claim_stats.parse_time
    errors = {"allocation": [], "start": []}
    for rec in records:
        entry = truth.get(rec["claim"])
        sent = (entry or {}).get("delivered") or {}
        if rec["error_class"] or not all(sent.get(k) for k in ("created", "allocated", "ready")):
            continue
        for name, field, true_field in (("allocation", "allocated_at", "allocated"), ("start", "ready_at", "ready")):
            measured = seconds(rec[field]) - seconds(rec["created_at"])
            real = seconds(sent[true_field]) - seconds(sent["created"])
            errors[name].append(abs(float(measured - real)))
    total = args.long_lived + args.churn
    print("claim scale: %d long-lived + %d churn lifecycles at concurrency %d on 100 DRA nodes (lab dra-scale-100, "
          "ready in %.0f s)" % (args.long_lived, args.churn, args.concurrency, lab_start))
    print("  ansible-playbook    %7.1f s; success %d of %d; errors %s; cleanup defects %d of %d; left behind %s" % (
        playbook_seconds, result["success_rate"]["numerator"], result["success_rate"]["denominator"],
        result["errors"] or "none", result["cleanup_defects"]["numerator"], result["cleanup_defects"]["denominator"],
        result.get("left_behind") or "nothing"))
    print("  lab process CPU     %7.1f s; client CPU %.1f s" % (lab_cpu, client_cpu))
    counted = result["success_rate"]["denominator"] == total and not result.get("left_behind")
    goal("claim scale: the run's counts", "%d of %d records, %d left behind" % (
        result["success_rate"]["denominator"], total, len(result.get("left_behind") or [])),
        "%d of %d, 0 left" % (total, total), counted)
    for name in ("allocation", "start"):
        errs = errors[name]
        p95 = 1000 * nearest_rank(errs, 0.95) if errs else float("inf")
        goal("claim scale: %s latency error vs the lab's delivered truth, p95" % name,
             "%.2f ms over %d claims" % (p95, len(errs)), "<= %.0f ms" % GOAL_ERROR_MS, p95 <= GOAL_ERROR_MS)
    goal("claim scale: harness CPU per lifecycle", "%.1f ms (%.1f s for %d)" % (
        1000.0 * client_cpu / max(total, 1), client_cpu, total), "reported", True, "the client side")
    goal("claim scale: lab peak memory", "%.0f MiB" % lab_mib, "<= %d MiB" % GOAL_LAB_MIB, lab_mib <= GOAL_LAB_MIB)
    peak = result.get("tracked_peak")
    goal("claim scale: lifecycles tracked at once", "%s" % peak, "<= %d (long-lived + concurrency)" % (
        args.long_lived + args.concurrency), peak is not None and peak <= args.long_lived + args.concurrency)


def main():
    parser = quick_flag(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--long-lived", type=int, default=720)
    parser.add_argument("--churn", type=int, default=400, help="churn lifecycles (default 400: 5 rounds of 80)")
    parser.add_argument("--concurrency", type=int, default=80)
    args = parser.parse_args()
    if args.quick:
        args.long_lived, args.churn, args.concurrency = 100, 40, 10
    run(args)


if __name__ == "__main__":
    main()
