# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/module_utils/wrappers/prometheus_query.py: PromQL text, input checks, retries and the parsing of
answers recorded from the real Prometheus 2.42 (tests/fixtures/prometheus/, recorded by
tests/integration/test_dra_metrics_prometheus.py with DRA_GATE_RECORD_PROMETHEUS=1)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import prometheus_query as pq

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "prometheus")


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return json.load(handle)


def body(name):
    return json.dumps(fixture(name)["answer"]).encode()


# -- the query text -------------------------------------------------------------------------------

def test_quantile_query_rates_before_aggregating_and_keeps_le():
    text = pq.quantile_query(0.95, "PrepareResources", "5m", pq.check_matchers({"node": "canary-1", "is_error": "false"}))
    assert text == ('histogram_quantile(0.95, sum by (le) (rate(dra_operations_duration_seconds_bucket'
                    '{operation_name="PrepareResources",is_error="false",node="canary-1"}[5m])))')
    assert pq.quantile_query(0.5, "UnprepareResources", "90s") == (
        'histogram_quantile(0.5, sum by (le) (rate(dra_operations_duration_seconds_bucket'
        '{operation_name="UnprepareResources"}[90s])))')


def test_recorded_queries_are_the_ones_built():
    """The texts Prometheus answered in the recording are exactly what the builder makes."""
    recorded = fixture("quantile_p95.json")["query"]
    window = recorded.rsplit("[", 1)[1].split("]")[0]
    assert pq.quantile_query(0.95, "PrepareResources", window) == recorded
    assert pq.quantile_query(0.95, "PrepareResources", window, [("node", "no-such-node")]) == \
        fixture("quantile_no_series.json")["query"]
    assert pq.quantile_query(0.95, "UnprepareResources", window) == fixture("quantile_nan.json")["query"]


def test_label_values_are_escaped():
    text = pq.quantile_query(0.99, "PrepareResources", "1m", pq.check_matchers({"pod": 'a"b\\c\nd'}))
    assert 'pod="a\\"b\\\\c\\nd"' in text


@pytest.mark.parametrize("matchers, message", [
    ({"le": "0.1"}, "le is set by the query itself"),
    ({"operation_name": "x"}, "operation_name is set by the query itself"),
    ({"bad-name": "x"}, "'bad-name' is not a label name"),
    ({"node": ["a"]}, "matchers.node: expected a string value"),
    ("node=x", "expected a dict"),
])
def test_bad_matchers(matchers, message):
    with pytest.raises(ValueError, match=message.replace("(", "\\(")):
        pq.check_matchers(matchers)


def test_quantiles_checked():
    assert pq.check_quantiles([0.5, "0.95", 1]) == [0.5, 0.95, 1.0]
    for bad, message in (([], "non-empty"), ([1.5], "outside"), (["x"], "not a number"), ([0.5, 0.5], "twice"),
                         ([True], "outside")):
        with pytest.raises(ValueError, match=message):
            pq.check_quantiles(bad)


def test_durations_and_ranges():
    assert pq.duration_seconds("5m") == 300
    assert pq.duration_seconds("1h30m") == 5400
    assert pq.duration_seconds("250ms") == 0.25
    for bad in ("5 minutes", "5", "", "m5", "0s", None):
        with pytest.raises(ValueError, match="interval"):
            pq.duration_seconds(bad)
    assert pq.range_of(300) == "300s"
    assert pq.range_of(4.1096) == "4110ms"   # rounded up to the millisecond
    assert pq.range_of(4.11) == "4110ms"
    with pytest.raises(ValueError, match="end must be after start"):
        pq.range_of(0)


def test_dcgm_option_and_query():
    checked = pq.check_dcgm({"gpus": ["GPU-1", "GPU-2", "GPU-1"]})
    assert checked["gpus"] == ["GPU-1", "GPU-2"] and checked["metrics"] == list(pq.DEFAULT_DCGM_METRICS)
    assert pq.dcgm_query("DCGM_FI_DEV_GPU_TEMP", ["GPU-1", "MIG-2"], [("job", "dcgm")]) == \
        'count by (UUID) (DCGM_FI_DEV_GPU_TEMP{UUID=~"GPU\\\\-1|MIG\\\\-2",job="dcgm"})'
    assert pq.check_dcgm(None) is None
    for bad, message in (({"gpus": []}, "dcgm.gpus"), ({"gpus": ["GPU 1"]}, "not a GPU UUID"),
                         ({"gpus": ["GPU-1"], "metrics": ["a-b"]}, "not a metric name"),
                         ({"gpus": ["GPU-1"], "matchers": {"UUID": "x"}}, "UUID is set by the query"),
                         ({"gpus": ["GPU-1"], "extra": 1}, "unknown key")):
        with pytest.raises(ValueError, match=message):
            pq.check_dcgm(bad)


def test_dcgm_query_selects_the_recorded_gpus():
    """The recorded answer (one GPU's DCGM_FI_DEV_GPU_TEMP left out by the lab) parsed into presence."""
    record = fixture("dcgm_gpu_temp.json")
    uuids = record["query"].split('UUID=~"')[1].split('"')[0].split("|")
    assert len(uuids) == 9
    present = set(pq.present_uuids(record["answer"]))
    assert len(present) == 8 and present < set(uuids)
    by_metric = {"DCGM_FI_DEV_GPU_UTIL": set(uuids), "DCGM_FI_DEV_GPU_TEMP": present}
    report, missing = pq.dcgm_presence(uuids + ["GPU-unknown"], by_metric)
    absent = (set(uuids) - present).pop()
    assert missing == [{"uuid": absent, "metric": "DCGM_FI_DEV_GPU_TEMP"},
                       {"uuid": "GPU-unknown", "metric": "DCGM_FI_DEV_GPU_UTIL"},
                       {"uuid": "GPU-unknown", "metric": "DCGM_FI_DEV_GPU_TEMP"}]
    entry = [r for r in report if r["uuid"] == absent][0]
    assert entry == {"uuid": absent, "present": ["DCGM_FI_DEV_GPU_UTIL"], "missing": ["DCGM_FI_DEV_GPU_TEMP"]}


# -- answers --------------------------------------------------------------------------------------

def test_recorded_quantile_value():
    assert pq.parse_instant(pq.decode(body("quantile_p95.json"))) == (0.375, None)


def test_recorded_no_series_is_null_not_zero():
    value, reason = pq.parse_instant(pq.decode(body("quantile_no_series.json")))
    assert value is None and reason.startswith("no series")


def test_recorded_nan_is_null_not_zero():
    value, reason = pq.parse_instant(pq.decode(body("quantile_nan.json")))
    assert value is None and reason.startswith("NaN")


def test_recorded_top_bucket_is_the_highest_finite_bound():
    """Prometheus answers the highest finite bound (0.025 here) when the quantile is in the +Inf bucket."""
    assert pq.parse_instant(pq.decode(body("quantile_top_bucket.json"))) == (0.025, None)


def test_inf_and_ambiguous_answers():
    inf = {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1, "+Inf"]}]}}
    assert pq.parse_instant(inf)[0] is None and pq.parse_instant(inf)[1].startswith("+Inf")
    series = [{"metric": {"a": "1"}, "value": [1, "1"]}, {"metric": {"a": "2"}, "value": [1, "2"]}]
    two = {"status": "success", "data": {"resultType": "vector", "result": series}}
    assert pq.parse_instant(two) == (None, "2 series answered where one was expected (the selector is ambiguous)")


def test_recorded_matrix_is_refused():
    with pytest.raises(pq.PrometheusError, match="expected an instant vector"):
        pq.parse_instant(pq.decode(body("matrix.json")))


def test_recorded_bad_data_fails_with_prometheus_message():
    record = fixture("bad_data.json")
    with pytest.raises(pq.PrometheusError) as info:
        pq.call(lambda url, headers, timeout: (record["http_status"], body("bad_data.json")), "http://p/q", 5)
    assert info.value.status == 400 and info.value.error_type == "bad_data"
    assert "missing unit character in duration" in str(info.value)


# -- retries and deadlines ------------------------------------------------------------------------

class Clock:
    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def scripted(*answers):
    calls = []

    def fetch(url, headers, timeout):
        calls.append((url, dict(headers), timeout))
        answer = answers[min(len(calls), len(answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer
    return fetch, calls


def test_retries_429_5xx_and_connection_failures_with_backoff():
    clock = Clock()
    fetch, calls = scripted((429, b""), (503, b"{}"), OSError("connection refused"), (200, body("quantile_p95.json")))
    answer = pq.call(fetch, "http://p/api", 30, {"Authorization": "Bearer t"}, clock=clock, sleep=clock.sleep)
    assert pq.parse_instant(answer) == (0.375, None)
    assert len(calls) == 4 and clock.sleeps == [0.25, 0.5, 1.0]
    assert calls[0][1] == {"Authorization": "Bearer t"}


def test_deadline_bounds_the_retries():
    clock = Clock()
    fetch, calls = scripted((503, b""))
    with pytest.raises(pq.PrometheusError, match="no answer within 3 s .* last: HTTP 503"):
        pq.call(fetch, "http://p/api", 3, clock=clock, sleep=clock.sleep)
    assert clock.now <= 3 and len(calls) >= 3


@pytest.mark.parametrize("status", [401, 403])
def test_forbidden_is_an_error_never_absent(status):
    clock = Clock()
    fetch, calls = scripted((status, b"forbidden"))
    with pytest.raises(pq.PrometheusError, match="forbidden the query \\(HTTP %d\\)" % status) as info:
        pq.call(fetch, "http://p/api", 30, clock=clock, sleep=clock.sleep)
    assert info.value.forbidden and len(calls) == 1


def test_non_api_answer():
    with pytest.raises(pq.PrometheusError, match="no API JSON"):
        pq.call(lambda url, headers, timeout: (200, b"<html>grafana</html>"), "http://p/api", 5)


def test_query_url_keeps_a_path_prefix():
    url = pq.query_url("https://host/prometheus/", 'up{job="x"}', 1796197200.5)
    assert url == "https://host/prometheus/api/v1/query?query=up%7Bjob%3D%22x%22%7D&time=1796197200.500"
