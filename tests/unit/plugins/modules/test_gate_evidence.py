# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gate_evidence: append-only records (one per attempt), the locked index, summaries, the gate,
coverage, the private root, modes, check mode, diff and bad input; and the crash check of
artifact_index state=verified."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os
import time

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import records as evidence
from ansible_collections.gpufleet.dra_gate.plugins.modules import artifact_index, gate_evidence

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


RUN = "20261130T080000Z"


def root(tmp_path):
    path = tmp_path / "evidence"
    if not path.exists():
        path.mkdir(mode=0o700)
    return path


def args(tmp_path, **extra):
    base = {"root": str(root(tmp_path)), "run_id": RUN, "phase": "preflight", "record": RECORD, "fail_on": "never"}
    base.update(extra)
    return base


def load(path):
    return json.loads(path.read_text())


def test_writes_record_index_and_summaries(run_module, tmp_path):
    result = run_module(gate_evidence, args(tmp_path))
    assert result["changed"] is True
    run_dir = tmp_path / "evidence" / RUN
    assert result["path"] == str(run_dir / "preflight-1.json") and result["attempt"] == 1
    record = json.loads((run_dir / "preflight-1.json").read_text())
    assert record["schema"] == "gpufleet.dra_gate/evidence-record" and record["schema_version"] == 1
    assert record["results"]["verdict"] == "block" and record["attempt"] == 1
    index = json.loads((run_dir / "index.json").read_text())
    assert index["schema_version"] == 2
    assert index["records"][0]["phase"] == "preflight" and index["records"][0]["attempt"] == 1
    assert index["records"][0]["file"] == "preflight-1.json"
    assert index["records"][0]["sha256"] == result["sha256"]
    summary = (run_dir / "summary.md").read_text()
    assert "# Preflight: verdict BLOCK" in summary
    assert "no NVIDIA driver found" in summary
    assert "x\\|y" in summary  # table cells are escaped
    for name in ("preflight-1.json", "index.json", "summary.md", "preflight-1.md"):
        assert oct(os.stat(str(run_dir / name)).st_mode & 0o777) == "0o600", name
    assert oct(os.stat(str(run_dir)).st_mode & 0o777) == "0o700"


def test_two_phases_recorded_twice_keep_all_four_attempts(run_module, tmp_path):
    """Append-only: a rerun of a phase is a new attempt; the earlier (failed) record stays as it was."""
    snapshot = {"started_at": "2026-11-30T08:10:00Z", "inputs": {}, "tools": {},
                "results": {"verified": True, "skipped": [], "capture_failure": "etcd: member unreachable"}}
    first = run_module(gate_evidence, args(tmp_path))
    first_text = (tmp_path / "evidence" / RUN / "preflight-1.json").read_text()
    snap1 = run_module(gate_evidence, args(tmp_path, phase="snapshot", record=snapshot))
    passing = copy.deepcopy(RECORD)
    passing["started_at"] = "2026-11-30T09:00:00Z"
    passing["results"].update(verdict="pass", findings=[])
    second = run_module(gate_evidence, args(tmp_path, record=passing))
    snap2 = run_module(gate_evidence, args(tmp_path, phase="snapshot", record=dict(snapshot, results={"verified": True})))
    assert [r["attempt"] for r in (first, snap1, second, snap2)] == [1, 1, 2, 2]
    run_dir = tmp_path / "evidence" / RUN
    assert (run_dir / "preflight-1.json").read_text() == first_text  # never rewritten
    assert load(run_dir / "preflight-2.json")["results"]["verdict"] == "pass"
    assert snap1["verdict"] == "block" and snap2["verdict"] == "pass"
    index = load(run_dir / "index.json")
    assert [(e["phase"], e["attempt"], e["verdict"]) for e in index["records"]] == [
        ("preflight", 1, "block"), ("snapshot", 1, "block"), ("preflight", 2, "pass"), ("snapshot", 2, "pass")]
    summary = (run_dir / "summary.md").read_text()
    assert summary.index("| preflight | 1 |") < summary.index("| preflight | 2 |") < summary.index("| snapshot | 1 |")
    assert "# Preflight: verdict PASS" in summary and "# Preflight: verdict BLOCK" not in summary  # latest attempt
    assert (run_dir / "preflight-1.md").read_text().startswith("# Preflight: verdict BLOCK")
    verified = run_module(artifact_index, {"run_dir": str(run_dir), "state": "verified"})
    # no artifact index in this run, but the evidence itself is consistent
    assert "does not exist" in verified["msg"]


def test_record_names_come_from_the_phase_not_its_position():
    assert evidence.record_filename("snapshot", 3) == "snapshot-3.json"
    assert evidence.parse_record_filename("drain-12.json") == ("drain", 12)
    assert evidence.parse_record_filename("02-snapshot.json") == ("snapshot", None)  # legacy, still read
    assert evidence.parse_record_filename("index.json") is None
    assert evidence.next_attempt("snapshot", {"records": [{"phase": "snapshot", "attempt": 1}]}, ["snapshot-4.json"]) == 5


def test_gate_is_decided_in_python(run_module, tmp_path):
    blocked = run_module(gate_evidence, args(tmp_path, fail_on="block"))
    assert blocked["verdict"] == "block" and blocked["gate"]["failed"] is True
    assert blocked["gate"]["fail_on"] == "block" and blocked["gate"]["reason"]
    warned = copy.deepcopy(RECORD)
    warned["results"].update(verdict="warn", findings=[dict(RECORD["results"]["findings"][0], severity="warn")])
    assert run_module(gate_evidence, args(tmp_path, record=warned, fail_on="block"))["gate"]["failed"] is False
    assert run_module(gate_evidence, args(tmp_path, record=warned, fail_on="warn"))["gate"]["failed"] is True
    # a verdict that understates the findings is raised to them (fail closed)
    understated = copy.deepcopy(RECORD)
    understated["results"]["verdict"] = "pass"
    assert run_module(gate_evidence, args(tmp_path, record=understated))["verdict"] == "block"


def test_snapshot_verdict_from_its_results(run_module, tmp_path):
    base = {"started_at": "2026-11-30T08:10:00Z", "inputs": {}, "tools": {}}
    ok = run_module(gate_evidence, args(tmp_path, phase="snapshot", record=dict(base, results={"verified": True})))
    assert ok["verdict"] == "pass" and ok["findings"] == []
    skipped = {"verified": True, "skipped": [{"kind": "etcd-snapshot", "source": "group etcd", "reason": "no hosts"}]}
    result = run_module(gate_evidence, args(tmp_path, phase="snapshot", record=dict(base, results=skipped)))
    assert result["verdict"] == "warn" and result["findings"][0]["id"] == "snapshot.capture_skipped"
    bad = {"verified": False, "bad": [{"path": "/x/crd.json", "problems": ["sha256 mismatch"]}]}
    result = run_module(gate_evidence, args(tmp_path, phase="snapshot", record=dict(base, results=bad)))
    assert result["verdict"] == "block" and result["findings"][0]["subject"] == "/x/crd.json"
    record = load(tmp_path / "evidence" / RUN / ("snapshot-%d.json" % result["attempt"]))
    assert record["results"]["verdict"] == "block" and record["results"]["counts"]["block"] == 1
    # check mode: nothing was indexed, so "not verified" is no finding
    result = run_module(gate_evidence, args(tmp_path, phase="snapshot", record=dict(base, results={"verified": None}),
                                            _ansible_check_mode=True))
    assert result["verdict"] == "pass"


def test_an_unanswered_host_blocks_naming_it(run_module, tmp_path):
    passing = copy.deepcopy(RECORD)
    passing["results"].update(verdict="pass", findings=[])
    result = run_module(gate_evidence, args(tmp_path, record=passing, fail_on="block",
                                            expected_hosts=["gpu-1", "gpu-2", "gpu-3"], answered_hosts=["gpu-3"],
                                            failed_hosts={"gpu-1": "unreachable: ssh timed out"}))
    assert result["verdict"] == "block" and result["gate"]["failed"] is True
    subjects = {f["subject"]: f for f in result["findings"] if f["severity"] == "block"}
    assert sorted(subjects) == ["gpu-1", "gpu-2"]
    assert "ssh timed out" in json.dumps(subjects["gpu-1"])
    record = load(tmp_path / "evidence" / RUN / "preflight-1.json")
    assert {f["subject"] for f in record["results"]["findings"]} == {"gpu-1", "gpu-2"}


def test_prepared_checks_the_root_and_creates_the_run_dir(run_module, tmp_path):
    result = run_module(gate_evidence, {"root": str(root(tmp_path)), "run_id": RUN, "phase": "snapshot",
                                        "state": "prepared"})
    assert result["changed"] is True and result["attempt"] == 1
    assert oct(os.stat(result["run_dir"]).st_mode & 0o777) == "0o700"
    assert os.listdir(result["run_dir"]) == []


@pytest.mark.parametrize("shape", ["missing", "world-writable", "group-writable", "symlink", "file"])
def test_a_shared_or_missing_root_is_refused_naming_it(run_module, tmp_path, shape):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    path = tmp_path / "evidence"
    if shape == "world-writable":
        path.mkdir()
        os.chmod(str(path), 0o1777)
    elif shape == "group-writable":
        path.mkdir()
        os.chmod(str(path), 0o770)
    elif shape == "symlink":
        path.symlink_to(real)
    elif shape == "file":
        path.write_text("x")
    for state in ("prepared", "recorded"):
        result = run_module(gate_evidence, {"root": str(path), "run_id": RUN, "phase": "preflight", "record": RECORD,
                                            "state": state})
        assert result["failed"] is True and result["msg"].startswith("root: %s" % path), result["msg"]
    assert os.listdir(str(real)) == []
    if shape != "file":
        assert not (path / RUN).exists() or shape == "symlink" and not (real / RUN).exists()
    verified = run_module(artifact_index, {"run_dir": str(path / RUN), "state": "verified"})
    assert verified["failed"] is True and str(path) in verified["msg"]


def _indexed_run(run_module, tmp_path):
    """A run with one indexed artifact (so that state=verified gets to the evidence check)."""
    run_dir = root(tmp_path) / RUN
    run_module(gate_evidence, args(tmp_path))
    art_dir = run_dir / "artifacts"
    art_dir.mkdir(mode=0o700)
    artifact = art_dir / "crd.json"
    artifact.write_text("{}")
    os.chmod(str(artifact), 0o600)
    assert run_module(artifact_index, {"run_dir": str(run_dir), "artifacts": [
        {"path": str(artifact), "kind": "crd", "source": "test"}]})["changed"] is True
    return run_dir


def test_a_planted_symlink_at_the_next_record_name_is_not_followed(run_module, tmp_path):
    run_dir = _indexed_run(run_module, tmp_path)
    target = tmp_path / "target.json"
    target.write_text("precious")
    (run_dir / "preflight-2.json").symlink_to(target)
    result = run_module(gate_evidence, args(tmp_path))
    assert result["attempt"] == 3 and result["path"].endswith("preflight-3.json")
    assert target.read_text() == "precious" and (run_dir / "preflight-2.json").is_symlink()
    verified = run_module(artifact_index, {"run_dir": str(run_dir), "state": "verified"})
    assert verified["failed"] is True
    bad = dict((b["path"], b["problems"]) for b in verified["bad"])
    assert list(bad) == [str(run_dir / "preflight-2.json")]
    assert any("symbolic link" in p for p in bad[str(run_dir / "preflight-2.json")])


def test_verification_passes_on_a_consistent_run(run_module, tmp_path):
    run_dir = _indexed_run(run_module, tmp_path)
    result = run_module(artifact_index, {"run_dir": str(run_dir), "state": "verified"})
    assert result.get("failed") is not True, result["msg"] if "msg" in result else result
    assert result["verified"] is True and result["evidence_checked"] == 1


def test_a_crash_between_record_and_index_is_detected_by_verification(run_module, tmp_path, monkeypatch):
    run_dir = _indexed_run(run_module, tmp_path)
    real_write = gate_evidence.pf.write_private

    def crash_on_index(path, data, replace=False):
        if os.path.basename(path) == "index.json":
            raise OSError(5, "simulated crash before the index update")
        return real_write(path, data, replace=replace)

    monkeypatch.setattr(gate_evidence.pf, "write_private", crash_on_index)
    crashed = run_module(gate_evidence, args(tmp_path))
    assert crashed["failed"] is True and (run_dir / "preflight-2.json").exists()
    monkeypatch.setattr(gate_evidence.pf, "write_private", real_write)
    result = run_module(artifact_index, {"run_dir": str(run_dir), "state": "verified"})
    assert result["failed"] is True and result["verified"] is False
    bad = [b for b in result["bad"] if b["kind"] == "evidence-record"]
    assert [b["path"] for b in bad] == [str(run_dir / "preflight-2.json")]
    assert "does not list" in bad[0]["problems"][0] and str(run_dir / "preflight-2.json") in result["msg"]
    # the next attempt neither reuses nor adopts the orphan: it is attempt 3, and verification still fails
    third = run_module(gate_evidence, args(tmp_path))
    assert third["attempt"] == 3
    assert run_module(artifact_index, {"run_dir": str(run_dir), "state": "verified"})["failed"] is True


def test_a_changed_or_missing_record_fails_verification(run_module, tmp_path):
    run_dir = _indexed_run(run_module, tmp_path)
    record = run_dir / "preflight-1.json"
    os.chmod(str(record), 0o600)
    record.write_text(record.read_text().replace("block", "pass"))
    result = run_module(artifact_index, {"run_dir": str(run_dir), "state": "verified"})
    assert result["failed"] is True and "sha256 mismatch" in result["msg"] and str(record) in result["msg"]
    record.unlink()
    result = run_module(artifact_index, {"run_dir": str(run_dir), "state": "verified"})
    assert result["failed"] is True and "missing" in result["msg"]


def test_check_mode_and_diff_write_nothing(run_module, tmp_path):
    result = run_module(gate_evidence, args(tmp_path, _ansible_check_mode=True, _ansible_diff=True))
    assert result["changed"] is True
    assert '"verdict": "block"' in result["diff"]["after"]
    assert result["diff"]["before"] == ""
    assert result["path"].endswith("/preflight-1.json")
    assert os.listdir(str(tmp_path / "evidence")) == []


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
    assert os.listdir(str(tmp_path / "evidence")) == []  # nothing half-applied


def test_preflight_summary_shows_the_cluster(run_module, tmp_path):
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence.records import render_preflight

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
    run_dir = tmp_path / "evidence" / RUN
    assert json.loads((run_dir / "preflight-1.json").read_text())["cluster"]["api_server"]["version"] == "1.37.0"
    assert "## Cluster" in (run_dir / "preflight-1.md").read_text()
    assert result["changed"] is True


def test_summary_renders_the_upgrade_hops(run_module, tmp_path):
    hops = [{"from": "v26.3.1", "to": "26.6.x", "kind": "next_major"}, {"from": "26.6.x", "to": "26.7.0", "kind": "next_major"}]
    record = dict(RECORD, results=dict(RECORD["results"], upgrade_path=hops))
    run_module(gate_evidence, args(tmp_path, record=record))
    summary = (tmp_path / "evidence" / RUN / "summary.md").read_text()
    assert "Operator upgrade path: v26.3.1 → 26.6.x → 26.7.0" in summary


def test_a_host_compat_check_already_reported_is_not_reported_twice(run_module, tmp_path):
    reported = copy.deepcopy(RECORD)
    reported["results"]["findings"] = [{"id": "coverage.host_unreachable", "severity": "block", "subject": "gpu-1",
                                        "observed": "no answer", "expected": "answered", "message": "m", "source": "s"}]
    result = run_module(gate_evidence, args(tmp_path, record=reported, expected_hosts=["gpu-1", "gpu-2"],
                                            answered_hosts=["gpu-2"], failed_hosts={"gpu-1": "unreachable: x"}))
    assert [(f["id"], f["subject"]) for f in result["findings"]] == [("coverage.host_unreachable", "gpu-1")]
    assert result["verdict"] == "block"


def test_a_hanging_structural_check_is_bad_within_its_deadline(run_module, tmp_path):
    run_dir = _indexed_run(run_module, tmp_path)
    snap = run_dir / "artifacts" / "snap.db"
    snap.write_bytes(b"not really a snapshot")
    os.chmod(str(snap), 0o600)
    assert run_module(artifact_index, {"run_dir": str(run_dir), "artifacts": [
        {"path": str(snap), "kind": "etcd-snapshot", "source": "test"}]})["changed"] is True
    fake = tmp_path / "etcdutl"
    fake.write_text("#!/bin/sh\nsleep 60 &\nsleep 60\n")
    os.chmod(str(fake), 0o755)
    started = time.monotonic()
    verified = run_module(artifact_index, {"run_dir": str(run_dir), "state": "verified", "etcdutl": str(fake),
                                           "timeout": 1})
    assert time.monotonic() - started < 20
    assert verified["failed"] is True
    bad = dict((b["path"], b["problems"]) for b in verified["bad"])
    assert list(bad) == [str(snap)]
    assert "timed out after 1 s" in bad[str(snap)][0] and str(fake) in bad[str(snap)][0]
    refused = run_module(artifact_index, {"run_dir": str(run_dir), "state": "verified", "timeout": 0})
    assert refused["failed"] is True and refused["msg"].startswith("timeout:")
