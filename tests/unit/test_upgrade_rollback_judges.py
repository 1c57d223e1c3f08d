# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade and rollback judges (judges.upgrade.upgrade_findings / judges.rollback.rollback_findings) and gate_evidence using them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import records as evidence
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import verdict as gate
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import registry, rollback, snapshot, upgrade
from ansible_collections.gpufleet.dra_gate.plugins.modules import gate_evidence

SHA_A = "a" * 64
SHA_B = "b" * 64


def suite(passed=True, skipped=0):
    workloads = [{"name": "pod-smoke", "passed": passed if not skipped else None, "status": "skipped" if skipped else (
        "passed" if passed else "failed"), "started_at": "2026-12-02T01:00:00.000Z", "finished_at": "2026-12-02T01:00:09.000Z",
        "node": "gpu-1", "reason": None if passed else "timed out after 120 s waiting for pod_succeeded"}]
    return {"passed": None if skipped else passed, "workloads": workloads,
            "counts": {"passed": 1 if passed and not skipped else 0, "failed": 0 if passed or skipped else 1,
                       "skipped": skipped, "total": 1}}


def hop(frm, to, sha, ok=True):
    return {"from": frm, "to": to, "kind": "next_major", "started_at": "2026-12-02T01:00:00Z",
            "finished_at": "2026-12-02T01:06:00Z", "duration_seconds": 360.0,
            "chart": {"version": to, "chart_version": "v" + to, "sha256": sha, "source": "/srv/charts/%s.tgz" % to,
                      "verified": True},
            "chart_at_use": dict((step, {"source": "/srv/charts/%s.tgz" % to, "kind": "archive", "sha256": sha,
                                         "verified": True}) for step in ("crd_prepare", "helm_upgrade")),
            "values_diff": [], "crds": {"applied": [], "counts": {"unchanged": 12}},
            "helm": {"action": "upgrade", "revision_before": 1, "revision": 2, "status": "deployed"},
            "verify": {"ok": True, "problems": []}, "allocatable_before": {"gpu-1": "8", "gpu-2": "8"},
            "allocatable_after": {"gpu-1": "8", "gpu-2": "8"}, "control_suite": suite(),
            "steps": [{"name": "helm upgrade", "started_at": "2026-12-02T01:01:00Z", "finished_at": "2026-12-02T01:04:00Z",
                       "ok": ok}], "ok": ok, "failure": None if ok else "helm upgrade: timed out waiting for the condition"}


def upgrade_results(**extra):
    results = {
        "scope": "canary", "release": "gpu-operator", "namespace": "gpu-operator", "current_version": "26.3.1",
        "target_version": "26.7.0", "check_mode": False, "refused": None,
        "canary": {"required": False, "run_id": None, "cleared": None, "reasons": []},
        "baseline": {"verify": {"ok": True, "problems": []}, "control_suite": suite()},
        "hops": [hop("26.3.1", "26.6.2", SHA_A), hop("26.6.2", "26.7.0", SHA_B)],
        "planned_hops": 2, "completed": True, "failure": None,
        "rollback": {"triggered": False, "automatic": False, "command": None, "verdict": None, "duration_seconds": None},
    }
    results.update(extra)
    return results


def rollback_results(**extra):
    results = {
        "decision_at": "2026-12-02T02:00:00.000000Z", "completed_at": "2026-12-02T02:07:30.000000Z",
        "duration_seconds": 450.0, "trigger": "manual", "reason": "hop 26.6.2 -> 26.7.0 failed",
        "source_run": "20261202T010000Z", "index_verified": True, "check_mode": False,
        "steps": [{"name": "verify artifacts", "started_at": "2026-12-02T02:00:00Z", "finished_at": "2026-12-02T02:00:02Z",
                   "ok": True, "detail": "12 entries"},
                  {"name": "helm rollback", "started_at": "2026-12-02T02:00:02Z", "finished_at": "2026-12-02T02:04:00Z",
                   "ok": True, "detail": "revision 3 -> 1"}],
        "helm": {"action": "rollback", "revision_before": 3, "revision": 4, "target_revision": 1},
        "restored": {"crds": 12, "custom_resources": 2, "nodes": 2}, "extra": {"crds": [], "custom_resources": []},
        "verify": {"ok": True, "problems": []}, "control_suite": suite(), "hooks": [{"name": "notify", "ok": True}],
        "failure": None,
    }
    results.update(extra)
    return results


def ids(findings, severity=None):
    return sorted(f["id"] for f in findings if severity is None or f["severity"] == severity)


def by_id(findings, fid):
    return [f for f in findings if f["id"] == fid]


def test_judges_are_registered_for_their_phases():
    assert registry.JUDGES["upgrade"] is upgrade.upgrade_findings
    assert registry.JUDGES["rollback"] is rollback.rollback_findings
    assert registry.JUDGES["snapshot"] is snapshot.snapshot_findings
    assert "upgrade" in evidence.PHASES and "rollback" in evidence.PHASES


# ---- upgrade -------------------------------------------------------------------------------------

def test_a_clean_upgrade_has_no_finding():
    assert upgrade.upgrade_findings(upgrade_results()) == []


def test_findings_have_the_finding_shape_and_the_upgrade_source():
    findings = upgrade.upgrade_findings(upgrade_results(refused="no chart for 26.6.x", hops=[], completed=False))
    assert findings and all(set(f) == set(gate.FINDING_KEYS) for f in findings)
    assert all(f["source"] == "gpufleet.dra_gate upgrade phase" for f in findings)


def test_refused_blocks_and_is_not_also_incomplete():
    results = upgrade_results(refused="hop 26.3.1 -> 26.6.2: no chart", hops=[], completed=False, baseline={})
    findings = upgrade.upgrade_findings(results)
    assert ids(findings, "block") == ["upgrade.refused"]
    assert findings[0]["observed"] == "hop 26.3.1 -> 26.6.2: no chart"


def test_a_failed_hop_blocks_naming_the_hop_and_its_failure():
    second = hop("26.6.2", "26.7.0", SHA_B, ok=False)
    second["control_suite"] = None
    second["allocatable_after"] = None
    results = upgrade_results(hops=[hop("26.3.1", "26.6.2", SHA_A), second], completed=False,
                              failure={"hop": "26.6.2 -> 26.7.0", "step": "helm upgrade", "message": "timed out"})
    findings = upgrade.upgrade_findings(results)
    assert ids(findings, "block") == ["upgrade.hop_failed"]  # not incomplete: the failed hop says why
    assert findings[0]["subject"] == "hop 26.6.2 -> 26.7.0"
    assert findings[0]["message"] == "helm upgrade: timed out waiting for the condition"


def test_verify_problems_block_each_named_on_the_hop():
    bad = hop("26.3.1", "26.6.2", SHA_A)
    bad["verify"] = {"ok": False, "problems": ["ClusterPolicy cluster-policy: state notReady",
                                               {"what": "daemonset nvidia-device-plugin", "reason": "0 of 2 ready"}]}
    findings = upgrade.upgrade_findings(upgrade_results(hops=[bad, hop("26.6.2", "26.7.0", SHA_B)]))
    verify = by_id(findings, "upgrade.verify")
    assert len(verify) == 1 and verify[0]["severity"] == "block" and verify[0]["subject"] == "hop 26.3.1 -> 26.6.2"
    assert "state notReady" in verify[0]["message"] and "daemonset nvidia-device-plugin: 0 of 2 ready" in verify[0]["message"]
    # one finding per hop survives gate_evidence's merge by (id, subject) with every problem in it
    merged = evidence.merge_findings([], findings)
    assert "0 of 2 ready" in by_id(merged, "upgrade.verify")[0]["observed"]


def test_control_suites_that_did_not_pass_block():
    bad = hop("26.6.2", "26.7.0", SHA_B)
    bad["control_suite"] = suite(passed=False)
    results = upgrade_results(baseline={"verify": {"ok": True, "problems": []}, "control_suite": suite(passed=False)},
                              hops=[hop("26.3.1", "26.6.2", SHA_A), bad])
    findings = upgrade.upgrade_findings(results)
    assert ids(findings, "block") == ["upgrade.baseline_control_suite", "upgrade.control_suite"]
    assert by_id(findings, "upgrade.control_suite")[0]["subject"] == "hop 26.6.2 -> 26.7.0"
    assert "pod-smoke: timed out" in by_id(findings, "upgrade.control_suite")[0]["observed"]


def test_allocatable_changed_blocks_per_node():
    changed = hop("26.3.1", "26.6.2", SHA_A)
    changed["allocatable_after"] = {"gpu-1": "8", "gpu-2": "0"}
    findings = upgrade.upgrade_findings(upgrade_results(hops=[changed, hop("26.6.2", "26.7.0", SHA_B)]))
    assert ids(findings) == ["upgrade.allocatable_changed"]
    assert findings[0]["subject"] == "gpu-2" and findings[0]["observed"] == "0" and findings[0]["expected"] == "8"
    gone = hop("26.3.1", "26.6.2", SHA_A)
    gone["allocatable_after"] = {"gpu-1": 8}  # a number equal to the string is the same quantity
    findings = upgrade.upgrade_findings(upgrade_results(hops=[gone]))
    assert [f["subject"] for f in by_id(findings, "upgrade.allocatable_changed")] == ["gpu-2"]


def test_not_completed_without_a_failed_hop_is_incomplete():
    findings = upgrade.upgrade_findings(upgrade_results(hops=[hop("26.3.1", "26.6.2", SHA_A)], completed=False))
    assert ids(findings, "block") == ["upgrade.incomplete"]
    assert "1 of 2" in findings[0]["observed"]


def test_a_rollback_blocks_with_its_verdict_and_duration():
    results = upgrade_results(rollback={"triggered": True, "automatic": True, "verdict": "pass", "duration_seconds": 431.5,
                                        "command": "ansible-playbook playbooks/rollback_operator.yml -e run=x"})
    findings = upgrade.upgrade_findings(results)
    assert ids(findings) == ["upgrade.rolled_back"]
    assert findings[0]["observed"] == "verdict pass, duration 431.5 s"
    assert "automatically" in findings[0]["message"] and "rollback_operator.yml" in findings[0]["message"]


def test_check_mode_warns_and_skipped_workloads_warn():
    dry = hop("26.3.1", "26.6.2", SHA_A)
    dry["control_suite"] = suite(skipped=1)
    results = upgrade_results(check_mode=True, hops=[dry], planned_hops=1,
                              baseline={"verify": {"ok": True, "problems": []}, "control_suite": suite(skipped=1)})
    findings = upgrade.upgrade_findings(results)
    assert ids(findings, "block") == []
    assert ids(findings, "warn") == ["upgrade.check_mode", "upgrade.control_suite_skipped", "upgrade.control_suite_skipped"]
    assert by_id(findings, "upgrade.check_mode")[0]["message"] == "nothing was applied; a check run never passes"
    assert sorted(f["subject"] for f in by_id(findings, "upgrade.control_suite_skipped")) == ["baseline", "hop 26.3.1 -> 26.6.2"]
    assert gate.verdict_of(findings) == "warn"
    # the module's check mode counts as well as the record's flag
    assert "upgrade.check_mode" in ids(upgrade.upgrade_findings(upgrade_results(), check_mode=True))


def test_production_without_a_cleared_canary_blocks():
    canary = {"required": True, "run_id": "canary-1", "cleared": False, "reasons": ["results.verdict: found 'warn', expected 'pass'"]}
    findings = upgrade.upgrade_findings(upgrade_results(scope="production", canary=canary))
    assert ids(findings) == ["upgrade.canary_not_cleared"]
    assert "found 'warn'" in findings[0]["message"] and findings[0]["subject"] == "canary run canary-1"
    cleared = dict(canary, cleared=True, reasons=[])
    assert upgrade.upgrade_findings(upgrade_results(scope="production", canary=cleared)) == []
    # a canary scope run is never judged on a canary of its own
    assert upgrade.upgrade_findings(upgrade_results(scope="canary", canary=dict(canary, required=False))) == []


def test_zero_hops_already_at_target_does_not_block():
    results = upgrade_results(current_version="26.7.0", hops=[], planned_hops=0)
    findings = upgrade.upgrade_findings(results)
    assert ids(findings) == ["upgrade.already_at_target"] and findings[0]["severity"] == "info"
    assert gate.verdict_of(findings) == "pass"


# ---- rollback ------------------------------------------------------------------------------------

def test_a_clean_rollback_has_no_finding():
    assert rollback.rollback_findings(rollback_results()) == []


def test_unverified_artifacts_block():
    findings = rollback.rollback_findings(rollback_results(index_verified=False))
    assert ids(findings) == ["rollback.artifacts_unverified"]
    assert findings[0]["source"] == "gpufleet.dra_gate rollback phase"


def test_each_failed_step_blocks_named():
    steps = rollback_results()["steps"] + [{"name": "restore crds", "ok": False, "detail": "409 conflict on gpuclusters"},
                                           {"name": "restore nodes", "ok": False, "detail": None}]
    findings = rollback.rollback_findings(rollback_results(steps=steps))
    assert [f["subject"] for f in by_id(findings, "rollback.step_failed")] == ["restore crds", "restore nodes"]
    assert "409 conflict" in by_id(findings, "rollback.step_failed")[0]["message"]


def test_control_suite_incomplete_and_verify_block():
    findings = rollback.rollback_findings(rollback_results(control_suite=suite(passed=False), completed_at=None,
                                                           duration_seconds=None, failure="control suite did not pass",
                                                           verify={"ok": False, "problems": ["ClusterPolicy notReady"]}))
    assert ids(findings, "block") == ["rollback.control_suite", "rollback.incomplete", "rollback.verify"]
    assert "control suite did not pass" in by_id(findings, "rollback.incomplete")[0]["message"]
    assert by_id(findings, "rollback.verify")[0]["observed"] == "ClusterPolicy notReady"
    assert ids(rollback.rollback_findings(rollback_results(duration_seconds=None))) == ["rollback.incomplete"]


def test_extra_crds_warn_each_named():
    findings = rollback.rollback_findings(rollback_results(extra={"crds": ["computedomains.resource.nvidia.com",
                                                                           "nvidiadrivers.nvidia.com"], "custom_resources": []}))
    assert ids(findings, "block") == []
    assert sorted(f["subject"] for f in by_id(findings, "rollback.extra_crds")) == [
        "computedomains.resource.nvidia.com", "nvidiadrivers.nvidia.com"]
    assert gate.verdict_of(findings) == "warn"


def test_rollback_check_mode_warns_and_does_not_need_completion():
    results = rollback_results(check_mode=True, completed_at=None, duration_seconds=None,
                               control_suite=suite(skipped=1))
    findings = rollback.rollback_findings(results)
    assert ids(findings) == ["rollback.check_mode"] and findings[0]["severity"] == "warn"


def test_a_failure_never_passes_even_when_nothing_else_blocks():
    findings = rollback.rollback_findings(rollback_results(failure="post hook crashed"))
    assert ids(findings, "block") == ["rollback.failed"]


def not_needed_results(**extra):
    """A rollback right after the snapshot (issue 28): the release at the recorded revision, nothing restored."""
    steps = [{"name": name, "started_at": "2026-12-02T02:00:0%dZ" % i, "finished_at": "2026-12-02T02:00:0%dZ" % (i + 1),
              "ok": True, "detail": ""} for i, name in enumerate(("helm_rollback", "restore_cluster_state", "verify",
                                                                 "control_suite"))]
    fields = dict(
        steps=steps, hooks=[],
        helm={"release": "gpu-operator", "namespace": "gpu-operator", "action": "unchanged", "revision_before": 1,
              "revision": 1, "target_revision": 1},
        restored={"crds": [], "custom_resources": [], "nodes": []},
        unchanged={"crds": ["clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com"],
                   "custom_resources": ["ClusterPolicy/cluster-policy"], "nodes": []})
    fields.update(extra)
    return rollback_results(**fields)


def test_a_rollback_with_nothing_to_roll_back_says_not_needed():
    findings = rollback.rollback_findings(not_needed_results())
    assert ids(findings) == ["rollback.not_needed"]
    finding = findings[0]
    assert finding["severity"] == "warn" and finding["subject"] == "rollback"
    assert finding["observed"] == "helm unchanged at revision 1, nothing restored"
    assert finding["message"].startswith("rollback not needed: gpu-operator/gpu-operator was already at the recorded "
                                         "revision 1 (Helm action unchanged)")
    assert "3 object(s) unchanged: crds 2, custom_resources 1" in finding["message"]
    # never a bare pass: the verdict warns, the gate passes at fail_on block and its reason says why
    verdict = gate.verdict_of(findings)
    decision = gate.decide(verdict, "block", findings)
    assert verdict == "warn" and decision["failed"] is False
    assert "first warning: rollback.not_needed [rollback]: rollback not needed" in decision["reason"]
    assert rollback.rollback_not_needed(not_needed_results()) is True


def test_not_needed_comes_first_so_the_gate_reason_names_it():
    findings = rollback.rollback_findings(not_needed_results(extra={"crds": ["gpuclusters.nvidia.com"]}))
    assert [f["id"] for f in findings] == ["rollback.not_needed", "rollback.extra_crds"]
    assert "rollback.not_needed" in gate.decide("warn", "block", findings)["reason"]


def test_without_the_restore_step_the_state_was_not_compared():
    results = not_needed_results()
    results["steps"] = [s for s in results["steps"] if s["name"] != "restore_cluster_state"]
    results.update(restored={}, unchanged={})
    message = by_id(rollback.rollback_findings(results), "rollback.not_needed")[0]["message"]
    assert "the captured cluster state was not compared (no restore step" in message


@pytest.mark.parametrize("change", [
    {"helm": {"action": "rolled_back", "revision_before": 2, "revision": 3, "target_revision": 1}},
    {"helm": {"action": "reinstalled", "revision_before": 2, "revision": 3, "target_revision": 1}},
    {"restored": {"crds": ["clusterpolicies.nvidia.com"], "custom_resources": [], "nodes": []}},
    {"restored": {"crds": [], "custom_resources": [], "nodes": ["gpu-1"]}},
    {"hooks": [{"name": "hook:remove-device-class.yml", "ok": True}]},
], ids=["rolled back", "reinstalled", "a CRD restored", "a node restored", "a hook ran"])
def test_a_rollback_that_changed_something_is_not_not_needed(change):
    results = not_needed_results(**change)
    assert "rollback.not_needed" not in ids(rollback.rollback_findings(results))
    assert rollback.rollback_not_needed(results) is False


def test_not_needed_is_not_added_to_a_blocked_or_check_mode_rollback():
    blocked = not_needed_results(index_verified=False)
    assert ids(rollback.rollback_findings(blocked)) == ["rollback.artifacts_unverified"]
    failed = not_needed_results(control_suite=suite(passed=False), completed_at=None, duration_seconds=None)
    assert "rollback.not_needed" not in ids(rollback.rollback_findings(failed))
    check = not_needed_results(check_mode=True)
    assert ids(rollback.rollback_findings(check)) == ["rollback.check_mode"]


# ---- gate_evidence uses them ---------------------------------------------------------------------

RUN = "20261202T010000Z"


def _args(tmp_path, phase, results, **extra):
    root = tmp_path / "evidence"
    if not root.exists():
        root.mkdir(mode=0o700)
    base = {"root": str(root), "run_id": RUN, "phase": phase, "fail_on": "block",
            "record": {"started_at": "2026-12-02T01:00:00Z", "inputs": {}, "tools": {}, "results": results}}
    base.update(extra)
    return base


def test_gate_evidence_records_a_rollback_not_needed_as_a_warning(run_module, tmp_path):
    result = run_module(gate_evidence, _args(tmp_path, "rollback", not_needed_results()))
    assert result["verdict"] == "warn" and result["gate"]["failed"] is False
    assert [f["id"] for f in result["findings"]] == ["rollback.not_needed"]
    assert "rollback not needed" in result["gate"]["reason"]
    text = (tmp_path / "evidence" / RUN / ("rollback-%d.md" % result["attempt"])).read_text()
    assert text.startswith("# Rollback (attempt %d): not needed (verdict WARN)" % result["attempt"])


@pytest.mark.parametrize("phase, good, bad, fid", [
    ("upgrade", upgrade_results(), upgrade_results(completed=False), "upgrade.incomplete"),
    ("rollback", rollback_results(), rollback_results(index_verified=False), "rollback.artifacts_unverified"),
])
def test_gate_evidence_judges_upgrade_and_rollback_records(run_module, tmp_path, phase, good, bad, fid):
    ok = run_module(gate_evidence, _args(tmp_path, phase, copy.deepcopy(good)))
    assert ok["verdict"] == "pass" and ok["gate"]["failed"] is False and ok["findings"] == []
    result = run_module(gate_evidence, _args(tmp_path, phase, copy.deepcopy(bad)))
    assert result["verdict"] == "block" and result["gate"]["failed"] is True
    assert [f["id"] for f in result["findings"]] == [fid] and fid in result["gate"]["reason"]
    record = json.loads((tmp_path / "evidence" / RUN / ("%s-%d.json" % (phase, result["attempt"]))).read_text())
    assert record["results"]["verdict"] == "block" and record["results"]["findings"][0]["id"] == fid
    assert record["results"]["counts"]["block"] == 1


def test_gate_evidence_upgrade_in_check_mode_is_a_warning(run_module, tmp_path):
    result = run_module(gate_evidence, _args(tmp_path, "upgrade", upgrade_results(), _ansible_check_mode=True))
    assert result["verdict"] == "warn" and [f["id"] for f in result["findings"]] == ["upgrade.check_mode"]


@pytest.mark.parametrize("used", [
    None,
    {"crd_prepare": {"sha256": SHA_B, "verified": True}, "helm_upgrade": {"sha256": SHA_B, "verified": True}},
    {"crd_prepare": {"sha256": SHA_B, "verified": True}, "helm_upgrade": {"sha256": "c" * 64, "verified": True}},
    {"crd_prepare": {"sha256": SHA_B, "verified": True}, "helm_upgrade": {"sha256": SHA_B, "verified": False}},
], ids=["not recorded", "not the pinned digest", "helm read other bytes", "not verified at use"])
def test_a_hop_whose_chart_at_use_is_not_the_verified_pin_blocks(used):
    bad = hop("26.3.1", "26.6.2", SHA_A)
    bad["chart_at_use"] = used
    findings = upgrade.upgrade_findings(upgrade_results(hops=[bad, hop("26.6.2", "26.7.0", SHA_B)]))
    assert ids(findings, "block") == ["upgrade.chart_unverified_at_use"]
    assert findings[0]["subject"] == "hop 26.3.1 -> 26.6.2"
    assert gate.verdict_of(findings) == "block"


def test_a_failed_or_check_mode_hop_is_not_judged_on_its_chart_at_use():
    failed = hop("26.6.2", "26.7.0", SHA_B, ok=False)
    failed["chart_at_use"] = {"crd_prepare": {"sha256": "c" * 64, "verified": False}, "helm_upgrade": None}
    findings = upgrade.upgrade_findings(upgrade_results(hops=[hop("26.3.1", "26.6.2", SHA_A), failed], completed=False))
    assert ids(findings, "block") == ["upgrade.hop_failed"]
