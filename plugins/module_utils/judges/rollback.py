# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollback phase's judge: its findings from its results (docs/evidence.md, "The rollback record").

Pure logic (no I/O).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.findings import (
    JudgeError, _check_step, _dict, _failed, _finding, _list, _pick, _seconds_between, _skipped, _suite_not_passed,
    _suite_observed, _truthy, _verify_problems)


ROLLBACK_SOURCE = "gpufleet.dra_gate rollback phase"


def rollback_findings(results, check_mode=False):
    """The rollback phase's findings from its results (format in docs/evidence.md, "The rollback record").

    Blocks: artifacts that were not verified before the rollback, each failed step, a control suite that
    did not pass at the end, a rollback without completion time or duration (outside check mode), verify
    problems, a failure no other finding names. Warns: extra CRDs left in place (each named), failed
    hooks, check mode, and a rollback that had nothing to roll back (``rollback.not_needed``: the release
    already at the recorded revision, nothing restored, no hook run; only when nothing blocks), so such a
    rollback never reads as a bare pass."""
    results = _dict(results)
    check_mode = bool(check_mode or results.get("check_mode"))
    findings = []
    if results.get("index_verified") is not True:
        findings.append(_finding("rollback.artifacts_unverified", "block", "artifact index", results.get("index_verified"),
                                 True, "the rollback artifacts were not verified against their index before the "
                                 "rollback; nothing restored from them can be trusted", ROLLBACK_SOURCE))
    for step in _list(results.get("steps")):
        if isinstance(step, dict) and step.get("ok") is not True:
            findings.append(_finding("rollback.step_failed", "block", step.get("name"), step.get("detail") or "failed",
                                     "ok", "the rollback step %s failed: %s" % (step.get("name"),
                                                                                step.get("detail") or "no detail"),
                                     ROLLBACK_SOURCE))
    suite = results.get("control_suite")
    if _suite_not_passed(suite, check_mode):
        findings.append(_finding("rollback.control_suite", "block", "control suite",
                                 _suite_observed(suite) if suite is not None else "not run", "passed True",
                                 "the control suite did not pass after the rollback; the rollback's time ends only "
                                 "when it passes", ROLLBACK_SOURCE))
    if not check_mode and (results.get("completed_at") is None or results.get("duration_seconds") is None):
        findings.append(_finding("rollback.incomplete", "block", "rollback",
                                 "completed_at %s, duration_seconds %s" % (results.get("completed_at"),
                                                                           results.get("duration_seconds")),
                                 "both set", "the rollback did not complete: %s" % (
                                     results.get("failure") or "no failure recorded"), ROLLBACK_SOURCE))
    problems = _verify_problems(results.get("verify"))
    if problems:
        findings.append(_finding("rollback.verify", "block", "verify", "; ".join(problems), "no verify problem",
                                 "the operator does not verify after the rollback: %s" % "; ".join(problems),
                                 ROLLBACK_SOURCE))
    if results.get("failure") and not any(f["severity"] == "block" for f in findings):
        findings.append(_finding("rollback.failed", "block", "rollback", results["failure"], "no failure",
                                 "the rollback failed: %s" % results["failure"], ROLLBACK_SOURCE))
    for name in _list(_dict(results.get("extra")).get("crds")):
        findings.append(_finding("rollback.extra_crds", "warn", str(name), "present", "absent at the restored revision",
                                 "the CRD %s was not in the recorded state and was left in place (deleting a CRD deletes "
                                 "every object of it)" % name, ROLLBACK_SOURCE))
    for hook in _list(results.get("hooks")):
        if isinstance(hook, dict) and hook.get("ok") is not True:
            findings.append(_finding("rollback.hook_failed", "warn", hook.get("name"), "ok %s" % hook.get("ok"), "ok True",
                                     "the rollback hook %s did not succeed" % hook.get("name"), ROLLBACK_SOURCE))
    if check_mode:
        findings.append(_finding("rollback.check_mode", "warn", "rollback", "check mode", "a real run",
                                 "nothing was rolled back; a check run never passes", ROLLBACK_SOURCE))
    elif not any(f["severity"] == "block" for f in findings):
        # first, so that the gate's reason (its first warning) and the play's verdict line say "not needed"
        findings[:0] = _rollback_not_needed(results)
    return findings


def _names_by_section(value):
    """``section -> [names]`` of a restore result (``restored`` / ``unchanged``), only the lists."""
    return dict((k, v) for k, v in sorted(_dict(value).items()) if isinstance(v, list))


def rollback_not_needed(results):
    """Whether a rollback had nothing to roll back: the release was already at the recorded revision (Helm
    action ``unchanged``), nothing was restored from the capture (every section of ``restored`` empty) and
    no hook ran (a hook's effect is its own; it could have changed something). True/False."""
    results = _dict(results)
    helm = _dict(results.get("helm"))
    if results.get("check_mode") or helm.get("action") != "unchanged":
        return False
    if any(_names_by_section(results.get("restored")).values()):
        return False
    return not _list(results.get("hooks"))


def _rollback_not_needed(results):
    """``rollback.not_needed`` (warn) for a rollback that had nothing to roll back: never a bare pass."""
    if not rollback_not_needed(results):
        return []
    helm = _dict(results.get("helm"))
    release = "/".join(str(x) for x in (helm.get("namespace"), helm.get("release")) if x) or "the release"
    unchanged = _names_by_section(results.get("unchanged"))
    compared = sum(len(v) for v in unchanged.values())
    restore_ran = any(isinstance(s, dict) and s.get("name") == "restore_cluster_state" for s in _list(results.get("steps")))
    if not restore_ran:
        state = "the captured cluster state was not compared (no restore step: dra_gate_rollback_restore is empty)"
    elif compared:
        state = "the captured cluster state equalled the cluster (%d object(s) unchanged: %s)" % (
            compared, ", ".join("%s %d" % (k, len(v)) for k, v in unchanged.items() if v))
    else:
        state = "no captured object differed from the cluster"
    observed = "helm %s at revision %s, nothing restored" % (helm.get("action"), helm.get("revision"))
    return [_finding("rollback.not_needed", "warn", "rollback", observed,
                     "a release or captured state that differed from the recording",
                     "rollback not needed: %s was already at the recorded revision %s (Helm action unchanged) and %s; "
                     "nothing was rolled back or restored" % (release, helm.get("target_revision"), state),
                     ROLLBACK_SOURCE)]


# ---- the role's decisions (roles/operator_rollback): reached through the filters in plugins/filter/rollback.py ----

NO_CAPTURE = "the artifact index has no Helm capture of the release: nothing to roll back to"
VERIFY_KEYS = ("ok", "problems", "mode", "nodes", "operator", "device_plugin", "wait", "started_at", "finished_at")
SUITE_KEYS = ("passed", "counts", "workloads", "started_at", "finished_at", "duration_seconds", "cleanup")


def reinstall_chart(recorded, charts):
    """The chart to reinstall the recorded release from: the chart mapping's entry for the recorded chart's
    version (``26.3.1`` or ``v26.3.1``), ``{chart, sha256}`` (path, else oci, else url; the sha256 of a local
    chart only, verified when Helm reads it; remote ones are verified by the pull). Nothing mapped: ''."""
    version = str(_dict(recorded).get("version") or "")
    version = version[1:] if version.startswith("v") else version
    charts = _dict(charts)
    entry = _dict(charts.get(version, charts.get("v" + version)))
    return {"chart": entry.get("path", entry.get("oci", entry.get("url", ""))),
            "sha256": entry.get("sha256", "") if "path" in entry else ""}


def step(name, result, started_at=None, finished_at=None):
    """The rollback step record of a task's registered result, as a list (empty when the step is not
    recorded): ``helm_rollback`` (always; not ok when skipped: no capture to roll back to),
    ``restore_cluster_state`` (when it ran), ``verify`` / ``control_suite``, ``hook:<file>`` (``result``:
    ``{error}``, ok without one). ``started_at``/``finished_at``: the times when the result has none."""
    result = _dict(result)
    if name == "helm_rollback":
        skipped = _skipped(result)
        detail = NO_CAPTURE if skipped else (result["msg"] if "msg" in result else result.get("action", ""))
        return [{"name": name, "started_at": result.get("started_at", started_at), "finished_at": result.get("finished_at", finished_at),
                 "ok": not skipped and not _failed(result), "detail": detail}]
    if name == "restore_cluster_state":
        if _skipped(result):
            return []
        detail = result["msg"] if "msg" in result else "restored " + json.dumps(result.get("restored", {}))
        return [{"name": name, "started_at": result.get("started_at", started_at), "finished_at": result.get("finished_at", finished_at),
                 "ok": not _failed(result), "detail": detail}]
    if name in ("verify", "control_suite"):
        return [_check_step(name, result)]
    if name.startswith("hook:"):
        error = result.get("error") or ""
        return [{"name": name, "started_at": started_at, "finished_at": finished_at, "ok": not error, "detail": error}]
    raise JudgeError("name: %r is not a rollback step; expected helm_rollback, restore_cluster_state, verify, control_suite "
                     "or hook:<file>" % (name,))


def results(observed, check_mode=False):
    """The rollback's results (docs/evidence.md, "The rollback record") from what restore.yml registered
    (``observed``: decision_at, trigger, reason, run_dir, index_verified, steps, helm, revision,
    recorded_chart, release, namespace, cluster, verify, suite). Outside check mode the verify and control
    suite steps close the step list; the rollback completed when the control suite passed (its end), and
    its duration runs from the decision to then, computed from the parsed stamps. ``failure`` names every
    step that was not ok."""
    observed = _dict(observed)
    helm, cluster = _dict(observed.get("helm")), _dict(observed.get("cluster"))
    verify, suite = _dict(observed.get("verify")), _dict(observed.get("suite"))
    steps = [s for s in _list(observed.get("steps")) if isinstance(s, dict)]
    all_steps = steps if check_mode else steps + step("verify", verify) + step("control_suite", suite)
    passed = not check_mode and not _failed(suite) and bool(suite.get("passed", False))
    completed_at = suite.get("finished_at") if passed else None
    duration = (_seconds_between(observed.get("decision_at"), completed_at, "decision_at", "control suite finished_at")
                if completed_at else None)
    bad = [s.get("name") for s in all_steps if not s.get("ok")]
    run_dir = str(observed.get("run_dir") or "")
    return {
        "decision_at": observed.get("decision_at"), "completed_at": completed_at, "duration_seconds": duration,
        "trigger": observed.get("trigger"), "reason": observed.get("reason"), "source_run": run_dir.rsplit("/", 1)[-1],
        "index_verified": _truthy(observed.get("index_verified", False)), "check_mode": bool(check_mode), "steps": all_steps,
        "helm": {"release": observed.get("release"), "namespace": observed.get("namespace"), "action": helm.get("action"),
                 "revision_before": helm.get("revision_before"), "revision": helm.get("revision"),
                 "target_revision": int(observed.get("revision") or 0), "chart_after": helm.get("chart_after"),
                 "recorded_chart": observed.get("recorded_chart")},
        "restored": cluster.get("restored", {}), "unchanged": cluster.get("unchanged", {}), "extra": cluster.get("extra", {}),
        "missing_nodes": cluster.get("missing_nodes", []),
        "verify": {"skipped": "check mode"} if check_mode else _pick(verify, VERIFY_KEYS),
        "control_suite": {"skipped": "check mode"} if check_mode else _pick(suite, SUITE_KEYS),
        "hooks": [s for s in steps if str(s.get("name") or "").startswith("hook:")],
        "failure": ("failed step(s): " + ", ".join(str(n) for n in bad)) if bad else None,
    }
