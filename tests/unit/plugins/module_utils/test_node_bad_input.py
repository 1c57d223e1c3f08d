# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Malformed node files never crash the facts: each becomes a problems entry (or a spec error) with its path.

Every case is a constructed Ubuntu 22.04 / containerd 2.3 tree (tests/node_trees.py) with one bad file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import gpu_node
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.config import complete, gather
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import NodeTree, RecordedCommands

import node_trees

CONTAINERD_2 = "containerd github.com/containerd/containerd/v2 v2.3.1 3f5c8c8d4b8e1f6c0e5f7a9b2d4c6e8f0a1b3c5d"
NVIDIA_SPEC = node_trees.fixture_text("cdi", "nvidia-ctk-0.5.0.yaml")
V3_CDI = ("version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n  enable_cdi = true\n"
          "  cdi_spec_dirs = %s\n")


def facts_with(tmp_path, files, containerd_version=CONTAINERD_2):
    spec = dict(node_trees.shapes()["no-gpu"], containerd_version=containerd_version, files=files)
    root = node_trees.build_tree(tmp_path, spec)
    tree = NodeTree(root)
    facts = gather(tree, RecordedCommands(tree))
    json.dumps(facts)  # always serialisable
    return facts


def spec_of(facts, path):
    return [s for s in facts["cdi"]["specs"] if s["path"] == path][0]


def problems_at(facts, path):
    return [p["reason"] for p in facts["problems"] if p["path"] == path]


SPEC_HEAD = 'cdiVersion: "0.5.0"\nkind: nvidia.com/gpu\n'


@pytest.mark.parametrize("body,fragment", [
    ("devices:\n- name: all\n  containerEdits:\n    mounts: 5\n", "devices[0].containerEdits.mounts is not a list (got int)"),
    ("devices:\n- name: all\ncontainerEdits:\n  mounts: 5\n", "containerEdits.mounts is not a list (got int)"),
    ("devices:\n- name: all\ncontainerEdits:\n  mounts: [5]\n", "containerEdits.mounts[0] is not a mapping"),
    ("devices:\n- name: all\ncontainerEdits: edit me\n", "containerEdits is not a mapping (got str)"),
    ("devices:\n- name: all\n  containerEdits: [1, 2]\n", "devices[0].containerEdits is not a mapping (got list)"),
    ("devices:\n- name: all\ncontainerEdits:\n  deviceNodes: {path: /dev/nvidia0}\n", "containerEdits.deviceNodes is not a list"),
    ("devices:\n- name: all\ncontainerEdits:\n  env: [1]\n", "containerEdits.env holds a value that is not a string"),
    ("devices:\n- name: all\ncontainerEdits:\n  hooks: 'x'\n", "containerEdits.hooks is not a list"),
    ("devices: all\n", "devices is not a list (got str)"),
    ("devices: {name: all}\n", "devices is not a list (got dict)"),
    ("devices:\n- [all]\n", "devices[0] is not a mapping"),
    ("devices:\n- name: [a, b]\n", "device name must be a string"),
    ("devices:\n- name: all\nannotations: [x]\n", "annotations is not a mapping"),
])
def test_cdi_spec_with_wrong_types_is_an_invalid_spec(tmp_path, body, fragment):
    facts = facts_with(tmp_path, {"/etc/cdi/bad.yaml": SPEC_HEAD + body, "/var/run/cdi/nvidia.yaml": NVIDIA_SPEC})
    bad = spec_of(facts, "/etc/cdi/bad.yaml")
    assert fragment in bad["error"]
    assert spec_of(facts, "/var/run/cdi/nvidia.yaml")["error"] is None  # the good spec is still assessed
    assert facts["cdi"]["invalid_count"] == 1


def test_the_broken_fixture_with_devices_not_a_list(tmp_path):
    facts = facts_with(tmp_path, {"/etc/cdi/x.yaml": node_trees.fixture_text("cdi", "broken", "devices-not-list.yaml")})
    assert "devices is not a list" in spec_of(facts, "/etc/cdi/x.yaml")["error"]


@pytest.mark.parametrize("name,text", [
    ("deep.json", "[" * 100000 + "]" * 100000),
    ("deep.yaml", "a:\n" + "".join(" " * i + "b:\n" for i in range(1, 3000))),
    ("deep-flow.yaml", "cdiVersion: " + "{a: " * 50000 + "1" + "}" * 50000 + "\n"),
])
def test_deeply_nested_spec_is_a_spec_error_not_a_recursion_error(tmp_path, name, text):
    facts = facts_with(tmp_path, {"/etc/cdi/" + name: text, "/var/run/cdi/nvidia.yaml": NVIDIA_SPEC})
    assert spec_of(facts, "/etc/cdi/" + name)["error"]
    assert spec_of(facts, "/var/run/cdi/nvidia.yaml")["error"] is None


def test_binary_garbage_spec_and_config(tmp_path):
    root = node_trees.build_tree(tmp_path, dict(node_trees.shapes()["no-gpu"], containerd_version=CONTAINERD_2))
    garbage = bytes(range(256)) * 64
    for path in ("etc/cdi/garbage.json", "etc/containerd/config.toml"):
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(root, path), "wb") as handle:
            handle.write(garbage)
    tree = NodeTree(root)
    facts, raw = gpu_node.collect(tree, RecordedCommands(tree))
    assert raw["files"]["/etc/cdi/garbage.json"]["text"] is None  # garbage never travels as text
    complete(facts, raw)
    json.dumps(facts)
    assert "not valid UTF-8" in spec_of(facts, "/etc/cdi/garbage.json")["error"]
    assert facts["containerd"]["config_error"] == "not valid UTF-8"
    assert facts["containerd"]["cdi_enabled"] is None
    assert problems_at(facts, "/etc/containerd/config.toml")


def test_huge_files_are_not_read_and_say_so(tmp_path):
    huge = "# padding\n" * (gpu_node.MAX_CONFIG_BYTES // 10 + 1)
    facts = facts_with(tmp_path, {"/etc/cdi/huge.yaml": SPEC_HEAD + huge, "/etc/containerd/config.toml": "version = 3\n" + huge})
    assert "larger than %d bytes" % gpu_node.MAX_CONFIG_BYTES in spec_of(facts, "/etc/cdi/huge.yaml")["error"]
    assert "larger than" in facts["containerd"]["config_error"]
    assert any("larger than" in r for r in problems_at(facts, "/etc/containerd/config.toml"))


def test_too_many_spec_files_are_bounded(tmp_path):
    files = dict(("/etc/cdi/s%03d.yaml" % i, NVIDIA_SPEC) for i in range(gpu_node.MAX_CONFIG_FILES + 5))
    facts = facts_with(tmp_path, files)
    errors = [s["error"] for s in facts["cdi"]["specs"] if s["error"]]
    assert len(errors) == 5 and all("more than %d config files" % gpu_node.MAX_CONFIG_FILES in e for e in errors)


@pytest.mark.parametrize("dirs,reason", [
    ('["cdi", "/etc/cdi"]', "cdi_spec_dirs: entry 'cdi' is not an absolute path; ignored"),
    ('[5, "/etc/cdi"]', "cdi_spec_dirs: entry 5 is not a string; ignored"),
    ('[["/x"], "/etc/cdi"]', "cdi_spec_dirs: entry ['/x'] is not a string; ignored"),
    ('"/etc/cdi"', "cdi_spec_dirs is not a list (got str); ignored"),
])
def test_containerd_cdi_spec_dirs_relative_or_not_a_string(tmp_path, dirs, reason):
    facts = facts_with(tmp_path, {"/etc/containerd/config.toml": V3_CDI % dirs, "/etc/cdi/nvidia.yaml": NVIDIA_SPEC})
    assert reason in problems_at(facts, "/etc/containerd/config.toml")
    assert facts["containerd"]["cdi_enabled"] is True
    assert all(isinstance(d, str) and d.startswith("/") for d in facts["containerd"]["cdi_spec_dirs"])
    assert spec_of(facts, "/etc/cdi/nvidia.yaml")["error"] is None


def test_containerd_cdi_spec_dirs_extra_dir_is_read(tmp_path):
    facts = facts_with(tmp_path, {"/etc/containerd/config.toml": V3_CDI % '["/etc/cdi", "/opt/cdi"]',
                                  "/opt/cdi/nvidia.json": json.dumps({"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu",
                                                                      "devices": [{"name": "all"}]})})
    assert facts["containerd"]["cdi_spec_dirs"] == ["/etc/cdi", "/opt/cdi"]
    assert facts["cdi"]["spec_dirs"] == ["/etc/cdi", "/var/run/cdi", "/opt/cdi"]
    assert spec_of(facts, "/opt/cdi/nvidia.json")["error"] is None
    assert facts["problems"] == []


def test_a_spec_dir_the_node_did_not_read_is_reported(tmp_path):
    # Written with an escape the node's textual scan does not follow: the controller notices.
    facts = facts_with(tmp_path, {"/etc/containerd/config.toml": V3_CDI % '["/opt/\\u0063di"]',
                                  "/opt/cdi/nvidia.yaml": NVIDIA_SPEC})
    assert facts["containerd"]["cdi_spec_dirs"] == ["/opt/cdi"]
    assert any("not read on the node" in r for r in problems_at(facts, "/opt/cdi"))


def test_deeply_nested_toml_is_a_config_error(tmp_path):
    facts = facts_with(tmp_path, {"/etc/containerd/config.toml": "version = 3\nx = " + "[" * 50000 + "]" * 50000 + "\n"})
    assert facts["containerd"]["config_error"]
    assert facts["containerd"]["cdi_enabled"] is None
    assert problems_at(facts, "/etc/containerd/config.toml")


@pytest.mark.parametrize("config,fragment", [
    ("version = 3\nimports = 5\n", "'imports' is not a list"),
    ("version = 3\nimports = [5]\n", "imports: entry 5 is not a string; ignored"),
])
def test_bad_imports(tmp_path, config, fragment):
    facts = facts_with(tmp_path, {"/etc/containerd/config.toml": config})
    assert any(fragment in r for r in problems_at(facts, "/etc/containerd/config.toml"))
    assert facts["containerd"]["cdi_enabled"] is True


def test_bad_dropin_is_its_own_problem(tmp_path):
    facts = facts_with(tmp_path, {
        "/etc/containerd/config.toml": 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n',
        "/etc/containerd/conf.d/10-bad.toml": "[[[ nope",
        "/etc/containerd/conf.d/20-nvidia.toml": node_trees.fixture_text("containerd", "conf.d", "v3-99-nvidia.toml")})
    assert facts["containerd"]["imported_files"] == ["/etc/containerd/conf.d/20-nvidia.toml"]
    assert facts["containerd"]["nvidia_runtime"] is True
    assert problems_at(facts, "/etc/containerd/conf.d/10-bad.toml")[0].startswith("TOML syntax error")


def test_registry_credentials_never_reach_the_facts(tmp_path):
    secret = "s3cr3t-PASSWORD-value"
    config = (V3_CDI % '["/etc/cdi"]') + (
        "[plugins.'io.containerd.cri.v1.images'.registry.configs.'registry.example.com'.auth]\n"
        "  username = 'robot'\n  password = '%s'\n  auth = '%s'\n  identitytoken = '%s'\n" % (secret, secret, secret))
    root = node_trees.build_tree(tmp_path, dict(node_trees.shapes()["no-gpu"], containerd_version=CONTAINERD_2,
                                                files={"/etc/containerd/config.toml": config}))
    tree = NodeTree(root)
    facts, raw = gpu_node.collect(tree, RecordedCommands(tree))
    assert secret in json.dumps(raw)  # the node sends the file as it is ...
    complete(facts, raw)
    assert secret not in json.dumps(facts)  # ... the facts never hold it, nor any raw text
    assert "robot" not in json.dumps(facts) and "registry.example.com" not in json.dumps(facts)
    assert facts["containerd"]["cdi_enabled"] is True


def test_redaction_of_parsed_config():
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.config import redact_registry_credentials
    config = {"plugins": {"cri": {"registry": {"configs": {"r": {"auth": {"password": "p", "auth": "a", "tls": {"insecure_skip_verify": True}}}}},
                                  "enable_cdi": True}}}
    red = redact_registry_credentials(config)
    assert red["plugins"]["cri"]["registry"]["configs"]["r"]["auth"] == {
        "password": "<redacted>", "auth": "<redacted>", "tls": {"insecure_skip_verify": True}}
    assert red["plugins"]["cri"]["enable_cdi"] is True
    assert config["plugins"]["cri"]["registry"]["configs"]["r"]["auth"]["password"] == "p"  # not modified


@pytest.mark.parametrize("record", [
    "[" * 100000 + "]" * 100000,
    '{"rc": "zero", "stdout": ""}',
    '{"rc": 0, "stdout": 5}',
    '["rc", 0]',
    "\x00\x01",
])
def test_bad_recorded_command_result_is_a_problem(tmp_path, record):
    root = node_trees.build_tree(tmp_path, node_trees.shapes()["smi-fails"])
    with open(os.path.join(root, ".gpufleet/commands/nvidia-smi.json"), "w") as handle:
        handle.write(record)
    tree = NodeTree(root)
    facts = gather(tree, RecordedCommands(tree))
    assert facts["nvidia_smi"]["status"] == "missing"
    assert problems_at(facts, "/.gpufleet/commands/nvidia-smi.json")
    assert facts["gpu_count"] == 1  # sysfs and procfs still describe the GPU


def test_complete_accepts_a_missing_or_garbled_raw():
    facts = {"containerd": {"present": True, "config_path": "/etc/containerd/config.toml", "version": "2.3.1"}, "problems": []}
    complete(facts, None)
    assert facts["cdi"]["specs"] == []
    complete(facts, {"containerd": {"present": True}, "files": {"/etc/containerd/config.toml": "text"}, "cdi": {"dirs": 5}})
    assert facts["containerd"]["config_error"]
    assert any("not read on the node" in p["reason"] for p in facts["problems"])
