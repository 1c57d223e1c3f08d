# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance judge (dra_acceptance.dra_acceptance_findings): what blocks, what warns."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import dra_acceptance

GOOD = {"lifecycles": {"attempted": 10, "successful": 10, "namespace": "dra-acceptance", "left_behind": [],
                       "records_path": "/evidence/dra-acceptance-r1.jsonl",
                       "device_health": {"observations": [], "devices": [], "claims": []},
                       "events": {"warnings": [], "warnings_total": 0, "by_reason": {"Normal/Scheduled": 10}}},
        "cleanup": {"left_behind": []}, "metrics": {"dra_operations": {"p95": 0.2}}}


def ids(results):
    return [(f["id"], f["severity"]) for f in dra_acceptance.dra_acceptance_findings(results)]


def test_a_clean_run_has_no_findings():
    assert ids(GOOD) == []


def test_an_unhealthy_device_warns_naming_the_device_and_the_claims():
    results = copy.deepcopy(GOOD)
    results["lifecycles"]["device_health"].update(devices=["gpu.nvidia.com/gpu-1/gpu-3"], claims=["c-1", "c-2"])
    (finding,) = dra_acceptance.dra_acceptance_findings(results)
    assert (finding["id"], finding["severity"]) == ("dra_acceptance.device_not_healthy", "warn")
    assert "gpu.nvidia.com/gpu-1/gpu-3" in finding["observed"] and "c-1, c-2" in finding["observed"]


def test_warning_events_warn_and_unreadable_events_warn_as_unread():
    results = copy.deepcopy(GOOD)
    results["lifecycles"]["events"] = {"warnings": [{"reason": "FailedPrepareDynamicResources"}], "warnings_total": 1,
                                       "by_reason": {"Warning/FailedPrepareDynamicResources": 2, "Normal/Pulled": 3}}
    (finding,) = dra_acceptance.dra_acceptance_findings(results)
    assert finding["id"] == "dra_acceptance.warning_events" and "FailedPrepareDynamicResources" in finding["observed"]
    assert "Normal/Pulled" not in finding["observed"]
    results["lifecycles"]["events"] = {"error": "GET events: 403 forbidden", "warnings": [], "by_reason": {}}
    (finding,) = dra_acceptance.dra_acceptance_findings(results)
    assert (finding["id"], finding["severity"]) == ("dra_acceptance.events_unread", "warn") and "403" in finding["observed"]


def test_a_failed_run_and_objects_left_block():
    results = copy.deepcopy(GOOD)
    results["failure"] = "interrupted (signal 2) after 3 of 10 lifecycles"
    results["cleanup"]["left_behind"] = ["pod/dra-gate-r1-4"]
    assert ids(results) == [("dra_acceptance.run_failed", "block"), ("dra_acceptance.left_behind", "block")]
