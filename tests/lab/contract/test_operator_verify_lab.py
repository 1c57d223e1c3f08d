# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: gpufleet.dra_gate.operator_verify against the lab's simulated GPU Operator.

Scenario ``operator-upgrade`` (2 device-plugin GPU nodes, ``operator_ready_seconds: 2``) with the
operator-shaped test charts installed by the Helm library: right after ``helm install`` of 26.3.1 the
module waits until the ClusterPolicy is ready and reports Device Plugin mode (through ansible-playbook,
also in check mode); its result is the baseline; right after ``helm upgrade`` to 26.6.2 (no Helm
wait) it waits again and finds the same allocatable and the device plugin at the 26.6.2 image, pinned;
with fault ``operator_never_ready`` a 3 s wait ends ok=false naming the state; a 403 fails it naming
the path; a GPUCluster next to the ClusterPolicy is a problem.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import subprocess
import textwrap
import time

import pytest

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

import operator_charts  # noqa: E402  tests/ is on pytest's pythonpath (pytest.ini)
from kubelab.testing import start_lab, stop_lab, wait_for  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
VENV_PYTHON = os.path.join(REPO, ".venv", "bin", "python")
NAMESPACE = "gpu-operator"
GPU_NODES = ["gpu-1", "gpu-2"]
PLUGIN = "nvcr.io/nvidia/k8s-device-plugin:"

PLAYBOOK = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      tasks:
        - name: Verify, waiting for the install to settle
          gpufleet.dra_gate.operator_verify:
            nodes: [gpu-1, gpu-2]
            expect: {cdi_enabled: true, operator_version: v26.3.1}
            wait: true
            wait_timeout: 60
            poll_interval: 0.25
          register: waited
        - name: The same in check mode
          gpufleet.dra_gate.operator_verify:
            nodes: [gpu-1, gpu-2]
          check_mode: true
          register: checked
        - name: Keep the results
          ansible.builtin.copy:
            content: "{{ {'waited': waited, 'checked': checked} | to_json }}"
            dest: "{{ lookup('ansible.builtin.env', 'RESULTS') }}"
            mode: "0600"
    """)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("operator-verify"))
    cluster = start_lab(work, "operator-upgrade")
    yield cluster
    stop_lab(cluster)
    errors = list(cluster.server.controller_errors)
    shutil.rmtree(work, ignore_errors=True)
    assert not errors, "controller errors: %s" % errors[:5]


@pytest.fixture(scope="module")
def helm(lab):
    return helm_python.Config(kubeconfig_path=lab.kubeconfig, namespace=NAMESPACE, storage_driver="secret")


@pytest.fixture(scope="module")
def kube(lab):
    from kubernetes import client, config
    api = config.new_client_from_config(config_file=lab.kubeconfig)
    return {"custom": client.CustomObjectsApi(api), "crds": client.ApiextensionsV1Api(api)}


@pytest.fixture(scope="module")
def state():
    return {}


@pytest.fixture(autouse=True)
def no_faults_left(lab):
    lab.server.fault_engine.remove()
    yield
    lab.server.fault_engine.remove()


def run_module(lab, args, tmp_path):
    """The module in its own Python process, as Ansible runs it (ANSIBLE_MODULE_ARGS file)."""
    args_file = tmp_path / "operator_verify-args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, kubeconfig=lab.kubeconfig,
                                                                 _ansible_tmpdir=str(tmp_path))}))
    env = lab.env()
    env.update(PYTHONPATH=COLLECTIONS)
    proc = subprocess.run([VENV_PYTHON, "-m", "ansible_collections.gpufleet.dra_gate.plugins.modules.operator_verify",
                           str(args_file)], env=env, capture_output=True, text=True, timeout=120, cwd=str(tmp_path),
                          check=False)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def policy_state(kube):
    policy = kube["custom"].get_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy")
    return (policy.get("status") or {}).get("state")


def test_install_then_verify_with_wait(lab, helm, state, tmp_path):
    helm.install(operator_charts.write_chart(str(tmp_path / "charts"), "26.3.1"), "gpu-operator", namespace=NAMESPACE,
                 timeout=120)
    results = tmp_path / "results.json"
    proc = lab.run_playbook(PLAYBOOK, tmp_path, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, RESULTS=str(results))
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    out = json.loads(results.read_text())
    waited = out["waited"]
    assert waited["ok"] and waited["problems"] == [], waited["problems"]
    assert not waited["changed"]
    assert waited["mode"]["cluster_policy"] == "cluster-policy" and waited["mode"]["state"] == "ready"
    assert waited["mode"]["device_plugin_enabled"] is True and waited["mode"]["gpu_clusters"] == []
    assert waited["wait"]["requested"] and waited["wait"]["ready"]
    # the install takes the ClusterPolicy through notReady for operator_ready_seconds (2 s)
    assert waited["wait"]["waited_seconds"] > 0
    assert sorted(waited["nodes"]) == GPU_NODES and all(n["ready"] and n["allocatable"] for n in waited["nodes"].values())
    assert waited["device_plugin"]["image"] == PLUGIN + "v0.19.0"
    assert waited["device_plugin"]["pods"] == {n: PLUGIN + "v0.19.0" for n in GPU_NODES}
    assert waited["operands"]["toolkit"]["ok"] is True and waited["operands"]["validator"]["ok"] is True
    assert waited["dra_objects"]["resource_slices"]["total"] == 0 and waited["dra_objects"]["device_classes"] == []
    for key in ("started_at", "finished_at"):
        assert waited[key].endswith("Z") and "T" in waited[key]
    assert waited["duration_seconds"] >= waited["wait"]["waited_seconds"] and waited["api_calls"] > 0
    checked = out["checked"]
    assert checked["ok"] and not checked["changed"] and checked["nodes"] == waited["nodes"]
    state["baseline"] = {"nodes": waited["nodes"], "dra_objects": waited["dra_objects"]}


def test_upgrade_then_verify_against_the_baseline(lab, helm, state, tmp_path):
    assert state.get("baseline"), "needs the install test"
    helm.upgrade(operator_charts.chart_archive(str(tmp_path), "26.6.2"), "gpu-operator", namespace=NAMESPACE,
                 timeout=120)
    plugin = PLUGIN + operator_charts.RELEASES["26.6.2"]["devicePlugin"]
    result = run_module(lab, {"nodes": GPU_NODES, "wait": True, "wait_timeout": 60, "poll_interval": 0.25,
                              "baseline": state["baseline"],
                              "expect": {"images": {"devicePlugin": plugin}, "operator_version": "26.6.2"}}, tmp_path)
    assert result["ok"], result["problems"]
    assert result["wait"]["ready"] and result["wait"]["waited_seconds"] > 0  # the rollout was waited for
    assert result["nodes"] == state["baseline"]["nodes"]
    assert result["device_plugin"]["image"] == result["device_plugin"]["expected_image"] == plugin
    assert result["device_plugin"]["pods"] == {n: plugin for n in GPU_NODES}
    assert result["operands"]["devicePlugin"]["pin"] == plugin and result["operands"]["devicePlugin"]["ok"] is True
    assert result["operands"]["toolkit"]["actual"] == "nvcr.io/nvidia/k8s/container-toolkit:" + \
        operator_charts.RELEASES["26.6.2"]["toolkit"]
    assert result["mode"]["operator_version"] == "v26.6.2"


def test_operator_never_ready_ends_the_wait(lab, kube, tmp_path):
    lab.server.fault_engine.add([{"operator_never_ready": {}}])
    wait_for(lambda: policy_state(kube) == "notReady", 20, "ClusterPolicy notReady under the fault")
    started = time.monotonic()
    result = run_module(lab, {"nodes": GPU_NODES, "wait": True, "wait_timeout": 3, "poll_interval": 0.5}, tmp_path)
    assert time.monotonic() - started < 30
    assert not result.get("failed") and result["ok"] is False
    assert result["problems"][0].startswith("ClusterPolicy cluster-policy not ready after 3 s: state notReady (kubelab "
                                            "fault operator_never_ready"), result["problems"]
    assert result["wait"]["ready"] is False and result["wait"]["waited_seconds"] >= 3
    assert result["mode"]["state"] == "notReady"
    failed = run_module(lab, {"nodes": GPU_NODES, "fail_on_problems": True}, tmp_path)
    assert failed["failed"] and "state notReady" in failed["msg"]


def test_forbidden_fails_naming_the_path(lab, tmp_path):
    lab.server.fault_engine.add([{"api_error": {"code": 403, "path": "^/api/v1/nodes$"}}])
    result = run_module(lab, {"nodes": GPU_NODES}, tmp_path)
    assert result["failed"] and result["forbidden"] is True
    assert "/api/v1/nodes" in result["msg"] and "forbidden" in result["msg"], result["msg"]


def test_gpu_cluster_next_to_cluster_policy_is_a_problem(lab, kube, tmp_path):
    crd = operator_charts.chart_crds("26.7.0")["nvidia.com_gpuclusters.yaml"]
    kube["crds"].create_custom_resource_definition(crd)
    wait_for(lambda: any(c.type == "Established" and c.status == "True"
                         for c in kube["crds"].read_custom_resource_definition(crd["metadata"]["name"]).status.conditions
                         or []), 20, "GPUCluster CRD established")
    kube["custom"].create_cluster_custom_object("nvidia.com", "v1alpha1", "gpuclusters", {
        "apiVersion": "nvidia.com/v1alpha1", "kind": "GPUCluster", "metadata": {"name": "gpu-cluster"}, "spec": {}})
    result = run_module(lab, {"nodes": GPU_NODES}, tmp_path)
    assert result["mode"]["gpu_clusters"] == ["gpu-cluster"]
    assert "GPUCluster present: gpu-cluster (the managed DRA path must never coexist with a ClusterPolicy)" \
        in result["problems"]
