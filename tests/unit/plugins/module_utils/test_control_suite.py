# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the control suite's pure logic: suite validation (errors name the field), the objects
built with the run labels, success-condition evaluation on API-shaped objects, and the records."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re

import pytest
import yaml

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import control_suite as cs

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
DEFAULT_FILE = os.path.join(REPO, "data", "control_suite", "default.yml")
IMAGE = "nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04"


def container(gpus=1):
    return {"name": "cuda", "image": IMAGE, "command": ["nvidia-smi"],
            "resources": {"limits": {"nvidia.com/gpu": gpus}}}


def pod_manifest(restart="Never", gpus=1):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"restartPolicy": restart, "containers": [container(gpus)]}}


def job_manifest():
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container()]}}}}


def deployment_manifest(replicas=2):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "d"}},
                     "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [container()]}}}}


def suite(*workloads, **extra):
    data = {"schema_version": 1, "workloads": list(workloads)}
    data.update(extra)
    return data


def workload(name="w", manifest=None, kind="pod_succeeded", timeout=30, **extra):
    item = {"name": name, "manifest": manifest if manifest is not None else pod_manifest(),
            "success": {"kind": kind}, "timeout_seconds": timeout}
    item.update(extra)
    return item


def error(data, loader=None):
    with pytest.raises(cs.SuiteError) as info:
        cs.validate_suite(data, load_manifest=loader)
    return str(info.value)


# --- the shipped default ----------------------------------------------------------------------


def test_default_suite_file_is_the_embedded_copy_and_valid():
    with open(DEFAULT_FILE) as handle:
        text = handle.read()
    assert cs.DEFAULT_SUITE_YAML == text, "plugins/module_utils/phases/control_suite.py DEFAULT_SUITE_YAML differs from %s" % (
        cs.DEFAULT_SUITE_FILE)
    checked = cs.validate_suite(yaml.safe_load(text))
    assert checked["namespace"] == cs.DEFAULT_NAMESPACE
    assert [(w["name"], w["kind"], w["success"]["kind"]) for w in checked["workloads"]] == [
        ("gpu-pod", "Pod", "pod_succeeded"), ("gpu-job", "Job", "job_complete"),
        ("gpu-deployment", "Deployment", "deployment_available")]
    for item in checked["workloads"]:
        spec = item["manifest"]["spec"] if item["kind"] == "Pod" else item["manifest"]["spec"]["template"]["spec"]
        assert cs.gpu_request(spec) == 1
        assert spec["containers"][0]["image"].startswith("nvcr.io/nvidia/cuda:12.")
        assert "nvidia-smi" in " ".join(spec["containers"][0]["command"])
        assert item["timeout_seconds"] > 0
    assert checked["workloads"][2]["success"]["replicas"] == 1


# --- validation -------------------------------------------------------------------------------


def test_valid_suite_is_normalised():
    checked = cs.validate_suite(suite(workload("a"), workload("b", job_manifest(), "job_complete"),
                                      workload("c", deployment_manifest(), "deployment_available"),
                                      namespace="smoke", labels={"team": "gpu"}))
    assert checked["namespace"] == "smoke" and checked["labels"] == {"team": "gpu"}
    assert [w["kind"] for w in checked["workloads"]] == ["Pod", "Job", "Deployment"]
    assert checked["workloads"][2]["success"] == {"kind": "deployment_available", "replicas": 2}
    assert checked["workloads"][0]["timeout_seconds"] == 30


@pytest.mark.parametrize("data, message", [
    ([], "suite: expected a mapping with schema_version and workloads, got a list"),
    (suite(workload(), schema_version=2), "suite.schema_version: expected 1, got 2"),
    (suite(workload(), schema_version=True), "suite.schema_version: expected 1, got True"),
    (suite(workload(), extra=1), "suite: unknown key(s) extra; expected schema_version, namespace, labels, workloads"),
    (suite(), "suite.workloads: expected a non-empty list of workloads, got a list"),
    (suite(workload(), namespace="Bad_NS"), "suite.namespace: expected a DNS-1123 label"),
    (suite(workload(), labels={"team": 1}), "suite.labels.team: expected a string, got a number"),
    (suite(workload(), labels={"bad key!": "x"}), "suite.labels: key 'bad key!': the name"),
    (suite(workload(), labels={cs.RUN_LABEL: "x"}), "suite.labels.%s: reserved" % cs.RUN_LABEL),
    (suite("x"), "suite.workloads[0]: expected a mapping with name"),
    (suite(workload("Bad")), "suite.workloads[0].name: expected a DNS-1123 label of at most 48 characters"),
    (suite(workload("a" * 49)), "suite.workloads[0].name: expected a DNS-1123 label of at most 48"),
    (suite(workload(), workload("x"), workload()), "suite.workloads[2].name: 'w' is also workloads[0]'s name"),
    (suite(workload(color="red")), "suite.workloads[0]: unknown key(s) color"),
    (suite(workload(manifest_file="/x.yml")), "suite.workloads[0] (w): expected exactly one of manifest"),
    (suite({"name": "w", "success": {"kind": "pod_ready"}}), "suite.workloads[0] (w): expected exactly one of"),
    (suite({"name": "w", "manifest": pod_manifest()}), "suite.workloads[0] (w).success: required"),
    (suite(workload(kind="pod_done")), "suite.workloads[0] (w).success.kind: expected one of pod_succeeded, "
                                       "pod_ready, job_complete, deployment_available, got 'pod_done'"),
    (suite(workload(success="pod_ready")), "suite.workloads[0] (w).success: expected a mapping with kind"),
    (suite(workload(success={"kind": "pod_ready", "replicas": 2})),
     "suite.workloads[0] (w).success.replicas: only for deployment_available, not pod_ready"),
    (suite(workload(success={"kind": "pod_ready", "when": 1})), "suite.workloads[0] (w).success: unknown key(s) when"),
    (suite(workload(timeout=0)), "suite.workloads[0] (w).timeout_seconds: expected a positive number of seconds, got 0"),
    (suite(workload(timeout="10")), "suite.workloads[0] (w).timeout_seconds: expected a positive number"),
    (suite(workload(timeout=True)), "suite.workloads[0] (w).timeout_seconds: expected a positive number"),
    (suite(workload(manifest=[1])), "suite.workloads[0] (w).manifest: expected a Kubernetes object (a mapping), got a list"),
    (suite(workload(manifest=dict(pod_manifest(), kind="StatefulSet"))),
     "suite.workloads[0] (w).manifest.kind: expected one of Deployment, Job, Pod, got 'StatefulSet'"),
    (suite(workload(manifest=dict(pod_manifest(), apiVersion="apps/v1"))),
     "suite.workloads[0] (w).manifest.apiVersion: a Pod is v1, got 'apps/v1'"),
    (suite(workload(manifest=job_manifest())),
     "suite.workloads[0] (w).manifest.kind: success kind pod_succeeded is evaluated on a Pod, the manifest is a Job"),
    (suite(workload(manifest=pod_manifest(restart="Always"))),
     "suite.workloads[0] (w).manifest.spec.restartPolicy: a pod that must succeed needs Never or OnFailure"),
    (suite(workload(manifest=dict(pod_manifest(), spec={"containers": []}), kind="pod_ready")),
     "suite.workloads[0] (w).manifest.spec.containers: expected at least one container"),
    (suite(workload(manifest=dict(pod_manifest(), spec=None))), "suite.workloads[0] (w).manifest.spec: expected a mapping"),
    (suite(workload(manifest=dict(job_manifest(), spec={}), kind="job_complete")),
     "suite.workloads[0] (w).manifest.spec.template.spec: expected the pod template's spec"),
    (suite(workload(manifest=dict(deployment_manifest(), spec=dict(deployment_manifest()["spec"], selector={})),
                    kind="deployment_available")),
     "suite.workloads[0] (w).manifest.spec.selector: a Deployment needs a selector"),
    (suite(workload(manifest=deployment_manifest(), success={"kind": "deployment_available", "replicas": 3})),
     "suite.workloads[0] (w).success.replicas: 3 available replicas can never be met by a Deployment of 2"),
    (suite(workload(manifest=deployment_manifest(), success={"kind": "deployment_available", "replicas": 0})),
     "suite.workloads[0] (w).success.replicas: expected an integer of 1 or more, got 0"),
])
def test_bad_suites_name_the_field(data, message):
    assert message in error(data)


def test_second_workload_error_names_its_index():
    text = error(suite(workload("a"), workload("b", kind="ready")))
    assert text.startswith("suite.workloads[1] (b).success.kind: expected one of pod_succeeded, pod_ready, "
                           "job_complete, deployment_available")


def test_job_template_restart_policy_always_is_refused():
    manifest = job_manifest()
    manifest["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    assert "manifest.spec.template.spec.restartPolicy: a Job's pods need Never or OnFailure, got 'Always'" in error(
        suite(workload(manifest=manifest, kind="job_complete")))


def test_manifest_file_goes_through_the_loader():
    seen = []

    def loader(path, where):
        seen.append((path, where))
        return job_manifest()

    checked = cs.validate_suite(suite({"name": "train", "manifest_file": "jobs/train.yml",
                                       "success": {"kind": "job_complete"}}), load_manifest=loader)
    assert seen == [("jobs/train.yml", "suite.workloads[0] (train).manifest_file")]
    assert checked["workloads"][0]["manifest_file"] == "jobs/train.yml"
    assert checked["workloads"][0]["timeout_seconds"] == cs.DEFAULT_TIMEOUT
    text = error(suite({"name": "train", "manifest_file": "x.yml", "success": {"kind": "pod_ready"}}),
                 loader=lambda path, where: job_manifest())
    assert text.startswith("suite.workloads[0] (train).manifest_file x.yml.kind: success kind pod_ready is evaluated on a Pod")


def test_run_id_must_be_a_label_value():
    assert cs.check_run_id("run-1_a.b") is None
    assert cs.check_run_id("").startswith("run_id: expected")
    assert "at most 63" in cs.check_run_id("x" * 64)
    assert "at most 63" in cs.check_run_id("bad/id")


# --- objects ----------------------------------------------------------------------------------


def test_build_object_sets_namespace_name_and_run_labels_on_object_and_template():
    checked = cs.validate_suite(suite(workload("pod"), workload("dep", deployment_manifest(), "deployment_available"),
                                      namespace="smoke", labels={"team": "gpu"}))
    live = copy.deepcopy(checked["workloads"][1])
    live["manifest"]["metadata"].update(resourceVersion="9", uid="u", namespace="elsewhere",
                                        managedFields=[{}], creationTimestamp="t")
    live["manifest"]["status"] = {"replicas": 1}
    obj = cs.build_object(checked, live, "run-7")
    assert obj["metadata"]["name"] == cs.object_name("dep", "run-7") and obj["metadata"]["namespace"] == "smoke"
    assert re.match(r"^dep-[0-9a-f]{6}$", obj["metadata"]["name"])
    for key in ("resourceVersion", "uid", "managedFields", "creationTimestamp"):
        assert key not in obj["metadata"]
    assert "status" not in obj
    want = {cs.RUN_LABEL: "run-7", cs.WORKLOAD_LABEL: "dep", "team": "gpu", cs.MANAGED_BY_LABEL: cs.MANAGED_BY}
    assert want.items() <= obj["metadata"]["labels"].items()
    assert dict(want, app="d") == obj["spec"]["template"]["metadata"]["labels"]
    assert obj["spec"]["selector"] == {"matchLabels": {"app": "d"}}  # the selector is the manifest's own
    assert live["manifest"]["metadata"]["namespace"] == "elsewhere"  # the input is not changed
    pod = cs.build_object(checked, checked["workloads"][0], "run-7")
    assert pod["metadata"]["labels"][cs.RUN_LABEL] == "run-7" and pod["spec"]["containers"][0]["image"] == IMAGE
    assert cs.object_name("dep", "run-7") != cs.object_name("dep", "run-8")
    assert cs.selector("run-7") == "gpufleet.io/control-suite-run=run-7"
    assert cs.selector("run-7", "dep") == "gpufleet.io/control-suite-run=run-7,gpufleet.io/control-suite-workload=dep"
    assert cs.collection_path("Job", "smoke") == "/apis/batch/v1/namespaces/smoke/jobs"
    assert cs.object_path("Pod", "smoke", "p") == "/api/v1/namespaces/smoke/pods/p"


def test_namespace_object_carries_labels_and_the_creating_run():
    checked = cs.validate_suite(suite(workload(), labels={"team": "gpu"}))
    ns = cs.namespace_object(checked, "run-1")
    assert ns["metadata"] == {"name": cs.DEFAULT_NAMESPACE, "labels": {"team": "gpu", cs.MANAGED_BY_LABEL: cs.MANAGED_BY},
                              "annotations": {cs.CREATED_BY_ANNOTATION: "run-1"}}


# --- evaluation -------------------------------------------------------------------------------


def pod(name="p-1", phase="Pending", node=None, ready=False, scheduled=None, terminated=None, deleting=False):
    conditions = []
    if scheduled is not None:
        conditions.append({"type": "PodScheduled", "status": "True" if scheduled is True else "False",
                           "reason": None if scheduled is True else "Unschedulable",
                           "message": None if scheduled is True else scheduled})
    conditions.append({"type": "Ready", "status": "True" if ready else "False"})
    statuses = []
    if terminated is not None:
        statuses.append({"name": "cuda", "state": {"terminated": terminated}})
    metadata = {"name": name, "creationTimestamp": "2026-12-02T01:00:00Z"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-12-02T01:00:05Z"
    return {"metadata": metadata, "spec": {"nodeName": node} if node else {},
            "status": {"phase": phase, "conditions": conditions, "containerStatuses": statuses}}


UNSCHEDULABLE = "0/9 nodes are available: 6 Insufficient nvidia.com/gpu, 3 node(s) had untolerated taint."


def test_pod_succeeded():
    success = {"kind": "pod_succeeded"}
    assert cs.evaluate(success, pod(phase="Succeeded", node="gpu-1"), []) == (cs.PASSED, None, ["gpu-1"])
    state, reason, nodes = cs.evaluate(success, pod(scheduled=UNSCHEDULABLE), [])
    assert state == cs.PENDING and nodes == []
    assert reason == "pod p-1 is Pending: Unschedulable: " + UNSCHEDULABLE
    state, reason, _nodes = cs.evaluate(success, pod(phase="Failed", node="gpu-2", terminated={
        "exitCode": 9, "reason": "Error", "message": "NVML: Driver/library version mismatch"}), [])
    assert state == cs.FAILED
    assert reason == "pod p-1 is Failed: container cuda: exit code 9 (Error): NVML: Driver/library version mismatch"
    assert cs.evaluate(success, pod(phase="Running", node="gpu-1", ready=True), [])[0] == cs.PENDING
    assert cs.evaluate(success, None, [])[0] == cs.FAILED


def test_pod_ready():
    success = {"kind": "pod_ready"}
    assert cs.evaluate(success, pod(phase="Running", node="gpu-3", ready=True), []) == (cs.PASSED, None, ["gpu-3"])
    state, reason, _nodes = cs.evaluate(success, pod(phase="Running", node="gpu-3", scheduled=True), [])
    assert state == cs.PENDING and reason == "pod p-1 is Running, not Ready"
    state, reason, _nodes = cs.evaluate(success, pod(phase="Succeeded", node="gpu-3"), [])
    assert state == cs.FAILED and reason.endswith("(it ended before it was Ready)")


def job(conditions=(), active=0, succeeded=0, failed=0):
    status = {"active": active, "succeeded": succeeded, "failed": failed, "conditions": [dict(c) for c in conditions]}
    return {"metadata": {"name": "j"}, "status": status}


def test_job_complete():
    success = {"kind": "job_complete"}
    done = job([{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}], succeeded=1)
    assert cs.evaluate(success, done, [pod(phase="Succeeded", node="gpu-4")]) == (cs.PASSED, None, ["gpu-4"])
    state, reason, nodes = cs.evaluate(success, job(active=1), [pod(scheduled=UNSCHEDULABLE)])
    assert state == cs.PENDING and nodes == []
    assert reason == "job not complete (active 1, succeeded 0, failed 0): pod p-1 is Pending: Unschedulable: " + UNSCHEDULABLE
    assert cs.evaluate(success, job(), [])[1].endswith(": no pod yet")
    failed = job([{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                   "message": "Job has reached the specified backoff limit"}], failed=1)
    state, reason, nodes = cs.evaluate(success, failed, [pod(phase="Failed", node="gpu-5", terminated={"exitCode": 1})])
    assert state == cs.FAILED and nodes == ["gpu-5"]
    assert reason == ("job failed: BackoffLimitExceeded: Job has reached the specified backoff limit; "
                      "pod p-1 is Failed: container cuda: exit code 1")


def deployment(available=0, conditions=(), generation=2, observed=2, replicas=2):
    return {"metadata": {"name": "d", "generation": generation}, "spec": {"replicas": replicas},
            "status": {"observedGeneration": observed, "availableReplicas": available,
                       "conditions": [dict(c) for c in conditions]}}


AVAILABLE = {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}


def test_deployment_available():
    success = {"kind": "deployment_available", "replicas": 2}
    pods = [pod("d-b", "Running", "gpu-2", ready=True), pod("d-a", "Running", "gpu-1", ready=True),
            pod("d-old", "Running", "gpu-6", ready=True, deleting=True)]
    assert cs.evaluate(success, deployment(2, [AVAILABLE]), pods) == (cs.PASSED, None, ["gpu-1", "gpu-2"])
    # Available with 1 of 2, or a stale status, is not enough
    state, reason, _nodes = cs.evaluate(success, deployment(1, [AVAILABLE]), pods[:1])
    assert state == cs.PENDING and reason.startswith("deployment has 1 of 2 available replica(s): pod d-b is Running")
    assert cs.evaluate(success, deployment(2, [AVAILABLE], observed=1), pods)[0] == cs.PENDING
    assert cs.evaluate({"kind": "deployment_available", "replicas": 1}, deployment(1, [AVAILABLE]), pods)[0] == cs.PASSED
    stuck = deployment(0, [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                            "message": 'ReplicaSet "d-5c" has timed out progressing.'}])
    state, reason, _nodes = cs.evaluate(success, stuck, [pod("d-x", scheduled=UNSCHEDULABLE)])
    assert state == cs.FAILED
    assert reason.startswith('deployment: ProgressDeadlineExceeded: ReplicaSet "d-5c" has timed out progressing.; '
                             "pod d-x is Pending: Unschedulable")


def test_many_pods_are_summarised():
    pods = [pod("p-%d" % i, scheduled=UNSCHEDULABLE) for i in range(5)]
    reason = cs.evaluate({"kind": "job_complete"}, job(active=5), pods)[1]
    assert reason.endswith("; and 2 more") and reason.count("pod p-") == 3


# --- records ----------------------------------------------------------------------------------


def checked_workload(**extra):
    return cs.validate_suite(suite(workload("w", **extra)))["workloads"][0]


def test_records_never_report_skipped_as_passed():
    item = checked_workload()
    passed = cs.record(item, "r", cs.PASSED, 100.0, 103.5, nodes=["gpu-1"], reason="ignored")
    assert passed == {"name": "w", "kind": "Pod", "object": cs.object_name("w", "r"), "success": {"kind": "pod_succeeded"},
                      "timeout_seconds": 30, "status": "passed", "passed": True,
                      "started_at": "1970-01-01T00:01:40.000000Z", "finished_at": "1970-01-01T00:01:43.500000Z",
                      "duration_seconds": 3.5, "node": "gpu-1", "nodes": ["gpu-1"], "gpus_requested": 1, "reason": None}
    failed = cs.record(item, "r", cs.FAILED, 100.0, 130.0, reason="timed out")
    assert failed["passed"] is False and failed["node"] is None and failed["reason"] == "timed out"
    skipped = cs.record(item, "r", cs.SKIPPED, reason="check mode: not run")
    assert skipped["passed"] is None and skipped["status"] == "skipped" and skipped["started_at"] is None
    assert cs.summary([passed, passed]) == (True, {"passed": 2, "failed": 0, "skipped": 0, "total": 2})
    assert cs.summary([passed, failed]) == (False, {"passed": 1, "failed": 1, "skipped": 0, "total": 2})
    assert cs.summary([skipped], check_mode=True) == (None, {"passed": 0, "failed": 0, "skipped": 1, "total": 1})
    # a skipped workload outside check mode does not make the suite pass
    assert cs.summary([passed, skipped])[0] is False
    assert cs.summary([])[0] is False


def test_timeout_reason():
    item = checked_workload(timeout=2.5)
    assert cs.timeout_reason(item, "pod w-1 is Pending") == (
        "timed out after 2.5 s waiting for pod_succeeded: pod w-1 is Pending")
    assert cs.timeout_reason(item, None).endswith(": no status read")


def test_gpu_request_counts_limits_then_requests():
    spec = {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "2"}}},
                           {"resources": {"requests": {"nvidia.com/gpu": 1}}}, {"name": "sidecar"}]}
    assert cs.gpu_request(spec) == 3
    assert cs.gpu_request({}) == 0
