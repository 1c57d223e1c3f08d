# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""canary_evidence: production only when the canary's evidence for the same target exists, is
complete, passed and verifies (canary_clearance + the module)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import json
import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import canary_clearance as cc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import records as evidence
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import private_files as pf
from ansible_collections.gpufleet.dra_gate.plugins.modules import canary_evidence, gate_evidence

RUN = "canary-20261202T010000Z"
SHA_A = "a" * 64
SHA_B = "b" * 64
PLAN = [{"to": "26.6.2", "sha256": SHA_A}, {"to": "26.7.0", "sha256": SHA_B}]


def used(sha):
    """What crd_prepare and operator_release report of the chart they read (verified at use)."""
    return {step: {"source": "/srv/charts/x", "kind": "directory", "sha256": sha, "verified": True}
            for step in ("crd_prepare", "helm_upgrade")}


def canary_results(**extra):
    results = {
        "scope": "canary", "release": "gpu-operator", "namespace": "gpu-operator", "current_version": "26.3.1",
        "target_version": "26.7.0", "check_mode": False, "refused": None,
        "canary": {"required": False, "run_id": None, "cleared": None, "reasons": []},
        "hops": [{"from": "26.3.1", "to": "26.6.2", "ok": True, "chart": {"version": "26.6.2", "sha256": SHA_A},
                  "chart_at_use": used(SHA_A)},
                 {"from": "26.6.2", "to": "26.7.0", "ok": True, "chart": {"version": "26.7.0", "sha256": SHA_B},
                  "chart_at_use": used(SHA_B)}],
        "planned_hops": 2, "completed": True, "failure": None,
        "rollback": {"triggered": False, "automatic": False, "command": None, "verdict": None, "duration_seconds": None},
        "verdict": "pass",
    }
    results.update(extra)
    return results


def root_of(tmp_path):
    root = tmp_path / "evidence"
    if not root.exists():
        root.mkdir(mode=0o700)
    return root


def write_record(tmp_path, results, phase="upgrade", run_id=RUN, index=True):
    """A record as gate_evidence writes it: build_record, 0600 file, an index entry with its sha256."""
    run_dir = root_of(tmp_path) / run_id
    pf.ensure_private_dir(str(run_dir))
    index_path = run_dir / evidence.INDEX_FILE
    current = evidence.load_index(index_path.read_text() if index_path.exists() else None, run_id)
    attempt = evidence.next_attempt(phase, current, os.listdir(str(run_dir)))
    fields = {"started_at": "2026-12-02T01:00:00Z", "inputs": {}, "tools": {}, "results": results}
    record = evidence.build_record(run_id, phase, fields, "2026-12-02T01:20:00Z", attempt)
    text = evidence.dumps(record)
    name = evidence.record_filename(phase, attempt)
    pf.write_private(str(run_dir / name), text)
    if index:
        current = evidence.append_index(current, run_id, {
            "phase": phase, "attempt": attempt, "file": name, "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "written_at": "2026-12-02T01:20:00Z", "verdict": results.get("verdict"), "gate_failed": False})
        pf.write_private(str(index_path), evidence.dumps(current), replace=True)
    return run_dir / name


def args(tmp_path, **extra):
    base = {"evidence_root": str(root_of(tmp_path)), "run_id": RUN, "target_version": "26.7.0", "hops": PLAN,
            "release": "gpu-operator"}
    base.update(extra)
    return base


def test_a_good_canary_clears(run_module, tmp_path):
    path = write_record(tmp_path, canary_results())
    result = run_module(canary_evidence, args(tmp_path))
    assert result["cleared"] is True and result["reasons"] == [] and result["changed"] is False
    assert result["record"]["path"] == str(path) and result["record"]["attempt"] == 1
    assert result["record"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert result["record"]["verdict"] == "pass" and result["record"]["target_version"] == "26.7.0"
    assert result["record"]["finished_at"] == "2026-12-02T01:20:00Z"
    assert result["started_at"].endswith("Z") and result["duration_seconds"] >= 0
    # v-prefixed names, sha256:-prefixed digests and operator_charts' own hop form are the same target
    hops = [{"from": "26.3.1", "to": "v26.6.2", "chart": {"sha256": "sha256:" + SHA_A.upper()}},
            {"to": "26.7.0", "sha256": SHA_B}]
    again = run_module(canary_evidence, args(tmp_path, target_version="v26.7.0", hops=hops, _ansible_check_mode=True))
    assert again["cleared"] is True, again["reasons"]


def test_a_tampered_record_does_not_clear(run_module, tmp_path):
    path = write_record(tmp_path, canary_results(verdict="block"))
    # rewritten to "pass" after it was indexed: the sha256 no longer matches the index
    path.write_text(path.read_text().replace('"verdict": "block"', '"verdict": "pass"'))
    result = run_module(canary_evidence, args(tmp_path))
    assert result["cleared"] is False
    assert any("sha256 mismatch" in r and str(path) in r for r in result["reasons"]), result["reasons"]
    assert "index verdict: found 'block', the record says 'pass'; expected the same" in result["reasons"]


def test_a_warn_verdict_does_not_clear(run_module, tmp_path):
    write_record(tmp_path, canary_results(verdict="warn"))
    result = run_module(canary_evidence, args(tmp_path))
    assert result["cleared"] is False
    assert result["reasons"] == ["results.verdict: found 'warn', expected 'pass'"]


def test_another_target_does_not_clear(run_module, tmp_path):
    write_record(tmp_path, canary_results())
    result = run_module(canary_evidence, args(tmp_path, target_version="26.7.1", hops=[{"to": "26.7.1", "sha256": SHA_B}]))
    assert result["cleared"] is False
    assert "results.target_version: found '26.7.0', expected '26.7.1'" in result["reasons"]
    assert any(r.startswith("hops[0]: the canary made no hop to 26.7.1") for r in result["reasons"])


def test_a_different_chart_for_the_same_release_does_not_clear(run_module, tmp_path):
    write_record(tmp_path, canary_results())
    result = run_module(canary_evidence, args(tmp_path, hops=[{"to": "26.6.2", "sha256": SHA_A}, {"to": "26.7.0", "sha256": "c" * 64}]))
    assert result["cleared"] is False and len(result["reasons"]) == 1
    assert "hops[1]: the chart to 26.7.0 differs" in result["reasons"][0] and SHA_B in result["reasons"][0]


def test_the_newest_record_of_the_phase_is_judged(run_module, tmp_path):
    write_record(tmp_path, canary_results())
    write_record(tmp_path, canary_results(verdict="block", completed=False,
                                          rollback={"triggered": True, "verdict": "pass", "duration_seconds": 300}))
    result = run_module(canary_evidence, args(tmp_path))
    assert result["cleared"] is False and result["record"]["attempt"] == 2
    assert sorted(result["reasons"]) == sorted([
        "results.completed: found False, expected true", "results.verdict: found 'block', expected 'pass'",
        "results.rollback.triggered: found True, expected false (no rollback)"])


@pytest.mark.parametrize("extra, reason", [
    ({"scope": "production"}, "results.scope: found 'production', expected 'canary'"),
    ({"check_mode": True}, "results.check_mode: found True, expected false (a check run never clears)"),
    ({"refused": "no chart for 26.6.x"}, "results.refused: found 'no chart for 26.6.x', expected null (not refused)"),
    ({"release": "gpu-operator-2"}, "results.release: found 'gpu-operator-2', expected 'gpu-operator'"),
    ({"rollback": None}, "results.rollback.triggered: found missing, expected false (no rollback)"),
])
def test_each_condition_is_required(tmp_path, extra, reason):
    results = canary_results(**extra)
    fields = {"started_at": "2026-12-02T01:00:00Z", "inputs": {}, "tools": {}, "results": results}
    record = evidence.build_record(RUN, "upgrade", fields, "2026-12-02T01:20:00Z")
    entry = {"phase": "upgrade", "attempt": 1, "file": "upgrade-1.json", "verdict": "pass"}
    out = cc.clearance([], path="/x/upgrade-1.json", entry=entry, record=record, sha256=SHA_A, run_id=RUN,
                       target_version="26.7.0", hops=cc.validate_hops(PLAN), release="gpu-operator")
    assert out["cleared"] is False and out["reasons"] == [reason]


def test_missing_evidence_is_not_cleared_with_a_reason(run_module, tmp_path):
    result = run_module(canary_evidence, args(tmp_path))
    assert result["cleared"] is False and "failed" not in result
    assert "no evidence directory for the canary run %s" % RUN in result["reasons"][0]
    assert result["record"]["path"] is None
    pf.ensure_private_dir(str(root_of(tmp_path) / RUN))
    result = run_module(canary_evidence, args(tmp_path))
    assert result["cleared"] is False and "index.json: does not exist" in result["reasons"][0]
    write_record(tmp_path, dict(canary_results(), verdict="pass"), phase="preflight")
    result = run_module(canary_evidence, args(tmp_path))
    assert result["cleared"] is False
    assert result["reasons"] == ["%s: the evidence index lists no upgrade record (found preflight); expected the canary's "
                                 "upgrade record" % (root_of(tmp_path) / RUN / "index.json")]
    missing = run_module(canary_evidence, args(tmp_path, evidence_root=str(tmp_path / "nowhere")))
    assert missing["cleared"] is False and missing["reasons"][0].startswith("evidence_root: ")


def test_an_unindexed_or_shared_record_does_not_clear(run_module, tmp_path):
    write_record(tmp_path, canary_results())
    orphan = write_record(tmp_path, canary_results(), index=False)  # a crash before the index update
    result = run_module(canary_evidence, args(tmp_path))
    assert result["cleared"] is False and result["record"]["attempt"] == 1
    assert any(str(orphan) in r and "does not list" in r for r in result["reasons"])
    os.unlink(str(orphan))
    good = root_of(tmp_path) / RUN / "upgrade-1.json"
    os.chmod(str(good), 0o644)
    result = run_module(canary_evidence, args(tmp_path))
    assert result["cleared"] is False and any("mode 0644" in r for r in result["reasons"])


def test_a_gate_evidence_record_clears(run_module, tmp_path):
    """The record as the module gate_evidence writes it (verdict decided by the upgrade judge)."""
    results = canary_results()
    del results["verdict"]
    results["baseline"] = {"verify": {"ok": True, "problems": []},
                           "control_suite": {"passed": True, "counts": {"passed": 1, "failed": 0, "skipped": 0, "total": 1},
                                             "workloads": []}}
    for item in results["hops"]:
        item.update(verify={"ok": True, "problems": []}, control_suite=copy.deepcopy(results["baseline"]["control_suite"]))
    written = run_module(gate_evidence, {"root": str(root_of(tmp_path)), "run_id": RUN, "phase": "upgrade", "fail_on": "block",
                                         "record": {"started_at": "2026-12-02T01:00:00Z", "inputs": {}, "tools": {},
                                                    "results": results}})
    assert written["verdict"] == "pass", written["findings"]
    result = run_module(canary_evidence, args(tmp_path))
    assert result["cleared"] is True, result["reasons"]
    assert result["record"]["sha256"] == written["sha256"]


@pytest.mark.parametrize("extra, message", [
    ({"evidence_root": "evidence"}, "evidence_root: expected an absolute path"),
    ({"run_id": "../other"}, "run_id: '../other' is not valid"),
    ({"target_version": "latest"}, "target_version: expected a GPU Operator release"),
    ({"hops": [{"to": "26.7.0"}]}, "hops[0].sha256: expected the hop chart's sha256"),
    ({"hops": [{"sha256": SHA_B}]}, "hops[0].to: expected the release the hop goes to"),
    ({"release": ""}, "release: expected a Helm release name"),
])
def test_bad_input_names_the_field(run_module, tmp_path, extra, message):
    result = run_module(canary_evidence, args(tmp_path, **extra))
    assert result.get("failed") is True and message in result["msg"]
    assert "Traceback" not in json.dumps(result)
