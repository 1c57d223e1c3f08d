# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_node_facts / gpu_node_bundle action plugins: the module's raw texts parsed here, then dropped."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from unittest.mock import MagicMock

from ansible.playbook.play_context import PlayContext

from ansible_collections.gpufleet.dra_gate.plugins.action.gpu_node_bundle import ActionModule as BundleAction
from ansible_collections.gpufleet.dra_gate.plugins.action.gpu_node_facts import ActionModule as FactsAction
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.gpu_node import collect
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import NodeTree, RecordedCommands

import node_trees


def make_action(cls, action_name, module_result):
    task = MagicMock()
    task.args = {"root": "/x"}
    task.async_val = 0
    task.check_mode = False
    task.action = action_name
    connection = MagicMock()
    connection._shell.tmpdir = None
    action = cls(task, connection, PlayContext(), MagicMock(), MagicMock(), None)
    action._execute_module = MagicMock(return_value=module_result)
    return action


def node_result(tmp_path, shape="ubuntu2204-containerd2-cdi"):
    root = node_trees.build_tree(tmp_path, node_trees.shapes()[shape])
    tree = NodeTree(root)
    facts, raw = collect(tree, RecordedCommands(tree))
    assert facts["containerd"]["cdi_enabled"] is None and facts["cdi"]["specs"] == []  # not parsed on the node
    return facts, raw


def test_facts_action_parses_and_drops_the_raw_texts(tmp_path):
    facts, raw = node_result(tmp_path)
    action = make_action(FactsAction, "gpufleet.dra_gate.gpu_node_facts",
                         {"changed": False, "ansible_facts": {"gpu_node": facts}, "gpu_node_raw": raw})
    result = action.run(task_vars={})
    assert "gpu_node_raw" not in result
    gpu_node = result["ansible_facts"]["gpu_node"]
    assert gpu_node["containerd"]["cdi_enabled"] is True and gpu_node["containerd"]["nvidia_runtime"] is True
    assert [s["error"] for s in gpu_node["cdi"]["specs"]] == [None, None]
    assert "cdiVersion" not in json.dumps(result) and "BinaryName" not in json.dumps(result)  # no raw text
    assert action._execute_module.call_args[1] == {"task_vars": {}}  # the task's own module and arguments


def test_bundle_action_completes_the_returned_facts(tmp_path):
    facts, raw = node_result(tmp_path)
    action = make_action(BundleAction, "gpufleet.dra_gate.gpu_node_bundle",
                         {"changed": True, "dest": "/tmp/b.tar.gz", "gpu_node": facts, "gpu_node_raw": raw})
    result = action.run(task_vars={})
    assert "gpu_node_raw" not in result
    assert result["gpu_node"]["containerd"]["imported_files"] == ["/etc/containerd/conf.d/v3-99-nvidia.toml"]


def test_failed_module_result_is_passed_on_untouched():
    action = make_action(FactsAction, "gpufleet.dra_gate.gpu_node_facts",
                         {"failed": True, "msg": "root: '/x' is not a directory"})
    result = action.run(task_vars={})
    assert result["failed"] is True and result["msg"].startswith("root:")
