# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight phase and the support bundle as a user runs them: real ansible-playbook runs.

Node trees: this machine itself (no GPU), the bundle recorded on the real H200 machine, and
constructed shapes, each read through the root prefix with the recorded command outputs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import tarfile

import pytest
import yaml

import node_trees

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")


def ansible_env():
    env = dict(os.environ)
    env["ANSIBLE_COLLECTIONS_PATH"] = os.path.join(REPO, ".cache", "collections")
    env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "")
    env["ANSIBLE_LOCALHOST_WARNING"] = "false"
    env["ANSIBLE_NOCOLOR"] = "1"
    env["ANSIBLE_FORCE_COLOR"] = "0"
    return env


def playbook(*args, cwd=REPO):
    argv = [os.path.join(VENV_BIN, "ansible-playbook")] + list(args)
    return subprocess.run(argv, cwd=cwd, env=ansible_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)


def write_inventory(path, trees):
    hosts = {}
    for name, root in trees.items():
        hosts[name] = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                       "dra_gate_node_root": root, "dra_gate_node_commands": "recorded"}
    with open(str(path), "w") as handle:
        yaml.safe_dump({"all": {"children": {"gpu_nodes": {"hosts": hosts}}}}, handle)
    return str(path)


def load_record(evidence, run_id):
    with open(os.path.join(str(evidence), run_id, "01-preflight.json")) as handle:
        return json.load(handle)


def ids(record, severity=None):
    return {f["id"] for f in record["results"]["findings"] if severity is None or f["severity"] == severity}


def _run_wrapper(tmp_path, *args):
    evidence = tmp_path / "evidence"
    env = dict(ansible_env(), DRA_GATE_EVIDENCE_ROOT=str(evidence))
    proc = subprocess.run([os.path.join(REPO, "dra-gate"), "preflight"] + list(args), cwd=REPO, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=900,
                          check=False)
    assert "Traceback" not in proc.stdout
    return proc, evidence


def test_readme_command_one_runs_the_lab_default(tmp_path):
    """``./dra-gate preflight``: the lab with prod-26.3-device-plugin, node facts from the lab nodes'
    trees, cluster facts through the lab API, evidence and summary; verdict PASS with the hops."""
    proc, evidence = _run_wrapper(tmp_path, "-e", "dra_gate_run_id=readme")
    assert proc.returncode == 0, proc.stdout[-3000:]
    record = load_record(evidence, "readme")
    summary = (evidence / "readme" / "summary.md").read_text()
    assert summary in proc.stdout  # the wrapper prints it
    assert record["results"]["verdict"] == "pass"
    assert sorted(record["nodes"]) == ["gpu-%d" % i for i in range(1, 7)]
    assert record["cluster"]["operator"]["helm_release"]["chart_version"] == "v26.3.1"
    assert [hop["to"] for hop in record["results"]["upgrade_path"]] == ["26.6.x", "26.7.0"]
    assert "Operator upgrade path: v26.3.1 → 26.6.x → 26.7.0" in summary


def test_readme_command_one_on_this_machine(tmp_path):
    """``./dra-gate preflight --localhost`` gives this machine a verdict and a summary, never a crash."""
    proc, evidence = _run_wrapper(tmp_path, "--localhost", "-e", "dra_gate_run_id=local")
    record = load_record(evidence, "local")
    summary = (evidence / "local" / "summary.md").read_text()
    assert "# Preflight: verdict %s" % record["results"]["verdict"].upper() in summary
    assert summary in proc.stdout
    assert (proc.returncode == 0) == (record["results"]["verdict"] != "block"), proc.stdout[-3000:]
    if not os.path.exists("/proc/driver/nvidia/version"):
        assert "driver.not_found" in ids(record, "block")
        assert "no NVIDIA driver found" in summary


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    base = tmp_path_factory.mktemp("fleet")
    trees = {"h200-vm": node_trees.h200_tree(base / "h200-vm")}
    for name in ("hgx-8gpu-2numa", "vfio-passthrough", "containerd17-v2"):
        trees[name] = node_trees.build_tree(base / name, node_trees.shapes()[name])
    return write_inventory(base / "hosts.yml", trees)


def test_device_plugin_upgrade_preflight_over_a_mixed_fleet(fleet, tmp_path):
    evidence = tmp_path / "evidence"
    proc = playbook("-i", fleet, "playbooks/preflight.yml", "-e", "dra_gate_evidence_root=%s" % evidence,
                    "-e", "dra_gate_run_id=mixed", "-e", "dra_gate_fail_on=never")
    assert proc.returncode == 0, proc.stdout[-3000:]
    record = load_record(evidence, "mixed")
    assert sorted(record["nodes"]) == ["containerd17-v2", "h200-vm", "hgx-8gpu-2numa", "vfio-passthrough"]
    assert record["nodes"]["h200-vm"]["gpus"][0]["name"] == "NVIDIA H200"
    subjects = {(f["id"], f["subject"]) for f in record["results"]["findings"]}
    # containerd 1.7 is outside NVIDIA's validated 2.0-2.3 (block); no containerd on the H200 VM
    # is "not assessed", not a pass.
    assert ("containerd.validated_range", "containerd17-v2") in subjects
    assert any(i.startswith("containerd") and i.endswith("not_assessed") and s == "h200-vm" for i, s in subjects)
    assert record["results"]["verdict"] == "block"
    assert record["results"]["counts"]["block"] == len([f for f in record["results"]["findings"] if f["severity"] == "block"])


def test_gate_fails_the_play_after_writing_evidence(fleet, tmp_path):
    evidence = tmp_path / "evidence"
    proc = playbook("-i", fleet, "playbooks/preflight.yml", "-e", "dra_gate_evidence_root=%s" % evidence,
                    "-e", "dra_gate_run_id=gated")
    assert proc.returncode != 0
    assert "Preflight verdict BLOCK" in proc.stdout
    assert load_record(evidence, "gated")["results"]["verdict"] == "block"


def test_dra_canary_with_passthrough_needs_explicit_acceptance(tmp_path):
    root = node_trees.build_tree(tmp_path / "vfio", node_trees.shapes()["vfio-passthrough"])
    inventory = write_inventory(tmp_path / "hosts.yml", {"canary-1": root})
    evidence = tmp_path / "evidence"
    common = ["-i", inventory, "playbooks/preflight.yml", "-e", "dra_gate_evidence_root=%s" % evidence,
              "-e", "dra_gate_fail_on=never", "-e", "dra_gate_target_allocation_mode=dra",
              "-e", "dra_gate_target_passthrough=true"]
    assert playbook(*(common + ["-e", "dra_gate_run_id=refused"])).returncode == 0
    refused = load_record(evidence, "refused")
    assert any("passthrough" in i for i in ids(refused, "block"))
    assert playbook(*(common + ["-e", "dra_gate_run_id=accepted", "-e", "dra_gate_accept_alpha_passthrough=true"])).returncode == 0
    accepted = load_record(evidence, "accepted")
    assert not any("passthrough" in i for i in ids(accepted, "block"))


def test_check_mode_writes_no_evidence(fleet, tmp_path):
    evidence = tmp_path / "evidence"
    proc = playbook("-i", fleet, "playbooks/preflight.yml", "--check", "--diff", "-e", "dra_gate_evidence_root=%s" % evidence,
                    "-e", "dra_gate_run_id=checked", "-e", "dra_gate_fail_on=never")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert not evidence.exists()


@pytest.mark.parametrize("extra,field", [
    ("dra_gate_target_allocation_mode=banana", "preflight_target_allocation_mode"),
    ("dra_gate_evidence_root=relative/dir", "preflight_evidence_root"),
    ("dra_gate_run_id=../up", "preflight_run_id"),
])
def test_bad_input_fails_before_anything_is_written(fleet, tmp_path, extra, field):
    evidence = tmp_path / "evidence"
    args = ["-i", fleet, "playbooks/preflight.yml", "-e", extra]
    if "evidence_root" not in extra:
        args += ["-e", "dra_gate_evidence_root=%s" % evidence]
    proc = playbook(*args)
    assert proc.returncode != 0
    assert field in proc.stdout
    assert "Traceback" not in proc.stdout
    assert not evidence.exists()


def test_support_bundle_playbook_round_trip(tmp_path):
    """The support bundle of this machine, unpacked, gives the facts this machine gives."""
    bundles = tmp_path / "bundles"
    proc = playbook("-i", "inventories/local", "playbooks/support_bundle.yml", "-e", "dra_gate_bundle_dir=%s" % bundles,
                    "-e", "dra_gate_bundle_hosts=localhost")
    assert proc.returncode == 0, proc.stdout[-3000:]
    bundle = bundles / "localhost.tar.gz"
    assert oct(os.stat(str(bundle)).st_mode & 0o777) == "0o600"
    with tarfile.open(str(bundle)) as tar:
        live = json.load(tar.extractfile(".gpufleet/bundle.json"))["facts"]
    tree = tmp_path / "tree"
    tree.mkdir()
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.gpu_node import gather
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node_bundle import extract_bundle
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node_tree import NodeTree, RecordedCommands
    extract_bundle(str(bundle), str(tree))
    replay = NodeTree(str(tree))
    replayed = gather(replay, RecordedCommands(replay))
    for key in ("os", "kernel", "driver", "gpus", "iommu", "cdi", "containerd", "kubelet"):
        assert replayed[key] == live[key], key
