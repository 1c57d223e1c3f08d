# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Markdown summaries (``<phase>-<attempt>.md``) of the upgrade, rollback and drain records.

Pure logic (no I/O): each renderer takes the record as ``gate_evidence`` writes it (docs/evidence.md) and
returns the text a person reads first - what ran, in which order, how long each step took, the counts
with their numerators and denominators, and the findings table (``evidence.findings_lines``, the one the
preflight summary uses). Nothing here judges: verdicts and findings come from the record.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import records as evidence
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import findings as judge_findings
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import upgrade as upgrade_judge

_NONE = "—"


def _dict(value):
    return value if isinstance(value, dict) else {}


def _list(value):
    return value if isinstance(value, list) else []


seconds_between = clock.seconds_between


def _secs(value):
    """Seconds as a table cell: 3 decimals, ``—`` for none."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _NONE
    return "%.3f" % value


def _cell(value):
    return evidence._cell(value)  # pylint: disable=protected-access


def _text(value):
    """A value on one line of a list item (a multi-line message would end the item)."""
    return " ".join(str(value).split())


def _yes(value):
    return {True: "yes", False: "no"}.get(value, _NONE if value is None else str(value))


def _rate(rate):
    """``N of D (P %)``: the numerator and denominator first, the percent their display."""
    rate = _dict(rate)
    if "numerator" not in rate:
        return _NONE
    percent = rate.get("percent")
    return "%s of %s (%s)" % (rate.get("numerator"), rate.get("denominator"),
                              "no rate: nothing attempted" if percent is None else "%s %%" % percent)


def _suite_line(suite):
    """A control suite result in one line: passed, the counts, its seconds and the workloads that failed."""
    suite = _dict(suite)
    if not suite:
        return "not run"
    if suite.get("skipped"):
        return "not run (%s)" % suite["skipped"]
    counts = _dict(suite.get("counts"))
    text = "passed" if suite.get("passed") is True else ("not run" if suite.get("passed") is None else "**not passed**")
    if counts:
        text += " (%s of %s workload(s) passed, %s failed, %s skipped)" % (
            counts.get("passed", 0), counts.get("total", 0), counts.get("failed", 0), counts.get("skipped", 0))
    seconds = suite.get("duration_seconds")
    if seconds is None:
        seconds = seconds_between(suite.get("started_at"), suite.get("finished_at"))
    if seconds is not None:
        text += " in %s s" % _secs(seconds)
    failed = ["%s: %s" % (w.get("name"), w.get("reason") or "not passed") for w in _list(suite.get("workloads"))
              if isinstance(w, dict) and w.get("passed") is False]
    if failed:
        text += "; failed: " + "; ".join(failed)
    return text


def _verify_line(verify):
    verify = _dict(verify)
    if not verify:
        return "not run"
    if verify.get("skipped"):
        return "not run (%s)" % verify["skipped"]
    problems = [judge_findings._problem_text(p) for p in _list(verify.get("problems"))]  # pylint: disable=protected-access
    if problems:
        return "**%d problem(s)**: %s" % (len(problems), "; ".join(problems))
    mode = _dict(verify.get("mode"))
    text = "ok" if verify.get("ok") is True else "ok %s" % verify.get("ok")
    if mode:
        text += " (ClusterPolicy %s, devicePlugin.enabled %s, operator %s)" % (
            mode.get("state") or "?", mode.get("device_plugin_enabled"), mode.get("operator_version") or "?")
    return text


def _title(record, name, note=None):
    results = _dict(record.get("results"))
    verdict = str(results.get("verdict") or "unknown").upper()
    head = "%s (verdict %s)" % (note, verdict) if note else "verdict %s" % verdict
    return ["# %s (attempt %s): %s" % (name, record.get("attempt") or 1, head), ""]


def _run_line(record):
    return "Run `%s`, %s → %s." % (record.get("run_id"), record.get("started_at"), record.get("finished_at"))


def _table(header, rows):
    lines = ["| %s |" % " | ".join(header), "|%s" % ("---|" * len(header))]
    lines += ["| %s |" % " | ".join(_cell(c) if c != "" else _NONE for c in row) for row in rows]
    return lines + [""]


def _steps_rows(steps, origin=None):
    """Rows (step, outcome, started, finished, seconds[, from the origin]) of ``[{name, started_at, ...}]``."""
    rows = []
    for step in steps:
        if not isinstance(step, dict):
            continue
        ok = step.get("ok")
        outcome = "ok" if ok is True else ("failed" if ok is False else _NONE if ok is None else str(ok))
        row = [step.get("name"), outcome, step.get("started_at"), step.get("finished_at"),
               _secs(step.get("duration_seconds") if step.get("duration_seconds") is not None
                     else seconds_between(step.get("started_at"), step.get("finished_at")))]
        if origin is not None:
            row.append(_secs(seconds_between(origin, step.get("finished_at"))))
        row.append(step.get("detail") or "")
        rows.append(row)
    return rows


def _workload_rows(suite):
    rows = []
    for work in _list(_dict(suite).get("workloads")):
        if not isinstance(work, dict):
            continue
        passed = work.get("passed")
        rows.append([work.get("name"), work.get("kind"), work.get("node"),
                     "passed" if passed is True else (work.get("status") or "not run") if passed is None else "failed",
                     _secs(work.get("duration_seconds") if work.get("duration_seconds") is not None
                           else seconds_between(work.get("started_at"), work.get("finished_at"))),
                     work.get("reason") or ""])
    return rows


# ---- the rollback record --------------------------------------------------------------------------------

def _sections(value):
    return [(k, v) for k, v in sorted(_dict(value).items()) if isinstance(v, list)]


def render_rollback(record):
    """The rollback record (docs/evidence.md, "The rollback record"): the decision, the rollback time, the
    Helm action from -> to revision, what was restored and left, the checks, every step timed, findings."""
    results = _dict(record.get("results"))
    inputs = _dict(record.get("inputs"))
    helm = _dict(results.get("helm"))
    not_needed = any(_dict(f).get("id") == "rollback.not_needed" for f in _list(results.get("findings")))
    lines = _title(record, "Rollback", "not needed" if not_needed else None)
    lines += [_run_line(record), ""]
    lines.append("- %s rollback%s; artifacts of run `%s`, index verified before any change: %s." % (
        (results.get("trigger") or "?").capitalize(), " (reason: %s)" % _text(results["reason"]) if results.get("reason") else "",
        results.get("source_run") or record.get("run_id"), _yes(results.get("index_verified"))))
    if results.get("check_mode"):
        lines.append("- **Check mode**: nothing was rolled back; a check run never passes.")
    decided, completed = results.get("decision_at"), results.get("completed_at")
    lines.append("- Decided at %s." % (decided or "an unrecorded time"))
    if completed and results.get("duration_seconds") is not None:
        lines.append("- **Rollback time %s s**, from the decision to the control suite passing at %s." % (
            _secs(results.get("duration_seconds")), completed))
    elif not results.get("check_mode"):
        lines.append("- **No rollback time**: the control suite did not pass after the rollback%s." % (
            " (%s)" % _text(results["failure"]) if results.get("failure") else ""))
    release = "/".join(str(x) for x in (helm.get("namespace") or inputs.get("namespace"),
                                        helm.get("release") or inputs.get("release")) if x) or "?"
    chart = _dict(helm.get("chart_after")).get("version") or _dict(helm.get("recorded_chart")).get("version")
    lines.append("- Helm release %s: %s, revision %s → %s (the recorded revision %s%s)." % (
        release, helm.get("action") or "not run", helm.get("revision_before") if helm.get("revision_before") is not None
        else "?", helm.get("revision") if helm.get("revision") is not None else "?", helm.get("target_revision"),
        ", chart %s" % chart if chart else ""))
    if not_needed:
        lines.append("- **Not needed**: the release was already at the recorded revision and nothing was restored.")
    restored = _sections(results.get("restored"))
    lines.append("- Restored from the capture: %s." % ("; ".join(
        "%s %s" % (k, ", ".join(str(n) for n in v) if v else "none") for k, v in restored) or "nothing"))
    unchanged = _sections(results.get("unchanged"))
    if any(v for _k, v in unchanged):
        lines.append("- Already as captured (not written): %s." % ", ".join("%s %d" % (k, len(v)) for k, v in unchanged if v))
    extra = [(k, v) for k, v in _sections(results.get("extra")) if v]
    if extra:
        lines.append("- Left in place (not in the recorded state): %s." % "; ".join(
            "%s %s" % (k, ", ".join(str(n) for n in v)) for k, v in extra))
    if _list(results.get("missing_nodes")):
        lines.append("- Captured GPU nodes that no longer exist: %s." % ", ".join(str(n) for n in results["missing_nodes"]))
    hooks = [h for h in _list(results.get("hooks")) if isinstance(h, dict)]
    if hooks:
        outcomes = ["%s %s" % (h.get("name"), "ok" if h.get("ok") is True else "failed") for h in hooks]
        lines.append("- Hooks: %s." % ", ".join(outcomes))
    lines.append("- Verify after the rollback: %s." % _text(_verify_line(results.get("verify"))))
    lines.append("- Control suite: %s." % _text(_suite_line(results.get("control_suite"))))
    lines.append("")
    steps = _list(results.get("steps"))
    if steps:
        lines += ["## Steps", ""]
        lines += _table(("step", "outcome", "started", "finished", "seconds", "s from the decision", "detail"),
                        _steps_rows(steps, origin=decided))
    workloads = _workload_rows(results.get("control_suite"))
    if workloads:
        lines += ["## Control suite", ""]
        lines += _table(("workload", "kind", "node", "outcome", "seconds", "reason"), workloads)
    lines += evidence.findings_lines(_list(results.get("findings")))
    return "\n".join(lines)


# ---- the upgrade record ---------------------------------------------------------------------------------

def _short(digest):
    digest = str(digest or "")
    return digest[:12] + "…" if len(digest) > 12 else (digest or "?")


def _hop_rows(hops):
    rows = []
    for hop in hops:
        chart = _dict(hop.get("chart"))
        used = _dict(hop.get("chart_at_use"))
        at_use = all(_dict(used.get(k)).get("verified") is True for k in upgrade_judge.CHART_USE_STEPS) if used else None
        helm = _dict(hop.get("helm"))
        crds = _dict(_dict(hop.get("crds")).get("counts"))
        before, after = hop.get("allocatable_before"), hop.get("allocatable_after")
        if isinstance(before, dict) and isinstance(after, dict) and after:
            same = dict((k, str(v)) for k, v in before.items()) == dict((k, str(v)) for k, v in after.items())
            allocatable = ("unchanged (%s)" if same else "**changed** (%s)") % ", ".join(
                "%s %s→%s" % (n, before.get(n), after.get(n)) if not same else "%s %s" % (n, after.get(n))
                for n in sorted(set(before) | set(after)))
        else:
            allocatable = "not measured"
        ok = hop.get("ok")
        rows.append([
            "%s → %s" % (hop.get("from"), hop.get("to")), hop.get("kind"),
            "ok" if ok is True else ("failed at %s" % str(hop.get("failure") or "?").split(":", 1)[0] if ok is False
                                     else "planned"),
            _secs(hop.get("duration_seconds") if hop.get("duration_seconds") is not None
                  else seconds_between(hop.get("started_at"), hop.get("finished_at"))),
            "%s sha256 %s, verified %s, at use %s" % (chart.get("version") or "?", _short(chart.get("sha256")),
                                                      _yes(chart.get("verified")), _yes(at_use)),
            "%s, revision %s → %s" % (helm.get("action") or "not run", helm.get("revision_before"), helm.get("revision"))
            if helm else "not run",
            ", ".join("%s %s" % (k, crds[k]) for k in sorted(crds)) or _NONE,
            _verify_line(hop.get("verify")), _suite_line(hop.get("control_suite")), allocatable])
    return rows


def render_upgrade(record):
    """The upgrade record (docs/evidence.md, "The upgrade record"): scope, versions, refusal, canary
    clearance, failure and rollback, the baseline, one row per hop and every hop step timed, findings."""
    results = _dict(record.get("results"))
    hops = [h for h in _list(results.get("hops")) if isinstance(h, dict)]
    lines = _title(record, "Upgrade")
    lines += [_run_line(record), ""]
    lines.append("- Scope %s; GPU Operator release %s/%s: %s → %s; %d of %s planned hop(s) ran; completed: %s." % (
        results.get("scope") or "?", results.get("namespace") or "?", results.get("release") or "?",
        results.get("current_version") or "?", results.get("target_version") or "?", len(hops),
        results.get("planned_hops") if results.get("planned_hops") is not None else "?", _yes(results.get("completed"))))
    if results.get("check_mode"):
        lines.append("- **Check mode**: nothing was applied; a check run never passes.")
    if results.get("refused"):
        lines.append("- **Refused** before any change: %s" % _text(results["refused"]))
    canary = _dict(results.get("canary"))
    if results.get("scope") == "production" or canary.get("required"):
        lines.append("- Canary clearance (run `%s`): cleared %s%s." % (
            canary.get("run_id"), _yes(canary.get("cleared")),
            "; " + "; ".join(str(r) for r in _list(canary.get("reasons"))) if canary.get("reasons") else ""))
    failure = results.get("failure")
    if isinstance(failure, dict) and failure:
        lines.append("- **Stopped** at hop %s, step %s (decided at %s): %s" % (
            failure.get("hop"), failure.get("step"), failure.get("decided_at") or "?", _text(failure.get("message"))))
    elif failure:
        lines.append("- **Stopped**: %s" % _text(failure))
    rollback = _dict(results.get("rollback"))
    if rollback.get("triggered"):
        lines.append("- Rolled back %s: verdict %s, rollback time %s s (record %s)." % (
            "automatically" if rollback.get("automatic") else "manually", rollback.get("verdict"),
            _secs(rollback.get("duration_seconds")), rollback.get("record") or "not recorded"))
    elif rollback.get("command"):
        lines.append("- Not rolled back. To roll back: `%s`" % rollback["command"])
    baseline = _dict(results.get("baseline"))
    if baseline:
        lines.append("- Baseline before any change: verify %s; control suite %s." % (
            _text(_verify_line(baseline.get("verify"))), _text(_suite_line(baseline.get("control_suite")))))
    lines.append("")
    if hops:
        lines += ["## Hops", ""]
        lines += _table(("hop", "kind", "outcome", "seconds", "chart", "helm", "CRDs", "verify", "control suite",
                         "allocatable nvidia.com/gpu"), _hop_rows(hops))
        rows = []
        for hop in hops:
            for row in _steps_rows(_list(hop.get("steps"))):
                rows.append(["%s → %s" % (hop.get("from"), hop.get("to"))] + row)
        if rows:
            lines += ["## Steps", ""]
            lines += _table(("hop", "step", "outcome", "started", "finished", "seconds", "detail"), rows)
    lines += evidence.findings_lines(_list(results.get("findings")))
    return "\n".join(lines)


# ---- the drain record -----------------------------------------------------------------------------------

def _drain_outcome(node):
    status = node.get("status")
    if status == "stopped":
        return "**stopped** at %s" % (node.get("stopped_step") or "?")
    if status == "not_started":
        return "not started"
    return status or "no record"


def _device_health(node):
    restored = node.get("device_health_restored")
    if restored is True:
        return "restored"
    if restored is False:
        return "**not restored**: %s" % ("; ".join(str(g) for g in _list(node.get("device_health_gaps"))) or "?")
    return _NONE


def _node_rows(nodes):
    rows = []
    for node in nodes:
        steps = _dict(node.get("steps"))
        drain = _dict(steps.get("drain_seconds"))
        evictions = [e for e in _list(node.get("evictions")) if isinstance(e, dict)]
        status = node.get("status")
        rows.append([node.get("node"), node.get("wave"), _drain_outcome(node),
                     _secs(drain.get("cordon_seconds")), _secs(drain.get("evict_seconds")),
                     _secs(drain.get("claims_seconds")), _secs(steps.get("maintenance_seconds")),
                     _secs(steps.get("restore_seconds")), _secs(steps.get("reschedule_seconds")),
                     len(evictions) if status != "not_started" else _NONE,
                     node.get("pdb_retries") if status != "not_started" else _NONE,
                     _rate(node.get("failed_reschedule_rate")), _device_health(node),
                     _yes(node.get("cordoned")) if status != "not_started" else _NONE])
    return rows


def render_drain(record):
    """The drain record (docs/evidence.md, "The drain record"): the totals (failed reschedules as numerator
    of denominator), where the rollout stopped, the waves with their nodes and times, per node its outcome
    and how long each step took, the failed reschedules named, findings."""
    results = _dict(record.get("results"))
    nodes = [n for n in _list(results.get("nodes")) if isinstance(n, dict)]
    count = {}
    for node in nodes:
        count[node.get("status") or "no record"] = count.get(node.get("status") or "no record", 0) + 1
    lines = _title(record, "Drain")
    lines += [_run_line(record), ""]
    if results.get("check_mode"):
        lines.append("- **Check mode**: nothing was cordoned or evicted; a check run never passes.")
    lines.append("- %d node(s): %s." % (len(nodes), ", ".join(
        "%d %s" % (count[k], k.replace("_", " ")) for k in sorted(count)) or "none"))
    lines.append("- **Failed reschedules: %s**; PodDisruptionBudget refusals: %s." % (
        _rate(results.get("failed_reschedule_rate")), results.get("pdb_retries", 0)))
    stops = [s for s in _list(results.get("stopped")) if isinstance(s, dict)]
    if stops:
        for stop in stops:
            lines.append("- **Stopped at** node %s (wave %s), step \"%s\": %s" % (
                stop.get("node"), stop.get("wave"), stop.get("step"), _text(stop.get("reason"))))
        lines.append("- Later waves were left untouched (not cordoned, nothing evicted).")
    else:
        lines.append("- Stopped at: nowhere (the rollout did not stop in this attempt).")
    lines.append("")
    waves = [w for w in _list(results.get("waves")) if isinstance(w, dict)]
    if waves:
        lines += ["## Waves", ""]
        lines += _table(("wave", "attempt", "nodes", "started", "finished", "seconds", "done", "stopped"), [
            [w.get("wave"), w.get("attempt_stamp"), _list(w.get("nodes")), w.get("started_at"), w.get("finished_at"),
             _secs(seconds_between(w.get("started_at"), w.get("finished_at"))), _list(w.get("done")),
             _list(w.get("stopped"))] for w in waves])
    if nodes:
        lines += ["## Nodes", "",
                  "Seconds per step: cordon, evict (every evicted pod gone), claims (DRA claims released), "
                  "maintenance, ready (Ready with the recorded devices), reschedule (evicted workloads Running again).",
                  ""]
        lines += _table(("node", "wave", "outcome", "cordon s", "evict s", "claims s", "maintenance s", "ready s",
                         "reschedule s", "evicted", "PDB retries", "failed reschedules", "device health", "cordoned"),
                        _node_rows(nodes))
        untouched = [n for n in nodes if n.get("status") == "not_started"]
        for node in untouched:
            lines.append("- %s not started: %s" % (node.get("node"), _text(node.get("why") or "not reached")))
        if untouched:
            lines.append("")
    failed = []
    for node in nodes:
        for item in _list(node.get("failed_reschedules")):
            if isinstance(item, dict):
                owner = _dict(item.get("owner"))
                failed.append(["%s/%s" % (item.get("namespace"), item.get("name")),
                               "%s %s" % (owner.get("kind"), owner.get("name")), node.get("node"), item.get("reason")])
    if failed:
        lines += ["## Failed reschedules", ""]
        lines += _table(("pod", "owner", "evicted from", "reason"), failed)
    lines += evidence.findings_lines(_list(results.get("findings")))
    return "\n".join(lines)


RENDERERS = {"upgrade": render_upgrade, "rollback": render_rollback, "drain": render_drain}
