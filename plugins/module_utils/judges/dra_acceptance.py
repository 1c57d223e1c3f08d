# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DRA acceptance run's judge: its findings (docs/evidence.md, "The DRA acceptance record").

Pure logic (no I/O).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.findings import _dict, _finding, _list


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
