# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Quantiles of the kubelet's DRA histogram and DCGM presence, through Prometheus' HTTP API (pure logic).

No Ansible imports and no I/O of its own: the HTTP call is a ``fetch(url, headers, timeout)``
callable the caller supplies (the module uses ansible's ``open_url``), so retries, deadlines and the
parsing of the answers are unit-testable with recorded answers of a real Prometheus.

* :func:`quantile_query` builds ``histogram_quantile(q, sum by (le) (rate(
  dra_operations_duration_seconds_bucket{operation_name="...",...}[<range>])))`` - ``rate()`` per
  bucket series before the aggregation, the aggregation keeps ``le``;
* :func:`parse_instant` reads the ``/api/v1/query`` answer: one sample gives the value; no series, a
  ``NaN`` (no observations: every bucket's rate is 0) or ``+Inf`` (the quantile is above the highest
  finite bucket) give ``None`` with the reason - absent is never 0;
* :func:`dcgm_presence` lists, per expected GPU UUID, the DCGM metrics present and missing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import re
import time
from urllib.parse import urlencode


HISTOGRAM = "dra_operations_duration_seconds"
OPERATIONS = ("PrepareResources", "UnprepareResources")
DEFAULT_QUANTILES = (0.5, 0.95, 0.99)
# dcgm-exporter's default-counters.csv names (DCGM field ids as Prometheus metric names)
DEFAULT_DCGM_METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE")
DCGM_UUID_LABEL = "UUID"
RESERVED_LABELS = ("le", "__name__", "operation_name")

LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
DURATION = re.compile(r"^(?:[0-9]+(?:ms|s|m|h|d|w|y))+$")
DURATION_PART = re.compile(r"([0-9]+)(ms|s|m|h|d|w|y)")
UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
UUID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
RETRY_STATUS = (429, 500, 502, 503, 504)


class PrometheusError(Exception):
    """A query that cannot give an answer: a refused request (4xx), an error answer, or the deadline."""

    def __init__(self, msg, status=None, error_type=None):
        super(PrometheusError, self).__init__(msg)
        self.status = status
        self.error_type = error_type
        self.forbidden = status in (401, 403)


# -- input ----------------------------------------------------------------------------------------

def check_quantiles(values):
    """Floats in [0, 1], in the given order, no duplicates; raises ValueError naming the field."""
    if not values:
        raise ValueError("quantiles: expected a non-empty list of numbers between 0 and 1, e.g. [0.5, 0.95, 0.99]")
    result = []
    for value in values:
        try:
            number = float(value)
        except (TypeError, ValueError) as exc:
            raise ValueError("quantiles: %r is not a number (expected numbers between 0 and 1)" % (value,)) from exc
        if isinstance(value, bool) or math.isnan(number) or not 0 <= number <= 1:
            raise ValueError("quantiles: %r is outside [0, 1] (expected numbers between 0 and 1)" % (value,))
        if number in result:
            raise ValueError("quantiles: %r is given twice" % (value,))
        result.append(number)
    return result


def duration_seconds(text):
    """A PromQL duration (``5m``, ``1h30m``, ``90s``, ``250ms``) in seconds; ValueError otherwise."""
    if not isinstance(text, str) or not DURATION.match(text):
        raise ValueError("interval: %r is not a PromQL duration (expected e.g. 5m, 1h30m, 90s, 250ms)" % (text,))
    seconds = sum(int(count) * UNIT_SECONDS[unit] for count, unit in DURATION_PART.findall(text))
    if seconds <= 0:
        raise ValueError("interval: %r is zero (expected a positive PromQL duration)" % (text,))
    return seconds


def range_of(seconds):
    """The PromQL range for ``seconds`` (rounded up to the millisecond): ``300s`` or ``300250ms``."""
    millis = int(math.ceil(round(seconds * 1000, 6)))
    if millis <= 0:
        raise ValueError("end must be after start (the range end - start is %.3f s)" % seconds)
    return "%ds" % (millis // 1000) if millis % 1000 == 0 else "%dms" % millis


def check_matchers(matchers):
    """``{label: value}`` with Prometheus label names; ``le``, ``__name__`` and ``operation_name`` are the
    query's own. Returns the sorted list of pairs."""
    if matchers is None:
        return []
    if not isinstance(matchers, dict):
        raise ValueError("matchers: expected a dict of label name -> value, e.g. {node: gpu-1}")
    pairs = []
    for name, value in sorted(matchers.items()):
        if not isinstance(name, str) or not LABEL_NAME.match(name):
            raise ValueError("matchers: %r is not a label name (expected [a-zA-Z_][a-zA-Z0-9_]*)" % (name,))
        if name in RESERVED_LABELS:
            raise ValueError("matchers: %s is set by the query itself (use operation for operation_name)" % name)
        if value is None or isinstance(value, (dict, list)):
            raise ValueError("matchers.%s: expected a string value" % name)
        pairs.append((name, str(value)))
    return pairs


def label_value(value):
    """A PromQL string literal in double quotes (backslash, quote and newline escaped)."""
    return '"%s"' % value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def selector(name, pairs):
    return "%s{%s}" % (name, ",".join("%s=%s" % (k, label_value(v)) for k, v in pairs))


def quantile_text(quantile):
    return repr(float(quantile))


def quantile_query(quantile, operation, range_text, pairs=()):
    """``histogram_quantile(q, sum by (le) (rate(<bucket>{operation_name=...,<matchers>}[<range>])))``."""
    if operation not in OPERATIONS:
        raise ValueError("operation: %r is not one of %s" % (operation, ", ".join(OPERATIONS)))
    series = selector(HISTOGRAM + "_bucket", [("operation_name", operation)] + list(pairs))
    return "histogram_quantile(%s, sum by (le) (rate(%s[%s])))" % (quantile_text(quantile), series, range_text)


def check_dcgm(dcgm):
    """The ``dcgm`` option: ``{gpus: [uuid, ...], metrics: [name, ...] (default DEFAULT_DCGM_METRICS),
    matchers: {label: value}}``; None when not given."""
    if dcgm is None:
        return None
    if not isinstance(dcgm, dict):
        raise ValueError("dcgm: expected a dict with gpus (a list of GPU UUIDs) and optionally metrics, matchers")
    unknown = sorted(set(dcgm) - {"gpus", "metrics", "matchers"})
    if unknown:
        raise ValueError("dcgm: unknown key(s) %s (expected gpus, metrics, matchers)" % ", ".join(map(str, unknown)))
    gpus = dcgm.get("gpus")
    if not isinstance(gpus, list) or not gpus:
        raise ValueError("dcgm.gpus: expected a non-empty list of GPU UUIDs (e.g. GPU-5f1c...)")
    for uuid in gpus:
        if not isinstance(uuid, str) or not UUID.match(uuid):
            raise ValueError("dcgm.gpus: %r is not a GPU UUID (expected letters, digits and -, e.g. GPU-5f1c...)" % (uuid,))
    metrics = dcgm.get("metrics")
    metrics = list(DEFAULT_DCGM_METRICS) if metrics is None else metrics
    if not isinstance(metrics, list) or not metrics:
        raise ValueError("dcgm.metrics: expected a non-empty list of DCGM metric names (e.g. DCGM_FI_DEV_GPU_UTIL)")
    for name in metrics:
        if not isinstance(name, str) or not METRIC_NAME.match(name):
            raise ValueError("dcgm.metrics: %r is not a metric name (e.g. DCGM_FI_DEV_GPU_UTIL)" % (name,))
    pairs = check_matchers(dcgm.get("matchers"))
    if any(name == DCGM_UUID_LABEL for name, _value in pairs):
        raise ValueError("dcgm.matchers: UUID is set by the query itself (list the GPUs in dcgm.gpus)")
    return {"gpus": list(dict.fromkeys(gpus)), "metrics": list(dict.fromkeys(metrics)), "pairs": pairs}


def dcgm_query(metric, gpus, pairs=()):
    """``count by (UUID) (<metric>{UUID=~"<uuid>|...",<matchers>})``: the expected GPUs with the metric now."""
    alternatives = "|".join(re.escape(uuid) for uuid in gpus)
    series = "%s{%s=~%s%s}" % (metric, DCGM_UUID_LABEL, label_value(alternatives),
                               "".join(",%s=%s" % (k, label_value(v)) for k, v in pairs))
    return "count by (%s) (%s)" % (DCGM_UUID_LABEL, series)


# -- HTTP -------------------------------------------------------------------------------------------

def query_url(base, expr, at):
    """``<base>/api/v1/query?query=...&time=<epoch>`` (the base may carry a path prefix)."""
    return "%s/api/v1/query?%s" % (base.rstrip("/"), urlencode([("query", expr), ("time", "%.3f" % at)]))


def call(fetch, url, timeout, headers=None, clock=time.monotonic, sleep=time.sleep):
    """GET ``url`` through ``fetch(url, headers, timeout) -> (status, body bytes)`` (an exception with
    ``status`` / no status for a connection failure) within ``timeout`` seconds overall, retrying 429,
    5xx and connection failures with exponential backoff (0.25 s doubling, at most 4 s). A 4xx other
    than 429 is final (401/403 are errors, never absent data). Returns the decoded JSON answer."""
    deadline = clock() + timeout
    delay = 0.25
    attempt = 0
    while True:
        attempt += 1
        remaining = deadline - clock()
        status, body, failure = None, b"", None
        try:
            status, body = fetch(url, headers or {}, max(0.5, remaining))
        except Exception as exc:  # pylint: disable=broad-except
            status = getattr(exc, "status", None)
            body = getattr(exc, "body", b"") or b""
            failure = str(exc)
        if status is not None and 200 <= status < 300:
            return decode(body, status)
        if status is not None and status not in RETRY_STATUS:
            answer = _maybe_json(body)
            detail = answer.get("error") if isinstance(answer, dict) and answer.get("error") else (failure or "")
            what = "forbidden" if status in (401, 403) else "refused"
            raise PrometheusError("Prometheus %s the query (HTTP %d): %s" % (what, status, detail), status,
                                  answer.get("errorType") if isinstance(answer, dict) else None)
        if clock() + delay >= deadline:
            why = "HTTP %d" % status if status is not None else (failure or "no answer")
            raise PrometheusError("Prometheus gave no answer within %s s (%d attempts, last: %s)" % (timeout, attempt, why),
                                  status)
        sleep(delay)
        delay = min(delay * 2, 4.0)


def _maybe_json(body):
    try:
        return json.loads(body.decode("utf-8") if isinstance(body, bytes) else body)
    except (ValueError, UnicodeDecodeError, AttributeError):
        return None


def decode(body, status=200):
    answer = _maybe_json(body)
    if not isinstance(answer, dict) or "status" not in answer:
        raise PrometheusError("Prometheus answered HTTP %d with no API JSON (is url the Prometheus base URL?)" % status,
                              status)
    if answer["status"] != "success":
        raise PrometheusError("Prometheus query failed (%s): %s" % (answer.get("errorType"), answer.get("error")),
                              status, answer.get("errorType"))
    return answer


# -- answers ----------------------------------------------------------------------------------------

def vector(answer):
    """The result list of an instant vector answer; PrometheusError for another result type."""
    data = answer.get("data") or {}
    if data.get("resultType") != "vector":
        raise PrometheusError("expected an instant vector, Prometheus answered %r" % (data.get("resultType"),))
    return data.get("result") or []


def parse_instant(answer):
    """``(value_seconds or None, absent_reason or None)`` of a histogram_quantile answer."""
    result = vector(answer)
    if not result:
        return None, "no series: no bucket series of the histogram match the selector in the range"
    if len(result) > 1:
        return None, "%d series answered where one was expected (the selector is ambiguous)" % len(result)
    raw = result[0].get("value", [None, None])[1]
    if raw in ("NaN", "-NaN") or raw is None:
        return None, "NaN: no observations in the range (every bucket's rate is 0)"
    if raw == "+Inf":
        return None, "+Inf: the quantile lies above the highest finite bucket bound"
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None, "unreadable sample value %r" % (raw,)
    if math.isnan(value):
        return None, "NaN: no observations in the range (every bucket's rate is 0)"
    return value, None


def present_uuids(answer):
    """The UUIDs of a ``count by (UUID)`` answer."""
    return sorted({(item.get("metric") or {}).get(DCGM_UUID_LABEL) for item in vector(answer)} - {None})


def dcgm_presence(gpus, by_metric):
    """``by_metric``: ``{metric: set of UUIDs present}``. Per GPU ``{uuid, present, missing}`` (metrics in
    the given order) and the flat list of ``{uuid, metric}`` missing."""
    report, missing = [], []
    for uuid in gpus:
        have = [m for m in by_metric if uuid in by_metric[m]]
        lack = [m for m in by_metric if uuid not in by_metric[m]]
        report.append({"uuid": uuid, "present": have, "missing": lack})
        missing += [{"uuid": uuid, "metric": m} for m in lack]
    return report, missing
