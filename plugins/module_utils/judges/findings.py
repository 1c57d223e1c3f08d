# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared helpers of the phase judges: one finding's form and the readings of verify and
control suite results that several judges share. Pure logic (no I/O).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock


def _finding(fid, severity, subject, observed, expected, message, source="gpufleet.dra_gate snapshot phase"):
    return {"id": fid, "severity": severity, "subject": subject, "observed": observed, "expected": expected,
            "message": message, "source": source}


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


# ---- reading registered task results (the roles' decisions are made here, never in Jinja) ----------


class JudgeError(ValueError):
    """An input a role passed to a judge that is not of the expected form; the message names the field."""


def _failed(result):
    """A registered result that failed (Ansible's ``is failed``; with ignore_errors the play goes on)."""
    return isinstance(result, dict) and bool(result.get("failed"))


def _skipped(result):
    """A registered result of a task that was skipped (Ansible's ``is skipped``)."""
    return isinstance(result, dict) and bool(result.get("skipped"))


def _pick(value, keys):
    """The items of ``value`` (a dict, else nothing) whose key is in ``keys``, in their order."""
    return dict((k, v) for k, v in _dict(value).items() if k in keys)


def _not_passed_names(suite):
    """``a, b`` of the workloads of a control suite result that did not pass."""
    return ", ".join(str(w.get("name", "")) for w in _list(_dict(suite).get("workloads"))
                     if isinstance(w, dict) and not w.get("passed"))


def _truthy(value):
    """Ansible's ``bool`` filter: True, 'yes', 'on', 'true', '1', 1 are true; anything else false."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("yes", "on", "true", "1", "y", "t")


def _check_step(name, result):
    """The step record of a verify (``ok``) or control suite (``passed``) task result, as the roles record it."""
    result = _dict(result)
    failed = _failed(result)
    if name == "control_suite":
        ok = not failed and bool(result.get("passed", False))
        detail = result["msg"] if "msg" in result else "failed: " + _not_passed_names(result)
    else:
        ok = not failed and bool(result.get("ok", False))
        detail = result["msg"] if "msg" in result else "; ".join(str(p) for p in _list(result.get("problems")))
    return {"name": name, "started_at": result.get("started_at"), "finished_at": result.get("finished_at"), "ok": ok,
            "detail": detail}


def _seconds_between(start, end, start_field, end_field):
    """``end - start`` in seconds, rounded to the millisecond; a stamp that is not RFC 3339 is a
    :class:`JudgeError` naming its field (one parser: common/clock.py)."""
    try:
        first, last = clock.parse(start, start_field), clock.parse(end, end_field)
    except ValueError as exc:
        raise JudgeError(str(exc))
    return round(last - first, 3)
