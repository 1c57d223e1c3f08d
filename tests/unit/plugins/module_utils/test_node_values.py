# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every value parsed from a node is validated, YAML/TOML are bounded, the results always serialise.

The hostile inputs are the ones the fleet-wide trial on 218 malformed node trees found: Unicode digits
and 5,000-digit numbers from nvidia-smi, ``"rc": Infinity``, 2,000-deep dotted TOML keys, NUL bytes in
TOML strings used as paths, a YAML alias bomb in ``cdiVersion``, names that are not UTF-8, a huge hex
``version`` on containerd 1.6, non-finite floats, and malformed module results reaching the action plugin.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import os
import time
import tracemalloc
from unittest.mock import MagicMock

import pytest

from ansible.playbook.play_context import PlayContext

from ansible_collections.gpufleet.dra_gate.plugins.action.gpu_node_facts import ActionModule as FactsAction
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import cdi
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import gpu_node
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import values as node_values
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import nvidia_smi
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.containerd import analyse_config
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.config import (
    MAX_CONFIG_DEPTH,
    complete,
    gather,
    redact_registry_credentials,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import NodeTree, RecordedCommands
from ansible_collections.gpufleet.dra_gate.plugins.modules import gpu_node_facts

import node_trees

CONTAINERD_2 = "containerd github.com/containerd/containerd/v2 v2.3.1 3f5c8c8d4b8e1f6c0e5f7a9b2d4c6e8f0a1b3c5d"
CONTAINERD_16 = "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3"
SMI_ROW = "%s, 00000000:17:00.0, 0x233510DE, NVIDIA H200, GPU-f06f0ae7-4822-3c65-0972-1d839772e142, Disabled, %s, 580.173.02, 96.00.A5.00.1A\n"


def strictly_serialisable(value):
    """What the controller needs: JSON without NaN/Infinity that encodes as UTF-8 (no lone surrogates)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")


def problems_at(facts, path):
    return [p["reason"] for p in facts["problems"] if p["path"] == path]


def one_gpu_tree(tmp_path, smi_stdout=None, **extra):
    root = node_trees.build_tree(tmp_path, dict(node_trees.shapes()["smi-fails"], **extra)) or str(tmp_path)
    if smi_stdout is not None:
        with open(os.path.join(root, ".gpufleet/commands/nvidia-smi.json"), "w") as handle:
            json.dump({"argv": node_trees.SMI_ARGV, "rc": 0, "stdout": smi_stdout, "stderr": ""}, handle)
    return root


def facts_of(root):
    tree = NodeTree(root)
    facts = gather(tree, RecordedCommands(tree))
    strictly_serialisable(facts)
    return facts


# --- integers: ASCII digits, bounded, in range ---------------------------------------------------------


@pytest.mark.parametrize("text", [u"\u00b9", u"\u0663", u"\uff11", "1_0", "+1", "0x1", " ", "", "1.0", "-0-", "9" * 21])
def test_parse_int_accepts_only_ascii_digits(text):
    value, error = node_values.parse_int(text, "index", 0, 10 ** 30)
    assert value is None
    assert error.startswith("index: ") and len(error) < 200


def test_parse_int_good_values_and_range():
    assert node_values.parse_int(" 7\n", "numa_node", -1, 4095) == (7, None)
    assert node_values.parse_int("-1", "numa_node", -1, 4095) == (-1, None)
    value, error = node_values.parse_int("4096", "numa_node", -1, 4095)
    assert value is None and "out of range" in error


def test_parse_int_of_5000_digits_is_bounded_not_a_crash():
    value, error = node_values.parse_int("9" * 5000, "memory.total", 0, 1 << 24)
    assert value is None
    assert "(5000 characters)" in error and len(error) < 200


@pytest.mark.parametrize("text,digits,expected", [
    ("0x10de", 4, "0x10de"), ("0x10DE\n", 4, "0x10de"), ("0x030200", 6, "0x030200"),
    ("10de", 4, None), ("0x10d\u0663", 4, None), ("0x" + "f" * 4000, 4, None), ("0x10de0", 4, None), ("0xg0de", 4, None),
])
def test_hex_ids(text, digits, expected):
    value, error = node_values.hex_id(text, "device", digits)
    assert value == expected
    assert (error is None) == (expected is not None)
    if error:
        assert len(error) < 200


@pytest.mark.parametrize("index", [u"\u00b9", u"\u0663"])
def test_nvidia_smi_unicode_digit_index_is_a_problem(index):
    header = nvidia_smi.ARGV[1].split("=", 1)[1].replace(",", ", ") + "\n"
    problems = []
    gpus = nvidia_smi.parse_query_csv(header + SMI_ROW % (index, "143771"), problems)
    assert gpus[0]["index"] is None and gpus[0]["memory_mib"] == 143771
    assert problems == ["line 2: index: %r is not an integer from 0 to 1023" % index]


def test_nvidia_smi_unicode_index_through_the_facts(tmp_path):
    root = one_gpu_tree(tmp_path, node_trees.SMI_HEADER + SMI_ROW % (u"\u00b9", "143771"))
    facts = facts_of(root)
    assert facts["nvidia_smi"]["status"] == "ok"
    assert facts["gpus"][0]["index"] is None and facts["gpus"][0]["memory_mib"] == 143771
    assert any("index" in r and u"\u00b9" in r for r in problems_at(facts, "nvidia-smi"))


def test_nvidia_smi_5000_digit_memory_through_the_facts(tmp_path):
    root = one_gpu_tree(tmp_path, node_trees.SMI_HEADER + SMI_ROW % ("0", "9" * 5000))
    facts = facts_of(root)
    assert facts["gpus"][0]["index"] == 0 and facts["gpus"][0]["memory_mib"] is None
    reasons = [r for r in problems_at(facts, "nvidia-smi") if "memory.total" in r]
    assert reasons and all(len(r) < 300 for r in reasons)


def test_nvidia_smi_bad_device_id_and_overlong_name(tmp_path):
    header = nvidia_smi.ARGV[1].split("=", 1)[1].replace(",", ", ") + "\n"
    row = SMI_ROW.replace("0x233510DE", "0x2335\u0663\u0663DE").replace("NVIDIA H200", "N" * 5000)
    problems = []
    gpu = nvidia_smi.parse_query_csv(header + row % ("0", "1"), problems)[0]
    assert gpu["device_id"] is None and gpu["name"] is None
    assert len(problems) == 2 and all(len(p) < 300 for p in problems)


def test_numa_node_in_unicode_digits_is_a_problem(tmp_path):
    root = one_gpu_tree(tmp_path)
    with open(os.path.join(root, "sys/bus/pci/devices/0000:17:00.0/numa_node"), "w", encoding="utf-8") as handle:
        handle.write(u"\u0663\n")
    facts = facts_of(root)
    assert facts["gpus"][0]["numa_node"] is None
    assert problems_at(facts, "/sys/bus/pci/devices/0000:17:00.0/numa_node")


def test_recorded_rc_infinity_is_a_problem(tmp_path):
    # RecordedCommands (node_tree.py) checks rc itself; node_values.command_rc is the same rule.
    root = one_gpu_tree(tmp_path)
    with open(os.path.join(root, ".gpufleet/commands/nvidia-smi.json"), "w") as handle:
        handle.write('{"rc": Infinity, "stdout": "", "stderr": ""}')
    facts = facts_of(root)
    assert facts["nvidia_smi"]["status"] == "missing"
    assert problems_at(facts, "/.gpufleet/commands/nvidia-smi.json")
    assert facts["gpu_count"] == 1


@pytest.mark.parametrize("rc", [float("inf"), float("nan"), True, 1e300, 10 ** 40, 256, "0", None])
def test_command_rc_rule(rc):
    value, error = node_values.command_rc(rc)
    assert value is None and error.startswith("rc: ") and len(error) < 200


def test_command_rc_good():
    assert node_values.command_rc(0) == (0, None) and node_values.command_rc(-9) == (-9, None)


def test_check_float_requires_finite():
    assert node_values.check_float(1.5, "x") == (1.5, None)
    for bad in (float("inf"), float("-inf"), float("nan"), True, "1"):
        value, error = node_values.check_float(bad, "x")
        assert value is None and error.startswith("x: ")


# --- TOML: deep nesting and NUL bytes ---------------------------------------------------------------------


DEEP_DOTTED = "version = 2\n[" + ".".join(["a"] * 2000) + "]\nx = 1\n"


def test_redaction_of_a_2000_deep_config_is_iterative_and_cut():
    config = {}
    node = config
    for _level in range(2000):
        node["registry"] = {}
        node = node["registry"]
    node["password"] = "s3cr3t"
    cut = []
    red = redact_registry_credentials(config, cut)
    depth = 0
    node = red
    while isinstance(node, dict):
        node = node["registry"]
        depth += 1
    assert node == "<cut: nested deeper than %d levels>" % MAX_CONFIG_DEPTH
    assert depth == MAX_CONFIG_DEPTH
    assert len(cut) == 1 and len(cut[0]) == MAX_CONFIG_DEPTH
    assert "s3cr3t" not in json.dumps(red)


def test_redaction_still_redacts_and_keeps_lists():
    config = {"plugins": {"x": {"registry": {"configs": {"r": {"auth": {"password": "p", "tls": [{"token": "t"}, 1]}}}}}}}
    red = redact_registry_credentials(config)
    auth = red["plugins"]["x"]["registry"]["configs"]["r"]["auth"]
    assert auth == {"password": "<redacted>", "tls": [{"token": "<redacted>"}, 1]}
    assert config["plugins"]["x"]["registry"]["configs"]["r"]["auth"]["password"] == "p"


def test_2000_deep_dotted_key_through_node_and_controller(tmp_path):
    root = node_trees.build_tree(tmp_path, dict(node_trees.shapes()["no-gpu"], containerd_version=CONTAINERD_2,
                                                files={"/etc/containerd/config.toml": DEEP_DOTTED})) or str(tmp_path)
    tree = NodeTree(root)
    facts, raw = gpu_node.collect(tree, RecordedCommands(tree))  # the node's textual scan
    strictly_serialisable(raw)
    complete(facts, raw)  # tomllib, redaction, merge, analysis on the controller
    strictly_serialisable(facts)
    assert facts["containerd"]["config_version"] == 2 and facts["containerd"]["config_error"] is None
    reasons = problems_at(facts, "/etc/containerd/config.toml")
    assert any("nested deeper than %d levels" % MAX_CONFIG_DEPTH in r for r in reasons)
    assert all(len(r) < 400 for r in reasons)


def test_nul_in_toml_strings_used_as_paths_is_a_problem(tmp_path):
    # TOML's \u0000 escape: the parsed value holds a NUL byte; it is never used as a path.
    config = ('version = 3\nimports = ["/etc/containerd/\\u0000x.toml"]\n'
              "[plugins.'io.containerd.cri.v1.runtime']\n  enable_cdi = true\n"
              '  cdi_spec_dirs = ["/opt/\\u0000cdi", "/etc/cdi"]\n')
    root = node_trees.build_tree(tmp_path, dict(node_trees.shapes()["no-gpu"], containerd_version=CONTAINERD_2,
                                                files={"/etc/containerd/config.toml": config})) or str(tmp_path)
    facts = facts_of(root)
    reasons = problems_at(facts, "/etc/containerd/config.toml")
    assert "cdi_spec_dirs: entry '/opt/\\x00cdi' holds a NUL byte; ignored" in reasons
    assert "imports: entry '/etc/containerd/\\x00x.toml' holds a NUL byte; ignored" in reasons
    assert facts["containerd"]["cdi_spec_dirs"] == ["/etc/cdi"]
    assert facts["containerd"]["imports"] == []
    assert facts["containerd"]["cdi_enabled"] is True


def test_relative_containerd_config_is_refused(run_module, tmp_path):
    result = run_module(gpu_node_facts, {"root": str(tmp_path), "containerd_config": "etc/containerd/config.toml"})
    assert result["failed"] is True
    assert result["msg"].startswith("containerd_config: 'etc/containerd/config.toml' is not an absolute path")
    assert "absolute node path" in result["msg"]


def test_containerd_config_with_nul_is_refused(run_module, tmp_path):
    result = run_module(gpu_node_facts, {"root": str(tmp_path), "containerd_config": "/etc/containerd/\x00.toml"})
    assert result["failed"] is True
    assert result["msg"].startswith("containerd_config: ") and "NUL" in result["msg"]


def test_huge_hex_config_version_on_containerd_1_6(tmp_path):
    config = "version = 0x" + "f" * 4000 + "\n"
    root = node_trees.build_tree(tmp_path, dict(node_trees.shapes()["no-gpu"], containerd_version=CONTAINERD_16,
                                                files={"/etc/containerd/config.toml": config})) or str(tmp_path)
    facts = facts_of(root)  # serialises: no 4,800-digit integer in the facts
    assert facts["containerd"]["config_version"] is None
    reasons = problems_at(facts, "/etc/containerd/config.toml")
    assert any(r.startswith("version: <an integer of 16000 bits> is out of range") for r in reasons)


@pytest.mark.parametrize("version", [-1, 10 ** 30, 1001, True, 2.0, float("nan")])
def test_config_version_outside_the_range(version):
    res = analyse_config({"version": version}, "2.3.1")
    assert res["config_version"] is None and res["cdi_enabled"] is None
    strictly_serialisable({k: v for k, v in res.items() if k != "binary_version"})


# --- YAML: aliases bounded before expansion -------------------------------------------------------------


def billion_laughs(levels=9):
    lines = ["kind: nvidia.com/gpu", "devices: [{name: all}]", "x0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels):
        lines.append("x%d: &x%d [%s]" % (level, level, ", ".join(["*x%d" % (level - 1)] * 9)))
    lines.append("cdiVersion: [%s]" % ", ".join(["*x%d" % (levels - 1)] * 9))
    return "\n".join(lines) + "\n"


def test_alias_bomb_in_cdi_version_is_refused_quickly_in_bounded_memory():
    text = billion_laughs()
    assert len(text) < 1000
    tracemalloc.start()
    try:
        started = time.monotonic()
        spec = cdi.parse_cdi_spec(text, "/etc/cdi/bomb.yaml")
        elapsed = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "alias bomb" in spec["error"]
    assert spec["cdi_version"] is None
    assert elapsed < 5
    assert peak < 50 * 1024 * 1024
    assert len(spec["error"]) < 300


def test_alias_bomb_through_the_facts(tmp_path):
    root = node_trees.build_tree(tmp_path, dict(node_trees.shapes()["no-gpu"], containerd_version=CONTAINERD_2,
                                                files={"/etc/cdi/bomb.yaml": billion_laughs()})) or str(tmp_path)
    facts = facts_of(root)
    spec = [s for s in facts["cdi"]["specs"] if s["path"] == "/etc/cdi/bomb.yaml"][0]
    assert "alias bomb" in spec["error"] and len(json.dumps(facts)) < 20000


def test_recursive_alias_is_refused():
    data, error = cdi.load_spec_text("cdiVersion: &a [*a]\nkind: a.com/b\n")
    assert data is None and "alias" in error


def test_small_aliases_still_load():
    text = ('cdiVersion: "0.5.0"\nkind: nvidia.com/gpu\ndevices:\n- name: "0"\n  containerEdits: &e\n'
            '    deviceNodes: [{path: /dev/nvidia0}]\n- name: "1"\n  containerEdits: *e\n')
    assert cdi.parse_cdi_spec(text, "p")["error"] is None


def test_alias_shared_value_in_a_message_is_not_expanded():
    # Below the alias bound, but a repr of the value would still be 9**4 strings: messages never expand.
    spec = cdi.parse_cdi_spec(billion_laughs(levels=4), "p")
    assert "cdiVersion must be a string" in spec["error"] and len(spec["error"]) < 300


def test_oversized_spec_text_and_long_values_are_bounded():
    data, error = cdi.load_spec_text("#" * (cdi.MAX_SPEC_CHARS + 1))
    assert data is None and "larger than" in error
    spec = cdi.parse_cdi_spec('cdiVersion: "%s"\nkind: "%s"\ndevices: [{name: all}]\n' % ("9" * 100000, "k" * 100000), "p")
    assert "unknown cdiVersion" in spec["error"] and len(spec["error"]) < 1000
    spec = cdi.parse_cdi_spec("cdiVersion: 0x%s\nkind: a.com/b\ndevices: [{name: all}]\n" % ("f" * 5000), "p")
    assert "cdiVersion must be a string" in spec["error"] and len(spec["error"]) < 300


# --- names that are not UTF-8, non-finite floats, huge integers: the result always serialises -----------


def test_sanitize_escapes_lone_surrogates_in_values_and_keys():
    value = {"nics": [{"name": "eth\udcff0"}], "files": {"/etc/cdi/x\udcfe.yaml": {"text": "t"}}, "ok": u"caf\u00e9"}
    clean, notes = node_values.sanitize(value, "gpu_node")
    assert clean["nics"][0]["name"] == "eth\\xff0"
    assert list(clean["files"]) == ["/etc/cdi/x\\xfe.yaml"]
    assert clean["ok"] == u"caf\u00e9"
    strictly_serialisable(clean)
    strictly_serialisable(notes)
    assert {n["path"] for n in notes} == {"gpu_node.nics[0].name", "gpu_node.files"}
    assert all("backslash escapes" in n["reason"] for n in notes)


def test_sanitize_numbers_depth_and_other_types():
    deep = []
    for _level in range(100000):  # far deeper than the recursion limit
        deep = [deep]
    value = {"inf": float("inf"), "nan": float("nan"), "big": 2 ** 64, "huge": 1 << 20000, "fine": 2 ** 62,
             "neg": -(2 ** 64), "deep": deep, "set": {1, 2}, "bytes": b"\xff", "tuple": (1, 2), 5: "int key"}
    clean, notes = node_values.sanitize(value, "r")
    assert clean["inf"] is None and clean["nan"] is None
    assert clean["big"] == str(2 ** 64) and clean["neg"] == str(-(2 ** 64))
    assert clean["huge"] == "<an integer of 20001 bits>"
    assert clean["fine"] == 2 ** 62
    assert clean["tuple"] == [1, 2] and clean["5"] == "int key"
    assert clean["bytes"] == "\\xff"
    depth, node = 0, clean["deep"]
    while isinstance(node, list):
        node, depth = node[0], depth + 1
    assert node == node_values.DEPTH_MARKER and depth == node_values.MAX_DEPTH - 1
    strictly_serialisable(clean)
    paths = [n["path"] for n in notes]
    for path in ("r.inf", "r.nan", "r.big", "r.huge", "r.neg", "r.set", "r.bytes"):
        assert path in paths
    assert any("nested deeper" in n["reason"] for n in notes)


def test_sanitize_bounds_its_notes():
    clean, notes = node_values.sanitize([float("nan")] * 1000, "x")
    assert clean == [None] * 1000
    assert len(notes) == node_values.MAX_NOTES + 1 and notes[-1]["reason"].startswith("%d more" % (1000 - node_values.MAX_NOTES))


def test_quote_is_bounded_and_never_expands():
    shared = ["lol"] * 9
    for _level in range(8):
        shared = [shared] * 9  # 9**9 leaves if expanded
    assert node_values.quote(shared) == "<list of 9 items>"
    assert node_values.quote(1 << 20000) == "<an integer of 20001 bits>"
    assert node_values.quote("x" * 10000) == "%r... (10000 characters)" % ("x" * 64)
    assert node_values.quote(["/x"]) == "['/x']"
    assert node_values.quote("eth\udcff") == "'eth\\udcff'"
    strictly_serialisable(node_values.quote("eth\udcff"))


def test_non_utf8_driver_link_through_the_module(run_module, tmp_path):
    root = one_gpu_tree(tmp_path)
    link = os.path.join(root, "sys/bus/pci/devices/0000:17:00.0/driver").encode()
    os.unlink(link)
    os.symlink(b"../../../bus/pci/drivers/nvidia\xff", link)
    result = run_module(gpu_node_facts, {"root": root})
    strictly_serialisable(result)
    facts = result["ansible_facts"]["gpu_node"]
    assert facts["gpus"][0]["kernel_driver"] == "nvidia\\xff"
    assert any(p["path"] == "gpu_node.gpus[0].kernel_driver" and "backslash escapes" in p["reason"]
               for p in facts["problems"])


def test_non_utf8_names_in_raw_keys_match_on_the_controller():
    # A CDI spec file name with an undecodable byte: escaped the same way in the raw listing and the
    # raw files, so the controller still finds (and checks) the spec.
    facts = {"containerd": {"present": False, "cdi_spec_dirs": []}, "problems": []}
    raw = {"containerd": {"present": False}, "cdi": {"dirs": {"/etc/cdi": ["nv\udcff.yaml"], "/var/run/cdi": None}},
           "files": {"/etc/cdi/nv\udcff.yaml": {
               "text": 'cdiVersion: "0.5.0"\nkind: nvidia.com/gpu\ndevices: [{name: all}]\n', "error": None}}}
    raw, _notes = node_values.sanitize(raw, "gpu_node_raw")
    complete(facts, raw)
    strictly_serialisable(facts)
    assert facts["cdi"]["specs"][0]["path"] == "/etc/cdi/nv\\xff.yaml"
    assert facts["cdi"]["specs"][0]["error"] is None


# --- the action plugin with a malformed module result ---------------------------------------------------


def make_action(module_result):
    task = MagicMock()
    task.args = {"root": "/x"}
    task.async_val = 0
    task.check_mode = False
    task.action = "gpufleet.dra_gate.gpu_node_facts"
    connection = MagicMock()
    connection._shell.tmpdir = None
    action = FactsAction(task, connection, PlayContext(), MagicMock(), MagicMock(), None)
    action._execute_module = MagicMock(return_value=module_result)
    return action


@pytest.mark.parametrize("module_result,fragment", [
    ({"changed": False}, "holds no facts mapping at ansible_facts.gpu_node"),
    ({"changed": False, "ansible_facts": {"gpu_node": "facts"}}, "holds no facts mapping"),
    ({"changed": False, "ansible_facts": ["gpu_node"]}, "holds no facts mapping"),
])
def test_action_result_without_facts_fails_with_a_message(module_result, fragment):
    result = make_action(module_result).run(task_vars={})
    assert result["failed"] is True and fragment in result["msg"]
    strictly_serialisable(result)


def test_action_module_result_not_a_mapping():
    result = make_action(["not", "a", "dict"]).run(task_vars={})
    assert result["failed"] is True and "not a result mapping" in result["msg"]


def test_action_repairs_a_malformed_facts_document():
    deep = {}
    node = deep
    for _level in range(3000):
        node["k"] = {}
        node = node["k"]
    facts = {"schema_version": True, "gpus": "none", "containerd": ["x"], "problems": "oops",
             "network": {"nics": [{"name": "eth\udcff", "numa_node": float("nan")}]}, "gpu_count": 10 ** 40,
             "kernel": deep, "firmware": {"bios_vendor": {1, 2}}}
    raw = {"containerd": {"present": True, "config_path": 5}, "files": {5: {"text": 7}}, "cdi": {"dirs": {"/etc/cdi": [None, 3]}}}
    result = make_action({"changed": False, "ansible_facts": {"gpu_node": facts}, "gpu_node_raw": raw}).run(task_vars={})
    strictly_serialisable(result)
    assert "gpu_node_raw" not in result and not result.get("failed")
    gpu_node_facts_out = result["ansible_facts"]["gpu_node"]
    reasons = [p["reason"] for p in gpu_node_facts_out["problems"]]
    for fragment in ("'problems' is a str, not a list", "'gpus' is a str, not a list", "'containerd' is a list, not a dict",
                     "'schema_version' is a bool, not a int", "'root' missing", "'cdi' missing"):
        assert any(fragment in r for r in reasons), fragment
    assert gpu_node_facts_out["gpus"] == [] and isinstance(gpu_node_facts_out["containerd"], dict)
    assert gpu_node_facts_out["network"]["nics"][0] == {"name": "eth\\xff", "numa_node": None}
    # Made a string by the sanitizer (beyond 2**63), then no int: replaced, both said.
    assert gpu_node_facts_out["gpu_count"] is None
    assert any("integer out of range" in r for r in reasons) and any("'gpu_count' is a str" in r for r in reasons)
    assert isinstance(gpu_node_facts_out["cdi"], dict)
    assert any("nested deeper" in r for r in reasons)
    assert all(isinstance(p["path"], str) and isinstance(p["reason"], str) for p in gpu_node_facts_out["problems"])


def test_action_completion_failure_is_a_problem_not_a_traceback(monkeypatch):
    from ansible_collections.gpufleet.dra_gate.plugins.action import gpu_node_facts as action_mod

    def broken(facts, raw):
        raise KeyError("x" * 10000)

    monkeypatch.setattr(action_mod, "complete", broken)
    facts = {"problems": [], "containerd": {}, "cdi": {}}
    result = make_action({"changed": False, "ansible_facts": {"gpu_node": facts}, "gpu_node_raw": {}}).run(task_vars={})
    reasons = [p["reason"] for p in result["ansible_facts"]["gpu_node"]["problems"]]
    completion = [r for r in reasons if r.startswith("containerd and CDI facts not completed on the controller: KeyError")]
    assert completion and len(completion[0]) < 500


def test_action_passes_good_facts_through_unchanged_in_shape(tmp_path):
    root = node_trees.build_tree(tmp_path, node_trees.shapes()["ubuntu2204-containerd2-cdi"]) or str(tmp_path)
    tree = NodeTree(root)
    facts, raw = gpu_node.collect(tree, RecordedCommands(tree))
    result = make_action({"changed": False, "ansible_facts": {"gpu_node": facts}, "gpu_node_raw": raw}).run(task_vars={})
    out = result["ansible_facts"]["gpu_node"]
    assert out["problems"] == [] and out["containerd"]["cdi_enabled"] is True
    assert not math.isnan(float(out["schema_version"]))
