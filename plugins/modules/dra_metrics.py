#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: dra_metrics
short_description: Query Prometheus for quantiles of the kubelet's DRA histogram and for DCGM exporter metrics per GPU
version_added: 0.4.0
description:
  - Asks a Prometheus (HTTP API C(/api/v1/query), instant queries) for quantiles of the kubelet's
    C(dra_operations_duration_seconds) histogram (stability ALPHA) over the test interval, one query per
    quantile - C(histogram_quantile(q, sum by (le) (rate(dra_operations_duration_seconds_bucket{operation_name="<operation>",<matchers>}[<range>]))))
    - with C(rate()) on every bucket series before the aggregation and C(le) kept by it.
  - The interval is either O(interval), a PromQL duration evaluated now (the controller's clock, sent as
    the query's C(time)), or O(start) and O(end), the test interval - then every query is evaluated at
    O(end) with the range O(end) - O(start) (rounded up to the millisecond), so the samples in
    (O(start), O(end)] count. C(rate()) needs at least two samples of the series in the range.
  - Absent data is reported as absent, never as zero - a quantile with no series (for example matchers
    that select nothing), a C(NaN) (no observations in the range) or C(+Inf) (above the highest finite
    bucket) has RV(quantiles[].value_seconds) null and RV(quantiles[].absent_reason) saying which.
  - With O(dcgm), checks that each DCGM exporter metric of O(dcgm.metrics) has a series for each GPU UUID
    of O(dcgm.gpus) (label C(UUID)) now - the last sample within Prometheus' lookback (5 minutes by
    default) at the evaluation time. A GPU with a missing metric is listed in RV(dcgm.missing); nothing
    passes silently.
  - Every HTTP call has a deadline (O(timeout)) and is retried on 429, 5xx and connection failures with
    exponential backoff; 401/403 and other 4xx answers fail the module (forbidden is not absent), as does
    an error answer of the query (naming Prometheus' C(errorType) and message).
  - Read-only; runs on the controller (or a delegate) with the Python standard library.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.dra_gate.attributes.controller
options:
  url:
    description:
      - The Prometheus base URL, for example C(http://prometheus.monitoring:9090) (a path prefix such as
        C(https://host/prometheus) is kept); the module appends C(/api/v1/query).
    type: str
    required: true
  quantiles:
    description:
      - The quantiles to compute, numbers between 0 and 1, each at most once.
    type: list
    elements: float
    default: [0.5, 0.95, 0.99]
  operation:
    description:
      - The value of the histogram's C(operation_name) label.
    type: str
    choices: [PrepareResources, UnprepareResources]
    default: PrepareResources
  interval:
    description:
      - The range as a PromQL duration (C(5m), C(1h30m), C(90s), C(250ms)), evaluated now.
      - Mutually exclusive with O(start) and O(end); one of the two forms is required.
    type: str
  start:
    description:
      - The test interval's start, RFC 3339 (C(2026-12-02T07:40:00Z); fractions and offsets allowed).
      - Required together with O(end).
    type: str
  end:
    description:
      - The test interval's end, RFC 3339; the queries are evaluated at this time. Must be after O(start).
    type: str
  matchers:
    description:
      - Further label matchers (equality) on the bucket series, a dict of label name -> value, for example
        C(node=canary-1) or C(is_error=false). C(le), C(__name__) and C(operation_name) are the query's own.
        By default the quantile covers every series of the operation (both C(is_error) values).
    type: dict
    default: {}
  dcgm:
    description:
      - The DCGM exporter presence check; skipped when not given.
    type: dict
    suboptions:
      gpus:
        description:
          - The GPU UUIDs expected (the canary's GPUs), as dcgm-exporter's C(UUID) label carries them.
        type: list
        elements: str
        required: true
      metrics:
        description:
          - DCGM exporter metric names each GPU must have.
        type: list
        elements: str
        default: [DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_GPU_TEMP, DCGM_FI_DEV_POWER_USAGE]
      matchers:
        description:
          - Further label matchers (equality) on the DCGM series, label name -> value, for example C(job=gpu-metrics).
        type: dict
        default: {}
  timeout:
    description:
      - Seconds each query may take overall, retries included.
    type: float
    default: 30
  validate_certs:
    description:
      - Verify the server's TLS certificate.
    type: bool
    default: true
  ca_path:
    description:
      - A PEM file of CA certificates to verify the server with.
    type: path
  bearer_token:
    description:
      - A bearer token sent as C(Authorization) header. Never logged.
    type: str
attributes:
  check_mode:
    description: Can run in check mode; it only reads, so check mode runs the same queries and changes nothing.
    support: full
  diff_mode:
    description: Returns no diff; it changes nothing.
    support: none
notes:
  - Needs read access to Prometheus' query API. The kubelet's C(/metrics) and dcgm-exporter must be scraped
    by that Prometheus; the metric is ALPHA and may be renamed (the KEP text says C(dra_operations_seconds)).
  - C(histogram_quantile) interpolates linearly inside a bucket, so a value is exact only to the bucket
    bounds (the kubelet's default buckets 0.005 ... 10 s).
seealso:
  - module: gpufleet.dra_gate.dra_canary_check
"""

EXAMPLES = r"""
- name: p50/p95/p99 of PrepareResources over the acceptance run
  gpufleet.dra_gate.dra_metrics:
    url: http://prometheus.monitoring.svc:9090
    start: "{{ acceptance.started_at }}"
    end: "{{ acceptance.finished_at }}"
    matchers:
      node: canary-1
    dcgm:
      gpus: "{{ canary_gpu_uuids }}"
  register: dra_metrics

- name: The last 10 minutes of UnprepareResources, with a token
  gpufleet.dra_gate.dra_metrics:
    url: https://prometheus.example.com
    operation: UnprepareResources
    interval: 10m
    quantiles: [0.95]
    bearer_token: "{{ prometheus_token }}"
"""

RETURN = r"""
quantiles:
  description: One entry per quantile, in the order of O(quantiles).
  returned: always
  type: list
  elements: dict
  contains:
    quantile:
      description: The quantile.
      type: float
      sample: 0.95
    value_seconds:
      description: The quantile in seconds; null when absent (never 0 for absent data).
      type: float
      sample: 0.375
    absent_reason:
      description: Why the value is null (no series, NaN, +Inf, ambiguous answer); null when there is a value.
      type: str
      sample: "no series: no bucket series of the histogram match the selector in the range"
    query:
      description: The exact PromQL text of this quantile.
      type: str
query:
  description: The exact PromQL text per quantile, keyed by the quantile as written in the query.
  returned: always
  type: dict
  sample: {"0.95": "histogram_quantile(0.95, sum by (le) (rate(dra_operations_duration_seconds_bucket{operation_name=\"PrepareResources\"}[5m])))"}
interval:
  description: The interval the queries covered.
  returned: always
  type: dict
  contains:
    range:
      description: The PromQL range used in C(rate()).
      type: str
      sample: 1800s
    range_seconds:
      description: The range in seconds.
      type: float
    start:
      description: RFC 3339 UTC start (evaluation time minus the range).
      type: str
    end:
      description: RFC 3339 UTC end (the evaluation time).
      type: str
    source:
      description: C(start_end) when O(start)/O(end) gave it, C(interval) for O(interval).
      type: str
evaluated_at:
  description: RFC 3339 UTC time the queries were evaluated at (O(end), or now).
  returned: always
  type: str
  sample: "2026-12-02T07:40:00.000000Z"
operation:
  description: The C(operation_name) queried.
  returned: always
  type: str
dcgm:
  description: The DCGM presence check; null when O(dcgm) is not given.
  returned: always
  type: dict
  contains:
    gpus:
      description: Per expected GPU, in the order of O(dcgm.gpus), C(uuid), C(present) and C(missing) (metric names).
      type: list
      elements: dict
    missing:
      description: Every pair of C(uuid) and C(metric) without a series; empty when all are present.
      type: list
      elements: dict
    all_present:
      description: True when every metric is present for every GPU.
      type: bool
    query:
      description: The exact PromQL text per metric.
      type: dict
started_at:
  description: RFC 3339 UTC start of the module run.
  returned: always
  type: str
finished_at:
  description: RFC 3339 UTC end of the module run.
  returned: always
  type: str
duration_seconds:
  description: Seconds the run took.
  returned: always
  type: float
"""

import time
from urllib.error import HTTPError

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.module_run import ModuleRun
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import prometheus_query as pq


def _fetcher(module):
    params = module.params

    def fetch(url, headers, timeout):
        try:
            resp = open_url(url, method="GET", headers=headers, timeout=timeout, validate_certs=params["validate_certs"],
                            ca_path=params["ca_path"], follow_redirects="safe")
            return resp.getcode(), resp.read()
        except HTTPError as exc:
            try:
                body = exc.read()
            except Exception:  # pylint: disable=broad-except
                body = b""
            return exc.code, body
    return fetch


def _window(params, now):
    if params["interval"] is not None:
        seconds = pq.duration_seconds(params["interval"])
        return now, params["interval"], seconds, "interval"
    start = clock.parse(params["start"], "start")
    end = clock.parse(params["end"], "end")
    if end <= start:
        raise ValueError("end: %s is not after start %s (expected end > start)" % (params["end"], params["start"]))
    range_text = pq.range_of(end - start)
    return end, range_text, pq.duration_seconds(range_text), "start_end"


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            quantiles=dict(type="list", elements="float", default=list(pq.DEFAULT_QUANTILES)),
            operation=dict(type="str", choices=list(pq.OPERATIONS), default="PrepareResources"),
            interval=dict(type="str"),
            start=dict(type="str"),
            end=dict(type="str"),
            matchers=dict(type="dict", default={}),
            dcgm=dict(type="dict", options=dict(
                gpus=dict(type="list", elements="str", required=True),
                metrics=dict(type="list", elements="str", default=list(pq.DEFAULT_DCGM_METRICS)),
                matchers=dict(type="dict", default={}),
            )),
            timeout=dict(type="float", default=30),
            validate_certs=dict(type="bool", default=True),
            ca_path=dict(type="path"),
            bearer_token=dict(type="str", no_log=True),
        ),
        mutually_exclusive=[("interval", "start"), ("interval", "end")],
        required_together=[("start", "end")],
        required_one_of=[("interval", "start")],
        supports_check_mode=True,
    )
    run = ModuleRun(module, digits=6)
    params = module.params
    url = params["url"]
    if not url.startswith(("http://", "https://")):
        module.fail_json(msg="url: %r is not an http(s) URL (expected e.g. http://prometheus:9090)" % url)
    if params["timeout"] <= 0:
        module.fail_json(msg="timeout: expected a positive number of seconds, got %s" % params["timeout"])
    try:
        quantiles = pq.check_quantiles(params["quantiles"])
        pairs = pq.check_matchers(params["matchers"])
        dcgm = pq.check_dcgm(params["dcgm"])
        at, range_text, range_seconds, source = _window(params, time.time())
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    queries = {}
    for quantile in quantiles:
        queries[pq.quantile_text(quantile)] = pq.quantile_query(quantile, params["operation"], range_text, pairs)

    headers = {"Accept": "application/json"}
    if params["bearer_token"]:
        headers["Authorization"] = "Bearer " + params["bearer_token"]
    fetch = _fetcher(module)
    result = dict(changed=False, operation=params["operation"], query=queries, evaluated_at=clock.rfc3339(at),
                  interval=dict(range=range_text, range_seconds=range_seconds, start=clock.rfc3339(at - range_seconds),
                                end=clock.rfc3339(at), source=source),
                  quantiles=[], dcgm=None)

    def query(expr):
        return pq.call(fetch, pq.query_url(url, expr, at), params["timeout"], headers)

    try:
        for quantile in quantiles:
            expr = queries[pq.quantile_text(quantile)]
            value, reason = pq.parse_instant(query(expr))
            result["quantiles"].append(dict(quantile=quantile, value_seconds=value, absent_reason=reason, query=expr))
        if dcgm is not None:
            dcgm_queries, by_metric = {}, {}
            for metric in dcgm["metrics"]:
                dcgm_queries[metric] = pq.dcgm_query(metric, dcgm["gpus"], dcgm["pairs"])
                by_metric[metric] = set(pq.present_uuids(query(dcgm_queries[metric])))
            gpus, missing = pq.dcgm_presence(dcgm["gpus"], by_metric)
            result["dcgm"] = dict(gpus=gpus, missing=missing, all_present=not missing, query=dcgm_queries)
    except pq.PrometheusError as exc:
        run.fail(str(exc), status=exc.status, error_type=exc.error_type,
                 **dict((k, v) for k, v in result.items() if k != "changed"))
    run.exit(**result)


if __name__ == "__main__":
    main()
