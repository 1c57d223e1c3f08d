# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one verdict and gate rule of every phase: pure logic, no I/O, no Ansible.

- :func:`verdict_of`: ``block`` if any finding blocks, else ``warn`` if any warns, else ``pass``;
  ``info`` findings never change it. A finding that could not be assessed (id ending in
  ``.not_assessed``) counts with its own severity, so an unassessed *required* check (severity
  ``block`` or ``warn``) never yields ``pass``.
- :func:`decide`: whether a verdict fails the gate at a ``fail_on`` level (``block``, ``warn``,
  ``never``), with a one-line reason naming the verdict, the counts and the first blocking (else
  warning) finding.
- :func:`coverage_findings`: the hosts a phase was asked to cover against those that answered; an
  unreachable or failed host is a ``block`` finding naming it, and a GPU node the cluster knows but
  the inventory lacks is a ``warn`` finding (``coverage.node_not_in_inventory``).

Findings here have the shape of compat_check's: ``{id, severity, subject, observed, expected,
message, source}`` (see docs/compat-matrix.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

FAIL_ON = ("block", "warn", "never")
VERDICTS = ("pass", "warn", "block")
SEVERITIES = ("block", "warn", "info")
#: The id suffix of a finding whose check could not be assessed.
NOT_ASSESSED = ".not_assessed"
#: Severity of a GPU node the cluster knows but the inventory lacks: the play may be limited to one
#: pool on purpose (``-l canary_pool``), so it warns; an unanswered host of the play blocks.
NODE_NOT_IN_INVENTORY_SEVERITY = "warn"
COVERAGE_SOURCE = ("gate coverage: the hosts the phase was asked to cover (expected_hosts, e.g. "
                   "ansible_play_hosts_all) against those that answered; docs/compat-matrix.md § Coverage")
FINDING_KEYS = ("id", "severity", "subject", "observed", "expected", "message", "source")
#: How many names a reason lists before "and N more".
_SHOWN = 3


class GateError(ValueError):
    """A bad verdict, fail_on level or coverage input: the message names the argument."""


def finding(fid, severity, subject, observed, expected, message, source):
    """One finding dict in the shape every phase records (observed/expected as strings or None)."""
    if severity not in SEVERITIES:
        raise GateError("severity: expected one of %s, got %r" % (", ".join(SEVERITIES), severity))
    return {"id": fid, "severity": severity, "subject": subject,
            "observed": None if observed is None else str(observed),
            "expected": None if expected is None else str(expected),
            "message": message, "source": source}


def is_not_assessed(item):
    """True when the finding (or finding id) is a check that could not be assessed."""
    fid = item.get("id") if isinstance(item, dict) else item
    return isinstance(fid, str) and fid.endswith(NOT_ASSESSED)


def _check_findings(findings):
    if findings is None:
        return []
    if isinstance(findings, (str, bytes, dict)) or not hasattr(findings, "__iter__"):
        raise GateError("findings: expected a list of finding dicts, got %s" % type(findings).__name__)
    return findings


def assess(findings):
    """One pass over the findings: ``{verdict, counts, not_assessed}`` (see the three functions below)."""
    block = warn = info = 0
    unassessed = []
    for item in _check_findings(findings):
        severity = item.get("severity") if isinstance(item, dict) else None
        fid = item.get("id") if severity is not None else None
        if isinstance(fid, str) and fid.endswith(NOT_ASSESSED):
            unassessed.append({"id": fid, "subject": item.get("subject"), "severity": severity,
                               "reason": item.get("message")})
            if severity == "info":
                continue
        if severity == "block":
            block += 1
        elif severity == "warn":
            warn += 1
        elif severity == "info":
            info += 1
        else:
            raise GateError("findings: each needs a severity block, warn or info, got %r" % (severity,))
    verdict = "block" if block else ("warn" if warn else "pass")
    return {"verdict": verdict, "counts": {"block": block, "warn": warn, "info": info, "not_assessed": len(unassessed)},
            "not_assessed": unassessed}


def verdict_of(findings):
    """``block`` if any finding's severity is block, else ``warn`` if any is warn, else ``pass``."""
    return assess(findings)["verdict"]


def counts_of(findings):
    """``{block, warn, info, not_assessed}``.

    ``block`` and ``warn`` count every finding of that severity, not-assessed ones included (so
    ``counts.block`` is the number of blocking findings); ``info`` counts the assessed info findings
    only; ``not_assessed`` counts every not-assessed finding whatever its severity.
    """
    return assess(findings)["counts"]


def not_assessed_of(findings):
    """Every check that could not be assessed: ``[{id, subject, severity, reason}]`` in finding order."""
    return assess(findings)["not_assessed"]


def first_finding(findings, verdict=None):
    """The first blocking finding, else the first warning (None when neither, or for ``pass``)."""
    findings = _check_findings(findings)
    levels = ("block", "warn") if verdict in (None, "block") else ("warn",) if verdict == "warn" else ()
    for level in levels:
        for item in findings:
            if item.get("severity") == level:
                return item
    return None


def _check_level(value, allowed, name):
    if value not in allowed:
        raise GateError("%s: expected one of %s, got %r" % (name, ", ".join(allowed), value))


def fails(verdict, fail_on):
    """True when ``verdict`` reaches the ``fail_on`` level (``never`` never fails)."""
    _check_level(fail_on, FAIL_ON, "fail_on")
    _check_level(verdict, VERDICTS, "verdict")
    if fail_on == "never":
        return False
    return VERDICTS.index(verdict) >= VERDICTS.index(fail_on)


def decide(verdict, fail_on, findings=()):
    """The gate decision: ``{verdict, fail_on, failed, reason}``. Raises :class:`GateError` on bad values.

    ``reason`` names the verdict, the counts (when findings are given) and the first blocking (else
    warning) finding's id, subject and message.
    """
    failed = fails(verdict, fail_on)
    findings = list(_check_findings(findings))
    reason = "verdict %s" % verdict
    if findings:
        counts = counts_of(findings)
        reason += ": %d block, %d warn, %d info, %d not assessed" % (
            counts["block"], counts["warn"], counts["info"], counts["not_assessed"])
    first = first_finding(findings, verdict)
    if first is not None:
        reason += "; first %s: %s [%s]: %s" % (
            "blocking" if first["severity"] == "block" else "warning", first.get("id"), first.get("subject"),
            first.get("message"))
    reason += " (fail_on %s: %s)" % (fail_on, "fails" if failed else "passes")
    return {"verdict": verdict, "fail_on": fail_on, "failed": failed, "reason": reason}


# ---- coverage: the hosts asked for against those that answered --------------------------------------

def _host_list(value, name):
    if value is None:
        return None
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise GateError("%s: expected a list of host names, got %s" % (name, type(value).__name__))
    try:
        out = list(dict.fromkeys(value))  # keeps the order, drops repeats
    except TypeError:  # an unhashable item
        out = list(value)
    for item in out:
        if not isinstance(item, str):
            raise GateError("%s: host names must be strings, got %s %r" % (name, type(item).__name__, item))
    return out


def _failed_map(value):
    if value is None:
        return {}
    if isinstance(value, dict):
        out = {}
        for host, reason in value.items():
            if not isinstance(host, str):
                raise GateError("failed_hosts: host names must be strings, got %s %r" % (type(host).__name__, host))
            out[host] = None if reason in (None, "") else str(reason)
        return out
    return dict((host, None) for host in _host_list(value, "failed_hosts"))


def _node_of(host, host_node_names, nodes, by_short):
    """The Kubernetes node name of an inventory host: host_node_names, else the name, else a unique short name."""
    name = host_node_names.get(host, host)
    if name in nodes:
        return name
    matches = by_short.get(name.split(".", 1)[0], ())
    return matches[0] if len(matches) == 1 else name


def _names(names):
    shown = ", ".join(names[:_SHOWN])
    return shown + (" and %d more" % (len(names) - _SHOWN) if len(names) > _SHOWN else "")


def coverage_findings(expected_hosts, answered_hosts, failed_hosts=None, cluster_gpu_nodes=None,
                      host_node_names=None, inventory_hosts=None):
    """Findings for hosts asked for but not covered, and for GPU nodes the inventory lacks.

    :param expected_hosts: hosts the phase was asked to cover (``ansible_play_hosts_all``); None
        skips the host checks.
    :param answered_hosts: hosts whose facts arrived (``ansible_play_hosts`` or the keys of the
        facts).
    :param failed_hosts: host -> reason (or a list of hosts) for hosts known to have failed; each is
        ``coverage.host_failed`` (block), or ``coverage.host_unreachable`` when the reason starts with
        "unreachable". Another expected host that did not answer is ``coverage.host_unreachable`` (block).
    :param cluster_gpu_nodes: Kubernetes node names the cluster knows as GPU nodes; None skips the
        inventory check. Each that no inventory host maps to is ``coverage.node_not_in_inventory``
        (:data:`NODE_NOT_IN_INVENTORY_SEVERITY`).
    :param host_node_names: inventory_hostname -> Kubernetes node name; default the inventory name
        (else a node whose short name is the host's, when only one is).
    :param inventory_hosts: every host of the inventory (``groups['all']``), for the inventory
        check; default ``expected_hosts`` (else ``answered_hosts``).
    """
    expected = _host_list(expected_hosts, "expected_hosts")
    answered = _host_list(answered_hosts, "answered_hosts") or []
    failed = _failed_map(failed_hosts)
    inventory = _host_list(inventory_hosts, "inventory_hosts")
    gpu_nodes = _host_list(cluster_gpu_nodes, "cluster_gpu_nodes")
    if host_node_names is None:
        host_node_names = {}
    if not isinstance(host_node_names, dict):
        raise GateError("host_node_names: expected a dict inventory host -> Kubernetes node name, got %s"
                        % type(host_node_names).__name__)
    out = []
    answered_set = set(answered)
    hosts = list(expected or [])
    listed = set(hosts)
    hosts.extend(h for h in failed if h not in listed)
    for host in hosts:
        if host in failed and (failed[host] or "").lower().startswith("unreachable"):
            out.append(finding(
                "coverage.host_unreachable", "block", host, failed[host], "answered",
                "host %s was to be covered but is %s: a gate that passes on a partial view is worse than none; fix "
                "the host and rerun the phase" % (host, failed[host]), COVERAGE_SOURCE))
        elif host in failed:
            why = failed[host]
            out.append(finding(
                "coverage.host_failed", "block", host, "failed" + (": " + why if why else ""), "answered",
                "host %s was to be covered but failed%s: its facts are missing, so no verdict covers it; fix the "
                "host and rerun the phase" % (host, " (%s)" % why if why else ""), COVERAGE_SOURCE))
        elif expected is not None and host not in answered_set:
            out.append(finding(
                "coverage.host_unreachable", "block", host, "no answer", "answered",
                "host %s was to be covered but did not answer (unreachable, or failed before the check): a gate "
                "that passes on a partial view is worse than none; fix the host and rerun the phase" % host,
                COVERAGE_SOURCE))
    if gpu_nodes is not None:
        if inventory is None:
            inventory = expected if expected is not None else answered
        node_set = set(gpu_nodes)
        by_short = {}
        for name in gpu_nodes:
            by_short.setdefault(name.split(".", 1)[0], []).append(name)
        covered = set(_node_of(host, host_node_names, node_set, by_short) for host in inventory)
        for node in gpu_nodes:
            if node in covered:
                continue
            out.append(finding(
                "coverage.node_not_in_inventory", NODE_NOT_IN_INVENTORY_SEVERITY, node, "GPU node %s" % node,
                "a host of the inventory",
                "the cluster has GPU node %s but no inventory host maps to it (by name, short name or "
                "host_node_names): it is not gathered or checked by any phase; add it to the inventory" % node,
                COVERAGE_SOURCE))
    return out


__all__ = ["FAIL_ON", "VERDICTS", "SEVERITIES", "NOT_ASSESSED", "GateError", "finding", "is_not_assessed",
           "assess", "verdict_of", "counts_of", "not_assessed_of", "first_finding", "fails", "decide", "coverage_findings"]
