# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dra_acceptance role's decisions (plugins/filter/dra_acceptance.py): the lifecycle run's id and the
record's results (the failure, what was measured, the cleanup, and the metrics: skipped without a Prometheus or
a test interval, failed, or measured). Pure logic on the registered results."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.phase_role import JudgeError, checked_mapping

MEASURED_KEYS = ("attempted", "successful", "success_rate", "allocation_latency_seconds", "start_latency_seconds",
                 "errors", "cleanup_defects", "numa", "records_path", "interval", "progress", "left_behind", "kinds",
                 "concurrency", "long_lived", "churn", "tracked_peak", "namespace", "run_id", "gpus", "disruptions",
                 "device_health", "events", "would_run")
METRICS_KEYS = ("quantiles", "query", "interval", "evaluated_at", "operation", "dcgm")
ID_LENGTH = 40


def lifecycle_id(run, stamp):
    """One lifecycle run per attempt: ``<run>-<stamp>`` lower-cased, other characters than a-z, 0-9 and '-' made
    '-', the last 40 characters, no leading or trailing '-' (a label value and a file name)."""
    if not isinstance(run, str) or not run or not isinstance(stamp, str) or not stamp:
        raise JudgeError("run and stamp: expected the run id and the attempt stamp, got %r and %r" % (run, stamp))
    text = re.sub(r"[^a-z0-9-]", "-", ("%s-%s" % (run, stamp)).lower())[-ID_LENGTH:]
    return text.strip("-")


def results(lifecycles, cleanup, metrics, prometheus_url="", check_mode=False):
    """The record's results from the registered lifecycle, cleanup and metrics results."""
    lifecycles, cleanup, metrics = checked_mapping(lifecycles, "lifecycles"), checked_mapping(cleanup, "cleanup"), checked_mapping(metrics, "metrics")
    if not prometheus_url:
        measured_metrics = {"skipped": "no Prometheus (dra_gate_prometheus_url is empty)"}
    elif not metrics or metrics.get("skipped"):
        measured_metrics = {"skipped": "no test interval (the lifecycles did not run)"}
    elif metrics.get("failed"):
        measured_metrics = {"failed": metrics.get("msg")}
    else:
        measured_metrics = dict((k, metrics[k]) for k in METRICS_KEYS if k in metrics)
    return {
        "check_mode": bool(check_mode),
        "failure": lifecycles.get("msg", "the lifecycles did not run") if lifecycles.get("failed") else None,
        "lifecycles": dict((k, lifecycles[k]) for k in MEASURED_KEYS if k in lifecycles),
        "cleanup": {"left_behind": cleanup.get("left_behind", []), "failed": bool(cleanup.get("failed", False)),
                    "msg": cleanup.get("msg")},
        "metrics": measured_metrics,
    }
