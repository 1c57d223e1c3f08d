# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Done-when of issue 8 (node side): on an Ubuntu 22.04 node shape, the node module run by Python 3.8,
3.10 and 3.11 (``ansible_python_interpreter``) gives identical ``gpu_node`` facts and identical
compat_check findings, containerd and CDI assessed, although 3.8 and 3.10 have neither tomllib,
tomli nor PyYAML: the node sends raw texts, the action plugin parses them on the controller.

One real ``ansible-playbook`` run, three local hosts, one constructed tree (root prefix).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest
import yaml

import node_trees

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
PYENV = "/root/.pyenv/versions"
INTERPRETERS = {
    "py38": os.path.join(PYENV, "3.8.18", "bin", "python3.8"),
    "py310": os.path.join(PYENV, "3.10.13", "bin", "python3.10"),
    "py311": sys.executable,
}

PLAY = """
- name: gpu_node facts of one tree through three interpreters
  hosts: nodes
  gather_facts: false
  tasks:
    - name: Gather
      gpufleet.dra_gate.gpu_node_facts:
        root: "{{ tree }}"
        commands: recorded
      register: gathered

    - name: Keep the facts and the whole module result
      ansible.builtin.copy:
        content: "{{ {'facts': ansible_facts.gpu_node, 'result_keys': gathered.keys() | list} | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0600"
      delegate_to: localhost

    - name: Check each node alone, under the same name
      gpufleet.dra_gate.compat_check:
        nodes: "{{ {'node': ansible_facts.gpu_node} }}"
        target:
          operator_version: "26.7.0"
          kubernetes_version: "1.37.0"
          allocation_mode: dra
        fail_on: never
      register: checked
      delegate_to: localhost

    - name: Keep the findings
      ansible.builtin.copy:
        content: "{{ checked.findings | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}-findings.json"
        mode: "0600"
      delegate_to: localhost
"""


def test_python_38_310_311_nodes_are_assessed_alike(tmp_path):
    missing = [path for path in INTERPRETERS.values() if not os.access(path, os.X_OK)]
    if missing:
        pytest.skip("interpreters not installed: %s" % ", ".join(missing))
    tree = node_trees.build_tree(tmp_path / "tree", node_trees.shapes()["ubuntu2204-containerd2-cdi"])
    out = tmp_path / "out"
    out.mkdir()
    hosts = dict((name, {"ansible_connection": "local", "ansible_python_interpreter": path})
                 for name, path in INTERPRETERS.items())
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"nodes": {"hosts": hosts}},
                                                 "vars": {"tree": tree, "out": str(out)}}}))
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".cache", "collections"),
               PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_FORKS="3")
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", str(inventory), str(play)],
                          cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:]

    results = {}
    for name in INTERPRETERS:
        with open(str(out / ("%s.json" % name))) as handle:
            results[name] = json.load(handle)
    pythons = dict((name, r["facts"].pop("python")) for name, r in results.items())
    assert pythons["py38"].startswith("3.8.") and pythons["py310"].startswith("3.10.") and pythons["py311"].startswith("3.11.")
    reference = results["py311"]["facts"]
    for name in ("py38", "py310"):
        assert results[name]["facts"] == reference, name
    for result in results.values():
        assert "gpu_node_raw" not in result["result_keys"]  # raw texts never leave the action plugin

    # containerd and CDI assessed, not "no TOML parser": the imports followed, the drop-in merged.
    ctr = reference["containerd"]
    assert ctr["config_error"] is None
    assert ctr["version"] == "2.3.1" and ctr["config_version"] == 3
    assert ctr["cdi_enabled"] is True and ctr["cdi_enabled_source"] == "config"
    assert ctr["imported_files"] == ["/etc/containerd/conf.d/v3-99-nvidia.toml"]
    assert ctr["nvidia_runtime"] is True and ctr["default_runtime_name"] == "nvidia"
    specs = dict((s["path"], s) for s in reference["cdi"]["specs"])
    assert specs["/var/run/cdi/nvidia.yaml"]["error"] is None
    assert specs["/var/run/cdi/nvidia.yaml"]["devices"] == ["0", "GPU-520e01f2-cf30-6396-abef-e8e9a5233b0e", "all"]
    assert specs["/etc/cdi/nvidia.yml"]["loaded_by_runtime"] is False
    assert reference["problems"] == []
    assert reference["network"]["rdma_devices"][0]["net_devices"] == ["ens1np0"]
    assert {g["vbios_version"] for g in reference["gpus"]} == {"96.00.A5.00.1A"}

    findings = {}
    for name in INTERPRETERS:
        with open(str(out / ("%s-findings.json" % name))) as handle:
            findings[name] = json.load(handle)
    assert findings["py38"] == findings["py311"] == findings["py310"]
    # Under the old node-side parsing, 3.8/3.10 gave a blocking dra.managed.cdi.not_assessed here.
    assert not [f for f in findings["py311"] if f["subject"] != "cluster"], findings["py311"]
