# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compat_check action plugin: options, the bundled matrix, fail_on, and no module transfer."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os
import shutil
import subprocess
import sys

import pytest
from unittest.mock import MagicMock

from ansible.playbook.play_context import PlayContext

from ansible_collections.gpufleet.dra_gate.plugins.action import compat_check as action_mod
from ansible_collections.gpufleet.dra_gate.plugins.action.compat_check import ActionModule

COLLECTION_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                                               os.pardir, os.pardir))

H200 = {
    "os": {"id": "ubuntu", "version_id": "24.04", "pretty_name": "Ubuntu 24.04.3 LTS"},
    "kernel": {"release": "6.18.44"},
    "driver": {"loaded": True, "version": "580.159.04", "flavor": "open"},
    "gpus": [{"pci_bus_id": "0000:00:06.0", "device_id": "0x2335", "name": "NVIDIA H200", "numa_node": None,
              "iommu_group": None, "kernel_driver": "nvidia", "mig_mode": "disabled", "memory_mib": 143771}],
    "iommu": {"enabled": False, "group_count": 0, "iommufd": False},
    "cdi": {"spec_dirs": ["/etc/cdi", "/var/run/cdi"], "specs": []},
    "containerd": {"present": False, "version": None},
    "kubelet": {"present": False, "version": None},
    "problems": [],
}
NO_DRIVER = dict(copy.deepcopy(H200), driver={"loaded": False, "version": None, "flavor": None}, gpus=[])
# What the cluster says (simple form): without it the required cluster checks are not assessed (block).
CLUSTER = {"kubernetes_version": "1.37.0", "kubelet_versions": {"h200": "1.37.0", "cpu-box": "1.37.0"},
           "operator_version": "26.6.2", "cluster_policy": True, "gpu_cluster": False, "distribution": "upstream"}


def make_action(args, basedir="/nonexistent"):
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = False
    task.action = "gpufleet.dra_gate.compat_check"
    connection = MagicMock()
    connection._shell.tmpdir = None
    loader = MagicMock()
    loader.path_dwim.side_effect = lambda path: os.path.join(basedir, path)
    action = ActionModule(task, connection, PlayContext(), loader, MagicMock(), None)
    action._execute_module = MagicMock(side_effect=AssertionError("compat_check must not run a module"))
    action._transfer_file = MagicMock(side_effect=AssertionError("compat_check must not transfer files"))
    return action


def test_bundled_matrix_dir():
    assert os.path.realpath(action_mod.BUNDLED_MATRIX_DIR) == os.path.realpath(os.path.join(COLLECTION_ROOT, "data", "matrix"))
    assert os.path.isfile(os.path.join(action_mod.BUNDLED_MATRIX_DIR, "gpu-operator-26.7.0.yml"))


def test_real_h200_warns_but_does_not_fail():
    result = make_action({"nodes": {"h200": H200}, "cluster": CLUSTER, "expected_hosts": ["h200"]}).run(task_vars={})
    assert result["failed"] is False and result["changed"] is False
    assert result["verdict"] == "warn"
    assert result["not_assessed"] == [{"id": "containerd.not_assessed", "subject": "h200", "severity": "warn",
                                       "reason": "not assessed: containerd not found on this node (another runtime, or "
                                                 "none); containerd rows are not evaluated"}]
    assert result["msg"].endswith("; not assessed: containerd.not_assessed (warn: h200)")
    assert result["matrix"]["release"] == "26.7.0"
    assert result["target"]["operator_version"] == "26.7.0"
    assert {f["id"] for f in result["findings"] if f["subject"] == "h200"} == {"driver.point_release", "containerd.not_assessed"}
    assert result["msg"].startswith("compat_check verdict warn")


@pytest.mark.parametrize("fail_on, failed", [("block", True), ("warn", True), ("never", False)])
def test_fail_on_with_no_driver(fail_on, failed):
    result = make_action({"nodes": {"cpu-box": NO_DRIVER}, "cluster": CLUSTER, "expected_hosts": ["cpu-box"],
                          "fail_on": fail_on}).run(task_vars={})
    assert result["failed"] is failed
    assert result["verdict"] == "block"
    assert result["gate"]["failed"] is failed and result["gate"]["fail_on"] == fail_on
    assert "first blocking: driver.not_found [cpu-box]" in result["gate"]["reason"]
    assert "verdict block" in result["msg"] and "1 block" in result["msg"]
    assert "no NVIDIA driver found" in result["msg"]
    assert any(f["id"] == "driver.not_found" for f in result["findings"])


@pytest.mark.parametrize("fail_on, failed", [("block", False), ("warn", True), ("never", False)])
def test_fail_on_with_warning(fail_on, failed):
    result = make_action({"nodes": {"h200": H200}, "cluster": CLUSTER, "expected_hosts": ["h200"],
                          "fail_on": fail_on}).run(task_vars={})
    assert result["failed"] is failed
    assert result["findings"]


@pytest.mark.parametrize("args, message", [
    ({"nodes": {}, "fail_on": "sometimes"}, "fail_on"),
    ({"nodes": {}, "target": {"allocation_mode": "mig"}}, "allocation_mode"),
    ({"nodes": {}, "target": {"operator": "26.7.0"}}, "operator"),
    ({"nodes": {}, "cluster": {"k8s": "1.37"}}, "k8s"),
    ({"nodes": "h200"}, "nodes"),
    ({"nodes": {}, "bogus": 1}, "bogus"),
    ({"nodes": {}, "target": {"kubernetes_version": 1.3}}, "target.kubernetes_version: expected a version as a quoted string"),
    ({"nodes": {}, "target": {"operator_version": "26.10.0"}}, "no matrix release file covers GPU Operator 26.10.0"),
    ({"nodes": {"n1": "x"}}, "nodes['n1']: expected the gpu_node facts dict"),
])
def test_bad_options_fail_clearly(args, message):
    result = make_action(args).run(task_vars={})
    assert result["failed"] is True
    assert message in result["msg"]
    assert "findings" not in result


def test_coverage_options_through_the_action():
    args = {"nodes": {"h200": H200}, "cluster": CLUSTER, "expected_hosts": ["h200", "gpu-9", "gpu-10"],
            "failed_hosts": {"gpu-10": "failed: gpu_node_facts timed out"}}
    result = make_action(args).run(task_vars={})
    assert result["failed"] is True and result["verdict"] == "block"
    assert [(f["id"], f["subject"]) for f in result["findings"][:2]] == [
        ("coverage.host_unreachable", "gpu-9"), ("coverage.host_failed", "gpu-10")]
    assert "coverage.host_unreachable [gpu-9]: host gpu-9 was to be covered but did not answer" in result["msg"]


def test_coverage_with_cluster_facts_and_inventory(capsys):
    cluster = dict(CLUSTER_FACTS, nodes=dict(CLUSTER_FACTS["nodes"], **{
        "gpu-02.example.internal": {"kubelet_version": "1.37.0", "gpu_backend": "device_plugin", "allocatable_gpu": 8}}))
    args = {"nodes": {"h200": H200}, "cluster": cluster, "expected_hosts": ["h200"], "fail_on": "never"}
    result = make_action(args).run(task_vars={})
    assert ("coverage.node_not_in_inventory", "warn", "gpu-02.example.internal") in {
        (f["id"], f["severity"], f["subject"]) for f in result["findings"]}
    known = make_action(dict(args, inventory_hosts=["h200", "gpu-02"])).run(task_vars={})
    assert not [f for f in known["findings"] if f["id"].startswith("coverage.")]
    module = _run_module({"nodes": {"h200": H200}, "cluster": dict((k, v) for k, v in cluster.items() if k != "gathered_by"),
                          "matrix": action_mod.BUNDLED_MATRIX_DIR, "fail_on": "never", "expected_hosts": ["h200", "x"],
                          "host_node_names": {"h200": "h200"}}, capsys)
    assert {"coverage.host_unreachable", "coverage.node_not_in_inventory"} <= {f["id"] for f in module["findings"]}


@pytest.mark.parametrize("args, message", [
    ({"nodes": {}, "expected_hosts": {"h200": 1}}, "expected_hosts"),
    ({"nodes": {}, "failed_hosts": ["h200"]}, "failed_hosts"),
    ({"nodes": {}, "host_node_names": {"h200": ["a"]}}, "host_node_names"),
])
def test_bad_coverage_options(args, message):
    result = make_action(args).run(task_vars={})
    assert result["failed"] is True and message in result["msg"]
    assert "findings" not in result


def test_matrix_option_file_dir_and_relative(tmp_path):
    bundled = action_mod.BUNDLED_MATRIX_DIR
    single = os.path.join(bundled, "gpu-operator-26.7.0.yml")
    result = make_action({"nodes": {"h200": H200}, "matrix": single}).run(task_vars={})
    assert result["matrix"]["files"] == [single]
    assert "kubelet.skew.not_assessed" in {f["id"] for f in result["findings"]}
    copy_dir = tmp_path / "matrix"
    shutil.copytree(bundled, str(copy_dir))
    result = make_action({"nodes": {"h200": H200}, "matrix": "matrix", "cluster": CLUSTER, "expected_hosts": ["h200"]},
                         basedir=str(tmp_path)).run(task_vars={})
    assert result["failed"] is False and len(result["matrix"]["files"]) == 3


def test_matrix_with_a_missing_field(tmp_path):
    shutil.copytree(action_mod.BUNDLED_MATRIX_DIR, str(tmp_path / "m"))
    path = tmp_path / "m" / "gpu-operator-26.7.0.yml"
    path.write_text(path.read_text().replace("    source: \"[CND life-cycle-policy.rst]\"\n", "", 1))
    result = make_action({"nodes": {}, "matrix": str(tmp_path / "m")}).run(task_vars={})
    assert result["failed"] is True
    assert result["msg"] == "gpu-operator-26.7.0.yml: rows[0].source: required field missing"


def test_upgrade_path_and_dra(tmp_path):
    args = {
        "nodes": {"h200": H200},
        "cluster": {"kubernetes_version": "1.36.4", "operator_version": "26.3.1", "cluster_policy": True,
                    "gpu_cluster": False, "distribution": "upstream"},
        "target": {"kubernetes_version": "1.37.0", "allocation_mode": "dra"},
    }
    result = make_action(args).run(task_vars={})
    assert [hop["to"] for hop in result["upgrade_path"]] == ["26.6.x", "26.7.0"]
    assert result["failed"] is True
    assert "dra.managed.cluster_policy" in result["msg"]
    assert result["target"] == {"operator_version": "26.7.0", "kubernetes_version": "1.37.0", "allocation_mode": "dra",
                                "passthrough": False, "accept_alpha_passthrough": False,
                                "components": {"device_plugin": "v0.20.0", "dra_driver": "v0.5.0",
                                               "container_toolkit": "v1.20.0", "default_driver": "595.91.07"}}


def test_check_mode_runs():
    action = make_action({"nodes": {"h200": H200}, "cluster": CLUSTER, "expected_hosts": ["h200"]})
    action._task.check_mode = True
    assert action.run(task_vars={})["verdict"] == "warn"


def test_through_ansible_playbook(tmp_path):
    """End to end: ansible-playbook finds the action plugin, the bundled matrix, and fails on block."""
    ansible_playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    if not os.path.exists(ansible_playbook):
        pytest.skip("ansible-playbook not installed next to this python")
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        "- hosts: localhost\n"
        "  gather_facts: false\n"
        "  tasks:\n"
        "    - gpufleet.dra_gate.compat_check:\n"
        "        nodes: {h200: %s, cpu-box: %s}\n"
        "        cluster: {kubernetes_version: '1.37.0', operator_version: '26.3.1'}\n"
        "      register: compat\n"
        "      ignore_errors: true\n"
        "    - ansible.builtin.copy:\n"
        "        content: '{{ compat | to_json }}'\n"
        "        dest: %s\n" % (json.dumps(H200), json.dumps(NO_DRIVER), tmp_path / "out.json"))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([ansible_playbook, "-i", "localhost,", "-c", "local", str(playbook)],
                          cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, check=False)
    output = proc.stdout.decode("utf-8", "replace")
    assert proc.returncode == 0, output
    result = json.loads((tmp_path / "out.json").read_text())
    assert result["failed"] is True and result["verdict"] == "block"
    assert [hop["to"] for hop in result["upgrade_path"]] == ["26.6.x", "26.7.0"]
    assert {"driver.not_found", "driver.point_release"} <= {f["id"] for f in result["findings"]}


# ---- the module's own main(), used when the action plugin is not (e.g. run directly) -------------

def _run_module(args, capsys):
    from ansible.module_utils.testing import patch_module_args
    from ansible_collections.gpufleet.dra_gate.plugins.modules import compat_check as module

    with patch_module_args(args):
        with pytest.raises(SystemExit):
            module.main()
    return json.loads(capsys.readouterr().out)


def test_module_main_requires_matrix(capsys):
    result = _run_module({"nodes": {"h200": H200}}, capsys)
    assert result["failed"] is True
    assert result["msg"].startswith("matrix: required when compat_check runs without its action plugin")


@pytest.mark.parametrize("nodes, fail_on, failed, verdict", [
    ({"h200": H200}, "block", False, "warn"),
    ({"cpu-box": NO_DRIVER}, "block", True, "block"),
    ({"cpu-box": NO_DRIVER}, "never", False, "block"),
])
def test_module_main_evaluates(capsys, nodes, fail_on, failed, verdict):
    result = _run_module({"nodes": nodes, "matrix": action_mod.BUNDLED_MATRIX_DIR, "fail_on": fail_on, "cluster": CLUSTER,
                          "expected_hosts": list(nodes)}, capsys)
    assert bool(result.get("failed")) is failed
    assert result["verdict"] == verdict
    assert result["changed"] is False


def test_module_main_bad_option(capsys):
    result = _run_module({"nodes": {}, "matrix": action_mod.BUNDLED_MATRIX_DIR,
                          "target": {"allocation_mode": "mig"}}, capsys)
    assert result["failed"] is True and "allocation_mode" in result["msg"]


# ---- the gpu_cluster_facts form of ``cluster`` ----------------------------------------------------

CLUSTER_FACTS = {
    "schema_version": 1,
    "api_server": {"version": "1.37.0", "git_version": "v1.37.0"},
    "apis": {"resource_k8s_io_v1": True, "groups": {"resource.k8s.io": ["v1"]}},
    "nodes": {"h200": {"kubelet_version": "1.33.1", "gpu_backend": "both", "allocatable_gpu": 1,
                       "dra_devices": [{"name": "gpu-0"}], "labels": {}, "taints": [], "ready": True}},
    "operator": {"helm_release": {"name": "gpu-operator", "namespace": "gpu-operator", "chart": "gpu-operator",
                                  "chart_version": "v26.3.1", "app_version": "v26.3.1", "status": "deployed"},
                 "cluster_policies": [{"name": "cluster-policy", "state": "ready", "conditions": []}],
                 "gpu_clusters": [{"name": "gpu-cluster", "state": "notReady",
                                   "conditions": [{"type": "Ready", "status": "False", "reason": "PrerequisiteNotMet"}]}],
                 "workloads": [], "crds": []},
    "device_classes": [], "runtime_classes": [], "pdbs": [],
    "resource_claims": {"total": 0, "allocated": 0, "reserved": 0, "deleting_allocated": 0, "by_namespace": {}, "stuck": []},
    "problems": [],
    "gathered_by": "a key a newer gpu_cluster_facts might add",
}


def test_cluster_facts_form_through_the_action():
    cluster = dict(CLUSTER_FACTS, distribution="upstream")
    result = make_action({"nodes": {"h200": H200}, "cluster": cluster}).run(task_vars={})
    assert result["failed"] is True and result["verdict"] == "block"
    got = {(f["id"], f["severity"], f["subject"]) for f in result["findings"]}
    assert {("kubelet.skew", "block", "h200"), ("backend.single_per_node", "block", "h200"),
            ("operator.exclusive_resources", "block", "cluster"),
            ("operator.cr_state", "warn", "GPUCluster/gpu-cluster")} <= got
    assert [hop["to"] for hop in result["upgrade_path"]] == ["26.6.x", "26.7.0"]
    assert "ClusterPolicy cluster-policy and GPUCluster gpu-cluster both exist" in result["msg"]


def test_cluster_facts_form_through_the_module(capsys):
    cluster = dict((k, v) for k, v in CLUSTER_FACTS.items() if k != "gathered_by")
    result = _run_module({"nodes": {"h200": H200}, "cluster": cluster, "matrix": action_mod.BUNDLED_MATRIX_DIR,
                          "fail_on": "never"}, capsys)
    assert result["verdict"] == "block"
    assert "backend.single_per_node" in {f["id"] for f in result["findings"]}


def test_simple_form_through_the_module_still_works(capsys):
    result = _run_module({"nodes": {"h200": H200}, "matrix": action_mod.BUNDLED_MATRIX_DIR, "fail_on": "never",
                          "cluster": {"kubernetes_version": "1.37.0", "operator_version": "26.6.2",
                                      "cluster_policy": True, "gpu_cluster": False}}, capsys)
    assert result["upgrade_path"] == [{"from": "26.6.2", "to": "26.7.0", "kind": "next_major"}]
    assert not [f for f in result["findings"] if f["id"].startswith(("backend.", "operator.cr_state"))]
