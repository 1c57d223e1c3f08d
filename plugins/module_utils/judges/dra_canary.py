# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DRA canary build's judge: its findings from its results (docs/evidence.md, "The DRA canary record").

Pure logic (no I/O).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.findings import _dict, _finding, _list
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import passthrough


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
    for left, right in passthrough.overlapping(records):
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
