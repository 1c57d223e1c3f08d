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


def private_root(tmp_path):
    """The evidence root, made as an operator makes it (the phases refuse a missing or shared one)."""
    root = tmp_path / "evidence"
    root.mkdir(mode=0o700)
    return root


def load_record(evidence, run_id, attempt=None):
    """The run's preflight record: the latest attempt the evidence index lists, or ``attempt``."""
    with open(os.path.join(str(evidence), run_id, "index.json")) as handle:
        index = json.load(handle)
    entries = [e for e in index["records"] if e["phase"] == "preflight" and attempt in (None, e["attempt"])]
    with open(os.path.join(str(evidence), run_id, entries[-1]["file"])) as handle:
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
    evidence = private_root(tmp_path)
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
    evidence = private_root(tmp_path)
    proc = playbook("-i", fleet, "playbooks/preflight.yml", "-e", "dra_gate_evidence_root=%s" % evidence,
                    "-e", "dra_gate_run_id=gated")
    assert proc.returncode != 0
    assert "Preflight verdict BLOCK" in proc.stdout
    assert load_record(evidence, "gated")["results"]["verdict"] == "block"


def test_dra_canary_with_passthrough_needs_explicit_acceptance(tmp_path):
    root = node_trees.build_tree(tmp_path / "vfio", node_trees.shapes()["vfio-passthrough"])
    inventory = write_inventory(tmp_path / "hosts.yml", {"canary-1": root})
    evidence = private_root(tmp_path)
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
    evidence = private_root(tmp_path)
    proc = playbook("-i", fleet, "playbooks/preflight.yml", "--check", "--diff", "-e", "dra_gate_evidence_root=%s" % evidence,
                    "-e", "dra_gate_run_id=checked", "-e", "dra_gate_fail_on=never")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert os.listdir(str(evidence)) == []  # not even the run directory


@pytest.mark.parametrize("extra,field", [
    ("dra_gate_target_allocation_mode=banana", "preflight_target_allocation_mode"),
    ("dra_gate_evidence_root=relative/dir", "preflight_evidence_root"),
    ("dra_gate_run_id=../up", "preflight_run_id"),
])
def test_bad_input_fails_before_anything_is_written(fleet, tmp_path, extra, field):
    evidence = private_root(tmp_path)
    args = ["-i", fleet, "playbooks/preflight.yml", "-e", extra]
    if "evidence_root" not in extra:
        args += ["-e", "dra_gate_evidence_root=%s" % evidence]
    proc = playbook(*args)
    assert proc.returncode != 0
    assert field in proc.stdout
    assert "Traceback" not in proc.stdout
    assert os.listdir(str(evidence)) == []


@pytest.mark.parametrize("shape", ["missing", "shared"])
def test_a_missing_or_shared_evidence_root_is_refused_naming_it(fleet, tmp_path, shape):
    evidence = tmp_path / "evidence"
    if shape == "shared":
        evidence.mkdir()
        os.chmod(str(evidence), 0o777)
    proc = playbook("-i", fleet, "playbooks/preflight.yml", "-e", "dra_gate_evidence_root=%s" % evidence,
                    "-e", "dra_gate_run_id=refused", "-e", "dra_gate_fail_on=never")
    assert proc.returncode != 0
    assert "root: %s: the evidence root" % evidence in proc.stdout, proc.stdout[-3000:]
    assert "Gather GPU node facts" not in proc.stdout  # refused before anything is read
    assert not (evidence / "refused").exists()


def test_an_unreachable_or_failed_host_blocks_naming_it(tmp_path):
    """The first host unreachable (TEST-NET-1 over ssh), another failing (no such interpreter): both
    stay in the play, the controller steps still run, and the verdict is block naming each of them;
    a rerun in the same run id is a second attempt, the first kept."""
    root = node_trees.h200_tree(tmp_path / "h200-vm")
    inventory = tmp_path / "hosts.yml"
    hosts = {
        "gpu-0-unreachable": {"ansible_connection": "ssh", "ansible_host": "192.0.2.1", "ansible_user": "nobody",
                              "ansible_ssh_common_args": "-o ConnectTimeout=2 -o ConnectionAttempts=1 -o BatchMode=yes",
                              "ansible_timeout": 3},
        "gpu-1-broken": {"ansible_connection": "local", "ansible_python_interpreter": "/nonexistent/bin/python3"},
        "h200-vm": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                    "dra_gate_node_root": root, "dra_gate_node_commands": "recorded"},
    }
    with open(str(inventory), "w") as handle:
        yaml.safe_dump({"all": {"children": {"gpu_nodes": {"hosts": hosts}}}}, handle)
    evidence = private_root(tmp_path)
    common = ["-i", str(inventory), "playbooks/preflight.yml", "-e", "dra_gate_evidence_root=%s" % evidence,
              "-e", "dra_gate_run_id=partial"]
    proc = playbook(*common)
    assert proc.returncode != 0
    assert "Preflight verdict BLOCK" in proc.stdout and "gpu-0-unreachable" in proc.stdout
    record = load_record(evidence, "partial")
    assert record["results"]["verdict"] == "block" and record["attempt"] == 1
    blocked = {f["subject"]: f for f in record["results"]["findings"] if f["severity"] == "block"}
    assert {"gpu-0-unreachable", "gpu-1-broken"} <= set(blocked)
    assert "unreachable" in json.dumps(blocked["gpu-0-unreachable"])
    assert "/nonexistent/bin/python3" in json.dumps(blocked["gpu-1-broken"])
    assert record["inputs"]["hosts"] == ["gpu-0-unreachable", "gpu-1-broken", "h200-vm"]
    assert sorted(record["inputs"]["failed_hosts"]) == ["gpu-0-unreachable", "gpu-1-broken"]
    assert sorted(record["nodes"]) == ["h200-vm"]  # facts only of the host that answered
    # a second attempt (fail_on never): a new record, the first one kept as it was
    first = (evidence / "partial" / "preflight-1.json").read_text()
    assert playbook(*(common + ["-e", "dra_gate_fail_on=never"])).returncode == 0
    assert (evidence / "partial" / "preflight-1.json").read_text() == first
    second = load_record(evidence, "partial")
    assert second["attempt"] == 2 and second["results"]["verdict"] == "block"
    with open(str(evidence / "partial" / "index.json")) as handle:
        assert [(e["file"], e["attempt"]) for e in json.load(handle)["records"]] == [
            ("preflight-1.json", 1), ("preflight-2.json", 2)]


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
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.gpu_node import collect
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.bundle import extract_bundle
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import NodeTree, RecordedCommands
    extract_bundle(str(bundle), str(tree))
    replay = NodeTree(str(tree))
    # bundle.json holds the node's part of the facts (containerd and CDI are parsed on the controller).
    replayed, _raw = collect(replay, RecordedCommands(replay))
    for key in ("os", "kernel", "driver", "gpus", "iommu", "network", "cdi", "containerd", "kubelet"):
        assert replayed[key] == live[key], key
