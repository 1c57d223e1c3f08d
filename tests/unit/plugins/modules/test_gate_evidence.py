# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gate_evidence: records, index, summaries, modes, check mode, diff and bad input."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.modules import gate_evidence

RECORD = {
    "started_at": "2026-11-30T08:00:00Z",
    "finished_at": "2026-11-30T08:00:05Z",
    "inputs": {"target": {"operator_version": "26.7.0", "kubernetes_version": "1.37.0", "allocation_mode": "device_plugin"}},
    "tools": {"ansible_core": "2.19.14"},
    "results": {
        "verdict": "block",
        "counts": {"block": 1, "warn": 0, "info": 1, "not_assessed": 1},
        "findings": [
            {"id": "driver.missing", "severity": "block", "subject": "localhost", "observed": None,
             "expected": "an NVIDIA driver", "message": "no NVIDIA driver found on localhost", "source": "seed"},
            {"id": "cluster.not_assessed", "severity": "info", "subject": "cluster", "observed": None,
             "expected": "cluster facts", "message": "cluster checks not assessed", "source": "x|y"},
        ],
        "upgrade_path": [],
    },
    "nodes": {"localhost": {"driver": {"loaded": False}, "gpus": [], "os": {"pretty_name": "Debian GNU/Linux 12"}}},
}


def args(tmp_path, **extra):
    base = {"root": str(tmp_path / "evidence"), "run_id": "20261130T080000Z", "phase": "preflight", "record": RECORD}
    base.update(extra)
    return base


def test_writes_record_index_and_summaries(run_module, tmp_path):
    result = run_module(gate_evidence, args(tmp_path))
    assert result["changed"] is True
    run_dir = tmp_path / "evidence" / "20261130T080000Z"
    record = json.loads((run_dir / "01-preflight.json").read_text())
    assert record["schema"] == "gpufleet.dra_gate/evidence-record" and record["schema_version"] == 1
    assert record["results"]["verdict"] == "block"
    index = json.loads((run_dir / "index.json").read_text())
    assert index["records"][0]["phase"] == "preflight"
    assert index["records"][0]["sha256"] == result["sha256"]
    summary = (run_dir / "summary.md").read_text()
    assert "# Preflight: verdict BLOCK" in summary
    assert "no NVIDIA driver found" in summary
    assert "x\\|y" in summary  # table cells are escaped
    for name in ("01-preflight.json", "index.json", "summary.md", "preflight.md"):
        assert oct(os.stat(str(run_dir / name)).st_mode & 0o777) == "0o600", name
    assert oct(os.stat(str(run_dir)).st_mode & 0o777) == "0o700"


def test_second_run_is_unchanged(run_module, tmp_path):
    run_module(gate_evidence, args(tmp_path))
    assert run_module(gate_evidence, args(tmp_path))["changed"] is False


def test_check_mode_and_diff_write_nothing(run_module, tmp_path):
    result = run_module(gate_evidence, args(tmp_path, _ansible_check_mode=True, _ansible_diff=True))
    assert result["changed"] is True
    assert '"verdict": "block"' in result["diff"]["after"]
    assert result["diff"]["before"] == ""
    assert not (tmp_path / "evidence").exists()


@pytest.mark.parametrize("extra,message", [
    ({"run_id": "../escape"}, "run_id:"),
    ({"run_id": ""}, "run_id:"),
    ({"record": {"inputs": {}, "results": {}, "tools": {}}}, "record.started_at: required field missing"),
    ({"record": dict(RECORD, results=[1, 2])}, "record.results: expected a dict"),
    ({"phase": "launch"}, "phase"),
])
def test_bad_input_names_the_field(run_module, tmp_path, extra, message):
    result = run_module(gate_evidence, args(tmp_path, **extra))
    assert result["failed"] is True
    assert message in result["msg"]
    assert not (tmp_path / "evidence").exists()  # nothing half-applied


def test_root_that_is_a_file(run_module, tmp_path):
    (tmp_path / "evidence").write_text("x")
    result = run_module(gate_evidence, args(tmp_path))
    assert result["failed"] is True and result["msg"].startswith("root:")


def test_preflight_summary_shows_the_cluster(run_module, tmp_path):
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import render_preflight

    cluster = {
        "schema_version": 1, "api_server": {"version": "1.37.0"}, "apis": {"resource_k8s_io_v1": True},
        "nodes": {"gpu-01": {"gpu_backend": "device_plugin"}, "gpu-02": {"gpu_backend": "both"}, "cp-1": {"gpu_backend": "none"}},
        "operator": {"helm_release": {"name": "gpu-operator", "namespace": "gpu-operator", "chart": "gpu-operator",
                                      "chart_version": "v26.3.1", "revision": 3, "status": "deployed"},
                     "cluster_policies": [{"name": "cluster-policy", "state": "notReady"}], "gpu_clusters": []},
        "device_classes": [{"name": "gpu.nvidia.com", "extended_resource_name": None},
                           {"name": "gpu-legacy", "extended_resource_name": "nvidia.com/gpu"}],
        "resource_claims": {"total": 40, "allocated": 12, "deleting_allocated": 2},
        "problems": [{"what": "helm release gpu-operator/gpu-operator", "reason": "revision 4 is failed"}],
    }
    text = render_preflight(dict(RECORD, cluster=cluster))
    assert "## Cluster" in text
    assert "- API server 1.37.0; 3 node(s), GPU backend: both 1, device_plugin 1, none 1" in text
    assert "- resource.k8s.io/v1 served" in text
    assert "- GPU Operator Helm release gpu-operator/gpu-operator: chart gpu-operator v26.3.1, revision 3, deployed" in text
    assert "- ClusterPolicy cluster-policy: notReady" in text
    assert "- DeviceClasses: 2 (1 with extendedResourceName: gpu-legacy)" in text
    assert "- ResourceClaims: 40 total, 12 allocated, 2 deleted but still allocated" in text
    assert "revision 4 is failed" in text
    assert "## Cluster" not in render_preflight(dict(RECORD, cluster=None))
    result = run_module(gate_evidence, args(tmp_path, record=dict(RECORD, cluster=cluster)))
    run_dir = tmp_path / "evidence" / "20261130T080000Z"
    assert json.loads((run_dir / "01-preflight.json").read_text())["cluster"]["api_server"]["version"] == "1.37.0"
    assert "## Cluster" in (run_dir / "preflight.md").read_text()
    assert result["changed"] is True


def test_summary_renders_the_upgrade_hops(run_module, tmp_path):
    hops = [{"from": "v26.3.1", "to": "26.6.x", "kind": "next_major"}, {"from": "26.6.x", "to": "26.7.0", "kind": "next_major"}]
    record = dict(RECORD, results=dict(RECORD["results"], upgrade_path=hops))
    run_module(gate_evidence, args(tmp_path, record=record))
    summary = (tmp_path / "evidence" / "20261130T080000Z" / "summary.md").read_text()
    assert "Operator upgrade path: v26.3.1 → 26.6.x → 26.7.0" in summary
