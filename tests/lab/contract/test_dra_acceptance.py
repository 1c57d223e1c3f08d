# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: the claim_lifecycle module (through ansible-playbook) against the lab's DRA canary (scenario
``dra-acceptance``: 4 DRA nodes of 8 GPUs on 2 NUMA nodes, a MIG node, GPU Operator 26.7 with a GPUCluster,
the extended-resource DeviceClass), its measurements compared with the lab's ground truth
(``lab.claim_truth``: the times the lab wrote each state and what it injected):

injected latencies -> p50/p95/p99 within 10 ms of the truth's; allocation failures at 2 % over 500 claims
-> exactly the numerator and denominator the lab caused; a leak -> cleanup defects naming the claims; a
NUMA-violating placement -> violations naming claims and devices; a DRA kubelet plugin restart mid-run ->
recovery recorded, no leak; a NoExecute device taint -> evictions observed, an extended-resource pod among
them; a MIG claim on the MIG node; an interruption mid-run -> nothing left behind.
"""

from __future__ import annotations

import decimal
import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from kubelab.testing import start_lab, stop_lab, wait_for

import claim_runs  # tests/ is on pytest's pythonpath (pytest.ini)
from claim_runs import RUN_LABEL, playbook_text, records

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
NS = "dra-acceptance"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("dra-acceptance"))
    cluster = start_lab(work, "dra-acceptance")
    cluster.workdir = work
    from kubernetes import client, config
    api = config.new_client_from_config(config_file=cluster.kubeconfig)
    cluster.core, cluster.custom = client.CoreV1Api(api), client.CustomObjectsApi(api)

    def ready():
        classes = {c["metadata"]["name"] for c in cluster.custom.list_cluster_custom_object(
            "resource.k8s.io", "v1", "deviceclasses")["items"]}
        slices = cluster.custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices")["items"]
        return {"gpu.nvidia.com", "mig.nvidia.com", "gpu-extended.nvidia.com"} <= classes and len(slices) >= 5
    wait_for(ready, 90, "the operator's DeviceClasses and the nodes' ResourceSlices")
    yield cluster
    stop_lab(cluster)
    errors = list(cluster.server.controller_errors)
    shutil.rmtree(work, ignore_errors=True)
    assert not errors, "controller errors: %s" % errors[:5]


@pytest.fixture(autouse=True)
def no_faults(lab):
    lab.server.fault_engine.remove()
    yield
    lab.server.fault_engine.remove()


def lifecycles(lab, tmp_path, run_id, **args):
    return claim_runs.lifecycles(lab, tmp_path, run_id, NS, **args)


def truth_of(lab, run_id):
    return claim_runs.truth_of(lab, NS, run_id)


def seconds(text):
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import claim_stats
    return claim_stats.parse_time(text)


def nearest_rank(samples, q):
    ordered = sorted(samples)
    import math
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def nothing_left(lab, run_id):
    return claim_runs.nothing_left(lab, NS, run_id)


@pytest.mark.timing
def test_injected_latencies_match_the_truth(lab, tmp_path):
    lab.server.fault_engine.add({"claim_latency": {"allocation": {"distribution": "uniform", "min": 0.1, "max": 0.6},
                                                   "prepare": {"distribution": "lognormal", "median": 0.2, "sigma": 0.5},
                                                   "seed": 7}})
    # 100 claims: p99 is the 99th sample
    result = lifecycles(lab, tmp_path, "latency", count=100, concurrency=5, kinds=["template"])
    assert result["success_rate"] == {"numerator": 100, "denominator": 100, "percent": 100.0}, result.get("msg")
    truth = {t["claim"]: t for t in truth_of(lab, "latency")}
    measured, starts = [], []
    committed, committed_starts, delivered, delivered_starts = [], [], [], []
    for rec in records(result):
        entry = truth[rec["claim"]]
        assert entry["injected"]["allocation_delay"] > 0
        measured.append(seconds(rec["allocated_at"]) - seconds(rec["created_at"]))
        starts.append(seconds(rec["ready_at"]) - seconds(rec["created_at"]))
        committed.append(seconds(entry["allocated"]) - seconds(entry["created"]))
        committed_starts.append(seconds(entry["ready"]) - seconds(entry["created"]))
        sent = entry["delivered"]
        for name, field in (("created", "created_at"), ("allocated", "allocated_at"), ("ready", "ready_at")):
            # the lab commits, then sends, then the harness receives (stamped to the microsecond): a harness time before
            # the delivered one means the truth missed the evidence's first path (a bug of the lab's truth)
            assert seconds(entry[name]) <= seconds(sent[name]) <= seconds(rec[field]) + decimal.Decimal("0.000001"), (rec["claim"], name, entry)
        delivered.append(seconds(sent["allocated"]) - seconds(sent["created"]))
        delivered_starts.append(seconds(sent["ready"]) - seconds(sent["created"]))
    # The bound: 10 ms at every quantile. The harness stamps an event when it receives it, so its error is
    # measured against the lab's delivered truth: when the lab's watch stream sent the evidence (the harness's own
    # share: reading, parsing, stamping). Against the commit it also carries the lab's delivery: a few ms for the
    # typical claim (asserted below), and at the tail more than 10 ms (a stream waiting for the one interpreter
    # behind the controllers: 8-25 ms for several events of 100 on 2 cores, measured); those quantiles are shown.
    # The test is marked timing: ./dra-gate runs it alone, as the bench runs.
    for q, name in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
        allocation = result["allocation_latency_seconds"][name] - float(nearest_rank(delivered, q))
        start = result["start_latency_seconds"][name] - float(nearest_rank(delivered_starts, q))
        at_commit = result["allocation_latency_seconds"][name] - float(nearest_rank(committed, q))
        start_at_commit = result["start_latency_seconds"][name] - float(nearest_rank(committed_starts, q))
        print("%s: allocation %+.2f ms, start %+.2f ms against the delivered truth; %+.2f ms, %+.2f ms against the commit"
              % (name, 1000 * allocation, 1000 * start, 1000 * at_commit, 1000 * start_at_commit))
        assert abs(allocation) <= 0.010, ("allocation", name, allocation)
        assert abs(start) <= 0.010, ("start", name, start)
    errors = sorted(abs(m - e) for m, e in zip(measured, delivered))
    assert nearest_rank(errors, 0.5) <= 0.002, errors[-10:]  # the typical claim: the harness's own share
    errors = sorted(abs(m - e) for m, e in zip(measured, committed))
    assert nearest_rank(errors, 0.5) <= 0.005, errors[-10:]  # and with a watch event's delivery
    assert result["allocation_latency_seconds"]["p50"] >= 0.1 and result["left_behind"] == []


def test_allocation_failures_give_the_exact_ratio_the_lab_caused(lab, tmp_path):
    # the 500 claims at 2 %
    lab.server.fault_engine.add({"claim_allocation_failure": {"rate": 0.02, "per": "pod", "seed": 11}})
    result = lifecycles(lab, tmp_path, "failures", count=500, concurrency=24, kinds=["template"], lifecycle_timeout=8,
                        progress_every=100)
    failed = {t["claim"] or t["pod"] for t in truth_of(lab, "failures") if t["injected"]["allocation_failure"]}
    assert failed, "the seed made no failure"
    assert result.get("success_rate", {}).get("denominator") == 500, {k: v for k, v in result.items() if k != "invocation"}
    assert result["success_rate"]["numerator"] == 500 - len(failed), (result["errors"], sorted(failed))
    assert result["errors"] == {"AllocationFailed": len(failed)}
    assert {r["claim"] for r in records(result) if r["error_class"]} == failed
    assert result["progress"][-1] == "claims 500/500 done, %d failed" % len(failed)
    # the progress is shown while the task runs (the action plugin follows the run's progress file)
    stdout = result["_stdout"]
    shown = [line for line in stdout.splitlines() if line.startswith("claim_lifecycle [localhost]: ")]
    assert len(shown) == len(result["progress"]) == 5, shown
    # the first line once 100 are done: lifecycles finishing in the same pass of the loop may take it past 100,
    # and it then says how many were done (records are in the order they finished)
    first = re.search(r" claims ([0-9]+)/500 done, ([0-9]+) failed$", shown[0])
    assert first and 100 <= int(first.group(1)) < 200, shown[0]
    assert int(first.group(2)) == len([r for r in records(result)[:int(first.group(1))]
                                       if r["error_class"] or r["ready_at"] is None]), shown[0]
    assert stdout.index(shown[0]) < stdout.index("TASK [Keep the result]")
    progress_file = os.path.join(os.path.dirname(result["records_path"]), "dra-acceptance-failures.progress")
    assert os.stat(progress_file).st_mode & 0o777 == 0o600
    with open(progress_file) as handle:
        lines = handle.read().splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == result["progress"]
    # written as the run went: the first line a good while before the run ended
    assert seconds(result["finished_at"]) - seconds(lines[0].split(" ", 1)[0]) > 5
    assert result["cleanup_defects"]["numerator"] == 0 and nothing_left(lab, "failures")


def test_long_lived_and_churn_lifecycles_are_counted_and_cleaned_up(lab, tmp_path):
    # the upstream DRA scale test's shape at a small size: long-lived pods held for the run, churn beside them
    result = lifecycles(lab, tmp_path, "mix", count=16, concurrency=4, long_lived=8, kinds=["template"])
    assert result["success_rate"] == {"numerator": 24, "denominator": 24, "percent": 100.0}, result.get("msg")
    assert (result["attempted"], result["long_lived"], result["churn"]) == (24, 8, 16)
    assert result["cleanup_defects"]["numerator"] == 0 and result["cleanup_defects"]["denominator"] == 24
    # ended lifecycles leave the tracker: at most the long-lived ones and the churn's concurrency at once
    assert 8 < result["tracked_peak"] <= 8 + 4
    recs = records(result)
    index = {rec["pod"]: int(rec["pod"].rsplit("-", 1)[1]) for rec in recs}
    held = [rec for rec in recs if index[rec["pod"]] < 8]
    churn = [rec for rec in recs if index[rec["pod"]] >= 8]
    assert len(held) == 8 and len(churn) == 16 and len({rec["claim"] for rec in recs}) == 24
    # the churn starts once every long-lived lifecycle is Ready; the long-lived go once the churn is over
    assert min(seconds(r["created_at"]) for r in churn) > max(seconds(r["ready_at"]) for r in held)
    assert min(seconds(r["delete_requested_at"]) for r in held) >= max(seconds(r["deleted_at"]) for r in churn)
    truth = truth_of(lab, "mix")
    assert len(truth) == 24 and all(t["deleted"] and t["pod_deleted"] for t in truth)
    assert result["left_behind"] == [] and nothing_left(lab, "mix")


def test_a_leak_is_a_cleanup_defect_naming_the_claims(lab, tmp_path):
    lab.server.fault_engine.add({"claim_leak": {}})
    result = lifecycles(lab, tmp_path, "leak", count=3, concurrency=3, kinds=["template"], cleanup_timeout=2)
    # the leak outlives the run's own cleanup: the module fails naming what is left, with the measurement
    assert result["failed"] and result["left_behind"], result
    leaked = {t["claim"] for t in truth_of(lab, "leak") if t["injected"]["leak"]}
    assert set(result["cleanup_defects"]["claims"]) == leaked and len(leaked) == 3, result["cleanup_defects"]
    assert result["cleanup_defects"]["numerator"] == 3 and result["cleanup_defects"]["denominator"] == 3
    assert all("not deleted" in d["reasons"] for d in result["cleanup_defects"]["details"])
    lab.server.fault_engine.remove()
    gone = lifecycles(lab, tmp_path, "leak", state="absent", cleanup_timeout=30)
    assert not gone.get("failed") and gone["left_behind"] == [], gone
    assert nothing_left(lab, "leak")


def test_a_numa_violating_placement_is_named(lab, tmp_path):
    lab.server.fault_engine.add({"numa_violation": {"seed": 2}})
    result = lifecycles(lab, tmp_path, "numa", count=4, concurrency=2, kinds=["numa"])
    violated = {t["claim"] for t in truth_of(lab, "numa") if t["injected"]["numa_violation"]}
    assert violated and result["numa"]["checked"] == 4
    assert result["numa"]["violations"] == len(violated)
    assert {d["claim"] for d in result["numa"]["details"]} == violated
    detail = result["numa"]["details"][0]
    assert detail["reason"] == "split" and sorted(set(detail["numa_nodes"])) == [0, 1] and len(detail["devices"]) == 2
    lab.server.fault_engine.remove()
    clean = lifecycles(lab, tmp_path, "numa-ok", count=2, concurrency=2, kinds=["numa"])
    assert clean["numa"] == {"checked": 2, "violations": 0, "details": [], "not_checked": []}


def test_plugin_restart_and_device_taint_mid_run(lab, tmp_path):
    result = lifecycles(lab, tmp_path, "disrupt", count=24, concurrency=6, kinds=["extended", "template"], hold_seconds=1.5,
                        disruptions=[{"type": "plugin_restart", "node": "gpu-1", "after": 2},
                                     {"type": "device_taint", "effect": "NoExecute", "after": 8, "lifecycles": 4,
                                      "eviction_timeout": 20}])
    assert not result.get("failed"), result.get("msg")
    restart = [d for d in result["disruptions"] if d["type"] == "plugin_restart"][0]
    assert restart["recovered"] and restart["recovery_seconds"] > 0 and restart["new_pod"], restart
    taint = [d for d in result["disruptions"] if d["type"] == "device_taint"][0]
    assert taint["started"] and taint["holders"] and taint["not_evicted"] == [], taint
    assert taint["extended_holders"] and set(taint["extended_holders"]) <= {h["pod"] for h in taint["evicted"]}, taint
    assert taint["allocations_on_tainted_device"] == []
    evicted = [r for r in records(result) if r["error_class"] == "Evicted"]
    assert {r["pod"] for r in evicted} == {h["pod"] for h in taint["evicted"]}
    assert result["cleanup_defects"]["numerator"] == 0, result["cleanup_defects"]
    assert result["attempted"] == 24 and result["successful"] == 24 - len(evicted)
    assert nothing_left(lab, "disrupt")
    assert lab.custom.list_cluster_custom_object("resource.k8s.io", "v1", "devicetaintrules")["items"] == []


def test_a_mig_claim_on_the_mig_node(lab, tmp_path):
    result = lifecycles(lab, tmp_path, "mig", count=2, concurrency=2, kinds=["mig"], nodes=["mig-1"])
    assert result["success_rate"]["numerator"] == 2, result.get("errors")
    for rec in records(result):
        (device,) = rec["devices"]
        assert rec["node"] == "mig-1" and "-mig-" in device["device"] and device["uuid"].startswith("MIG-"), device
    assert result["gpus"]["mig-1"] and result["gpus"]["mig-1"][0].startswith("GPU-")  # the MIG devices' parent


def interrupted_processes(pid):
    """Every process of ``pid``'s session and of its children's sessions (Ansible's workers run setsid): pid, parent,
    state, the kernel wait channel, the command line."""
    rows, seen, todo = [], set(), [pid]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            with open("/proc/%d/stat" % current) as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            with open("/proc/%d/wchan" % current) as handle:
                wchan = handle.read()
            with open("/proc/%d/cmdline" % current, "rb") as handle:
                cmd = handle.read().replace(b"\0", b" ").decode(errors="replace")[:200]
        except OSError:
            continue
        rows.append("pid %d ppid %s state %s wchan %s: %s" % (current, fields[1], fields[0], wchan, cmd))
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open("/proc/%s/stat" % entry) as handle:
                        if handle.read().rsplit(")", 1)[1].split()[1] == str(current):
                            todo.append(int(entry))
                except OSError:
                    pass
    return "\n".join(rows)


def test_interruption_leaves_nothing_behind(lab, tmp_path):
    evidence = tmp_path / "evidence"
    evidence.mkdir(mode=0o700)
    args = {"kubeconfig": lab.kubeconfig, "run_id": "interrupt", "namespace": NS, "evidence_dir": str(evidence),
            "delete_grace_seconds": 0, "count": 400, "concurrency": 10, "kinds": ["template", "extended"], "hold_seconds": 2}
    path = tmp_path / "play.yml"
    path.write_text(playbook_text(args, str(tmp_path / "out.json")))
    env = lab.env()
    env.update(ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_PYTHON_INTERPRETER=os.path.join(VENV_BIN, "python"),
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false", TMPDIR=str(tmp_path),
               # a hang after Ctrl-C (seen twice in CI, never here) is diagnosed below: SIGABRT makes every process of
               # the play print its threads' Python stacks into the log
               PYTHONFAULTHANDLER="1")
    log = tmp_path / "play.log"  # a file, not a pipe: nothing the play prints can block it on a full pipe
    with open(log, "wb") as out:
        proc = subprocess.Popen([os.path.join(VENV_BIN, "ansible-playbook"), str(path)], env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: len(lab.core.list_namespaced_pod(NS, label_selector="%s=interrupt" % RUN_LABEL).items) >= 5, 60,
                 "lifecycle pods running")
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole foreground process group
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            processes = interrupted_processes(proc.pid)
            os.kill(proc.pid, signal.SIGABRT)  # faulthandler: the stacks of the main process's threads
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            raise AssertionError("ansible-playbook still runs 60 s after Ctrl-C; its processes then:\n%s\nthe log "
                                 "(the stacks at SIGABRT last):\n%s" % (processes, log.read_text()[-12000:]))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    wait_for(lambda: nothing_left(lab, "interrupt"), 60, "the interrupted run's objects gone")
    assert nothing_left(lab, "interrupt")
    time.sleep(1)
    assert nothing_left(lab, "interrupt")  # nothing comes back


def test_device_health_is_reflected_in_the_status_and_recorded(lab, tmp_path):
    """A device going unhealthy (or silent past the 30 s health timeout: Unknown) while claims hold it: the
    kubelet's allocatedResourcesStatus and the driver's claim status.devices say so, and the module records
    both, as received, with the status objects; when the fault ends both say Healthy again."""
    for node, health in (("gpu-1", "Unhealthy"), ("gpu-2", "Unhealthy"), ("gpu-3", "Unknown"), ("gpu-4", "Unknown")):
        lab.server.fault_engine.add({"device_unhealthy": {"node": node, "health": health, "seconds": 10}})
    # a Warning about one of the run's pods (the lab's own components post no Events), and one about another pod
    try:
        lab.core.create_namespace({"metadata": {"name": NS}})
    except Exception as exc:  # pylint: disable=broad-except
        assert getattr(exc, "status", None) == 409, exc
    for pod_name, name in (("dra-gate-health-0", "health-warning"), ("someone-else", "other-warning")):
        lab.core.create_namespaced_event(NS, {
            "metadata": {"name": name}, "type": "Warning", "reason": "FailedPrepareDynamicResources",
            "message": "Failed to prepare dynamic resources: NodePrepareResources failed (test)", "count": 2,
            "involvedObject": {"kind": "Pod", "namespace": NS, "name": pod_name},
            "source": {"component": "kubelet", "host": "gpu-1"}, "firstTimestamp": "2026-12-02T10:00:00Z",
            "lastTimestamp": "2026-12-02T10:00:05Z"})
    # The fault is added before the first claim exists, so every pod is deleted at least 13 s after it and the
    # fault (10 s) has ended 3 s before the first deletion on any machine; the claims need < 10 s to get Ready.
    result = lifecycles(lab, tmp_path, "health", count=4, concurrency=4, kinds=["template"], hold_seconds=13)
    assert result["success_rate"]["numerator"] == 4, result.get("msg")
    events = result["events"]
    assert events["warnings_total"] == 1 and events["by_reason"] == {"Warning/FailedPrepareDynamicResources": 2}, events
    (warning,) = events["warnings"]
    assert warning["object"]["name"] == "dra-gate-health-0" and warning["source"] == "kubelet" and warning["count"] == 2
    health = result["device_health"]
    by_claim = {}
    for obs in health["observations"]:
        by_claim.setdefault(obs["claim"], []).append(obs)
    recs = {r["claim"]: r for r in records(result)}
    assert set(health["claims"]) == set(recs) and len(health["devices"]) == 4
    for claim, seen in by_claim.items():
        rec = recs[claim]
        (device,) = rec["devices"]
        resource = "%s/%s/%s" % (device["driver"], device["pool"], device["device"])
        expected = "Unhealthy" if rec["node"] in ("gpu-1", "gpu-2") else "Unknown"
        for source in ("pod", "claim"):
            changes = [o["health"] for o in seen if o["source"] == source and o["device"] == resource]
            assert changes == [expected, "Healthy"], "%s %s on %s: %s; the record: %s" % (
                claim, source, rec["node"], json.dumps(seen), json.dumps(rec))
        claim_status = [o["status"] for o in seen if o["source"] == "claim"][0]
        (ready,) = claim_status["conditions"]
        assert ready["type"] == "Ready" and ready["status"] == {"Unhealthy": "False", "Unknown": "Unknown"}[expected]
        assert ready["reason"] == {"Unhealthy": "DeviceUnhealthy", "Unknown": "HealthTimeout"}[expected]
        pod_status = [o["status"] for o in seen if o["source"] == "pod"][0]
        assert pod_status["name"].startswith("claim:") and pod_status["resources"][0]["resourceID"] == resource
        first = min(o["at"] for o in seen)
        assert seconds(rec["ready_at"]) - 1 <= seconds(first) <= seconds(rec["delete_requested_at"])
    assert nothing_left(lab, "health")
