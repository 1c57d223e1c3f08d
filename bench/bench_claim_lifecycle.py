# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""1,000 claim lifecycles through claim_lifecycle (ansible-playbook) against the lab, and the measurement error.

The lab runs as its own process (``python -m kubelab start``, scenario ``dra-acceptance``: 4 DRA nodes of 8
GPUs, a MIG node; pods start and stop in 0.05 s; no injected claim latency), so the module and the lab do not
share an interpreter. One ansible-playbook run of ``gpufleet.dra_gate.claim_lifecycle`` does ``--count``
whole-GPU lifecycles at ``--concurrency``. Printed:

- the run's wall time (the module's own ``started_at`` .. ``finished_at`` and the whole ansible-playbook),
  lifecycles per second, PASS/MISS against the goal (``--count`` lifecycles in <= 60 s on 2 cores);
- the success ratio, the allocation and start latency quantiles as the module measured them;
- the measurement error against the lab's ground truth (``GET /kubelab/claims/truth``: when the lab wrote
  each state): per claim |measured - true| of the allocation latency (created -> allocated) and of the start
  latency (created -> pod Ready), as p50 / p95 / max in milliseconds, and the difference of the reported
  p50/p95/p99 from the same quantiles of the truth;
- the lab process's CPU seconds (it is the bottleneck on 2 cores: every controller is Python).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import math
import os
import shutil
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request

from goals import goal, quick_flag  # bench/ is the script's directory, first on the path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".cache", "collections"))

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import claim_stats

VENV_BIN = os.path.join(REPO, ".venv", "bin")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
GOAL_SECONDS = 60.0
NS = "dra-acceptance"


def start_lab(work, scenario="dra-acceptance", timeout=120):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "lab"))
    subprocess.run([sys.executable, "-m", "kubelab", "start", "--dir", work, "--scenario",
                    os.path.join(REPO, "lab", "scenarios", scenario + ".yml"), "--background", "--wait-timeout",
                    str(timeout)], env=env, check=True, capture_output=True, timeout=timeout + 30)
    subprocess.run([sys.executable, "-m", "kubelab", "settle", "--dir", work, "--timeout", str(timeout)], env=env,
                   check=True, capture_output=True, timeout=timeout + 60)
    with open(os.path.join(work, "lab.json")) as handle:
        return json.load(handle)


def stop_lab(work):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "lab"))
    subprocess.run([sys.executable, "-m", "kubelab", "stop", "--dir", work, "--timeout", "30"], env=env, check=False,
                   capture_output=True, timeout=90)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))


def machine_speed():
    """CPU seconds of a fixed piece of the lab's kind of work (JSON round trips of a pod-sized object), the
    fastest of three: this VM's speed varies between runs, and the lab's CPU (and so the run time) with it."""
    meta = {"name": "p-1", "namespace": "ns", "labels": {"a": "b", "c": "d"}, "annotations": {"x": "y" * 40},
            "managedFields": [{"manager": "m%d" % i, "fieldsV1": {"f:spec": {"f:containers": {}}}} for i in range(4)]}
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
           "spec": {"containers": [{"name": "c%d" % i, "image": "img", "resources": {"limits": {"cpu": "1"}}}
                                   for i in range(4)]},
           "status": {"conditions": [{"type": "Ready", "status": "True"} for _i in range(4)]}}
    best = None
    for _attempt in range(3):
        started = time.process_time()
        for _round in range(20000):
            json.loads(json.dumps(obj, sort_keys=True))
        spent = time.process_time() - started
        best = spent if best is None else min(best, spent)
    return best


def nearest_rank(samples, q):
    ordered = sorted(samples)
    return ordered[max(1, int(math.ceil(q * len(ordered)))) - 1]


def run(args):
    work = tempfile.mkdtemp(prefix="bench-claims-")
    try:
        info = start_lab(os.path.join(work, "lab"))
        pid, url = info.get("pid"), info.get("server_url")
        evidence = os.path.join(work, "evidence")
        os.makedirs(evidence, mode=0o700)
        out = os.path.join(work, "result.json")
        task = {"kubeconfig": os.path.join(work, "lab", "kubeconfig"), "run_id": "bench", "namespace": NS,
                "count": args.count, "concurrency": args.concurrency, "kinds": ["template"], "delete_grace_seconds": 0,
                "lifecycle_timeout": 120, "cleanup_timeout": 60, "timeout": 1800, "progress_every": 0,
                "evidence_dir": evidence}
        play = [{"hosts": "localhost", "gather_facts": False, "tasks": [
            {"gpufleet.dra_gate.claim_lifecycle": task, "register": "result", "ignore_errors": True},
            {"ansible.builtin.copy": {"content": "{{ result | to_json }}", "dest": out, "mode": "0600"}}]}]
        path = os.path.join(work, "play.yml")
        with open(path, "w") as handle:
            json.dump(play, handle)
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_LOCALHOST_WARNING="false",
                   ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_PYTHON_INTERPRETER=os.path.join(VENV_BIN, "python"))
        cpu_before = cpu_seconds(pid) if pid else None
        spy = None
        if args.py_spy and pid:
            spy = subprocess.Popen([os.path.join(VENV_BIN, "py-spy"), "record", "--pid", str(pid), "--format", "raw",
                                    "--output", args.py_spy, "--rate", "50", "--nonblocking", "--gil"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        speed_before = machine_speed()
        started = time.monotonic()
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), path], env=env, capture_output=True, check=False,
                       timeout=3600)
        playbook_seconds = time.monotonic() - started
        speed_after = machine_speed()
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        client_cpu = (children_after.ru_utime + children_after.ru_stime
                      - children_before.ru_utime - children_before.ru_stime)
        lab_cpu = cpu_seconds(pid) - cpu_before if pid else None
        if spy is not None:
            spy.send_signal(2)
            spy.wait(timeout=60)
        with open(out) as handle:
            result = json.load(handle)
        with urllib.request.urlopen(url + "/kubelab/claims/truth", timeout=60) as response:
            truth = dict((t["claim"], t) for t in json.load(response) if t["namespace"] == NS and t["claim"])
        with open(result["records_path"]) as handle:
            records = [json.loads(line) for line in handle]
    finally:
        stop_lab(os.path.join(work, "lab"))
        shutil.rmtree(work, ignore_errors=True)
    seconds = claim_stats.parse_time
    module_seconds = float(seconds(result["finished_at"]) - seconds(result["started_at"]))
    errors = {"allocation": [], "start": []}
    true_values = {"allocation": [], "start": []}
    for rec in records:
        entry = truth.get(rec["claim"])
        if not entry or rec["error_class"] or not entry.get("allocated") or not entry.get("ready"):
            continue
        for name, field, true_field in (("allocation", "allocated_at", "allocated"), ("start", "ready_at", "ready")):
            measured = seconds(rec[field]) - seconds(rec["created_at"])
            real = seconds(entry[true_field]) - seconds(entry["created"])
            errors[name].append(abs(float(measured - real)))
            true_values[name].append(float(real))
    phases = {}
    order = ("created_at", "allocated_at", "scheduled_at", "ready_at", "delete_requested_at", "deallocated_at",
             "deleted_at")
    for rec in records:
        if rec["error_class"]:
            continue
        for first, second in zip(order, order[1:]):
            if rec.get(first) and rec.get(second):
                phases.setdefault((first, second), []).append(float(seconds(rec[second]) - seconds(rec[first])))
    print("claim lifecycles: %d whole-GPU lifecycles at concurrency %d, no injected latency (lab scenario dra-acceptance)"
          % (args.count, args.concurrency))
    print("  module run          %7.1f s  (%.1f lifecycles/s)   ansible-playbook %7.1f s" % (
        module_seconds, result["attempted"] / module_seconds, playbook_seconds))
    limit = GOAL_SECONDS * args.count / 1000.0  # the goal's rate: 1,000 lifecycles in 60 s
    goal("claim lifecycles, %d at concurrency %d" % (args.count, args.concurrency), "%.1f s" % module_seconds,
         "<= %.1f s (1,000 in %.0f s)" % (limit, GOAL_SECONDS), module_seconds <= limit)
    print("  success             %d of %d; errors %s; cleanup defects %d of %d" % (
        result["success_rate"]["numerator"], result["success_rate"]["denominator"], result["errors"] or "none",
        result["cleanup_defects"]["numerator"], result["cleanup_defects"]["denominator"]))
    if lab_cpu is not None:
        print("  lab process CPU     %7.1f s  (%.0f %% of one core over the playbook)" % (
            lab_cpu, 100.0 * lab_cpu / playbook_seconds))
    print("  machine speed       %.3f s before, %.3f s after (CPU of a fixed JSON workload: higher is a slower VM)" % (
        speed_before, speed_after))
    print("  client CPU          %7.1f s  (ansible-playbook and the module, %.0f %% of one core)" % (
        client_cpu, 100.0 * client_cpu / playbook_seconds))
    span = {"pod created -> claim created": [], "claim deleted -> pod deleted": [], "pod created -> pod deleted": []}
    for entry in truth.values():
        for name, first, second in (("pod created -> claim created", "pod_created", "created"),
                                    ("claim deleted -> pod deleted", "deleted", "pod_deleted"),
                                    ("pod created -> pod deleted", "pod_created", "pod_deleted")):
            if entry.get(first) and entry.get(second):
                span[name].append(float(seconds(entry[second]) - seconds(entry[first])))
    print("  lab truth (s, p50 / p95): " + "; ".join(
        "%s %.3f / %.3f" % (name, nearest_rank(v, 0.5), nearest_rank(v, 0.95)) for name, v in span.items() if v))
    print("  phases (s, p50 / p95 over the successful lifecycles): " + "; ".join(
        "%s->%s %.3f / %.3f" % (a[:-3], b[:-3], nearest_rank(v, 0.5), nearest_rank(v, 0.95))
        for (a, b), v in sorted(phases.items(), key=lambda kv: order.index(kv[0][0]))))
    for name in ("allocation", "start"):
        reported = result["%s_latency_seconds" % name]
        errs = errors[name]
        if not errs:
            print("  %s latency: no claim matched the truth" % name)
            continue
        print("  %s latency (s)   measured p50 %.4f p95 %.4f p99 %.4f max %.4f" % (
            name, reported["p50"], reported["p95"], reported["p99"], reported["max"]))
        print("  %s error vs truth  per claim p50 %.2f ms  p95 %.2f ms  max %.2f ms over %d claims; "
              "quantile differences p50 %+.2f ms p95 %+.2f ms p99 %+.2f ms" % (
                  name, 1000 * nearest_rank(errs, 0.5), 1000 * nearest_rank(errs, 0.95), 1000 * max(errs), len(errs),
                  1000 * (reported["p50"] - nearest_rank(true_values[name], 0.5)),
                  1000 * (reported["p95"] - nearest_rank(true_values[name], 0.95)),
                  1000 * (reported["p99"] - nearest_rank(true_values[name], 0.99))))


def main():
    parser = quick_flag(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=30)
    parser.add_argument("--py-spy", metavar="PATH", help="profile the lab process with py-spy (raw folded stacks) into PATH")
    args = parser.parse_args()
    if args.quick:
        args.count = 200
    run(args)


if __name__ == "__main__":
    main()
