# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""judges/dra_acceptance_role.py: the lifecycle id and the record's results (the metrics ladder), on recorded results."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import dra_acceptance_role as da
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.phase_role import JudgeError

LIFECYCLES = {"changed": True, "attempted": 4, "successful": 4, "success_rate": 1.0, "namespace": "dra-acceptance",
              "interval": {"start": "s", "end": "e"}, "records_path": "/r/x.jsonl", "progress": ["4/4"],
              "long_lived": 1, "churn": 3, "tracked_peak": 3, "invocation": {"module_args": {}}}
CLEANUP = {"changed": False, "left_behind": []}
METRICS = {"changed": False, "quantiles": {"p50": 0.1}, "query": "q", "interval": {}, "evaluated_at": "t",
           "operation": "PrepareResources", "dcgm": {}, "invocation": {}}


def test_lifecycle_id():
    assert da.lifecycle_id("Gate_Run.1", "20260101T000000Z") == "gate-run-1-20260101t000000z"
    long = da.lifecycle_id("x" * 50, "20260101T000000Z")
    assert len(long) <= 40 and long.endswith("20260101t000000z")
    assert da.lifecycle_id("-" * 30 + "ab", "--") == "ab"  # no leading or trailing '-'
    with pytest.raises(JudgeError, match="run and stamp"):
        da.lifecycle_id("", "s")


def test_results_measured():
    out = da.results(LIFECYCLES, CLEANUP, METRICS, prometheus_url="http://prom:9090")
    assert out["failure"] is None and out["check_mode"] is False
    assert "invocation" not in out["lifecycles"] and out["lifecycles"]["attempted"] == 4
    # the scale shape's counts are evidence: held for the run, churn, the most tracked at once
    assert (out["lifecycles"]["long_lived"], out["lifecycles"]["churn"], out["lifecycles"]["tracked_peak"]) == (1, 3, 3)
    assert out["cleanup"] == {"left_behind": [], "failed": False, "msg": None}
    assert out["metrics"] == {"quantiles": {"p50": 0.1}, "query": "q", "interval": {}, "evaluated_at": "t",
                              "operation": "PrepareResources", "dcgm": {}}


def test_results_metrics_ladder():
    assert da.results(LIFECYCLES, CLEANUP, METRICS, "")["metrics"] == {"skipped": "no Prometheus (dra_gate_prometheus_url is empty)"}
    skipped = {"changed": False, "skipped": True}
    assert da.results(LIFECYCLES, CLEANUP, skipped, "http://p")["metrics"] == {"skipped": "no test interval (the lifecycles did not run)"}
    assert da.results(LIFECYCLES, CLEANUP, None, "http://p")["metrics"]["skipped"].startswith("no test interval")
    failed = {"failed": True, "msg": "HTTP 503"}
    assert da.results(LIFECYCLES, CLEANUP, failed, "http://p")["metrics"] == {"failed": "HTTP 503"}


def test_results_failure_and_cleanup():
    out = da.results({"failed": True, "msg": "no canary pool"}, {"failed": True, "msg": "2 left", "left_behind": ["pod/a"]},
                     {"skipped": True}, "", check_mode=True)
    assert out["failure"] == "no canary pool" and out["check_mode"] is True
    assert out["cleanup"] == {"left_behind": ["pod/a"], "failed": True, "msg": "2 left"}
    assert da.results({"failed": True}, None, None)["failure"] == "the lifecycles did not run"
    assert da.results(None, None, None)["lifecycles"] == {}
