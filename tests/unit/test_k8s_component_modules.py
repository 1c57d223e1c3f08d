# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_component_facts (module + action plugin, through a node tree) and dra_feature_check as modules."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from unittest.mock import MagicMock

from ansible.playbook.play_context import PlayContext

from ansible_collections.gpufleet.dra_gate.plugins.action.k8s_component_facts import ActionModule
from ansible_collections.gpufleet.dra_gate.plugins.modules import dra_feature_check, k8s_component_facts

import node_trees

TODAY = "2026-12-02"


def make_action(module_result):
    task = MagicMock()
    task.args = {"root": "/x"}
    task.async_val = 0
    task.check_mode = False
    task.action = "gpufleet.dra_gate.k8s_component_facts"
    connection = MagicMock()
    connection._shell.tmpdir = None
    action = ActionModule(task, connection, PlayContext(), MagicMock(), MagicMock(), None)
    action._execute_module = MagicMock(return_value=module_result)
    return action


def facts_through_the_action(run_module, root, **args):
    """Run the real module on ``root``, then hand its result to the action plugin, as Ansible does."""
    module_result = run_module(k8s_component_facts, dict(args, root=root))
    assert "k8s_components_raw" in module_result  # the node sends raw text; it parses nothing
    assert module_result["ansible_facts"]["k8s_components"]["components"]["kube-apiserver"]["feature_gates"] == {}
    result = make_action(module_result).run(task_vars={})
    assert "k8s_components_raw" not in result
    return result


def test_module_and_action_read_a_control_plane_tree(run_module, tmp_path):
    root = node_trees.materialize("control-plane-1.37", tmp_path)
    result = facts_through_the_action(run_module, root)
    facts = result["ansible_facts"]["k8s_components"]
    assert result["changed"] is False
    api = facts["components"]["kube-apiserver"]
    assert api["version"] == "1.37.0" and api["feature_gates"]["DRAExtendedResource"] is True
    assert api["runtime_config"] == {"resource.k8s.io/v1beta2": "true"}
    assert facts["components"]["kubelet"]["feature_gates"]["ResourceHealthStatus"] is True
    assert "--etcd-servers" not in json.dumps(result)  # no raw text in the result
    assert result["started_at"].endswith("Z") and result["duration_seconds"] >= 0


def test_module_reads_the_configured_paths(run_module, tmp_path):
    root = node_trees.materialize("control-plane-1.37", tmp_path)
    result = facts_through_the_action(run_module, root, manifests_dir="/srv/manifests", kubelet_config="/etc/kubelet.yaml")
    components = result["ansible_facts"]["k8s_components"]["components"]
    assert [c["present"] for c in components.values()] == [False, False, False, False]
    assert components["kubelet"]["path"] == "/etc/kubelet.yaml"


def test_check_mode_is_the_same_read(run_module, tmp_path):
    root = node_trees.materialize("vfio-passthrough", tmp_path)
    normal = run_module(k8s_component_facts, {"root": root})
    checked = run_module(k8s_component_facts, {"root": root, "_ansible_check_mode": True})
    assert checked["ansible_facts"] == normal["ansible_facts"] and checked["changed"] is False


def test_bad_root_and_relative_paths_name_the_option(run_module, tmp_path):
    assert run_module(k8s_component_facts, {"root": str(tmp_path / "nope")})["msg"].startswith("root:")
    result = run_module(k8s_component_facts, {"root": str(tmp_path), "kubelet_config": "config.yaml"})
    assert result["failed"] is True and result["msg"].startswith("kubelet_config:")


def test_failed_module_result_is_passed_on_untouched():
    result = make_action({"failed": True, "msg": "root: '/x' is not a directory"}).run(task_vars={})
    assert result["failed"] is True and result["msg"].startswith("root:")


def canary_components(run_module, tmp_path):
    cp = facts_through_the_action(run_module, node_trees.materialize("control-plane-1.37", tmp_path / "cp"))
    gpu = facts_through_the_action(run_module, node_trees.materialize("vfio-passthrough", tmp_path / "gpu"))
    return {"cp-1": cp["ansible_facts"], "gpu-1": gpu["ansible_facts"]}


def test_feature_check_passes_warns_and_fails_on_the_verdict(run_module, tmp_path):
    components = canary_components(run_module, tmp_path)
    passed = run_module(dra_feature_check, {"features": ["DRAExtendedResource"], "components": components, "today": TODAY})
    assert passed["verdict"] == "pass" and passed["changed"] is False and not passed.get("failed")
    assert passed["hosts"] == ["cp-1", "gpu-1"] and passed["finished_at"].endswith("Z")
    config = {"passthrough": True}
    blocked = run_module(dra_feature_check, {"config": config, "components": components, "today": TODAY,
                                             "driver_feature_gates": {"PassthroughSupport": True, "DeviceMetadata": True}})
    assert blocked["failed"] is True and blocked["verdict"] == "block"
    assert blocked["used_features"] == ["driver/DeviceMetadata", "driver/PassthroughSupport"]
    assert "dra_feature.alpha_not_accepted" in blocked["msg"]
    acceptance = {"accepted_by": "gpu-platform", "expires": "2027-03-31", "reason": "VM canary"}
    warned = run_module(dra_feature_check, {
        "config": config, "components": components, "today": TODAY, "_ansible_check_mode": True,
        "driver_feature_gates": {"PassthroughSupport": True, "DeviceMetadata": True},
        "acceptances": {"driver/PassthroughSupport": acceptance, "driver/DeviceMetadata": acceptance}})
    assert warned["verdict"] == "warn" and not warned.get("failed")
    assert {f["id"] for f in warned["findings"]} == {"dra_feature.alpha_accepted"}
    strict = run_module(dra_feature_check, {"features": ["DRAConsumableCapacity"], "components": components,
                                            "today": TODAY, "fail_on": "warn"})
    assert strict["failed"] is True and strict["gate"]["fail_on"] == "warn"


def test_feature_check_bad_input_and_maturity_file(run_module, tmp_path):
    bad = run_module(dra_feature_check, {"features": ["DRAExtendedResource"], "acceptances": {"X": {"accepted_by": "a"}}})
    assert bad["failed"] is True and bad["msg"].startswith("acceptances.X.")
    missing = run_module(dra_feature_check, {"maturity_file": str(tmp_path / "none.yml")})
    assert missing["failed"] is True and missing["msg"].startswith("maturity_file:")
    other = tmp_path / "other.yml"
    other.write_text("schema: nope\n")
    assert run_module(dra_feature_check, {"maturity_file": str(other)})["msg"].startswith("maturity_file:")
