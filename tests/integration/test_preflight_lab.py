# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight phase against each lab scenario: node facts from the lab nodes' trees, cluster
facts through the lab's API, and the verdict each scenario must produce."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")


def env():
    result = dict(os.environ)
    result.update(ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".cache", "collections"), ANSIBLE_NOCOLOR="1",
                  PATH=VENV_BIN + os.pathsep + result.get("PATH", ""), PYTHONPATH=os.path.join(REPO, "lab"),
                  ANSIBLE_LOCALHOST_WARNING="false")
    return result


def kubelab(*args, timeout=300):
    return subprocess.run([os.path.join(VENV_BIN, "python"), "-m", "kubelab"] + list(args), env=env(), cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture
def scenario_lab(tmp_path):
    started = []

    def start(name):
        labdir = str(tmp_path / ("lab-" + name))
        proc = kubelab("start", "--dir", labdir, "--scenario", os.path.join(REPO, "lab", "scenarios", name + ".yml"),
                       "--background")
        assert proc.returncode == 0, proc.stderr
        started.append(labdir)
        assert kubelab("settle", "--dir", labdir, "--timeout", "180").returncode == 0
        return labdir

    yield start
    for labdir in started:
        kubelab("stop", "--dir", labdir)


def preflight(labdir, tmp_path, *extra):
    evidence = tmp_path / "evidence"
    evidence.mkdir(mode=0o700, exist_ok=True)  # the phases refuse a missing evidence root
    argv = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", os.path.join(labdir, "inventory.yml"),
            "playbooks/preflight.yml", "-e", "dra_gate_evidence_root=%s" % evidence, "-e", "dra_gate_run_id=lab",
            "-e", "dra_gate_fail_on=never"] + list(extra)
    proc = subprocess.run(argv, env=env(), cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    with open(str(evidence / "lab" / "index.json")) as handle:
        latest = [e for e in json.load(handle)["records"] if e["phase"] == "preflight"][-1]
    with open(str(evidence / "lab" / latest["file"])) as handle:
        return json.load(handle)


def blocks(record):
    return {(f["id"], f["subject"]) for f in record["results"]["findings"] if f["severity"] == "block"}


def test_prod_device_plugin_upgrade_passes(scenario_lab, tmp_path):
    record = preflight(scenario_lab("prod-26.3-device-plugin"), tmp_path)
    assert record["results"]["verdict"] == "pass", record["results"]["findings"]
    cluster = record["cluster"]
    assert cluster["api_server"]["version"].startswith("1.37")
    assert {n["gpu_backend"] for name, n in cluster["nodes"].items() if name.startswith("gpu-")} == {"device_plugin"}
    assert [p["state"] for p in cluster["operator"]["cluster_policies"]] == ["ready"]


def test_both_crs_block_naming_the_objects(scenario_lab, tmp_path):
    record = preflight(scenario_lab("both-crs"), tmp_path)
    assert record["results"]["verdict"] == "block"
    finding = [f for f in record["results"]["findings"] if f["id"] == "operator.exclusive_resources"][0]
    assert finding["severity"] == "block"
    assert "ClusterPolicy cluster-policy" in finding["message"] and "GPUCluster gpu-cluster" in finding["message"]


def test_kubelet_skew_blocks_on_the_node(scenario_lab, tmp_path):
    record = preflight(scenario_lab("kubelet-skew"), tmp_path)
    assert record["results"]["verdict"] == "block"
    skew = [f for f in record["results"]["findings"] if f["id"] == "kubelet.skew" and f["severity"] == "block"]
    assert [f["observed"] for f in skew] == ["1.33.5"]


def test_two_backends_on_one_node_block(scenario_lab, tmp_path):
    record = preflight(scenario_lab("two-backends-one-node"), tmp_path)
    assert record["results"]["verdict"] == "block"
    assert ("backend.single_per_node", "gpu-1") in blocks(record)
    assert not any(subject == "gpu-2" for finding_id, subject in blocks(record) if finding_id == "backend.single_per_node")


def test_dra_canary_qualifies_for_dra(scenario_lab, tmp_path):
    record = preflight(scenario_lab("dra-canary"), tmp_path, "-e", "dra_gate_target_allocation_mode=dra")
    assert record["results"]["verdict"] != "block", sorted(blocks(record))
    cluster = record["cluster"]
    assert cluster["apis"]["resource_k8s_io_v1"] is True
    assert all(n["gpu_backend"] == "dra" for name, n in cluster["nodes"].items() if name.startswith("canary-"))
