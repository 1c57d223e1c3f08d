# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: gpufleet.dra_gate.control_suite run for real (its own Python process, the kubernetes
client, as Ansible runs a module) against the lab's prod-26.3-device-plugin scenario - 6 GPU nodes
whose device plugin advertises nvidia.com/gpu, the simulated scheduler and kubelet running the pods.

The shipped default suite passes, each workload recorded on a GPU node with RFC 3339 times, and the
cleanup leaves nothing with the run label (the namespace it created is gone too); a workload that
cannot be scheduled (more GPUs than any node has) fails by its timeout with the scheduler's reason
and is cleaned up; check mode creates nothing and reports every workload skipped, never passed;
a 403 on a create fails naming the verb and the resource and still cleans up."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
import yaml

from kubelab.testing import start_lab, stop_lab

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VENV_PYTHON = os.path.join(REPO, ".venv", "bin", "python")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
DEFAULT_SUITE = os.path.join(REPO, "data", "control_suite", "default.yml")
RUN_LABEL = "gpufleet.io/control-suite-run"
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
KINDS = (("/apis/apps/v1", "deployments"), ("/apis/apps/v1", "replicasets"), ("/apis/batch/v1", "jobs"),
         ("/api/v1", "pods"))
POD_TIMEOUT = 6


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("control-suite-lab"))
    cluster = start_lab(workdir, "prod-26.3-device-plugin")
    try:
        # as an operator does before a gate phase: the GPU Operator's ClusterPolicy ready (its operands run)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            policies = (api(cluster, "/apis/nvidia.com/v1/clusterpolicies") or {}).get("items") or []
            if policies and all((p.get("status") or {}).get("state") == "ready" for p in policies):
                break
            time.sleep(0.5)
        yield cluster
    finally:
        stop_lab(cluster)
        errors = list(cluster.server.controller_errors)
        assert not errors, "controller errors: %s" % errors[:5]


def run_module(lab, args, tmp_path, check_mode=False):
    """Run the module in its own Python process, as Ansible does (the ANSIBLE_MODULE_ARGS file)."""
    args_file = tmp_path / ("args-%d.json" % time.monotonic_ns())
    payload = dict(args, kubeconfig=lab.kubeconfig, _ansible_tmpdir=str(tmp_path))
    if check_mode:
        payload["_ansible_check_mode"] = True
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": payload}))
    env = lab.env()
    env.update(PYTHONPATH=COLLECTIONS)
    proc = subprocess.run([VENV_PYTHON if os.path.exists(VENV_PYTHON) else sys.executable, "-m",
                           "ansible_collections.gpufleet.dra_gate.plugins.modules.control_suite", str(args_file)],
                          env=env, capture_output=True, text=True, timeout=120, cwd=str(tmp_path), check=False)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise AssertionError("no JSON result: %s %s" % (proc.stdout[-3000:], proc.stderr[-3000:]))


def api(lab, path, method="GET", body=None):
    """The lab's API through the kubernetes client's transport (plain JSON)."""
    request = urllib.request.Request(lab.url + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


def labelled(lab, run_id, namespace):
    """Every object of the run (Deployments, ReplicaSets, Jobs, Pods) still in the namespace."""
    found = []
    for prefix, plural in KINDS:
        page = api(lab, "%s/namespaces/%s/%s?labelSelector=%s%%3D%s" % (prefix, namespace, plural, RUN_LABEL, run_id))
        found.extend("%s/%s" % (plural, i["metadata"]["name"]) for i in (page or {}).get("items") or [])
    return found


def namespaces(lab):
    return sorted((n["metadata"]["name"], n["metadata"]["resourceVersion"])
                  for n in api(lab, "/api/v1/namespaces")["items"])


def gpu_nodes(lab):
    nodes = api(lab, "/api/v1/nodes")["items"]
    return {n["metadata"]["name"] for n in nodes if int(n["status"].get("allocatable", {}).get("nvidia.com/gpu", "0")) > 0}


def short(suite, seconds):
    """The suite with short timeouts (the scenario's latencies are well under a second)."""
    suite = copy.deepcopy(suite)
    for workload in suite["workloads"]:
        workload["timeout_seconds"] = seconds
    return suite


def load_default():
    with open(DEFAULT_SUITE) as handle:
        return yaml.safe_load(handle)


def test_default_suite_passes_on_gpu_nodes_and_cleans_up(lab, tmp_path):
    # the shipped file, through suite_file, with its timeouts shortened for the lab
    suite_file = tmp_path / "default-short.yml"
    suite = short(load_default(), 30)
    suite["workloads"][0]["timeout_seconds"] = POD_TIMEOUT
    suite_file.write_text(yaml.safe_dump(suite))
    started = time.monotonic()
    result = run_module(lab, {"suite_file": str(suite_file), "run_id": "baseline-1", "poll_interval": 0.2,
                              "cleanup_timeout": 30, "fail_on_failure": False}, tmp_path)
    assert not result.get("failed"), result.get("msg")
    assert result["suite_source"] == str(suite_file) and result["counts"]["total"] == 3
    assert [w["name"] for w in result["workloads"]] == ["gpu-pod", "gpu-job", "gpu-deployment"]
    assert [w["kind"] for w in result["workloads"]] == ["Pod", "Job", "Deployment"]
    gpus = gpu_nodes(lab)
    assert len(gpus) == 6
    pod = result["workloads"][0]
    for workload in result["workloads"]:
        assert workload["node"] in gpus, workload  # scheduled on a device-plugin GPU node
        assert set(workload["nodes"]) <= gpus and workload["gpus_requested"] == 1
        assert RFC3339.match(workload["started_at"]) and RFC3339.match(workload["finished_at"]), workload
        assert workload["finished_at"] >= workload["started_at"] and workload["duration_seconds"] >= 0
        if workload is not pod:
            assert workload["status"] == "passed" and workload["passed"] is True, workload
            assert workload["reason"] is None
    # everything it made is gone, the namespace it created too
    cleanup = result["cleanup"]
    assert cleanup["performed"] and cleanup["complete"] and cleanup["remaining"] == [] and not cleanup["errors"]
    assert result["namespace_created"] is True and cleanup["namespace_deleted"] is True
    deleted = {d[:d.rindex("-") + 1] for d in cleanup["deleted"]}
    assert {"Pod/gpu-pod-", "Job/gpu-job-", "Deployment/gpu-deployment-"} <= deleted
    assert labelled(lab, "baseline-1", "gpufleet-control-suite") == []
    assert api(lab, "/api/v1/namespaces/gpufleet-control-suite") is None
    assert result["changed"] is True and result["api_calls"] > 0
    assert time.monotonic() - started < 40
    assert pod["passed"] is True, pod["reason"]
    assert result["passed"] is True and result["counts"] == {"passed": 3, "failed": 0, "skipped": 0, "total": 3}


def test_unschedulable_workload_fails_by_its_timeout_with_the_reason(lab, tmp_path):
    suite = short(load_default(), 20)
    greedy = copy.deepcopy(suite["workloads"][0])
    greedy["name"] = "too-many-gpus"
    greedy["timeout_seconds"] = 3
    greedy["manifest"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 64
    suite["workloads"] = [suite["workloads"][1], greedy]
    suite["namespace"] = "cs-unschedulable"
    started = time.monotonic()
    result = run_module(lab, {"suite": suite, "run_id": "greedy-1", "poll_interval": 0.2, "cleanup_timeout": 30},
                        tmp_path)
    elapsed = time.monotonic() - started
    assert result["failed"] is True and result["passed"] is False
    assert result["counts"] == {"passed": 1, "failed": 1, "skipped": 0, "total": 2}
    job, bad = result["workloads"]
    assert job["passed"] is True and job["node"] in gpu_nodes(lab)
    assert bad["status"] == "failed" and bad["passed"] is False and bad["node"] is None
    assert bad["reason"].startswith("timed out after 3 s waiting for pod_succeeded"), bad["reason"]
    assert "Insufficient nvidia.com/gpu" in bad["reason"] and "Unschedulable" in bad["reason"], bad["reason"]
    assert 3 <= bad["duration_seconds"] < 6, bad
    assert "too-many-gpus (timed out" in result["msg"]
    assert result["cleanup"]["complete"] and labelled(lab, "greedy-1", "cs-unschedulable") == []
    assert api(lab, "/api/v1/namespaces/cs-unschedulable") is None
    assert elapsed < 30


def test_failure_is_a_result_with_fail_on_failure_false(lab, tmp_path):
    suite = {"schema_version": 1, "namespace": "cs-soft", "workloads": [
        {"name": "never", "success": {"kind": "pod_ready"}, "timeout_seconds": 1,
         "manifest": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
                      "spec": {"nodeSelector": {"no-such-label": "x"},
                               "containers": [{"name": "c", "image": "nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04"}]}}}]}
    result = run_module(lab, {"suite": suite, "run_id": "soft-1", "poll_interval": 0.2, "fail_on_failure": False,
                              "cleanup_timeout": 30}, tmp_path)
    assert not result.get("failed") and result["passed"] is False
    assert result["workloads"][0]["reason"].startswith("timed out after 1 s waiting for pod_ready")
    assert labelled(lab, "soft-1", "cs-soft") == []


def test_check_mode_creates_nothing(lab, tmp_path):
    before = namespaces(lab)
    result = run_module(lab, {"run_id": "check-1"}, tmp_path, check_mode=True)
    assert not result.get("failed"), result.get("msg")
    assert result["passed"] is None and result["counts"] == {"passed": 0, "failed": 0, "skipped": 3, "total": 3}
    for workload in result["workloads"]:
        assert workload["status"] == "skipped" and workload["passed"] is None and workload["started_at"] is None
    assert [p["metadata"]["labels"][RUN_LABEL] for p in result["plan"]] == ["check-1"] * 3
    assert result["namespace_created"] is True and result["cleanup"]["performed"] is False
    assert api(lab, "/api/v1/namespaces/gpufleet-control-suite") is None
    assert labelled(lab, "check-1", "gpufleet-control-suite") == []
    assert namespaces(lab) == before  # the same namespaces, none changed (resourceVersions equal)


def test_forbidden_create_fails_naming_verb_and_resource_and_cleans_up(lab, tmp_path):
    fault = lab.server.fault_engine.add({"api_error": {"code": 403, "method": "POST",
                                                       "path": "^/apis/batch/v1/namespaces/cs-forbidden/jobs$"}})[0]
    try:
        suite = short(load_default(), 20)
        suite["namespace"] = "cs-forbidden"
        result = run_module(lab, {"suite": suite, "run_id": "forbidden-1", "poll_interval": 0.2,
                                  "cleanup_timeout": 30}, tmp_path)
    finally:
        lab.server.fault_engine.remove(fault["id"])
    assert result["failed"] is True and result["forbidden"] is True and result["status"] == 403
    assert 'cannot create jobs.batch in namespace "cs-forbidden"' in result["msg"], result["msg"]
    # the Pod created before the refused Job is cleaned up, and every workload has a record
    assert result["workloads"][0]["name"] == "gpu-pod" and result["workloads"][1]["passed"] is False
    assert result["cleanup"]["complete"] and labelled(lab, "forbidden-1", "cs-forbidden") == []
