# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain waves' judge: their findings (docs/evidence.md, "The drain record"). Pure logic (no I/O)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.findings import _dict, _finding, _list


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
