# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate decision on recorded evidence: the three runs of a lab rehearsal of the whole gate
(tests/unit/fixtures/decision/evidence, recorded by ``./dra-gate rehearse``: the upgrade canary, production
and the DRA canary) give ``accept`` and ``promote``; the same evidence with one fault each gives
``do-not-promote`` or ``incomplete`` with the reason named. A fault is written as a phase would have
written it (the record changed and indexed again, so the run verifies), except the tampered file."""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
import os
import shutil

import jsonschema
import pytest
import yaml

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import decision_schema, rates
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import decision as dj
from ansible_collections.gpufleet.dra_gate.plugins.modules import gate_decision

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", ".."))
FIXTURE = os.path.join(REPO, "tests", "unit", "fixtures", "decision", "evidence")
POLICY = os.path.join(REPO, "inventories", "gate_policy.example.yml")


def run_ids():
    return sorted(name for name in os.listdir(FIXTURE) if os.path.isdir(os.path.join(FIXTURE, name)))


def newest_finish():
    latest = None
    for run in run_ids():
        with open(os.path.join(FIXTURE, run, "index.json")) as handle:
            for entry in json.load(handle)["records"]:
                with open(os.path.join(FIXTURE, run, entry["file"])) as rec:
                    finished = json.load(rec).get("finished_at")
                latest = max(latest or finished, finished)
    return latest


def later(stamp, days=0, seconds=60):
    when = datetime.datetime.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S") + datetime.timedelta(days=days, seconds=seconds)
    return when.strftime("%Y-%m-%dT%H:%M:%S.000000Z")


@pytest.fixture
def tree(tmp_path):
    """A private copy of the recorded evidence (0700 directories, 0600 files, as the phases write them)."""
    root = tmp_path / "evidence"
    shutil.copytree(FIXTURE, root)
    for base, dirs, files in os.walk(root):
        os.chmod(base, 0o700)
        for name in files:
            os.chmod(os.path.join(base, name), 0o600)
    return root


def rewrite(root, run, name, change):
    """Change a record and index it again: the evidence verifies, the outcome is the changed one."""
    path = os.path.join(root, run, name)
    with open(path) as handle:
        record = json.load(handle)
    change(record)
    data = (json.dumps(record, indent=2, sort_keys=True) + "\n").encode()
    with open(path, "wb") as handle:
        handle.write(data)
    index_path = os.path.join(root, run, "index.json")
    with open(index_path) as handle:
        index = json.load(handle)
    for entry in index["records"]:
        if entry["file"] == name:
            entry["sha256"] = hashlib.sha256(data).hexdigest()
    with open(index_path, "w") as handle:
        json.dump(index, handle)


def newest(root, phase, scope=None):
    """(run, file) of the newest record of ``phase`` (and results.scope) in the tree."""
    best = None
    for run in run_ids():
        with open(os.path.join(root, run, "index.json")) as handle:
            for entry in json.load(handle)["records"]:
                if entry["phase"] != phase:
                    continue
                with open(os.path.join(root, run, entry["file"])) as rec:
                    record = json.load(rec)
                if scope and record["results"].get("scope") != scope:
                    continue
                key = (record.get("finished_at"), entry["attempt"])
                if best is None or key > best[0]:
                    best = (key, run, entry["file"])
    assert best, (phase, scope)
    return best[1], best[2]


def change_phase(root, phase, change, scope=None):
    run, name = newest(root, phase, scope)
    rewrite(root, run, name, lambda record: change(record["results"]))


def write_policy(tmp_path, change=None):
    with open(POLICY) as handle:
        policy = yaml.safe_load(handle)
    if change:
        change(policy)
    path = tmp_path / "policy.yml"
    path.write_text(yaml.safe_dump(policy))
    return str(path)


def decide(root, policy, decided_at=None):
    runs = [{"evidence_root": str(root), "run_id": run} for run in run_ids()]
    return gate_decision.compute(policy, runs, decided_at or later(newest_finish()))


def gates(record):
    return dict((g["id"], g) for g in record["gates"])


def outcome(record):
    return record["decisions"]["operator_upgrade"]["outcome"], record["decisions"]["dra_promotion"]["outcome"]


def reasons(record):
    return "\n".join(record["decisions"]["dra_promotion"]["reasons"])


def test_the_rehearsal_s_evidence_promotes_and_the_record_validates(tree, tmp_path):
    record = decide(tree, write_policy(tmp_path))
    assert outcome(record) == ("accept", "promote"), record["decisions"]
    assert all(g["status"] == "pass" for g in record["gates"]), [(g["id"], g["status"], g["reasons"])
                                                                 for g in record["gates"] if g["status"] != "pass"]
    jsonschema.Draft202012Validator(decision_schema.SCHEMA).validate(record)
    by_id = gates(record)
    rate = by_id["claim_success"]["measured"]
    assert rate["numerator"] == record["outcomes"]["claims_successful"] and rate["denominator"] == \
        record["outcomes"]["claims_attempted"] and rate["denominator"] > 0
    assert by_id["claim_success"]["source"]["run_id"] and by_id["claim_success"]["source"]["sha256"]
    # the CDF's samples are the per-claim records' own, read and hashed: their nearest-rank p95 is the record's
    samples = record["outcomes"]["allocation_latency_samples"]
    assert samples and len(samples) == record["outcomes"]["allocation_latency_seconds"]["count"]
    assert samples[-(-95 * len(samples) // 100) - 1] == record["outcomes"]["allocation_latency_seconds"]["p95"]
    assert record["claims"]["records"][0]["sha256"] and record["claims"]["records"][0]["lines"] == \
        record["outcomes"]["claims_attempted"]
    assert record["timelines"]["rollback"]["duration_seconds"] > 0 and record["timelines"]["drain"]
    assert record["decision"]["approval"]["status"] == "pending"


def test_the_same_inputs_give_a_byte_identical_record(tree, tmp_path):
    policy = write_policy(tmp_path)
    at = later(newest_finish())
    first, second = decide(tree, policy, at), decide(tree, policy, at)
    assert dj.dumps(first) == dj.dumps(second)
    assert first["inputs"]["sha256"] == second["inputs"]["sha256"]
    other = decide(tree, policy, later(newest_finish(), seconds=120))
    assert other["inputs"]["sha256"] != first["inputs"]["sha256"]


def _leak(results):
    lif = results["lifecycles"]
    for event in lif["disruptions"]:
        if event["type"] == "workload_restart":
            event["leaked"] = ["claim-leaked-1"]


def _numa(results):
    numa = results["lifecycles"]["numa"]
    numa["violations"] = 1
    numa["details"] = [{"claim": "numa-3", "request": "gpu", "reason": "split", "devices": ["gpu.nvidia.com/a/gpu-0",
                                                                                            "gpu.nvidia.com/a/gpu-5"],
                        "numa_nodes": [0, 1]}]


def _reschedule(results):
    attempts = max(1, results["failed_reschedule_rate"]["denominator"])
    results["failed_reschedule_rate"] = rates.failure_rate(1, attempts)
    results["failed_reschedules"] = [{"namespace": "team-a", "name": "trainer-0", "uid": "u", "owner": "StatefulSet/trainer",
                                      "reason": "not Running within the reschedule timeout"}]


def _slow_rollback(results):
    results["duration_seconds"] = 5400.0


@pytest.mark.parametrize("phase, scope, change, gate, expected", [
    ("dra_acceptance", None, _leak, "cleanup", "leaked claims: claim-leaked-1"),
    ("dra_acceptance", None, _numa, "numa_placement", "numa-3"),
    ("drain", None, _reschedule, "drain_reschedule", "1 failed reschedules, above 0: team-a/trainer-0"),
    ("rollback", None, _slow_rollback, "rollback_time", "rollback took 5400.000 s, above the objective 900 s"),
])
def test_a_bad_outcome_blocks_promotion_naming_the_reason(tree, tmp_path, phase, scope, change, gate, expected):
    change_phase(tree, phase, change, scope)
    record = decide(tree, write_policy(tmp_path))
    assert outcome(record)[1] == "do-not-promote"
    assert gates(record)[gate]["status"] == "fail"
    assert expected in "; ".join(gates(record)[gate]["reasons"])
    assert expected in reasons(record)


def test_an_unexpired_exception_covers_a_local_threshold_and_an_expired_one_blocks(tree, tmp_path):
    change_phase(tree, "rollback", _slow_rollback)
    at = later(newest_finish())
    today = datetime.datetime.strptime(at[:10], "%Y-%m-%d").date()

    def accept(expires):
        return lambda policy: policy.update(exceptions=[{
            "gate": "rollback_time", "reason": "the lab's etcd restore is slow (CHG-1)", "accepted_by": "Head of platform",
            "expires": expires.isoformat()}])
    record = decide(tree, write_policy(tmp_path, accept(today + datetime.timedelta(days=30))), at)
    assert outcome(record)[1] == "promote", reasons(record)
    assert gates(record)["rollback_time"]["status"] == "excepted"
    assert gates(record)["rollback_time"]["exception"]["accepted_by"] == "Head of platform"
    soon = decide(tree, write_policy(tmp_path, accept(today + datetime.timedelta(days=2))), at)
    assert outcome(soon)[1] == "promote" and [f["id"] for f in soon["findings"]] == ["decision.exception_expiring"]
    expired = decide(tree, write_policy(tmp_path, accept(today - datetime.timedelta(days=1))), at)
    assert outcome(expired)[1] == "do-not-promote"
    assert "decision.exception_expired [exception rollback_time]" in reasons(expired)
    assert gates(expired)["rollback_time"]["status"] == "fail"


def test_a_missing_phase_makes_the_decision_incomplete(tree, tmp_path):
    run, name = newest(tree, "drain")
    index_path = tree / run / "index.json"
    index = json.loads(index_path.read_text())
    index["records"] = [e for e in index["records"] if e["phase"] != "drain"]
    index_path.write_text(json.dumps(index))
    for entry in os.listdir(tree / run):
        if entry.startswith("drain-"):
            os.unlink(tree / run / entry)
    record = decide(tree, write_policy(tmp_path))
    assert outcome(record) == ("accept", "incomplete")
    assert record["phases"]["drain"]["status"] == "missing"
    assert "phase drain: missing" in reasons(record)
    assert gates(record)["drain_reschedule"]["status"] == "not_measured"


def test_a_tampered_evidence_file_is_not_read_and_the_decision_is_incomplete(tree, tmp_path):
    run, name = newest(tree, "dra_acceptance")
    path = tree / run / name
    path.write_text(path.read_text().replace('"attempted"', '"attempted" ', 1))
    record = decide(tree, write_policy(tmp_path))
    assert outcome(record)[1] == "incomplete"
    assert record["phases"]["dra_acceptance"]["status"] == "unverified"
    problems = [p for r in record["inputs"]["runs"] if r["run_id"] == run for p in r["problems"]]
    assert any(name in p and "sha256 mismatch" in p for p in problems), problems
    assert "phase dra_acceptance: unverified" in reasons(record)


def test_a_missing_local_threshold_is_never_a_pass(tree, tmp_path):
    record = decide(tree, write_policy(tmp_path, lambda p: p["thresholds"].pop("allocation_latency_p95_max_seconds")))
    assert outcome(record)[1] == "incomplete"
    gate = gates(record)["allocation_latency_p95"]
    assert gate["status"] == "not_measured" and gate["threshold"]["value"] is None
    assert "no threshold allocation_latency_p95_max_seconds in the policy" in reasons(record)


def test_stale_evidence_makes_the_decision_incomplete(tree, tmp_path):
    record = decide(tree, write_policy(tmp_path), later(newest_finish(), days=30))
    assert outcome(record) == ("incomplete", "incomplete")
    assert all(p["status"] == "stale" for p in record["phases"].values() if p["file"])
    assert "policy allows 14" in reasons(record)


def test_a_check_mode_run_is_skipped_never_passed(tree, tmp_path):
    change_phase(tree, "drain", lambda results: results.update(check_mode=True))
    record = decide(tree, write_policy(tmp_path))
    assert record["phases"]["drain"]["status"] == "skipped" and outcome(record)[1] == "incomplete"


def test_a_failed_operator_upgrade_rejects_decision_1_and_blocks_decision_2(tree, tmp_path):
    change_phase(tree, "upgrade", lambda results: results.update(verdict="block", completed=False),
                 scope="production")
    record = decide(tree, write_policy(tmp_path))
    assert outcome(record) == ("reject", "do-not-promote")
    assert "decision 1 (operator_upgrade) is reject" in reasons(record)


def test_recompute_reports_byte_identity_and_differences(tree, tmp_path):
    policy = write_policy(tmp_path)
    record = decide(tree, policy)
    path = tmp_path / "decision.json"
    path.write_text(dj.dumps(record))
    again = gate_decision.compute(policy, [{"evidence_root": r["evidence_root"], "run_id": r["run_id"]}
                                           for r in record["inputs"]["runs"]], record["decided_at"])
    assert dj.dumps(again) == path.read_text()
    change_phase(tree, "rollback", _slow_rollback)
    changed = gate_decision.compute(policy, [{"evidence_root": r["evidence_root"], "run_id": r["run_id"]}
                                             for r in record["inputs"]["runs"]], record["decided_at"])
    found = gate_decision.differences(copy.deepcopy(record), changed)
    assert any(p.startswith("gates[") and p.endswith(".status") for p in found)
    assert "decisions.dra_promotion.outcome" in found


@pytest.mark.parametrize("path", ["/etc/passwd", "/elsewhere/dra-2612/../../../etc/passwd"])
def test_per_claim_records_outside_the_run_directory_are_never_read(tree, tmp_path, path):
    change_phase(tree, "dra_acceptance", lambda results: results["lifecycles"].update(records_path=path))
    record = decide(tree, write_policy(tmp_path))
    gate = gates(record)["allocation_latency_p95"]
    assert gate["status"] == "not_measured" and "outside the run directory" in gate["reasons"][0], gate
    assert record["outcomes"]["allocation_latency_samples"] == [] and outcome(record)[1] == "incomplete"


def test_changed_per_claim_records_do_not_back_the_recorded_quantiles(tree, tmp_path):
    run, name = newest(tree, "dra_acceptance")
    with open(tree / run / name) as handle:
        lines = json.load(handle)["results"]["lifecycles"]["records_path"].rsplit("/%s/" % run, 1)[1]
    jsonl = tree / run / lines
    kept = jsonl.read_text().splitlines()[1:]  # one claim's record gone
    jsonl.write_text("\n".join(kept) + "\n")
    record = decide(tree, write_policy(tmp_path))
    gate = gates(record)["allocation_latency_p95"]
    assert gate["status"] == "not_measured" and "successful claims in the per-claim records" in gate["reasons"][0]


# -- sliced jobs (AWX job slicing; docs/awx.md "Sliced runs") ------------------------------------------------------

def slice_preflight(root, slices, group="wf-41"):
    """The newest preflight record rewritten as the records of a sliced job: ``slices`` is a list of (slice id,
    hosts, change of results or None); the first replaces the record, the others are appended as further attempts
    (their files and index entries as gate_evidence writes them)."""
    run, name = newest(root, "preflight")
    with open(os.path.join(root, run, name)) as handle:
        base = json.load(handle)
    index_path = os.path.join(root, run, "index.json")
    for number, (ident, hosts, change) in enumerate(slices):
        record = copy.deepcopy(base)
        record["slice"] = {"count": 3, "id": ident, "group": group}
        record["inputs"]["hosts"] = hosts
        if change:
            change(record["results"])
        if number == 0:
            rewrite(root, run, name, lambda r, new=record: r.update(new))
            continue
        with open(index_path) as handle:
            index = json.load(handle)
        attempt = max(e["attempt"] for e in index["records"] if e["phase"] == "preflight") + 1
        record["attempt"] = attempt
        data = (json.dumps(record, indent=2, sort_keys=True) + "\n").encode()
        filename = "preflight-%d.json" % attempt
        with open(os.path.join(root, run, filename), "wb") as handle:
            handle.write(data)
        os.chmod(os.path.join(root, run, filename), 0o600)
        entry = dict([e for e in index["records"] if e["file"] == name][0], attempt=attempt, file=filename,
                     sha256=hashlib.sha256(data).hexdigest(), verdict=record["results"].get("verdict"))
        entry.pop("summary_file", None)
        index["records"].append(entry)
        with open(index_path, "w") as handle:
            json.dump(index, handle)
    return run


def _blocking_finding(results):
    results["verdict"] = "block"
    results["findings"] = results["findings"] + [{
        "id": "coverage.host_unanswered", "severity": "block", "subject": "gpu-9", "observed": "unreachable",
        "expected": "an answer", "message": "host gpu-9 did not answer", "source": "test"}]


def test_a_sliced_preflight_is_merged_over_its_slices(tree, tmp_path):
    policy = write_policy(tmp_path)
    baseline = decide(tree, policy)
    slice_preflight(tree, [("101", ["gpu-1"], None), ("102", ["gpu-2"], None), ("103", ["gpu-3"], None)])
    record = decide(tree, policy)
    assert record["phases"]["preflight"]["status"] == "present"
    assert outcome(record) == outcome(baseline)
    assert gates(record)["compatibility"]["status"] == "pass"
    assert "in 5 preflight records" in gates(record)["compatibility"]["measured"]["text"], gates(record)["compatibility"]
    jsonschema.Draft202012Validator(decision_schema.SCHEMA).validate(record)


@pytest.mark.parametrize("slices, expected", [
    # a slice that failed before its record (or never ran): never a pass with fewer hosts
    ([("101", ["gpu-1"], None), ("102", ["gpu-2"], None)], "2 of 3 slices recorded (slice 101: preflight-1.json, "
     "slice 102: preflight-2.json): a slice is missing or failed before its record"),
    ([("101", ["gpu-1"], None), ("102", ["gpu-1", "gpu-2"], None), ("103", ["gpu-3"], None)],
     "hosts in more than one slice: gpu-1 (slices 101, 102)"),
])
def test_a_slice_missing_or_a_host_twice_makes_the_decision_incomplete(tree, tmp_path, slices, expected):
    run = slice_preflight(tree, slices)
    record = decide(tree, write_policy(tmp_path))
    phase = record["phases"]["preflight"]
    assert phase["status"] == "incomplete" and expected in phase["reason"], phase
    assert phase["reason"].startswith("run %s preflight, sliced job wf-41: " % run), phase
    assert outcome(record) == ("incomplete", "incomplete")
    assert "phase preflight: incomplete" in "\n".join(record["decisions"]["operator_upgrade"]["reasons"])
    jsonschema.Draft202012Validator(decision_schema.SCHEMA).validate(record)


def test_a_failing_slice_fails_the_merged_preflight(tree, tmp_path):
    slice_preflight(tree, [("101", ["gpu-1"], None), ("102", ["gpu-2"], _blocking_finding), ("103", ["gpu-3"], None)])
    record = decide(tree, write_policy(tmp_path))
    assert record["phases"]["preflight"]["status"] == "present" and record["phases"]["preflight"]["verdict"] == "block"
    compatibility = gates(record)["compatibility"]
    assert compatibility["status"] == "fail" and "coverage.host_unanswered [gpu-9]" in "; ".join(compatibility["reasons"])
    assert outcome(record)[0] == "reject"


def test_a_retried_slice_counts_once_with_its_newest_record(tree, tmp_path):
    # slice 102 failed (blocking), was relaunched and passed: three slices, the newest record of each judged
    slice_preflight(tree, [("101", ["gpu-1"], None), ("102", ["gpu-2"], _blocking_finding), ("102", ["gpu-2"], None),
                           ("103", ["gpu-3"], None)])
    record = decide(tree, write_policy(tmp_path))
    assert record["phases"]["preflight"]["status"] == "present", record["phases"]["preflight"]
    assert record["phases"]["preflight"]["verdict"] == "warn"  # the fixture's, not the retried slice's block
    assert gates(record)["compatibility"]["status"] == "pass", gates(record)["compatibility"]


def test_a_later_launch_of_the_sliced_job_is_judged_alone(tree, tmp_path):
    # a later launch (wf-42) of which only one slice has recorded yet: incomplete, the earlier full launch not mixed in
    slice_preflight(tree, [("101", ["gpu-1"], None), ("102", ["gpu-2"], None), ("103", ["gpu-3"], None),
                           ("201", ["gpu-1"], None)])
    run, name = newest(tree, "preflight")
    rewrite(tree, run, name, lambda r: r["slice"].update(group="wf-42"))
    record = decide(tree, write_policy(tmp_path))
    phase = record["phases"]["preflight"]
    assert phase["status"] == "incomplete" and "sliced job wf-42: 1 of 3 slices recorded" in phase["reason"], phase
