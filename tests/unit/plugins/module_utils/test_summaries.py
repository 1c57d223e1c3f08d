# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Markdown summaries of the upgrade, rollback and drain records (module_utils/evidence/summaries.py), on records the
lab contract tests wrote (tests/fixtures/evidence/, see its README) and on constructed edge cases; and
gate_evidence writing them when the phase gives no summary of its own."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import records as evidence
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import summaries
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import rollback
from ansible_collections.gpufleet.dra_gate.plugins.modules import gate_evidence

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                        "fixtures", "evidence")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def section(text, heading):
    """The lines of one ``## heading`` section (up to the next heading)."""
    lines = text.splitlines()
    start = lines.index("## " + heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("#")), len(lines))
    return [line for line in lines[start:end] if line]


def rows(text, heading):
    """Table rows of a section (header and separator dropped), as lists of cells."""
    table = [line for line in section(text, heading) if line.startswith("|")][2:]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in table]


def test_renderers_are_registered_for_their_phases():
    assert gate_evidence.RENDERERS["rollback"] is summaries.render_rollback
    assert gate_evidence.RENDERERS["drain"] is summaries.render_drain
    assert gate_evidence.RENDERERS["upgrade"] is summaries.render_upgrade
    assert gate_evidence.RENDERERS["preflight"] is evidence.render_preflight


def test_seconds_between_reads_every_stamp_form_of_the_records():
    assert summaries.seconds_between("2026-12-05T12:14:11Z", "2026-12-05T12:14:25Z") == 14
    assert summaries.seconds_between("2026-12-05T12:14:11.411385Z", "2026-12-05T12:14:25.708Z") == pytest.approx(14.296615)
    # the drain's eviction stamps carry nanoseconds
    assert summaries.seconds_between("2026-12-05T12:13:44.930635696Z", "2026-12-05T12:13:48.371220124Z") == pytest.approx(3.440584, abs=1e-6)
    assert summaries.seconds_between(None, "2026-12-05T12:14:25Z") is None
    assert summaries.seconds_between("yesterday", "2026-12-05T12:14:25Z") is None


# ---- rollback ------------------------------------------------------------------------------------

def test_rollback_summary_shows_decision_time_steps_helm_restored_suite_and_findings():
    record = fixture("rollback-manual.json")
    text = summaries.render_rollback(record)
    assert text.startswith("# Rollback (attempt 2): verdict WARN\n")
    assert "- Decided at 2026-12-05T12:14:11.411385Z." in text
    assert ("- **Rollback time 14.297 s**, from the decision to the control suite passing at 2026-12-05T12:14:25.708Z."
            in text)
    assert "- Helm release gpu-operator/gpu-operator: rolled_back, revision 5 → 6 (the recorded revision 1, chart v26.3.1)." in text
    assert "- Restored from the capture: crds clusterpolicies.nvidia.com, nvidiadrivers.nvidia.com; custom_resources none; nodes none." in text
    assert "Left in place (not in the recorded state): crds computedomaincliques.resource.nvidia.com" in text
    assert "- Control suite: passed (3 of 3 workload(s) passed, 0 failed, 0 skipped) in 2.592 s." in text
    steps = rows(text, "Steps")
    assert [r[0] for r in steps] == ["helm_rollback", "restore_cluster_state", "verify", "control_suite"]
    assert [r[1] for r in steps] == ["ok"] * 4
    # seconds of the step, then from the decision: the last step ends the rollback time
    assert steps[0][4] == "4.609" and steps[-1][5] == "14.297"
    assert [r[0] for r in rows(text, "Control suite")] == ["gpu-pod", "gpu-job", "gpu-deployment"]
    findings = rows(text, "Findings")
    assert [(r[0], r[1]) for r in findings] == [("warn", "rollback.extra_crds")] * 3
    assert "not needed" not in text


def test_rollback_not_needed_says_so_in_the_heading_and_the_lines():
    record = fixture("rollback-not-needed.json")
    text = summaries.render_rollback(record)
    assert text.startswith("# Rollback (attempt 1): not needed (verdict WARN)\n")
    assert "- Helm release gpu-operator/gpu-operator: unchanged, revision 1 → 1 (the recorded revision 1, chart v26.3.1)." in text
    assert "- **Not needed**: the release was already at the recorded revision and nothing was restored." in text
    assert "- Already as captured (not written): crds 2, custom_resources 1, nodes 2." in text
    assert [(r[0], r[1]) for r in rows(text, "Findings")] == [("warn", "rollback.not_needed")]
    # the judge on the same results says the same
    assert [f["id"] for f in rollback.rollback_findings(record["results"])] == ["rollback.not_needed"]


def test_automatic_rollback_summary_names_the_trigger_and_reason_on_one_line():
    text = summaries.render_rollback(fixture("rollback-automatic.json"))
    assert text.startswith("# Rollback (attempt 1): verdict PASS\n")
    line = next(l for l in text.splitlines() if l.startswith("- Automatic rollback"))
    assert "(reason: hop 26.3.1 -> 26.6.2 failed at helm_upgrade:" in line and "context deadline exceeded" in line
    # the release name comes from the record's inputs when the helm section does not carry it
    assert "- Helm release gpu-operator/gpu-operator: rolled_back, revision 2 → 3" in text
    assert "- Restored from the capture: crds none; custom_resources none; nodes none." in text
    assert section(text, "Findings") == ["No findings."]


def test_a_rollback_that_did_not_complete_has_no_rollback_time_and_shows_the_failures():
    record = fixture("rollback-manual.json")
    results = record["results"]
    results.update(completed_at=None, duration_seconds=None, failure="failed step(s): control_suite")
    results["steps"][-1].update(ok=False, detail="failed: gpu-job")
    results["control_suite"].update(passed=False, counts={"passed": 2, "failed": 1, "skipped": 0, "total": 3})
    results["control_suite"]["workloads"][1].update(passed=False, status="failed", reason="timed out after 300 s")
    results["verify"] = {"ok": False, "problems": ["ClusterPolicy notReady"]}
    text = summaries.render_rollback(record)
    assert ("- **No rollback time**: the control suite did not pass after the rollback (failed step(s): control_suite)."
            in text)
    assert "- Verify after the rollback: **1 problem(s)**: ClusterPolicy notReady." in text
    assert "**not passed** (2 of 3 workload(s) passed, 1 failed, 0 skipped) in 2.592 s; failed: gpu-job: timed out after 300 s" in text
    assert rows(text, "Steps")[-1][1] == "failed"
    assert rows(text, "Control suite")[1][3:] == ["failed", "1.924", "timed out after 300 s"]


def test_a_check_mode_rollback_says_nothing_was_rolled_back():
    record = fixture("rollback-not-needed.json")
    record["results"].update(check_mode=True, completed_at=None, duration_seconds=None, steps=[],
                             verify={"skipped": "check mode"}, control_suite={"skipped": "check mode"})
    text = summaries.render_rollback(record)
    assert "- **Check mode**: nothing was rolled back; a check run never passes." in text
    assert "No rollback time" not in text and "## Steps" not in text
    assert "- Control suite: not run (check mode)." in text


def test_hooks_are_listed_with_their_outcome():
    record = fixture("rollback-manual.json")
    record["results"]["hooks"] = [{"name": "hook:remove-device-class.yml", "ok": True}, {"name": "hook:x.yml", "ok": False}]
    assert "- Hooks: hook:remove-device-class.yml ok, hook:x.yml failed." in summaries.render_rollback(record)


# ---- upgrade -------------------------------------------------------------------------------------

def test_upgrade_summary_shows_every_hop_and_its_steps():
    text = summaries.render_upgrade(fixture("upgrade-two-hops.json"))
    assert text.startswith("# Upgrade (attempt 5): verdict PASS\n")
    assert ("- Scope canary; GPU Operator release gpu-operator/gpu-operator: 26.3.1 → 26.7.0; 2 of 2 planned hop(s) ran; "
            "completed: yes." in text)
    hops = rows(text, "Hops")
    assert [h[0] for h in hops] == ["26.3.1 → 26.6.2", "26.6.2 → 26.7.0"]
    assert hops[0][2] == "ok" and hops[0][3] == "18.200"
    assert hops[0][4] == "26.6.2 sha256 a1f26e8a85b0…, verified yes, at use yes"
    assert hops[1][5] == "upgraded, revision 4 → 5" and hops[1][6] == "created 3, unchanged 3, updated 2"
    assert hops[1][9] == "unchanged (gpu-1 8, gpu-2 1)"
    steps = rows(text, "Steps")
    first = ("crd_prepare", "helm_upgrade", "verify", "control_suite")
    assert [(s[0], s[1]) for s in steps][:4] == [("26.3.1 → 26.6.2", n) for n in first]
    assert len(steps) == 8 and all(s[2] == "ok" for s in steps)
    assert section(text, "Findings") == ["No findings."]


def test_upgrade_summary_of_a_failed_hop_names_where_it_stopped_and_the_rollback():
    text = summaries.render_upgrade(fixture("upgrade-rolled-back.json"))
    assert text.startswith("# Upgrade (attempt 4): verdict BLOCK\n")
    stopped = next(l for l in text.splitlines() if l.startswith("- **Stopped**"))
    # one line: the multi-line failure message does not end the list item
    assert "hop 26.3.1 -> 26.6.2, step helm_upgrade (decided at 2026-12-05T12:12:49.786271Z)" in stopped
    assert "context deadline exceeded" in stopped
    assert "- Rolled back automatically: verdict pass, rollback time 11.275 s (record /lab/evidence1/canary/rollback-1.json)." in text
    hop = rows(text, "Hops")[0]
    assert hop[2] == "failed at helm_upgrade" and hop[8] == "not run (not reached)"
    assert [f[1] for f in rows(text, "Findings")][:1] == ["upgrade.allocatable_changed"]


def test_upgrade_summary_of_a_refusal_and_of_production():
    record = fixture("upgrade-refused.json")
    text = summaries.render_upgrade(record)
    assert "- **Refused** before any change: 26.3.1 -> 26.7.0 needs 2 hops" in text and "## Hops" not in text
    record["results"].update(scope="production", canary={"required": True, "run_id": "canary-2612", "cleared": False,
                                                         "reasons": ["results.verdict: found 'warn', expected 'pass'"]})
    assert ("- Canary clearance (run `canary-2612`): cleared no; results.verdict: found 'warn', expected 'pass'."
            in summaries.render_upgrade(record))


# ---- drain ---------------------------------------------------------------------------------------

def test_drain_summary_shows_waves_nodes_seconds_and_the_rate():
    text = summaries.render_drain(fixture("drain-done.json"))
    assert text.startswith("# Drain (attempt 1): verdict WARN\n")
    assert "- 6 node(s): 6 done." in text
    assert "- **Failed reschedules: 0 of 13 (0.0 %)**; PodDisruptionBudget refusals: 7." in text
    assert "- Stopped at: nowhere (the rollout did not stop in this attempt)." in text
    waves = rows(text, "Waves")
    assert [(w[0], w[2]) for w in waves] == [("1", "gpu-1"), ("2", "gpu-2, gpu-3"), ("3", "gpu-4, gpu-5, gpu-6")]
    assert waves[0][5] == "12.970"
    nodes = rows(text, "Nodes")
    assert [n[0] for n in nodes] == ["gpu-%d" % i for i in range(1, 7)]
    # gpu-1: cordon, evict, claims, maintenance, ready, reschedule seconds, evicted, PDB retries, rate, health, cordoned
    assert nodes[0][1:] == ["1", "done", "0.530", "3.441", "0.001", "0.735", "1.220", "0.005", "2", "3", "0 of 2 (0.0 %)",
                            "restored", "no"]
    assert [(f[0], f[1]) for f in rows(text, "Findings")] == [("warn", "drain.pdb_waited")] * 3


def test_drain_summary_of_a_stop_names_the_node_the_step_and_the_untouched_nodes():
    text = summaries.render_drain(fixture("drain-stopped.json"))
    assert "- 6 node(s): 3 done, 2 not started, 1 stopped." in text
    stop = next(l for l in text.splitlines() if l.startswith("- **Stopped at**"))
    assert stop.startswith('- **Stopped at** node gpu-3 (wave 2), step "Wait until the node is Ready with its recorded devices": '
                           "node gpu-3: device health not restored after 4 s")
    nodes = dict((n[0], n) for n in rows(text, "Nodes"))
    assert nodes["gpu-3"][2] == "**stopped** at Wait until the node is Ready with its recorded devices"
    assert nodes["gpu-3"][7] == "4.002" and nodes["gpu-3"][8] == "—" and nodes["gpu-3"][13] == "yes"
    assert nodes["gpu-3"][12].startswith("**not restored**: node gpu-3 has not rebooted yet")
    assert nodes["gpu-5"][2] == "not started" and nodes["gpu-5"][3:] == ["—"] * 11
    assert "- gpu-5 not started: the rollout stopped at gpu-3 (wave 2): later waves untouched" in text
    assert "## Failed reschedules" not in text


def test_drain_summary_names_every_failed_reschedule():
    text = summaries.render_drain(fixture("drain-failed-reschedule.json"))
    assert "- **Failed reschedules: 1 of 1 (100.0 %)**" in text
    assert rows(text, "Failed reschedules") == [["apps/pinned-zszpjvtpwn-5bq87", "ReplicaSet pinned-zszpjvtpwn", "gpu-2",
                                                 "Unschedulable: 0/7 nodes are available: 7 node(s) didn't match Pod's "
                                                 "node affinity/selector."]]
    assert rows(text, "Nodes")[0][11] == "1 of 1 (100.0 %)"


def test_drain_summary_of_nothing_attempted_and_check_mode():
    record = fixture("drain-done.json")
    record["results"].update(check_mode=True, nodes=[], waves=[],
                             failed_reschedule_rate={"numerator": 0, "denominator": 0, "percent": None})
    text = summaries.render_drain(record)
    assert "- **Check mode**: nothing was cordoned or evicted; a check run never passes." in text
    assert "- **Failed reschedules: 0 of 0 (no rate: nothing attempted)**" in text
    assert "## Nodes" not in text and "## Waves" not in text


def test_renderers_take_a_bare_record_without_failing():
    for render in (summaries.render_rollback, summaries.render_upgrade, summaries.render_drain):
        text = render({"run_id": "r", "attempt": 1, "results": {}})
        assert "verdict UNKNOWN" in text and "No findings." in text


def test_table_cells_are_escaped():
    record = fixture("rollback-manual.json")
    record["results"]["steps"][0]["detail"] = "a|b\nc"
    assert "| a\\|b c |" in summaries.render_rollback(record)


# ---- gate_evidence renders them -------------------------------------------------------------------

@pytest.mark.parametrize("name, heading", [
    ("rollback-not-needed.json", "# Rollback (attempt 1): not needed (verdict WARN)"),
    ("rollback-manual.json", "# Rollback (attempt 1): verdict WARN"),
    ("drain-stopped.json", "# Drain (attempt 1): verdict BLOCK"),
    ("upgrade-two-hops.json", "# Upgrade (attempt 1): verdict PASS"),
])
def test_gate_evidence_writes_the_phase_summary(run_module, tmp_path, name, heading):
    written = fixture(name)
    root = tmp_path / "evidence"
    root.mkdir(mode=0o700)
    results = copy.deepcopy(written["results"])
    for key in ("findings", "counts", "gate", "verdict"):
        results.pop(key, None)
    record = {"started_at": written["started_at"], "finished_at": written["finished_at"], "inputs": written["inputs"],
              "tools": written["tools"], "results": results}
    result = run_module(gate_evidence, {"root": str(root), "run_id": written["run_id"], "phase": written["phase"],
                                        "record": record, "fail_on": "never"})
    assert result["verdict"] == written["results"]["verdict"]
    run_dir = root / written["run_id"]
    text = (run_dir / ("%s-1.md" % written["phase"])).read_text()
    assert text.startswith(heading + "\n") and "## Findings" in text
    assert heading in (run_dir / "summary.md").read_text()
