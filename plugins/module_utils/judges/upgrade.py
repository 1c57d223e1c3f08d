# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade phase's judge: its findings from its results (docs/evidence.md, "The upgrade record").

Pure logic (no I/O).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.findings import (
    JudgeError, _check_step, _dict, _failed, _finding, _list, _not_passed_names, _pick, _seconds_between, _skipped,
    _suite_not_passed, _suite_observed, _suite_skipped, _verify_problems)


UPGRADE_SOURCE = "gpufleet.dra_gate upgrade phase"


def _hop_name(hop):
    return "hop %s -> %s" % (hop.get("from"), hop.get("to"))


def _allocatable_findings(hop, subject):
    before, after = hop.get("allocatable_before"), hop.get("allocatable_after")
    if not isinstance(before, dict) or not isinstance(after, dict):
        return []
    findings = []
    for node in sorted(set(before) | set(after)):
        was, now = before.get(node), after.get(node)
        if (None if was is None else str(was)) != (None if now is None else str(now)):
            message = ("%s: allocatable nvidia.com/gpu on node %s changed from %s to %s (a Device Plugin mode upgrade "
                       "must not change what the node offers)" % (subject, node, "absent" if was is None else was,
                                                                  "absent" if now is None else now))
            findings.append(_finding("upgrade.allocatable_changed", "block", node, now, was, message, UPGRADE_SOURCE))
    return findings


CHART_USE_STEPS = ("crd_prepare", "helm_upgrade")


def _chart_at_use_findings(hop, subject, check_mode):
    """A hop that applied must name, for each step that read the chart, the digest of the bytes it read,
    verified against the pinned one at that moment: a hop that passed otherwise is not verified."""
    if check_mode or hop.get("ok") is not True:
        return []
    pinned = str(_dict(hop.get("chart")).get("sha256") or "").lower()
    used = _dict(hop.get("chart_at_use"))
    wrong = []
    for step in CHART_USE_STEPS:
        seen = _dict(used.get(step))
        digest = str(seen.get("sha256") or "").lower()
        if seen.get("verified") is not True or not digest or digest != pinned:
            wrong.append("%s read %s (verified %s)" % (step, digest or "an unrecorded chart", seen.get("verified")))
    if not wrong:
        return []
    return [_finding("upgrade.chart_unverified_at_use", "block", subject, "; ".join(wrong), "sha256 %s at every use"
                     % (pinned or "pinned"), "%s: what was applied is not shown to be the pinned chart: %s"
                     % (subject, "; ".join(wrong)), UPGRADE_SOURCE)]


def _hop_findings(hop, check_mode):
    subject = _hop_name(hop)
    findings = []
    # a check run applies nothing: its hops are planned (ok null), failed only when a step failed
    if hop.get("ok") is False or (hop.get("ok") is not True and not check_mode):
        failure = hop.get("failure") or "the hop did not finish (ok %s, no failure given)" % hop.get("ok")
        findings.append(_finding("upgrade.hop_failed", "block", subject, failure, "the hop applied, verified and its "
                                 "control suite passed", str(failure), UPGRADE_SOURCE))
    problems = _verify_problems(hop.get("verify"))
    if problems:
        # one finding per hop naming every problem: findings merge by (id, subject), so one per
        # problem with the same subject would keep only the first
        findings.append(_finding("upgrade.verify", "block", subject, "; ".join(problems), "no verify problem",
                                 "%s: the operator does not verify after the hop: %s" % (subject, "; ".join(problems)),
                                 UPGRADE_SOURCE))
    findings.extend(_chart_at_use_findings(hop, subject, check_mode))
    suite = hop.get("control_suite")
    # a hop that failed before its control suite ran is already blocked as failed
    if (suite is not None or hop.get("ok") is True) and _suite_not_passed(suite, check_mode):
        findings.append(_finding("upgrade.control_suite", "block", subject,
                                 _suite_observed(suite) if suite is not None else "not run", "passed True",
                                 "%s: the control suite did not pass after the hop" % subject, UPGRADE_SOURCE))
    skipped = _suite_skipped(suite)
    if skipped:
        findings.append(_finding("upgrade.control_suite_skipped", "warn", subject, "%d skipped" % skipped, "0 skipped",
                                 "%s: %d control suite workload(s) skipped; skipped is never passed" % (subject, skipped),
                                 UPGRADE_SOURCE))
    # a check run measures nothing after the hop
    return findings + ([] if check_mode else _allocatable_findings(hop, subject))


def upgrade_findings(results, check_mode=False):
    """The upgrade phase's findings from its results (format in docs/evidence.md, "The upgrade record").

    Blocks: a refusal, each failed hop, a hop that does not verify (every problem named), a baseline or
    hop control suite that did not pass, allocatable GPUs of a node that changed across a hop, a run
    that did not complete without saying why, a rollback, a production run whose canary was not
    cleared. Warns: check mode (nothing was applied), skipped control suite workloads. A run already
    at its target with nothing wrong gives only an info finding."""
    results = _dict(results)
    check_mode = bool(check_mode or results.get("check_mode"))
    findings = []
    refused = results.get("refused")
    if refused:
        findings.append(_finding("upgrade.refused", "block", "upgrade", refused, "no refusal",
                                 "the upgrade was refused before any change: %s" % refused, UPGRADE_SOURCE))
    canary = _dict(results.get("canary"))
    if results.get("scope") == "production" and (
            canary.get("cleared") is False or (canary.get("required") and canary.get("cleared") is not True)):
        reasons = "; ".join(str(r) for r in _list(canary.get("reasons"))) or "no reason given"
        findings.append(_finding("upgrade.canary_not_cleared", "block", "canary run %s" % canary.get("run_id"),
                                 "cleared %s" % canary.get("cleared"), "cleared True",
                                 "production needs the canary's passing, verified evidence for the same target: %s"
                                 % reasons, UPGRADE_SOURCE))
    baseline = _dict(results.get("baseline"))
    suite = baseline.get("control_suite")
    if not refused and _suite_not_passed(suite, check_mode):
        findings.append(_finding("upgrade.baseline_control_suite", "block", "baseline",
                                 _suite_observed(suite) if suite is not None else "not run", "passed True",
                                 "the control suite did not pass before the upgrade (the baseline); nothing after it "
                                 "can be judged against it", UPGRADE_SOURCE))
    skipped = _suite_skipped(suite)
    if skipped:
        findings.append(_finding("upgrade.control_suite_skipped", "warn", "baseline", "%d skipped" % skipped, "0 skipped",
                                 "baseline: %d control suite workload(s) skipped; skipped is never passed" % skipped,
                                 UPGRADE_SOURCE))
    hops = [h for h in _list(results.get("hops")) if isinstance(h, dict)]
    for hop in hops:
        findings.extend(_hop_findings(hop, check_mode))
    failed_hop = any(h.get("ok") is not True for h in hops)
    if results.get("completed") is not True and not failed_hop and not refused:
        failure = _dict(results.get("failure"))
        why = ("%s at %s: %s" % (failure.get("hop"), failure.get("step"), failure.get("message"))
               if failure else results.get("failure") or "no failure recorded")
        findings.append(_finding("upgrade.incomplete", "block", "upgrade",
                                 "completed %s, %d of %s hop(s) recorded" % (results.get("completed"), len(hops),
                                                                             results.get("planned_hops")),
                                 "completed True", "the upgrade did not complete: %s" % why, UPGRADE_SOURCE))
    rollback = _dict(results.get("rollback"))
    if rollback.get("triggered"):
        findings.append(_finding("upgrade.rolled_back", "block", "rollback",
                                 "verdict %s, duration %s s" % (rollback.get("verdict"), rollback.get("duration_seconds")),
                                 "no rollback", "the upgrade was rolled back (%s): %s" % (
                                     "automatically" if rollback.get("automatic") else "manually",
                                     rollback.get("command") or "no command recorded"), UPGRADE_SOURCE))
    if check_mode:
        findings.append(_finding("upgrade.check_mode", "warn", "upgrade", "check mode", "a real run",
                                 "nothing was applied; a check run never passes", UPGRADE_SOURCE))
    if not hops and not refused and results.get("completed") is True and not any(
            f["severity"] == "block" for f in findings):
        findings.append(_finding("upgrade.already_at_target", "info", "upgrade", results.get("current_version"),
                                 results.get("target_version"), "the operator is already at the target %s; no hop "
                                 "was needed" % results.get("target_version"), UPGRADE_SOURCE))
    return findings


# ---- the role's decisions (roles/operator_upgrade): reached through the filters in plugins/filter/upgrade.py ----

LOCAL_CHART_KINDS = ("directory", "archive")
VERIFY_KEYS = ("ok", "problems", "mode", "nodes", "unassessed", "device_plugin", "operands", "dra_objects", "started_at",
               "finished_at")
HOP_VERIFY_KEYS = ("ok", "problems", "mode", "operator", "device_plugin", "operands", "dra_objects", "wait", "unassessed",
                   "started_at", "finished_at")
SUITE_KEYS = ("passed", "counts", "workloads", "started_at", "finished_at", "duration_seconds", "cleanup")
CRD_KEYS = ("name", "action", "diff", "changed_paths")


def plan_refusal(cluster, compat, charts, namespace, release):
    """The plan's outcome from the registered results of gpu_cluster_facts (``cluster``), compat_check
    (``compat``) and operator_charts (``charts``): ``{refused, current, plan}``. Refused ('' = not) in this
    order: reading the cluster failed, compat_check failed, no version running (no path), the charts failed,
    a hop's chart not on the controller (the CRDs are prepared from a chart directory or archive)."""
    cluster, compat, charts = _dict(cluster), _dict(compat), _dict(charts)
    if _failed(cluster):
        refused = "reading the cluster failed: %s" % cluster.get("msg")
    elif _failed(compat):
        refused = "compat_check failed: %s" % compat.get("msg")
    elif compat.get("upgrade_path") is None:
        refused = ("the operator version running in the cluster is unknown (no Helm release %s/%s with a chart version): "
                   "no path can be planned" % (namespace, release))
    elif _failed(charts):
        refused = str(charts.get("msg"))
    else:
        refused = ""
    helm = _dict(_dict(_dict(_dict(cluster.get("ansible_facts")).get("gpu_cluster")).get("operator")).get("helm_release"))
    current = charts.get("current_version") or helm.get("chart_version")
    plan = list(_list(charts.get("hops")))
    if not refused:
        remote = [str(h.get("to")) for h in plan if isinstance(h, dict) and _dict(h.get("chart")).get("kind") not in LOCAL_CHART_KINDS]
        if remote:
            refused = ("the chart of %s is not on the controller (oci/url): the CRDs are prepared from a chart directory or "
                       "archive; pull it and map it with path and sha256 (docs/upgrade.md)" % ", ".join(remote))
    return {"refused": refused, "current": current or None, "plan": plan}


def canary_plan(scope, run_id):
    """The canary part of the record before the check: required for a production run only."""
    return {"required": scope == "production", "run_id": run_id or None, "cleared": None, "reasons": []}


def canary_clearance(canary, index, check, target_version):
    """Whether the canary's evidence clears production, from the registered results of artifact_index
    state=verified on the canary run (``index``) and canary_evidence (``check``): ``{canary, refused}``.
    Reasons: the canary run's artifacts or records do not verify; canary_evidence's own reasons (or its
    message when it failed, else "the canary record was not read"). Cleared only without a reason and with
    canary_evidence's ``cleared`` true; ``refused`` is '' when cleared."""
    canary, index, check = dict(_dict(canary)), _dict(index), _dict(check)
    run_id = canary.get("run_id")
    reasons = []
    if not index.get("verified", False):
        reasons.append("the canary run %s's artifacts or records do not verify: %s" % (run_id, index.get("msg", "see its artifact index")))
    if "reasons" in check:
        reasons.extend(_list(check.get("reasons")) if check.get("reasons") is not None else [])
    else:
        reasons.append(check.get("msg", "the canary record was not read"))
    cleared = not reasons and bool(check.get("cleared", False))
    canary.update({"cleared": cleared, "reasons": reasons, "record": check.get("record")})
    refused = "" if cleared else "production refused: the canary evidence for %s (run %s) does not clear it: %s" % (
        target_version, run_id, "; ".join(str(r) for r in reasons))
    return {"canary": canary, "refused": refused}


def baseline_refusal(verify, suite, check_mode=False):
    """Why a cluster that is not healthy in Device Plugin mode now is not upgraded ('' = it is), from the
    registered results of operator_verify and control_suite (baseline). In check mode the suite does not run."""
    verify, suite = _dict(verify), _dict(suite)
    if _failed(verify):
        return "reading the baseline failed: %s" % verify.get("msg")
    if not verify.get("ok"):
        return "the baseline is not Device Plugin mode as expected: %s" % "; ".join(str(p) for p in _list(verify.get("problems")))
    if not suite.get("passed", False) and not check_mode:
        return "the baseline control suite failed: %s" % (suite["msg"] if "msg" in suite else _not_passed_names(suite))
    return ""


def baseline_record(verify, suite):
    """The record's ``baseline``: what operator_verify and control_suite returned, the recorded keys only."""
    return {"verify": _pick(verify, VERIFY_KEYS), "control_suite": _pick(suite, SUITE_KEYS)}


def _allocatable(verify):
    return dict((node, _dict(value).get("allocatable")) for node, value in _dict(_dict(verify).get("nodes")).items())


def hop_outcome(observed, check_mode=False):
    """One hop's record and failure from what its tasks registered (``observed``: hop, index, started_at,
    crds_finished_at, finished_at, crds, release, verify, suite, baseline_verify): ``{record, failure}``.

    Steps in order, each recorded when its task ran: crd_prepare (always), helm_upgrade, verify,
    control_suite; a step is ok when its task did not fail and (verify) ``ok`` / (control suite) ``passed``.
    The first step not ok is the failed step: the hop's ``ok`` is false, its ``failure`` names the step, and
    ``failure`` (hop, step, message, decided_at = the hop's end) is the rollback's decision. A check run
    applies nothing: a hop whose dry runs passed is planned (``ok`` null), never passed."""
    observed = _dict(observed)
    hop = _dict(observed.get("hop"))
    if not hop:
        raise JudgeError("hop: expected the hop (a dict from operator_charts)")
    crds, release = _dict(observed.get("crds")), _dict(observed.get("release"))
    verify, suite = _dict(observed.get("verify")), _dict(observed.get("suite"))
    name = "%s -> %s" % (hop.get("from"), hop.get("to"))
    steps = [{"name": "crd_prepare", "started_at": observed.get("started_at"), "finished_at": observed.get("crds_finished_at"),
              "ok": not _failed(crds),
              "detail": crds.get("msg") if _failed(crds) else json.dumps(crds.get("counts", {}))}]
    if not _skipped(release):
        steps.append({"name": "helm_upgrade", "started_at": release.get("started_at"), "finished_at": release.get("finished_at"),
                      "ok": not _failed(release),
                      "detail": release["msg"] if "msg" in release else release.get("action", "")})
    if not _skipped(verify):
        steps.append(_check_step("verify", verify))
    if not _skipped(suite):
        steps.append(_check_step("control_suite", suite))
    failed = next((s for s in steps if not s["ok"]), None)
    ok = False if failed else (None if check_mode else True)
    not_run = {"skipped": "check mode" if check_mode else "not reached"}
    record = {
        "from": hop.get("from"), "to": hop.get("to"), "kind": hop.get("kind"),
        "started_at": observed.get("started_at"), "finished_at": observed.get("finished_at"),
        "duration_seconds": _seconds_between(observed.get("started_at"), observed.get("finished_at"), "started_at", "finished_at"),
        "chart": hop.get("chart"),
        "chart_at_use": {"crd_prepare": crds.get("chart"), "helm_upgrade": release.get("chart")},
        "values_diff": release.get("values_diff"), "deployed_values_diff": release.get("deployed_values_diff"),
        "crds": {"applied": crds.get("applied"), "counts": crds.get("counts", {}),
                 "diff": [_pick(c, CRD_KEYS) for c in _list(crds.get("crds"))],
                 "evidence_dir": crds.get("evidence_dir"), "artifacts": crds.get("artifacts", [])},
        "helm": dict((key, release.get(src)) for key, src in (
            ("action", "action"), ("revision_before", "revision_before"), ("revision", "revision"), ("status", "status"),
            ("chart_before", "chart_before"), ("chart_after", "chart_after"), ("backend", "helm"))),
        "verify": _pick(verify, HOP_VERIFY_KEYS) if not _skipped(verify) else not_run,
        "allocatable_before": _allocatable(observed.get("baseline_verify")),
        "allocatable_after": _allocatable(verify),
        "control_suite": _pick(suite, SUITE_KEYS) if not _skipped(suite) else not_run,
        "steps": steps, "ok": ok,
        "failure": "%s: %s" % (failed["name"], failed["detail"]) if failed else None,
    }
    record["helm"]["artifacts"] = release.get("artifacts", [])
    failure = {"hop": name, "step": failed["name"], "message": failed["detail"], "decided_at": observed.get("finished_at")} if failed else {}
    return {"record": record, "failure": failure}


def completed(refused, failure, hops, planned, check_mode=False):
    """Whether the upgrade completed: not refused, no hop failed, not a check run, every planned hop ok."""
    return bool(not refused and not failure and not check_mode
                and sum(1 for h in _list(hops) if isinstance(h, dict) and h.get("ok")) == len(_list(planned)))


def unassessed_hosts(hosts, nodes, unassessed):
    """host -> reason for each host whose node (same position in ``nodes``) the baseline could not assess."""
    missing = set(str(n) for n in _list(unassessed))
    return dict((host, "its node was not found or not read in the API") for host, node in zip(_list(hosts), _list(nodes))
                if str(node) in missing)
