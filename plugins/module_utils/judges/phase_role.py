# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The internal role ``phase``'s decisions and the helpers every phase role shares (plugins/filter/phase.py):
a host's Kubernetes node name, whether a host answered a read, which hosts finished, a step's record and the
gate's message. Pure logic (no I/O, no Ansible); a bad value raises JudgeError naming the field."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping
LEFT_THE_PLAY = "left the play before this phase read it (failed or unreachable earlier)"
STEP_TIMES = ("started_at", "finished_at", "duration_seconds")


from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.findings import JudgeError


def checked_mapping(value, field):
    """``value`` when it is a mapping, {} for None; anything else is a JudgeError naming ``field``."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise JudgeError("%s: expected a mapping, got %s" % (field, type(value).__name__))
    return value


def checked_list(value, field):
    """``value`` as a list when it is a list or tuple, [] for None; anything else (a string or a mapping
    included) is a JudgeError naming ``field``."""
    if value is None:
        return []
    if isinstance(value, (str, Mapping)) or not isinstance(value, (list, tuple)):
        raise JudgeError("%s: expected a list, got %s" % (field, type(value).__name__))
    return list(value)


def host_list(hosts, field="hosts"):
    """``hosts`` checked: a list of inventory host names (a bad one named with its index)."""
    if isinstance(hosts, str) or not isinstance(hosts, (list, tuple)):
        raise JudgeError("%s: expected a list of inventory host names, got %s" % (field, type(hosts).__name__))
    for index, host in enumerate(hosts):
        if not isinstance(host, str) or not host:
            raise JudgeError("%s: entry %d: expected an inventory host name, got %r" % (field, index, host))
    return list(hosts)


def _result(result, field="result"):
    if result is None:
        return {}
    if not isinstance(result, Mapping):
        raise JudgeError("%s: expected a task result (a mapping), got %s" % (field, type(result).__name__))
    return result


def host_value(hostvars, host, name, default=None):
    """``hostvars[host][name]``, ``default`` when the host or the variable is not there."""
    try:
        values = hostvars[host]
    except KeyError:
        return default
    if not isinstance(values, Mapping):  # a host Ansible does not know (its hostvars entry is undefined)
        return default
    try:
        return values[name]
    except KeyError:
        return default


def node_name(host, given=None):
    """A host's Kubernetes node name: ``dra_gate_node_name`` when set (non-empty), else the inventory name."""
    if not isinstance(host, str) or not host:
        raise JudgeError("host: expected an inventory host name, got %r" % (host,))
    if given in (None, ""):
        return host
    if not isinstance(given, str):
        raise JudgeError("dra_gate_node_name of %s: expected a node name (a string), got %r" % (host, given))
    return given


def node_names(hosts, hostvars, by_host=False):
    """The hosts' node names in order (``by_host``: a mapping host -> node name)."""
    hosts = host_list(hosts)
    names = [node_name(host, host_value(hostvars, host, "dra_gate_node_name")) for host in hosts]
    return dict(zip(hosts, names)) if by_host else names


def host_failure(result):
    """Whether a host answered its read: '' when it did, else 'unreachable: ...' or 'failed: ...'."""
    result = _result(result)
    if result.get("unreachable"):
        return "unreachable: %s" % result.get("msg", "no answer")
    if result.get("failed"):
        return "failed: %s" % result.get("msg", "the read failed")
    return ""


def answered(hosts, failures):
    """``failures``: host -> its ``phase_host_failure`` (a host without one left the play earlier).
    -> {answered_hosts: [...], failed_hosts: {host: why}} in the play's order."""
    hosts = host_list(hosts)
    if not isinstance(failures, Mapping):
        raise JudgeError("failures: expected a mapping host -> reason, got %s" % type(failures).__name__)
    reasons = dict((host, failures[host] if failures.get(host) is not None else LEFT_THE_PLAY) for host in hosts)
    return {"answered_hosts": [host for host in hosts if reasons[host] == ""],
            "failed_hosts": dict((host, why) for host, why in reasons.items() if why != "")}


def answered_reads(hosts, hostvars, result_name, play_hosts):
    """``answered`` from each host's registered read: ``hostvars[host][result_name]`` judged by ``host_failure``,
    read once (on the controller: no task per host). A host no longer in ``play_hosts`` left the play before
    the read (its variable, if any, is an earlier play's); a host in the play without the variable did not run
    the read."""
    hosts = host_list(hosts)
    play = set(host_list(play_hosts, "play_hosts"))
    if not isinstance(result_name, str) or not result_name:
        raise JudgeError("result_name: expected the name the read was registered as, got %r" % (result_name,))
    failures = {}
    for host in hosts:
        result = host_value(hostvars, host, result_name) if host in play else None
        failures[host] = None if result is None else host_failure(_result(result, "%s of %s" % (result_name, host)))
    return answered(hosts, failures)


def finished_hosts(answered_hosts, play_hosts):
    """The hosts the finish counts as answered: those that answered the read (every play host when the phase
    read nothing per host) and are still in the play."""
    play_hosts = host_list(play_hosts, "play_hosts")
    answered_hosts = play_hosts if answered_hosts is None else host_list(answered_hosts, "answered_hosts")
    return [host for host in answered_hosts if host in play_hosts]


def step_record(result, name, phase=None, detail=None, started_at=None, finished_at=None):
    """One step of a phase's record from the step's task result: {name, [phase], ok, detail, started_at,
    finished_at, duration_seconds}. ``ok`` is the task's own outcome (not failed); ``detail`` its message, else
    the one given; times the module's own, else the ones given."""
    result = _result(result)
    if not isinstance(name, str) or not name:
        raise JudgeError("name: expected the step's name, got %r" % (name,))
    record = {"name": name}
    if phase is not None:
        record["phase"] = phase
    record["ok"] = not bool(result.get("failed", False))
    record["detail"] = result.get("msg", detail if detail is not None else "")
    given = {"started_at": started_at, "finished_at": finished_at, "duration_seconds": None}
    for key in STEP_TIMES:
        record[key] = result.get(key, given[key])
    return record


def seconds_between(start, end):
    """``end - start`` in seconds (microsecond-exact) of two RFC 3339 stamps; a missing or malformed one is an
    error naming it (a duration is never guessed)."""
    try:
        return round(clock.parse(end, "end") - clock.parse(start, "start"), 6)
    except ValueError as exc:
        raise JudgeError(str(exc))


def step_fields(result, keys=STEP_TIMES + ("failed", "skipped", "msg")):
    """The step's timing and outcome fields of a task result ({} when it did not run)."""
    result = _result(result)
    return dict((key, result[key]) for key in keys if key in result)


def gate_message(evidence, phase, fail_on, check_mode=False):
    """The gate's message from gate_evidence's result: the verdict, why when it is not pass (and the blocked
    subjects when the gate fails), where the evidence is."""
    evidence = _result(evidence, "evidence")
    gate = _result(evidence.get("gate"), "evidence.gate")
    verdict = str(evidence.get("verdict", "")).upper()
    where = "Evidence %s (attempt %s); summary %s%s." % (evidence.get("path"), evidence.get("attempt"),
                                                         evidence.get("summary_path"),
                                                         " (check mode: not written)" if check_mode else "")
    title = str(phase).capitalize()
    if gate.get("failed"):
        subjects = []
        for found in evidence.get("findings") or []:
            if isinstance(found, Mapping) and found.get("severity") == "block" and found.get("subject") not in subjects:
                subjects.append(found.get("subject"))
        return "%s verdict %s (fail_on %s): %s. Blocking finding(s) on: %s. %s" % (
            title, verdict, fail_on, gate.get("reason"), ", ".join(str(s) for s in subjects) or "none", where)
    reason = (": %s" % gate.get("reason")) if evidence.get("verdict") != "pass" else ""
    return "%s verdict %s%s. %s" % (title, verdict, reason, where)
