# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The evidence record of a gate run: one JSON record per phase, an index, and readable summaries.

Pure logic (no I/O): building and validating records and rendering Markdown. The module
``gate_evidence`` writes what this returns. The schema is documented in docs/evidence.md.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

SCHEMA = "gpufleet.dra_gate/evidence-record"
SCHEMA_VERSION = 1
INDEX_SCHEMA = "gpufleet.dra_gate/evidence-index"
# Version 2: one entry per attempt (phase, attempt, file), records named <phase>-<attempt>.json.
INDEX_SCHEMA_VERSION = 2
INDEX_FILE = "index.json"
SUMMARY_FILE = "summary.md"
# The gate run's phases in the order they happen. This is data for validation and for ordering the
# run's summary only; no file name is derived from a position here, so inserting a phase renames
# nothing.
PHASES = ("preflight", "snapshot", "upgrade", "dra_canary", "dra_acceptance", "canary", "drain", "rollback", "decision")
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
REQUIRED = ("inputs", "results", "tools", "started_at")
# <phase>-<attempt>.json; the legacy form NN-<phase>.json (index schema version 1) is still read.
RECORD_RE = re.compile(r"^(?P<phase>[a-z][a-z0-9_]*)-(?P<attempt>[1-9][0-9]*)\.json$")
LEGACY_RECORD_RE = re.compile(r"^(?P<number>[0-9]{2})-(?P<phase>[a-z][a-z0-9_]*)\.json$")
SEVERITIES = ("block", "warn", "info")


class EvidenceError(ValueError):
    """A record that cannot be written; the message names the field and the expected form."""


def validate(run_id, phase, record):
    validate_names(run_id, phase)
    if not isinstance(record, dict):
        raise EvidenceError("record: expected a dict with keys %s" % ", ".join(REQUIRED))
    for key in REQUIRED:
        if key not in record:
            raise EvidenceError("record.%s: required field missing" % key)
    for key in ("inputs", "results", "tools"):
        if not isinstance(record[key], dict):
            raise EvidenceError("record.%s: expected a dict, got %s" % (key, type(record[key]).__name__))
    findings = record["results"].get("findings")
    if findings is not None and (not isinstance(findings, list) or not all(isinstance(f, dict) for f in findings)):
        raise EvidenceError("record.results.findings: expected a list of findings (dicts)")


def validate_names(run_id, phase):
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
        raise EvidenceError("run_id: %r is not valid; expected letters, digits, '.', '_' or '-' "
                            "(at most 128, starting with a letter or digit)" % (run_id,))
    if phase not in PHASES:
        raise EvidenceError("phase: %r is not a gate phase; expected one of %s" % (phase, ", ".join(PHASES)))


def record_filename(phase, attempt):
    """``<phase>-<attempt>.json``: from the phase's name, never from its position in PHASES."""
    return "%s-%d.json" % (phase, attempt)


def summary_filename(phase, attempt):
    return "%s-%d.md" % (phase, attempt)


def parse_record_filename(name):
    """``(phase, attempt)`` of a record file name (``attempt`` None for the legacy ``NN-phase.json``),
    or None when the name is not a record's."""
    match = RECORD_RE.match(name)
    if match:
        return match.group("phase"), int(match.group("attempt"))
    match = LEGACY_RECORD_RE.match(name)
    if match:
        return match.group("phase"), None
    return None


def next_attempt(phase, index, names):
    """The attempt number of the next record of ``phase``: one more than any attempt that the index
    lists or that a file in the run directory (``names``) already holds, so a record left behind by a
    crash (on disk, not in the index) is never overwritten nor reused."""
    taken = [0]
    for entry in (index or {}).get("records", []):
        if entry.get("phase") == phase:
            taken.append(entry.get("attempt") or 1)
    for name in names:
        parsed = parse_record_filename(name)
        if parsed and parsed[0] == phase:
            taken.append(parsed[1] or 1)
    return max(taken) + 1


def load_index(text, run_id):
    """The evidence index parsed from ``text`` (None = a new one); an index of schema version 1 (one
    entry per phase) is read as attempt 1 of each phase. Raises EvidenceError on a bad index."""
    if not text:
        return {"schema": INDEX_SCHEMA, "schema_version": INDEX_SCHEMA_VERSION, "run_id": run_id, "records": []}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise EvidenceError("the evidence index is not JSON: %s" % exc)
    if not isinstance(data, dict) or data.get("schema") != INDEX_SCHEMA or not isinstance(data.get("records"), list):
        raise EvidenceError("the evidence index is not a %s document with a records list" % INDEX_SCHEMA)
    for entry in data["records"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            raise EvidenceError("the evidence index has an entry without a file: %r" % (entry,))
        entry.setdefault("attempt", 1)
    return data


def build_record(run_id, phase, record, finished_at, attempt=1):
    """The full record as written: schema header, then the caller's fields."""
    validate(run_id, phase, record)
    full = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "phase": phase,
        "attempt": attempt,
        "started_at": record["started_at"],
        "finished_at": record.get("finished_at") or finished_at,
        "inputs": record["inputs"],
        "tools": record["tools"],
        "results": record["results"],
    }
    for key, value in record.items():
        if key not in full:
            full[key] = value
    return full


def dumps(data):
    return json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"


def phase_order(entry):
    """Sort key of an index entry for summaries: the phase's place in PHASES, then the attempt."""
    phase = entry.get("phase")
    return (PHASES.index(phase) if phase in PHASES else len(PHASES), entry.get("attempt") or 1)


def append_index(index, run_id, entry):
    """A new index with ``entry`` ({phase, attempt, file, sha256, written_at, verdict, ...}) appended.
    Entries are never replaced or removed: every attempt keeps its own (append order = time order)."""
    index = dict(index or {})
    records = list(index.get("records", []))
    if any(e.get("file") == entry["file"] for e in records):
        raise EvidenceError("the evidence index already lists %s; records are never replaced" % entry["file"])
    records.append(dict(entry))
    return {"schema": INDEX_SCHEMA, "schema_version": INDEX_SCHEMA_VERSION, "run_id": index.get("run_id") or run_id,
            "records": records}


def _finding_key(finding):
    """What makes two findings the same: (id, subject); for coverage findings (id ``coverage.*``) the
    subject alone, so a host reported by compat_check is not reported again under another coverage id."""
    fid = str(finding.get("id") or "")
    return ("coverage" if fid.startswith("coverage.") else fid, finding.get("subject"))


def merge_findings(existing, extra):
    """``existing`` + the findings of ``extra`` that are not there yet (see _finding_key)."""
    seen = set(_finding_key(f) for f in existing)
    merged = list(existing)
    for finding in extra:
        key = _finding_key(finding)
        if key not in seen:
            seen.add(key)
            merged.append(finding)
    return merged


def _finding(fid, severity, subject, observed, expected, message, source="gpufleet.dra_gate snapshot phase"):
    return {"id": fid, "severity": severity, "subject": subject, "observed": observed, "expected": expected,
            "message": message, "source": source}


def snapshot_findings(results, check_mode=False):
    """The snapshot phase's findings from its results: a failed capture and an index that does not
    verify block (each bad entry named), a skipped capture warns (skipped is never passed). In check
    mode nothing was written, so an index that was not verified (``verified`` null) is no finding."""
    findings = []
    failure = results.get("capture_failure")
    if failure:
        findings.append(_finding("snapshot.capture_failed", "block", "capture", failure, "every capture taken",
                                 "a capture failed: %s" % failure))
    verified = results.get("verified")
    bad = results.get("bad") or []
    for item in bad:
        findings.append(_finding("snapshot.artifact_unverified", "block", item.get("path"), "; ".join(item.get("problems") or []),
                                 "the file as indexed (sha256, size, mode 0600)",
                                 "the artifact %s does not verify: %s" % (item.get("path"), "; ".join(item.get("problems") or []))))
    if verified is not True and not bad and not (check_mode and verified is None):
        findings.append(_finding("snapshot.index_unverified", "block", results.get("index") or "artifact index",
                                 verified, True, "the artifact index %s was not verified" % (results.get("index") or "")))
    for item in results.get("skipped") or []:
        findings.append(_finding("snapshot.capture_skipped", "warn", "%s %s" % (item.get("kind"), item.get("source")),
                                 "skipped", "captured",
                                 "%s %s was not captured: %s" % (item.get("kind"), item.get("source"), item.get("reason"))))
    return findings


UPGRADE_SOURCE = "gpufleet.dra_gate upgrade phase"
ROLLBACK_SOURCE = "gpufleet.dra_gate rollback phase"


def _dict(value):
    return value if isinstance(value, dict) else {}


def _list(value):
    return value if isinstance(value, list) else []


def _problem_text(problem):
    """A verify problem as one line: a string as it is, a dict as ``what: reason`` (or its JSON)."""
    if isinstance(problem, dict):
        what = problem.get("what") or problem.get("subject") or problem.get("path")
        reason = problem.get("reason") or problem.get("message")
        if what or reason:
            return "%s: %s" % (what, reason) if what and reason else str(what or reason)
        return json.dumps(problem, sort_keys=True, default=str)
    return str(problem)


def _verify_problems(verify):
    """The problems of a ``verify`` result ``{ok, problems}``; ``ok`` false without problems is one
    problem of its own (a failed verification is never silent)."""
    verify = _dict(verify)
    problems = [_problem_text(p) for p in _list(verify.get("problems"))]
    if not problems and verify.get("ok") is False:
        problems.append("verification failed (ok false, no problem given)")
    return problems


def _suite_skipped(suite):
    """How many workloads of a control suite result were skipped (counts.skipped, else the workloads)."""
    suite = _dict(suite)
    counts = _dict(suite.get("counts"))
    if isinstance(counts.get("skipped"), int) and counts["skipped"]:
        return counts["skipped"]
    return sum(1 for w in _list(suite.get("workloads")) if isinstance(w, dict) and (
        w.get("status") == "skipped" or (w.get("passed") is None and w.get("status") in (None, "skipped"))))


def _suite_failures(suite):
    """``name: reason`` of each workload of a control suite result that did not pass."""
    return ["%s: %s" % (w.get("name"), w.get("reason") or "not passed") for w in _list(_dict(suite).get("workloads"))
            if isinstance(w, dict) and w.get("passed") is False]


def _suite_observed(suite):
    suite = _dict(suite)
    counts = _dict(suite.get("counts"))
    observed = "passed %s" % suite.get("passed")
    if counts:
        observed += " (%s)" % ", ".join("%s %s" % (k, counts.get(k)) for k in ("passed", "failed", "skipped", "total")
                                        if k in counts)
    failures = _suite_failures(suite)
    if failures:
        observed += "; " + "; ".join(failures)
    return observed


def _suite_not_passed(suite, check_mode):
    """True when a control suite result blocks: it did not pass (missing = not run). In check mode nothing
    runs (``passed`` null), which is the check-mode warning's business, not a failure."""
    if not isinstance(suite, dict):
        return True
    passed = suite.get("passed")
    if passed is True:
        return False
    return not (check_mode and passed is None)


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


def record_names(names):
    """The names in a run directory that are evidence records (``<phase>-<N>.json``, legacy ``NN-<phase>.json``)."""
    return sorted(n for n in names if not n.startswith(".") and n != INDEX_FILE and parse_record_filename(n))


def judge_run_dir(index, observed):
    """The problems of a run directory's evidence, as ``[{file, problems}]``; empty = consistent.

    ``observed`` maps each evidence record file name found in the run directory (and each name the
    index lists) to what was measured without following links: ``exists``, ``is_link``, ``is_file``,
    ``sha256``, ``mode``. A record the index does not list (a crash between writing the record and
    updating the index), an indexed record that is missing, a link, not a regular file, has another
    sha256, or can be read by group or others, is a problem."""
    bad = []
    listed = {}
    for entry in (index or {}).get("records", []):
        listed[entry.get("file")] = entry
    for name in sorted(set(listed) | set(observed)):
        seen = observed.get(name) or {"exists": False}
        problems = []
        entry = listed.get(name)
        if entry is None:
            problems.append("an evidence record that the evidence index does not list (written, but the index was "
                            "never updated: a crash or a kill between the two?)")
        if not seen.get("exists"):
            problems.append("missing: the evidence index lists it, the file does not exist")
        elif seen.get("is_link"):
            problems.append("a symbolic link, not a record (never followed)")
        elif not seen.get("is_file"):
            problems.append("not a regular file")
        else:
            if entry is not None and seen.get("sha256") != entry.get("sha256"):
                problems.append("sha256 mismatch: indexed %s, found %s" % (entry.get("sha256"), seen.get("sha256")))
            mode = seen.get("mode")
            if mode is not None and mode & 0o077:
                problems.append("mode %04o: readable or writable by group or others (records are 0600)" % mode)
        if problems:
            bad.append({"file": name, "problems": problems})
    return bad


# Phase-specific findings derived from a phase's results, in Python (never in a role's Jinja).
DRA_CANARY_SOURCE = "gpufleet.dra_gate dra_canary phase"


def dra_canary_findings(results, check_mode=False):
    """The DRA canary build's findings from its results (format in docs/evidence.md, "The DRA canary record").

    Blocks: a refusal (ownership, CDI, passthrough, the chart, bad input); a GPUCluster that is not ready
    (outside check mode); the extended-resource DeviceClass asked for but not present; container and VFIO
    workloads recorded in flight together on one node (re-checked from their times here, whatever the
    module said); a build that did not complete without a refusal. Warns: check mode (nothing was
    applied). The checks' own findings (``results.findings``) are merged by the recorder."""
    results = _dict(results)
    check_mode = bool(check_mode or results.get("check_mode"))
    findings = []
    refused = results.get("refused")
    if refused:
        findings.append(_finding("dra_canary.refused", "block", "dra_canary", refused, "no refusal",
                                 "the DRA canary build was refused: %s" % refused, DRA_CANARY_SOURCE))
    cluster = _dict(results.get("gpu_cluster"))
    if not refused and not check_mode and cluster.get("ready") is not True:
        findings.append(_finding("dra_canary.gpu_cluster_not_ready", "block", "GPUCluster/gpu-cluster",
                                 "state %s: %s" % (cluster.get("state"), "; ".join(str(p) for p in _list(cluster.get("problems")))),
                                 "ready, a kubelet plugin on every canary node",
                                 "the GPUCluster did not get ready on the canary", DRA_CANARY_SOURCE))
    device_class = _dict(results.get("device_class"))
    if device_class.get("requested") and not refused and not check_mode and device_class.get("action") not in (
            "created", "updated", "unchanged"):
        findings.append(_finding("dra_canary.device_class_missing", "block", "DeviceClass/%s" % device_class.get("name"),
                                 device_class.get("action"), "created or unchanged",
                                 "the extended-resource DeviceClass was asked for but is not in place", DRA_CANARY_SOURCE))
    records = [w for w in _list(results.get("workloads")) if isinstance(w, dict)]
    seen = set()
    for i, left in enumerate(records):
        for right in records[i + 1:]:
            kinds = set(("vfio" if w.get("kind") == "vfio" else "container") for w in (left, right))
            if len(kinds) < 2 or left.get("node") != right.get("node"):
                continue
            times = [w.get(k) for w in (left, right) for k in ("submitted_at", "released_at")]
            if not all(times):
                continue
            if left["submitted_at"] < right["released_at"] and right["submitted_at"] < left["released_at"]:
                key = (left.get("name"), right.get("name"))
                if key not in seen:
                    seen.add(key)
                    findings.append(_finding("dra_canary.claims_in_flight_together", "block",
                                             "workloads %s + %s" % key, "in flight together on %s" % left.get("node"),
                                             "container and VFIO claims serialized",
                                             "container and VFIO claims on one node were in flight together (the 26.7.0 "
                                             "double-allocation race)", DRA_CANARY_SOURCE))
    if results.get("completed") is not True and not refused and not check_mode:
        findings.append(_finding("dra_canary.incomplete", "block", "dra_canary", "completed %s" % results.get("completed"),
                                 "completed True", "the DRA canary build did not complete: %s" % (
                                     results.get("failure") or "no failure recorded"), DRA_CANARY_SOURCE))
    if check_mode:
        findings.append(_finding("dra_canary.check_mode", "warn", "dra_canary", "check mode", "a real run",
                                 "nothing was applied; a check run never passes", DRA_CANARY_SOURCE))
    return findings


DRA_ACCEPTANCE_SOURCE = "gpufleet.dra_gate dra_acceptance phase"


def dra_acceptance_findings(results, check_mode=False):
    """The acceptance run's findings (docs/evidence.md, "The DRA acceptance record").

    The numbers are measured, not judged: thresholds belong to the gate decision. What blocks here is a
    measurement that cannot be trusted - the lifecycle run failed or was interrupted, nothing was
    measured, objects of the run are still in the cluster, the records file is missing - and a metrics
    query that failed. Warns: check mode; the metrics skipped (no Prometheus), which is reported as
    skipped, never as passed; a device reported Unhealthy or Unknown while the run's claims held it;
    Warning events about the run's pods or claims; the Events unreadable."""
    results = _dict(results)
    check_mode = bool(check_mode or results.get("check_mode"))
    findings = []
    if check_mode:
        findings.append(_finding("dra_acceptance.check_mode", "warn", "dra_acceptance", "check mode", "a real run",
                                 "nothing was run; a check run never passes", DRA_ACCEPTANCE_SOURCE))
        return findings
    lifecycles = _dict(results.get("lifecycles"))
    failure = results.get("failure")
    if failure:
        findings.append(_finding("dra_acceptance.run_failed", "block", "claim_lifecycle", failure, "a completed run",
                                 "the claim lifecycle run did not complete: %s" % failure, DRA_ACCEPTANCE_SOURCE))
    attempted = lifecycles.get("attempted")
    if not failure and not attempted:
        findings.append(_finding("dra_acceptance.nothing_measured", "block", "claim_lifecycle", "attempted %s" % attempted,
                                 "attempted > 0", "no claim lifecycle was measured", DRA_ACCEPTANCE_SOURCE))
    if attempted and not lifecycles.get("records_path"):
        findings.append(_finding("dra_acceptance.records_missing", "block", "claim_lifecycle", "no records_path",
                                 "the per-claim records", "the raw per-claim records were not kept", DRA_ACCEPTANCE_SOURCE))
    cleanup = _dict(results.get("cleanup"))
    left = sorted(set(_list(lifecycles.get("left_behind")) + _list(cleanup.get("left_behind"))))
    if left or cleanup.get("failed"):
        findings.append(_finding("dra_acceptance.left_behind", "block", "namespace %s" % lifecycles.get("namespace"),
                                 ", ".join(str(x) for x in left) or cleanup.get("msg"), "nothing of the run left",
                                 "objects of the acceptance run are still in the cluster", DRA_ACCEPTANCE_SOURCE))
    health = _dict(lifecycles.get("device_health"))
    if health.get("devices"):
        findings.append(_finding("dra_acceptance.device_not_healthy", "warn", "claim_lifecycle",
                                 "%s (claims %s)" % (", ".join(str(d) for d in _list(health.get("devices"))),
                                                     ", ".join(str(c) for c in _list(health.get("claims"))) or "none"),
                                 "every allocated device Healthy",
                                 "a device the run's claims held was reported Unhealthy or Unknown during the run",
                                 DRA_ACCEPTANCE_SOURCE))
    events = _dict(lifecycles.get("events"))
    if events.get("error"):
        findings.append(_finding("dra_acceptance.events_unread", "warn", "namespace %s" % lifecycles.get("namespace"),
                                 events["error"], "the run's Events read",
                                 "the Events about the run's pods and claims could not be read (not in the evidence)",
                                 DRA_ACCEPTANCE_SOURCE))
    elif events.get("warnings_total"):
        reasons = sorted(k for k in _dict(events.get("by_reason")) if str(k).startswith("Warning/"))
        findings.append(_finding("dra_acceptance.warning_events", "warn", "namespace %s" % lifecycles.get("namespace"),
                                 "%s Warning event(s): %s" % (events["warnings_total"], ", ".join(reasons) or "?"),
                                 "no Warning event about the run's pods and claims",
                                 "Warning events were posted about the run's pods or claims", DRA_ACCEPTANCE_SOURCE))
    metrics = _dict(results.get("metrics"))
    if metrics.get("skipped"):
        findings.append(_finding("dra_acceptance.metrics_skipped", "warn", "prometheus", "skipped: %s" % metrics["skipped"],
                                 "the kubelet's DRA histogram and the DCGM metrics read",
                                 "the Prometheus metrics were not read (skipped, not passed)", DRA_ACCEPTANCE_SOURCE))
    elif metrics.get("failed"):
        findings.append(_finding("dra_acceptance.metrics_failed", "block", "prometheus", metrics["failed"],
                                 "the metrics read", "reading the Prometheus metrics failed", DRA_ACCEPTANCE_SOURCE))
    return findings


DRAIN_SOURCE = "gpufleet.dra_gate drain_waves (seeds: failed reschedules = 0; PDB respected; device health restored)"


def drain_findings(results, check_mode=False):
    """The drain waves' findings (docs/evidence.md, "The drain record"): a node that stopped the rollout
    blocks (the step and the reason named), so does a node not done yet (a later wave left untouched after
    a stop, or never reached), device health not restored on a node, and every failed reschedule (the
    seeds' gate is zero; the threshold that let a node go on is in the record). A PodDisruptionBudget
    that refused evictions before it allowed them warns (respected, and slower). Check mode warns."""
    results = _dict(results)
    findings = []
    if check_mode or results.get("check_mode"):
        findings.append(_finding("drain.check_mode", "warn", "drain_waves", "check mode", "a real run",
                                 "nothing was drained; a check run never passes", DRAIN_SOURCE))
        return findings
    nodes = [n for n in _list(results.get("nodes")) if isinstance(n, dict)]
    if not nodes:
        findings.append(_finding("drain.no_nodes", "block", "drain_waves", "no node record", "a record per node",
                                 "no node was rolled out", DRAIN_SOURCE))
    for node in nodes:
        name = "node %s" % node.get("node")
        status = node.get("status")
        if status == "stopped":
            findings.append(_finding("drain.node_stopped", "block", name, "stopped at %s" % node.get("stopped_step"),
                                     "done", "the rollout stopped on this node: %s" % node.get("stopped_reason"), DRAIN_SOURCE))
        elif status != "done":
            findings.append(_finding("drain.node_not_done", "block", name, status or "no record", "done",
                                     "the node was not rolled out (%s)" % (node.get("why") or "not reached"), DRAIN_SOURCE))
        if node.get("device_health_restored") is False:
            findings.append(_finding("drain.device_health", "block", name, "; ".join(str(g) for g in _list(node.get(
                "device_health_gaps"))) or "not restored", "Ready with the recorded devices",
                "device health was not restored after the maintenance", DRAIN_SOURCE))
        for failed in _list(node.get("failed_reschedules")):
            owner = _dict(failed.get("owner"))
            findings.append(_finding("drain.failed_reschedule", "block", "pod %s/%s" % (failed.get("namespace"), failed.get("name")),
                                     failed.get("reason"), "Running again on some node",
                                     "evicted from %s, not Running again (owner %s %s)" % (
                                         node.get("node"), owner.get("kind"), owner.get("name")), DRAIN_SOURCE))
        retried = [e for e in _list(node.get("evictions")) if isinstance(e, dict) and e.get("pdb_retries")]
        if retried:
            findings.append(_finding("drain.pdb_waited", "warn", name, ", ".join(
                "%s/%s %d" % (e.get("namespace"), e.get("name"), e.get("pdb_retries")) for e in retried),
                "evictions allowed at once", "PodDisruptionBudgets refused evictions before allowing them (respected)",
                DRAIN_SOURCE))
    return findings


JUDGES = {"snapshot": snapshot_findings, "upgrade": upgrade_findings, "rollback": rollback_findings,
          "dra_canary": dra_canary_findings, "dra_acceptance": dra_acceptance_findings, "drain": drain_findings}


def _cell(value):
    if value is None:
        return "—"
    if isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value) or "—"
    elif isinstance(value, dict):
        value = ", ".join("%s=%s" % (k, v) for k, v in sorted(value.items())) or "—"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _gpu_line(gpu):
    parts = [gpu.get("name") or "unknown GPU", gpu.get("pci_bus_id") or "?"]
    parts.append("NUMA %s" % ("n/a" if gpu.get("numa_node") is None else gpu["numa_node"]))
    parts.append("IOMMU group %s" % ("none" if gpu.get("iommu_group") is None else gpu["iommu_group"]))
    parts.append("driver %s" % (gpu.get("kernel_driver") or "none"))
    if gpu.get("mig_mode"):
        parts.append("MIG %s" % gpu["mig_mode"])
    return ", ".join(str(p) for p in parts)


def _cluster_lines(cluster):
    """A short section on the gpu_cluster_facts of a record (``record["cluster"]``)."""
    api = cluster.get("api_server") or {}
    nodes = cluster.get("nodes") or {}
    backends = {}
    for facts in nodes.values():
        backend = (facts or {}).get("gpu_backend") or "unknown"
        backends[backend] = backends.get(backend, 0) + 1
    lines = ["## Cluster", ""]
    lines.append("- API server %s; %d node(s), GPU backend: %s" % (
        api.get("version") or api.get("git_version") or "unknown", len(nodes),
        ", ".join("%s %d" % (k, v) for k, v in sorted(backends.items())) or "—"))
    apis = cluster.get("apis") or {}
    if "resource_k8s_io_v1" in apis:
        lines.append("- resource.k8s.io/v1 %s" % ("served" if apis["resource_k8s_io_v1"] else "not served"))
    operator = cluster.get("operator") or {}
    release = operator.get("helm_release")
    if release:
        lines.append("- GPU Operator Helm release %s/%s: chart %s %s, revision %s, %s" % (
            release.get("namespace"), release.get("name"), release.get("chart"), release.get("chart_version"),
            release.get("revision"), release.get("status")))
    elif operator:
        lines.append("- no GPU Operator Helm release found")
    for key, kind in (("cluster_policies", "ClusterPolicy"), ("gpu_clusters", "GPUCluster")):
        for item in operator.get(key) or []:
            lines.append("- %s %s: %s" % (kind, item.get("name"), item.get("state") or "no state"))
    bridges = [c.get("name") for c in cluster.get("device_classes") or [] if c.get("extended_resource_name")]
    lines.append("- DeviceClasses: %d (%d with extendedResourceName%s)" % (
        len(cluster.get("device_classes") or []), len(bridges), (": " + ", ".join(bridges)) if bridges else ""))
    claims = cluster.get("resource_claims") or {}
    if claims:
        lines.append("- ResourceClaims: %s total, %s allocated, %s deleted but still allocated" % (
            claims.get("total"), claims.get("allocated"), claims.get("deleting_allocated")))
    problems = cluster.get("problems") or []
    if problems:
        lines.append("- %d problem(s) reading the cluster: %s" % (len(problems), "; ".join(
            "%s: %s" % (p.get("what"), p.get("reason")) if isinstance(p, dict) else str(p) for p in problems[:5])))
    lines.append("")
    return lines


FINDING_COLUMNS = ("severity", "id", "subject", "observed", "expected", "message", "source")


def findings_lines(findings):
    """The ``## Findings`` section of every phase summary: one table row per finding, blocking first, then
    warnings, then info (each by subject and id), cells escaped; "No findings." when there are none."""
    lines = ["## Findings", ""]
    if findings:
        lines += ["| %s |" % " | ".join(FINDING_COLUMNS), "|%s" % ("---|" * len(FINDING_COLUMNS))]
        order = {"block": 0, "warn": 1, "info": 2}
        for finding in sorted(findings, key=lambda f: (order.get(f.get("severity"), 3), f.get("subject") or "", f.get("id") or "")):
            lines.append("| %s |" % " | ".join(_cell(finding.get(k)) for k in FINDING_COLUMNS))
    else:
        lines.append("No findings.")
    lines.append("")
    return lines


def render_preflight(record):
    """A human summary (Markdown) of a preflight record."""
    results = record.get("results", {})
    inputs = record.get("inputs", {})
    target = inputs.get("target") or results.get("target") or {}
    counts = results.get("counts", {})
    verdict = str(results.get("verdict", "unknown")).upper()
    lines = [
        "# Preflight: verdict %s" % verdict,
        "",
        "Run `%s`, %s → %s." % (record.get("run_id"), record.get("started_at"), record.get("finished_at")),
        "Target: GPU Operator %s, Kubernetes %s, allocation mode %s%s." % (
            target.get("operator_version", "?"), target.get("kubernetes_version") or "not given",
            target.get("allocation_mode", "?"), ", passthrough requested" if target.get("passthrough") else ""),
        "",
        "Findings: %d block, %d warn, %d info (%d not assessed)." % (
            counts.get("block", 0), counts.get("warn", 0), counts.get("info", 0), counts.get("not_assessed", 0)),
        "",
    ]
    path = results.get("upgrade_path")
    if path:
        if all(isinstance(hop, dict) for hop in path):
            steps = [str(path[0].get("from"))] + [str(hop.get("to")) for hop in path]
        else:
            steps = [str(hop) for hop in path]
        lines += ["Operator upgrade path: %s" % " → ".join(steps), ""]
    cluster = record.get("cluster")
    if isinstance(cluster, dict) and cluster:
        lines += _cluster_lines(cluster)
    nodes = record.get("nodes") or {}
    if nodes:
        lines += ["## Nodes", ""]
        for host in sorted(nodes):
            facts = nodes[host] or {}
            driver = facts.get("driver") or {}
            os_info = facts.get("os") or {}
            containerd = facts.get("containerd") or {}
            lines.append("### %s" % host)
            lines.append("")
            kernel = (facts.get("kernel") or {}).get("release") or "unknown"
            lines.append("- OS %s, kernel %s" % (os_info.get("pretty_name") or "unknown", kernel))
            if driver.get("loaded"):
                lines.append("- NVIDIA driver %s (%s kernel module)" % (
                    driver.get("version") or "unparsed", driver.get("flavor") or "unknown"))
            else:
                lines.append("- no NVIDIA driver found")
            gpus = facts.get("gpus") or []
            lines.append("- GPUs: %d" % len(gpus))
            for gpu in gpus:
                lines.append("  - %s" % _gpu_line(gpu))
            iommu = facts.get("iommu") or {}
            lines.append("- IOMMU %s (%d groups), iommufd %s" % (
                "on" if iommu.get("enabled") else "off", iommu.get("group_count") or 0,
                "yes" if iommu.get("iommufd") else "no"))
            if containerd.get("present"):
                lines.append("- containerd %s, config v%s, CDI %s" % (
                    containerd.get("version") or "unknown", containerd.get("config_version") or "?",
                    {True: "on", False: "off"}.get(containerd.get("cdi_enabled"), "unknown")))
            else:
                lines.append("- containerd not found")
            specs = (facts.get("cdi") or {}).get("specs") or []
            lines.append("- CDI specs: %d (%d invalid)" % (len(specs), sum(1 for s in specs if s.get("error"))))
            problems = facts.get("problems") or []
            if problems:
                lines.append("- %d problem(s) reading the node: %s" % (
                    len(problems), "; ".join("%s: %s" % (p.get("path"), p.get("reason")) for p in problems[:5])))
            lines.append("")
    lines += findings_lines(results.get("findings") or [])
    return "\n".join(lines)


def render_run_summary(index, phase_summaries):
    """The run's summary.md: one line per record (every attempt, in phase order), then the summary of
    each phase's latest attempt (``phase_summaries``: file name of the record -> Markdown text)."""
    entries = sorted(index.get("records", []), key=phase_order)
    lines = ["# Gate run %s" % index.get("run_id"), "", "| phase | attempt | verdict | record | sha256 |",
             "|---|---|---|---|---|"]
    for entry in entries:
        lines.append("| %s | %s | %s | %s | `%s` |" % (
            entry.get("phase"), entry.get("attempt") or 1, entry.get("verdict") or "—", entry["file"],
            (entry.get("sha256") or "")[:16]))
    lines.append("")
    latest = {}
    for entry in entries:
        latest[entry.get("phase")] = entry
    for entry in sorted(latest.values(), key=phase_order):
        text = phase_summaries.get(entry["file"])
        if text:
            lines += [text.rstrip(), ""]
    return "\n".join(lines)
