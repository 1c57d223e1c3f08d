# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade, rollback and snapshot roles' decisions (judges/upgrade.py, rollback.py, snapshot.py, hosts.py) and
their filters (plugins/filter/judges.py), on the task results the roles register, rebuilt from recorded runs
(tests/fixtures/evidence): every refusal, a failed step in each position, check mode."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.dra_gate.plugins.filter import judges as judge_filters
from ansible_collections.gpufleet.dra_gate.plugins.filter import phase as phase_filters
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import findings, phase_role, rollback, snapshot, upgrade

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "evidence")
SKIPPED = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
NS, REL = "gpu-operator", "gpu-operator"


def recorded(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def failed(msg):
    return {"failed": True, "changed": False, "msg": msg}


# ---- registered results of one hop, rebuilt from the recorded two-hop run ---------------------------

def hop_observed(number=0):
    hop = recorded("upgrade-two-hops.json")["results"]["hops"][number]
    steps = dict((s["name"], s) for s in hop["steps"])
    crds = {"changed": False, "counts": json.loads(steps["crd_prepare"]["detail"]), "chart": hop["chart_at_use"]["crd_prepare"],
            "applied": hop["crds"].get("applied"), "crds": [dict(c, extra="not recorded") for c in hop["crds"].get("diff", [])],
            "evidence_dir": hop["crds"].get("evidence_dir"), "artifacts": hop["crds"].get("artifacts", [])}
    release = dict(hop["helm"], changed=True, msg=steps["helm_upgrade"]["detail"], chart=hop["chart_at_use"]["helm_upgrade"],
                   started_at=steps["helm_upgrade"]["started_at"], finished_at=steps["helm_upgrade"]["finished_at"],
                   values_diff=hop["values_diff"], deployed_values_diff=hop["deployed_values_diff"], helm=hop["helm"].get("backend"))
    verify = dict(hop["verify"], changed=False, msg=steps["verify"]["detail"], nodes=dict(
        (n, {"allocatable": a}) for n, a in hop["allocatable_after"].items()))
    suite = dict(hop["control_suite"], changed=False, msg=steps["control_suite"]["detail"])
    baseline = {"ok": True, "nodes": dict((n, {"allocatable": a}) for n, a in hop["allocatable_before"].items())}
    hop_in = {"from": hop["from"], "to": hop["to"], "kind": hop["kind"], "chart": hop["chart"]}
    return {"hop": hop_in, "started_at": hop["started_at"], "crds_finished_at": steps["crd_prepare"]["finished_at"],
            "finished_at": hop["finished_at"], "crds": crds, "release": release, "verify": verify, "suite": suite,
            "baseline_verify": baseline}, hop


def test_a_recorded_hop_is_judged_as_it_was_recorded():
    observed, hop = hop_observed()
    outcome = upgrade.hop_outcome(observed)
    record = outcome["record"]
    assert outcome["failure"] == {}
    assert record["ok"] is True and record["failure"] is None
    assert record["steps"] == hop["steps"]
    assert record["duration_seconds"] == hop["duration_seconds"]
    assert record["crds"]["diff"] == hop["crds"].get("diff", [])
    assert record["allocatable_before"] == hop["allocatable_before"] and record["allocatable_after"] == hop["allocatable_after"]
    assert record["chart_at_use"] == hop["chart_at_use"]
    # the record judges as the recorded one does
    assert upgrade.upgrade_findings({"hops": [record], "completed": True, "baseline": {"control_suite": {"passed": True}}}) == []


@pytest.mark.parametrize("position", ["crd_prepare", "helm_upgrade", "verify", "control_suite"])
def test_a_failed_step_in_each_position_fails_the_hop_there(position):
    observed = hop_observed()[0]
    key = {"crd_prepare": "crds", "helm_upgrade": "release", "verify": "verify", "control_suite": "suite"}[position]
    observed[key] = failed("%s broke" % position)
    # the tasks after a failed one do not run
    later = ["crds", "release", "verify", "suite"]
    for name in later[later.index(key) + 1:]:
        observed[name] = dict(SKIPPED)
    outcome = upgrade.hop_outcome(observed)
    record = outcome["record"]
    assert record["ok"] is False
    assert [s["name"] for s in record["steps"]][-1] == position
    assert [s["ok"] for s in record["steps"]] == [True] * (len(record["steps"]) - 1) + [False]
    assert record["failure"] == "%s: %s broke" % (position, position)
    assert outcome["failure"] == {"hop": "26.3.1 -> 26.6.2", "step": position, "message": "%s broke" % position,
                                  "decided_at": observed["finished_at"]}
    if key in ("crds", "release"):
        assert record["verify"] == {"skipped": "not reached"} and record["control_suite"] == {"skipped": "not reached"}
    assert "upgrade.hop_failed" in [f["id"] for f in upgrade.upgrade_findings({"hops": [record]})]


def test_a_verify_that_answers_not_ok_fails_without_failing_the_task():
    observed = hop_observed()[0]
    observed["verify"] = {"changed": False, "ok": False, "problems": ["mode: DRA driver found", "image drift"]}
    observed["suite"] = dict(SKIPPED)
    record = upgrade.hop_outcome(observed)["record"]
    assert record["failure"] == "verify: mode: DRA driver found; image drift"
    observed["verify"], observed["suite"] = dict(hop_observed()[0]["verify"]), {"changed": False, "passed": False, "workloads": [
        {"name": "pod-smoke", "passed": True}, {"name": "claim-gpu", "passed": False}, {"name": "nameless"}]}
    assert upgrade.hop_outcome(observed)["record"]["failure"] == "control_suite: failed: claim-gpu, nameless"


def test_the_recorded_failed_hop_gives_the_recorded_failure():
    run = recorded("upgrade-rolled-back.json")["results"]
    hop = run["hops"][0]
    helm = [s for s in hop["steps"] if s["name"] == "helm_upgrade"][0]
    observed = hop_observed()[0]
    observed["hop"] = {"from": hop["from"], "to": hop["to"], "kind": hop["kind"], "chart": hop["chart"]}
    observed["finished_at"] = run["failure"]["decided_at"]
    observed["started_at"] = hop["started_at"]
    observed["release"] = failed(helm["detail"])
    observed["verify"] = observed["suite"] = dict(SKIPPED)
    outcome = upgrade.hop_outcome(observed)
    assert outcome["failure"] == run["failure"]
    assert outcome["record"]["failure"] == hop["failure"] and outcome["record"]["ok"] is False


def test_a_check_run_hop_is_planned_never_passed():
    observed = hop_observed()[0]
    observed["verify"] = observed["suite"] = dict(SKIPPED)
    record = upgrade.hop_outcome(observed, check_mode=True)["record"]
    assert record["ok"] is None and record["failure"] is None
    assert record["verify"] == {"skipped": "check mode"} and record["control_suite"] == {"skipped": "check mode"}
    observed["crds"] = failed("dry run refused")
    assert upgrade.hop_outcome(observed, check_mode=True)["record"]["ok"] is False


def test_a_hop_without_a_hop_or_with_a_bad_stamp_is_an_error_naming_the_field():
    with pytest.raises(findings.JudgeError, match="hop"):
        upgrade.hop_outcome({})
    observed = hop_observed()[0]
    observed["finished_at"] = "yesterday"
    with pytest.raises(findings.JudgeError, match="finished_at: 'yesterday'"):
        upgrade.hop_outcome(observed)
    with pytest.raises(AnsibleFilterError, match="^upgrade_hop: finished_at"):
        judge_filters.upgrade_hop(observed)


# ---- the plan's refusal ladder --------------------------------------------------------------------

def plan_inputs():
    cluster = {"changed": False, "ansible_facts": {"gpu_cluster": {"operator": {"helm_release": {"chart_version": "v26.3.1"}}}}}
    compat = {"changed": False, "upgrade_path": [{"from": "26.3.1", "to": "26.6.2"}]}
    charts = {"changed": False, "current_version": "26.3.1", "hops": [{"from": "26.3.1", "to": "26.6.2", "chart": {"kind": "archive"}}]}
    return cluster, compat, charts


def test_a_plan_that_passes():
    cluster, compat, charts = plan_inputs()
    assert upgrade.plan_refusal(cluster, compat, charts, NS, REL) == {"refused": "", "current": "26.3.1", "plan": charts["hops"]}


def test_each_reason_that_refuses_the_plan_in_order():
    cluster, compat, charts = plan_inputs()
    assert upgrade.plan_refusal(failed("401"), SKIPPED, SKIPPED, NS, REL)["refused"] == "reading the cluster failed: 401"
    assert upgrade.plan_refusal(cluster, failed("bad matrix"), SKIPPED, NS, REL)["refused"] == "compat_check failed: bad matrix"
    no_path = upgrade.plan_refusal(cluster, dict(compat, upgrade_path=None), failed("no path"), NS, REL)
    assert no_path["refused"].startswith("the operator version running in the cluster is unknown (no Helm release "
                                         "gpu-operator/gpu-operator with a chart version)")
    refused = upgrade.plan_refusal(cluster, compat, dict(failed("no chart for 26.6.x"), current_version="26.3.1"), NS, REL)
    assert refused == {"refused": "no chart for 26.6.x", "current": "26.3.1", "plan": []}
    remote = dict(charts, hops=charts["hops"] + [{"from": "26.6.2", "to": "26.7.0", "chart": {"kind": "oci"}}])
    assert upgrade.plan_refusal(cluster, compat, remote, NS, REL)["refused"].startswith(
        "the chart of 26.7.0 is not on the controller (oci/url)")
    # the current version falls back to the release's chart version
    assert upgrade.plan_refusal(cluster, compat, failed("x"), NS, REL)["current"] == "v26.3.1"


# ---- canary clearance ---------------------------------------------------------------------------------

def test_the_canary_is_required_for_production_only():
    assert upgrade.canary_plan("production", "canary-1") == {"required": True, "run_id": "canary-1", "cleared": None, "reasons": []}
    assert upgrade.canary_plan("canary", "") == {"required": False, "run_id": None, "cleared": None, "reasons": []}


def test_canary_clearance_ladder():
    canary = upgrade.canary_plan("production", "canary-1")
    good_index, good_check = {"verified": True}, {"cleared": True, "reasons": [], "record": "/e/canary-1/upgrade-1.json"}
    cleared = upgrade.canary_clearance(canary, good_index, good_check, "26.7.0")
    assert cleared["refused"] == "" and cleared["canary"]["cleared"] is True
    assert cleared["canary"]["record"] == "/e/canary-1/upgrade-1.json" and canary["cleared"] is None
    prefix = "production refused: the canary evidence for 26.7.0 (run canary-1) does not clear it: "
    unverified = upgrade.canary_clearance(canary, failed("sha256 mismatch"), good_check, "26.7.0")
    assert unverified["canary"]["reasons"] == ["the canary run canary-1's artifacts or records do not verify: sha256 mismatch"]
    assert unverified["refused"] == prefix + unverified["canary"]["reasons"][0] and unverified["canary"]["cleared"] is False
    assert upgrade.canary_clearance(canary, {"verified": False}, good_check, "26.7.0")["canary"]["reasons"] == [
        "the canary run canary-1's artifacts or records do not verify: see its artifact index"]
    reasons = upgrade.canary_clearance(canary, good_index, {"cleared": False, "reasons": ["hop 26.6.2: other chart"]}, "26.7.0")
    assert reasons["refused"] == prefix + "hop 26.6.2: other chart"
    assert upgrade.canary_clearance(canary, good_index, failed("no record"), "26.7.0")["canary"]["reasons"] == ["no record"]
    assert upgrade.canary_clearance(canary, good_index, {}, "26.7.0")["canary"]["reasons"] == ["the canary record was not read"]
    # no reason but not cleared is not cleared
    silent = upgrade.canary_clearance(canary, good_index, {"reasons": []}, "26.7.0")
    assert silent["canary"]["cleared"] is False and silent["refused"] == prefix
    assert "upgrade.canary_not_cleared" in [f["id"] for f in upgrade.upgrade_findings(
        {"scope": "production", "canary": reasons["canary"], "refused": reasons["refused"]})]


# ---- the baseline, completion, unassessed hosts -------------------------------------------------------

def test_baseline_refusal_ladder():
    ok, passed = {"ok": True}, {"passed": True}
    assert upgrade.baseline_refusal(ok, passed) == ""
    assert upgrade.baseline_refusal(failed("timeout"), SKIPPED) == "reading the baseline failed: timeout"
    assert upgrade.baseline_refusal({"ok": False, "problems": ["a", "b"]}, passed) == \
        "the baseline is not Device Plugin mode as expected: a; b"
    assert upgrade.baseline_refusal(ok, failed("no suite")) == "the baseline control suite failed: no suite"
    assert upgrade.baseline_refusal(ok, {"passed": False, "workloads": [{"name": "w1", "passed": False}]}) == \
        "the baseline control suite failed: w1"
    assert upgrade.baseline_refusal(ok, {"passed": None}, check_mode=True) == ""
    assert upgrade.baseline_record({"ok": True, "changed": False, "nodes": {}}, {"passed": True, "invocation": {}}) == {
        "verify": {"ok": True, "nodes": {}}, "control_suite": {"passed": True}}


def test_completed():
    plan = [{"to": "26.6.2"}, {"to": "26.7.0"}]
    done = [{"ok": True}, {"ok": True}]
    assert upgrade.completed("", {}, done, plan) is True
    assert upgrade.completed("refused", {}, [], plan) is False
    assert upgrade.completed("", {"step": "verify"}, done[:1] + [{"ok": False}], plan) is False
    assert upgrade.completed("", {}, done, plan, check_mode=True) is False
    assert upgrade.completed("", {}, done[:1], plan) is False
    assert upgrade.completed("", {}, [], []) is True
    assert judge_filters.upgrade_completed(None, None, done, plan, False) is True


def test_unassessed_hosts_and_node_names():
    assert upgrade.unassessed_hosts(["h1", "h2"], ["n1", "n2"], ["n2"]) == {"h2": "its node was not found or not read in the API"}
    assert upgrade.unassessed_hosts(["h1"], ["n1"], None) == {}
    hostvars = {"h1": {"dra_gate_node_name": "node-a"}, "h2": {"dra_gate_node_name": ""}, "h3": {}}
    assert phase_role.node_names(["h1", "h2", "h3"], hostvars) == ["node-a", "h2", "h3"]
    with pytest.raises(AnsibleFilterError):
        phase_filters.node_names("h1", hostvars)


# ---- the snapshot's capture of a release ----------------------------------------------------------------

def index_of(*entries):
    return {"artifacts": list(entries)}


def test_release_capture_takes_the_newest_entry_of_each_kind():
    src = "helm release gpu-operator/gpu-operator rev "
    index = index_of({"kind": "helm-values-user", "source": src + "2", "path": "/a/v2.yaml", "sha256": "2" * 64},
                     {"kind": "helm-values-user", "source": src + "3", "path": "/a/v3.yaml", "sha256": "3" * 64},
                     {"kind": "helm-values-user", "source": "helm release other/gpu-operator rev 9", "path": "/x"},
                     {"kind": "helm-chart", "source": src + "3", "path": "/a/chart.json"},
                     {"kind": "helm-images", "source": src + "3", "path": "/a/images.json", "sha256": "i" * 64},
                     {"kind": "etcd-snapshot", "source": "etcd"})
    assert snapshot.release_capture(index, NS, REL) == {
        "found": True, "values_file": "/a/v3.yaml", "values_sha256": "3" * 64, "chart_file": "/a/chart.json",
        "images_file": "/a/images.json", "images_sha256": "i" * 64, "revision": 3}
    none = snapshot.release_capture(index_of(), NS, REL)
    assert none["found"] is False and none["revision"] == 0 and none["values_file"] == ""
    with pytest.raises(AnsibleFilterError, match="release_capture: index: expected the artifact index"):
        judge_filters.release_capture([], NS, REL)


# ---- the rollback ----------------------------------------------------------------------------------------

def rollback_observed(name="rollback-automatic.json"):
    run = recorded(name)["results"]
    steps = dict((s["name"], s) for s in run["steps"])
    helm = {"changed": True, "msg": steps["helm_rollback"]["detail"], "action": run["helm"]["action"],
            "revision_before": run["helm"].get("revision_before"), "revision": run["helm"].get("revision"),
            "chart_after": run["helm"].get("chart_after"), "started_at": steps["helm_rollback"]["started_at"],
            "finished_at": steps["helm_rollback"]["finished_at"]}
    cluster = ({"changed": False, "msg": steps["restore_cluster_state"]["detail"], "restored": run.get("restored", {}),
                "unchanged": run.get("unchanged", {}), "extra": run.get("extra", {}), "missing_nodes": run.get("missing_nodes", []),
                "started_at": steps["restore_cluster_state"]["started_at"],
                "finished_at": steps["restore_cluster_state"]["finished_at"]}
               if "restore_cluster_state" in steps else dict(SKIPPED))
    verify = dict(run["verify"], changed=False, msg=steps["verify"]["detail"])
    suite = dict(run["control_suite"], changed=False, msg=steps["control_suite"]["detail"])
    step_list = rollback.step("helm_rollback", helm) + rollback.step("restore_cluster_state", cluster)
    step_list += [s for s in run["steps"] if s["name"].startswith("hook:")]
    observed = {"decision_at": run["decision_at"], "trigger": run["trigger"], "reason": run["reason"],
                "run_dir": "/evidence/" + run["source_run"], "index_verified": "True", "steps": step_list, "helm": helm,
                "revision": run["helm"].get("target_revision"), "recorded_chart": run["helm"].get("recorded_chart"),
                "release": run["helm"].get("release"), "namespace": run["helm"].get("namespace"), "cluster": cluster,
                "verify": verify, "suite": suite}
    return observed, run


@pytest.mark.parametrize("name", ["rollback-automatic.json", "rollback-manual.json", "rollback-not-needed.json"])
def test_a_recorded_rollback_is_judged_as_it_was_recorded(name):
    observed, run = rollback_observed(name)
    results = rollback.results(observed)
    for key in ("decision_at", "completed_at", "duration_seconds", "trigger", "source_run", "index_verified", "steps",
                "restored", "unchanged", "extra", "missing_nodes", "hooks", "failure"):
        if key in run:  # the recorded fixtures keep what the summaries and judges read
            assert results[key] == run[key], key
    for key, value in run["helm"].items():
        assert results["helm"][key] == value, key
    assert rollback.rollback_findings(results) == rollback.rollback_findings(run)


@pytest.mark.parametrize("position", ["helm_rollback", "restore_cluster_state", "verify", "control_suite"])
def test_a_failed_rollback_step_in_each_position(position):
    observed = rollback_observed()[0]
    if position == "helm_rollback":
        observed["helm"] = failed("helm rollback timed out")
        observed["steps"] = rollback.step("helm_rollback", observed["helm"], "t0", "t1") + observed["steps"][1:]
    elif position == "restore_cluster_state":
        observed["cluster"] = failed("node gpu-1 gone")
        observed["steps"] = observed["steps"][:1] + rollback.step("restore_cluster_state", observed["cluster"], "t0", "t1")
    elif position == "verify":
        observed["verify"] = {"changed": False, "ok": False, "problems": ["device plugin not ready"]}
    else:
        observed["suite"] = {"changed": False, "passed": False, "finished_at": "2026-12-05T12:13:01.061Z",
                             "workloads": [{"name": "pod-smoke", "passed": False}]}
    results = rollback.results(observed)
    assert results["failure"] == "failed step(s): %s" % position
    assert [s["name"] for s in results["steps"] if not s["ok"]] == [position]
    if position == "control_suite":
        assert results["completed_at"] is None and results["duration_seconds"] is None
    assert "rollback.step_failed" in [f["id"] for f in rollback.rollback_findings(results)]


def test_rollback_steps_that_are_not_recorded_or_not_ok():
    assert rollback.step("helm_rollback", dict(SKIPPED), "t0", "t1") == [
        {"name": "helm_rollback", "started_at": "t0", "finished_at": "t1", "ok": False, "detail": rollback.NO_CAPTURE}]
    assert rollback.step("restore_cluster_state", dict(SKIPPED)) == []
    assert rollback.step("restore_cluster_state", {"restored": {"crds": ["a"]}}, "t0", "t1")[0]["detail"] == 'restored {"crds": ["a"]}'
    assert rollback.step("hook:dra.yml", {"error": ""}, "t0", "t1")[0]["ok"] is True
    assert rollback.step("hook:dra.yml", {"error": "Include: failed"}, "t0", "t1")[0] == {
        "name": "hook:dra.yml", "started_at": "t0", "finished_at": "t1", "ok": False, "detail": "Include: failed"}
    with pytest.raises(AnsibleFilterError, match="rollback_step: name: 'helm'"):
        judge_filters.rollback_step({}, "helm")


def test_rollback_duration_is_computed_from_parsed_stamps():
    observed = rollback_observed()[0]
    observed["decision_at"] = "2026-12-05T12:12:50Z"  # a decision given without a fraction
    observed["suite"] = dict(observed["suite"], finished_at="2026-12-05T12:13:01.0615559Z")  # past microseconds: cut
    assert rollback.results(observed)["duration_seconds"] == 11.062
    observed["decision_at"] = "2026-12-05 12:12:50"
    with pytest.raises(AnsibleFilterError, match="rollback_results: decision_at: '2026-12-05 12:12:50' is not an RFC 3339"):
        judge_filters.rollback_results(observed)


def test_a_check_mode_rollback_records_no_checks_and_never_completes():
    observed = rollback_observed()[0]
    observed["verify"] = observed["suite"] = dict(SKIPPED)
    results = rollback.results(observed, check_mode=True)
    assert results["check_mode"] is True and results["completed_at"] is None and results["duration_seconds"] is None
    assert results["verify"] == {"skipped": "check mode"} and results["control_suite"] == {"skipped": "check mode"}
    assert [s["name"] for s in results["steps"]] == [s["name"] for s in observed["steps"]]
    assert [f["id"] for f in rollback.rollback_findings(results)] == ["rollback.check_mode"]


def test_index_verified_reads_as_ansible_bool_does():
    observed = rollback_observed()[0]
    for given, expected in (("True", True), (True, True), ("yes", True), ("False", False), (False, False), ("", False)):
        assert rollback.results(dict(observed, index_verified=given))["index_verified"] is expected


def test_reinstall_chart_from_the_chart_mapping():
    charts = {"26.3.1": {"path": "/c/26.3.1.tgz", "sha256": "s" * 64}, "v26.6.2": {"oci": "oci://r/gpu-operator", "sha256": "x"}}
    assert rollback.reinstall_chart({"version": "v26.3.1"}, charts) == {"chart": "/c/26.3.1.tgz", "sha256": "s" * 64}
    assert rollback.reinstall_chart({"version": "26.6.2"}, charts) == {"chart": "oci://r/gpu-operator", "sha256": ""}
    assert rollback.reinstall_chart({}, charts) == {"chart": "", "sha256": ""}
    assert judge_filters.rollback_reinstall_chart({"version": "9"}, None) == {"chart": "", "sha256": ""}


def test_the_filters_are_the_judges():
    filters = judge_filters.FilterModule().filters()
    for name in filters:
        assert os.path.exists(os.path.join(os.path.dirname(judge_filters.__file__), name + ".yml")), name
    canary = copy.deepcopy(filters["upgrade_canary_plan"]("production", "c"))
    assert filters["upgrade_canary_clearance"](canary, {"verified": True}, {"cleared": True, "reasons": []}, "26.7.0")["refused"] == ""


# ---- the snapshot role ------------------------------------------------------------------------------------

def cluster_facts(release, problems):
    return {"changed": False, "ansible_facts": {"gpu_cluster": {"operator": {"helm_release": release}, "problems": problems}}}


def test_helm_release_found_absent_or_unreadable():
    what = "helm release gpu-operator/gpu-operator"
    found = snapshot.helm_release_state(cluster_facts({"revision": 3}, []), NS, REL)
    assert found == {"found": True, "absent": False, "problems": []}
    absent = snapshot.helm_release_state(cluster_facts(None, [{"what": what, "reason": "not found (no Helm storage Secret)"}]), NS, REL)
    assert absent == {"found": False, "absent": True, "problems": ["not found (no Helm storage Secret)"]}
    forbidden = snapshot.helm_release_state(cluster_facts(None, [{"what": what, "reason": "forbidden: 403"},
                                                                 {"what": "helm release other/x", "reason": "not found"}]), NS, REL)
    assert forbidden == {"found": False, "absent": False, "problems": ["forbidden: 403"]}
    assert judge_filters.snapshot_helm_release({}, NS, REL) == {"found": False, "absent": False, "problems": []}


def test_etcd_skip_ladder():
    assert snapshot.etcd_skip("etcd", ["cp-1"], ["helm"]) == []
    assert snapshot.etcd_skip("etcd", ["cp-1"], ["etcd"]) == [
        {"kind": "etcd-snapshot", "source": "inventory group etcd", "reason": snapshot.ETCD_SKIPPED_BY_CONFIG}]
    assert snapshot.etcd_skip("", [], []) == [
        {"kind": "etcd-snapshot", "source": "inventory group (none)", "reason": snapshot.ETCD_NO_HOSTS}]


def test_node_paths():
    containerd = {"config_path": "/etc/containerd/config.toml",
                  "imported_files": ["/etc/containerd/conf.d/a.toml", "/etc/containerd/config.toml"]}
    components = {"kubelet": {"present": True, "path": "/var/lib/kubelet/config.yaml"},
                  "kube-scheduler": {"present": True, "path": "/etc/kubernetes/manifests/kube-scheduler.yaml"},
                  "etcd": {"present": True, "path": "/etc/kubernetes/manifests/etcd.yaml"},
                  "kube-apiserver": {"present": False, "path": "/etc/kubernetes/manifests/kube-apiserver.yaml"}}
    assert snapshot.node_paths(containerd, components) == {
        "containerd": ["/etc/containerd/config.toml", "/etc/containerd/conf.d/a.toml"],
        "kubelet": ["/var/lib/kubelet/config.yaml"],
        "manifests": ["/etc/kubernetes/manifests/etcd.yaml", "/etc/kubernetes/manifests/kube-scheduler.yaml"]}
    assert snapshot.node_paths({"config_path": None}, {"kubelet": {"present": False}}) == {
        "containerd": [], "kubelet": [], "manifests": []}
