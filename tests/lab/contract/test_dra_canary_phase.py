# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: playbooks/dra_canary.yml runs for real (ansible-playbook) against the lab (scenario
``dra-canary-build``: two isolated DRA canary nodes, one with a GPU bound to vfio-pci, and a device-plugin
production node; no operator) with the operator-shaped 26.7.0 test chart of tests/operator_charts.py.

In order, on one lab and one gate run: a check run writes nothing; a device-plugin node among the canary
hosts is refused before any change; the build from nothing to ready (GPUCluster, kubelet plugins, CDI
discovery against the ResourceSlices, the extended-resource DeviceClass with its rollback hook in the
artifact index, a plain ``nvidia.com/gpu: 1`` pod served through a DRA claim); an idempotent rerun; a
ClusterPolicy refused naming it; a CDI spec missing on a node -> finding and stop; passthrough without
acceptance refused; with acceptance on the vfio node -> policy recorded and the concurrent container and
VFIO submissions serialized.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess

import pytest
import yaml

pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

import operator_charts  # tests/ is on pytest's pythonpath (pytest.ini)
from kubelab.testing import start_lab, stop_lab, wait_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
RUN = "dra-canary"
CANARY = ("canary-1", "vfio-1")
CLASS = "gpu-extended.nvidia.com"
PLUGIN_SPEC = os.path.join("var", "run", "cdi", "k8s.gpu.nvidia.com-device.yaml")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("dra-canary"))
    cluster = start_lab(work, "dra-canary-build")
    cluster.workdir = work
    yield cluster
    stop_lab(cluster)
    errors = list(cluster.server.controller_errors)
    shutil.rmtree(work, ignore_errors=True)
    assert not errors, "controller errors: %s" % errors[:5]


@pytest.fixture(scope="module")
def kube(lab):
    from kubernetes import client, config
    api = config.new_client_from_config(config_file=lab.kubeconfig)
    return {"core": client.CoreV1Api(api), "apps": client.AppsV1Api(api), "custom": client.CustomObjectsApi(api),
            "api": api}


@pytest.fixture(scope="module")
def charts(tmp_path_factory):
    mapping = operator_charts.write_mapping(str(tmp_path_factory.mktemp("charts")))
    return {"26.7.0": {"path": mapping["26.7.0"]["path"], "sha256": mapping["26.7.0"]["sha256"]}}


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    root = tmp_path_factory.mktemp("evidence")
    os.chmod(str(root), 0o700)
    return root


def inventory(lab, hosts) -> str:
    with open(os.path.join(lab.workdir, "inventory.yml")) as handle:
        data = yaml.safe_load(handle)
    group = data["all"]["children"]["gpu_nodes"]
    group["hosts"] = {name: value for name, value in group["hosts"].items() if name in hosts}
    path = os.path.join(lab.workdir, "inventory-%s.yml" % "-".join(hosts))
    with open(path, "w") as handle:
        yaml.safe_dump(data, handle)
    return path


def playbook(lab, evidence, charts, *extra, hosts=CANARY, **variables):
    env = dict(os.environ)
    env.update(ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="false", PATH=VENV_BIN + os.pathsep + env.get("PATH", ""))
    extra_vars = {"dra_gate_evidence_root": str(evidence), "dra_gate_run_id": RUN, "dra_gate_kubeconfig": lab.kubeconfig,
                  "dra_gate_operator_charts": charts, "dra_gate_helm_backend": "library", "dra_gate_helm_timeout": 120,
                  "dra_gate_operator_wait_timeout": 60, "dra_gate_canary_workload_timeout": 30,
                  "dra_gate_canary_require_artifacts": False,
                  # the lab's nodes run no containerd (the containerd_cdi role has its own real-process tests)
                  "dra_gate_canary_containerd_cdi": False,
                  # the acceptance play runs once, after the build (test_build_from_nothing)
                  "dra_gate_canary_acceptance": False}
    extra_vars.update(variables)
    argv = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", inventory(lab, hosts), "playbooks/dra_canary.yml",
            "-e", json.dumps(extra_vars)] + list(extra)
    return subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=400, check=False)


def tail(proc) -> str:
    with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "dra-canary-last-play.txt"), "w") as handle:
        handle.write(proc.stdout + proc.stderr)
    return proc.stdout[-6000:] + proc.stderr[-2000:]


def records(evidence, phase="dra_canary") -> list:
    path = evidence / RUN / "index.json"
    if not path.exists():
        return []
    with open(str(path)) as handle:
        index = json.load(handle)
    out = []
    for entry in index["records"]:
        if entry["phase"] == phase:
            with open(str(evidence / RUN / entry["file"])) as handle:
                out.append(json.load(handle))
    return out


def gpu_cluster(kube):
    from kubernetes.client.rest import ApiException
    try:
        return kube["custom"].get_cluster_custom_object("nvidia.com", "v1alpha1", "gpuclusters", "gpu-cluster")
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def device_class(kube, name):
    from kubernetes.client.rest import ApiException
    try:
        return kube["custom"].get_cluster_custom_object("resource.k8s.io", "v1", "deviceclasses", name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def ids(record, severity="block"):
    return {(f["id"], f["subject"]) for f in record["results"]["findings"] if f["severity"] == severity}


def tree_digest(lab) -> dict:
    """sha256 of every regular file under the canary nodes' /etc and /var (containerd, CDI, kubelet)."""
    digests = {}
    for node in CANARY:
        for top, _dirs, files in [w for part in ("etc", "var") for w in os.walk(os.path.join(lab.workdir, "trees", node, part))]:
            for name in files:
                if os.path.islink(os.path.join(top, name)):
                    continue
                with open(os.path.join(top, name), "rb") as handle:
                    digests[os.path.join(top, name)] = hashlib.sha256(handle.read()).hexdigest()
    return digests


def test_check_mode_writes_nothing(lab, kube, charts, evidence):
    # the containerd_cdi role too (the trees' containerd 2.3 configs): in check mode it only reports
    before = tree_digest(lab)
    proc = playbook(lab, evidence, charts, "--check", dra_gate_canary_containerd_cdi=True, dra_gate_containerd_version="2.3.1")
    assert proc.returncode == 0, tail(proc)
    assert "Configure, restart and verify containerd" in proc.stdout and "containerd_cdi : Configure CDI" in proc.stdout, tail(proc)
    assert tree_digest(lab) == before
    assert records(evidence) == []
    assert kube["apps"].list_namespaced_deployment("gpu-operator").items == []
    assert kube["core"].list_namespaced_secret("gpu-operator", label_selector="owner=helm").items == []
    assert device_class(kube, CLASS) is None


def test_device_plugin_node_refused(lab, kube, charts, evidence):
    proc = playbook(lab, evidence, charts, hosts=CANARY + ("prod-1",))
    assert proc.returncode != 0, tail(proc)
    record = records(evidence)[-1]
    assert ("dra_canary.device_plugin_allocatable", "Node/prod-1") in ids(record), record["results"]["findings"]
    assert ("dra_canary.isolation_label_missing", "Node/prod-1") in ids(record)
    assert "prod-1" in record["results"]["refused"] and record["results"]["verdict"] == "block"
    assert kube["apps"].list_namespaced_deployment("gpu-operator").items == []


def test_build_from_nothing(lab, kube, charts, evidence):
    # the whole playbook: the build, then the acceptance tests on the canary just built
    proc = playbook(lab, evidence, charts, dra_gate_canary_acceptance=True, dra_gate_acceptance_count=12,
                    dra_gate_acceptance_concurrency=3, dra_gate_acceptance_kinds=["template", "extended"],
                    dra_gate_acceptance_delete_grace_seconds=0, dra_gate_acceptance_progress_every=4)
    assert proc.returncode == 0, tail(proc)
    record = records(evidence)[-1]
    results = record["results"]
    assert results["verdict"] != "block" and results["completed"] is True, results["findings"]
    assert gpu_cluster(kube)["status"]["state"] == "ready"
    assert results["gpu_cluster"]["ready"] is True and set(results["gpu_cluster"]["plugin_pods"]) == set(CANARY)
    assert results["versions"]["operator"] == "26.7.0" and results["versions"]["dra_driver"] == "v0.5.0"
    # the GPUCluster path: no device plugin, no ClusterPolicy
    names = {d.metadata.name for d in kube["apps"].list_namespaced_daemon_set("gpu-operator").items}
    assert "nvidia-dra-driver-kubelet-plugin" in names and "nvidia-device-plugin-daemonset" not in names
    # CDI discovery: every GPU the driver holds is a CDI device and a matching ResourceSlice device
    for node in CANARY:
        gpus = results["cdi"][node]["gpus"]
        assert gpus and all(g["cdi"] and g["slice_device"] for g in gpus), results["cdi"][node]
    # the extended-resource DeviceClass, its rollback hook in the artifact index
    cls = device_class(kube, CLASS)
    assert cls["spec"]["extendedResourceName"] == "nvidia.com/gpu"
    assert device_class(kube, "gpu.nvidia.com")["spec"].get("extendedResourceName") is None
    hook = results["device_class"]["rollback_hook"]
    assert stat.S_IMODE(os.stat(hook).st_mode) == 0o600 and CLASS in open(hook).read()
    with open(str(evidence / RUN / "artifacts" / "index.json")) as handle:
        index = json.load(handle)
    assert any(a["kind"] == "rollback-hook" and a["path"] == hook for a in index["artifacts"])
    # a plain nvidia.com/gpu: 1 pod served through a DRA claim of the extended-resource class
    (smoke,) = results["workloads"]
    assert smoke["kind"] == "extended" and smoke["ok"] and smoke["claim"], smoke
    assert smoke["devices"] and smoke["devices"][0]["driver"] == "gpu.nvidia.com", smoke
    assert kube["core"].list_namespace(label_selector="gpufleet.io/dra-canary-run").items == []
    # the feature gates of what the canary uses, on the control plane (cp-1's static pods) and each kubelet
    gates = results["feature_gates"]
    assert "DRAExtendedResource" in gates["used_features"] and gates["not_assessed"] == [], gates
    extended = [f for f in gates["features"] if f["name"] == "DRAExtendedResource"][0]
    assert {g["host"] for g in extended["gates"]} >= {"cp-1"} | set(CANARY), extended["gates"]
    # the acceptance tests on the canary just built: every lifecycle measured, every record kept, nothing left
    (acceptance,) = records(evidence, "dra_acceptance")
    measured = acceptance["results"]["lifecycles"]
    assert acceptance["results"]["verdict"] != "block", acceptance["results"]["findings"]
    assert measured["success_rate"] == {"numerator": 12, "denominator": 12, "percent": 100.0}, measured["errors"]
    assert measured["allocation_latency_seconds"]["count"] == 12 and measured["allocation_latency_seconds"]["p95"] > 0
    assert measured["cleanup_defects"]["numerator"] == 0 and measured["cleanup_defects"]["denominator"] == 12
    assert measured["progress"][-1] == "claims 12/12 done, 0 failed" and measured["left_behind"] == []
    assert set(measured["gpus"]) == set(CANARY) and all(measured["gpus"].values()), measured["gpus"]
    assert acceptance["results"]["metrics"] == {"skipped": "no Prometheus (dra_gate_prometheus_url is empty)"}
    assert ("dra_acceptance.metrics_skipped", "prometheus") in ids(acceptance, "warn")
    assert stat.S_IMODE(os.stat(measured["records_path"]).st_mode) == 0o600
    with open(measured["records_path"]) as handle:
        lines = [json.loads(line) for line in handle]
    assert len(lines) == 12 and {r["kind"] for r in lines} == {"template", "extended"}
    assert all(r["node"] in CANARY and r["devices"] for r in lines)
    assert "claims 12/12 done, 0 failed" in proc.stdout
    assert kube["core"].list_namespaced_pod("dra-acceptance").items == []


def test_idempotent_rerun(lab, kube, charts, evidence):
    before = (gpu_cluster(kube)["metadata"]["resourceVersion"], device_class(kube, CLASS)["metadata"]["resourceVersion"])
    proc = playbook(lab, evidence, charts)
    assert proc.returncode == 0, tail(proc)
    results = records(evidence)[-1]["results"]
    assert results["gpu_cluster"]["action"] == "unchanged" and results["device_class"]["action"] == "unchanged"
    assert results["versions"]["helm_action"] == "unchanged", results["versions"]
    after = (gpu_cluster(kube)["metadata"]["resourceVersion"], device_class(kube, CLASS)["metadata"]["resourceVersion"])
    assert before == after


def test_cluster_policy_refused(lab, kube, charts, evidence):
    body = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"}, "spec": {}}
    kube["custom"].create_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", body)
    try:
        proc = playbook(lab, evidence, charts)
        assert proc.returncode != 0, tail(proc)
        record = records(evidence)[-1]
        assert ("dra_canary.cluster_policy_present", "ClusterPolicy/cluster-policy") in ids(record)
        assert "ClusterPolicy cluster-policy" in record["results"]["refused"]
        assert record["results"]["gpu_cluster"] == {}  # nothing was applied
    finally:
        kube["custom"].delete_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy")
    wait_for(lambda: (gpu_cluster(kube).get("status") or {}).get("state") == "ready", 30, "gpu-cluster ready again")


def test_cdi_spec_missing_stops(lab, kube, charts, evidence):
    path = os.path.join(lab.workdir, "trees", "vfio-1", PLUGIN_SPEC)
    with open(path) as handle:
        saved = handle.read()
    os.remove(path)
    try:
        proc = playbook(lab, evidence, charts)
        assert proc.returncode != 0, tail(proc)
        results = records(evidence)[-1]["results"]
        assert ("dra_canary.cdi_spec_missing", "Node/vfio-1") in ids(records(evidence)[-1]), results["findings"]
        assert "CDI discovery failed" in results["failure"]
        assert results["device_class"]["action"] is None and results["workloads"] == []  # stopped there
    finally:
        with open(path, "w") as handle:
            handle.write(saved)


ACCEPTED = {gate: {"accepted_by": "gpu-platform@example.com", "expires": "2099-12-31", "reason": "VM canary"}
            for gate in ("driver/PassthroughSupport", "driver/DeviceMetadata")}
PASSTHROUGH_GATES = {"PassthroughSupport": True, "DeviceMetadata": True}


def test_passthrough_accepted_without_feature_acceptance_refused(lab, kube, charts, evidence):
    """accept_alpha_passthrough alone is no acceptance of the alpha driver gates: refused before any change."""
    before = gpu_cluster(kube)["metadata"]["resourceVersion"]
    proc = playbook(lab, evidence, charts, dra_gate_canary_passthrough_nodes=["vfio-1"],
                    dra_gate_canary_feature_gates=PASSTHROUGH_GATES, dra_gate_accept_alpha_passthrough=True)
    assert proc.returncode != 0, tail(proc)
    results = records(evidence)[-1]["results"]
    assert "feature gates" in results["refused"] and "PassthroughSupport" in results["refused"], results["refused"]
    assert ("dra_feature.alpha_not_accepted", "driver/PassthroughSupport") in ids(records(evidence)[-1]), results["findings"]
    assert results["feature_gates"]["used_features"], results["feature_gates"]
    assert gpu_cluster(kube)["metadata"]["resourceVersion"] == before  # nothing applied


def test_passthrough_without_acceptance_refused(lab, kube, charts, evidence):
    proc = playbook(lab, evidence, charts, dra_gate_canary_passthrough_nodes=["vfio-1"],
                    dra_gate_canary_feature_gates={"PassthroughSupport": True})
    assert proc.returncode != 0, tail(proc)
    results = records(evidence)[-1]["results"]
    assert results["passthrough"]["decision"] == "refused"
    assert "accept_alpha_passthrough" in results["refused"]
    assert gpu_cluster(kube)["spec"]["draDriver"].get("featureGates") == {}  # the alpha gate was not applied


def test_passthrough_accepted_serialized(lab, kube, charts, evidence):
    # VFIO passthrough needs both alpha driver gates (DOMAIN.md: PassthroughSupport and DeviceMetadata)
    proc = playbook(lab, evidence, charts, dra_gate_canary_passthrough_nodes=["vfio-1"],
                    dra_gate_canary_feature_gates=PASSTHROUGH_GATES, dra_gate_accept_alpha_passthrough=True,
                    dra_gate_feature_acceptances=ACCEPTED)
    assert proc.returncode == 0, tail(proc)
    # the alpha driver gates are accepted, and still reported as warnings (never silently accepted)
    warned = ids(records(evidence)[-1], "warn")
    assert ("dra_feature.alpha_accepted", "driver/PassthroughSupport") in warned, warned
    results = records(evidence)[-1]["results"]
    decision = results["passthrough"]
    assert decision["decision"] == "enabled"
    assert decision["policy"] == {"vm_nodes": ["vfio-1"], "container_nodes": ["canary-1"]}
    assert ("dra_canary.passthrough_alpha_accepted", "passthrough") in ids(records(evidence)[-1], "warn")
    work = {w["name"]: w for w in results["workloads"]}
    vfio, container = work["vfio-vfio-1"], work["container-claim"]
    assert vfio["ok"] and container["ok"], results["workloads"]
    assert "vfio" in vfio["devices"][0]["device"] and vfio["node"] == "vfio-1"
    # submitted serially: the container claim's wave was released before the VFIO claim was submitted
    assert container["wave"] != vfio["wave"]
    first, second = sorted((container, vfio), key=lambda w: w["wave"])
    assert first["released_at"] <= second["submitted_at"], (first, second)


def test_rollback_hook_removes_the_device_class(lab, kube, evidence):
    """The hook the build indexed runs the way playbooks/rollback.yml includes it (operator_rollback's vars)."""
    hook = records(evidence)[-1]["results"]["device_class"]["rollback_hook"]
    play = ("- hosts: localhost\n  gather_facts: false\n  vars:\n    operator_rollback_kubeconfig: %s\n"
            "    operator_rollback_kube_context: ''\n  tasks:\n    - ansible.builtin.include_tasks: %s\n" % (lab.kubeconfig, hook))
    env = {"ANSIBLE_COLLECTIONS_PATH": COLLECTIONS}
    proc = lab.run_playbook(play, lab.workdir, name="hook.yml", **env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert device_class(kube, CLASS) is None and device_class(kube, "gpu.nvidia.com") is not None
