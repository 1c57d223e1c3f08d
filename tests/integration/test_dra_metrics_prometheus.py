# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.dra_gate.dra_metrics against the real Prometheus (Debian package) scraping the lab.

The lab (two-backends-one-node: gpu-1 with 8 GPUs, gpu-2 with 1) serves its kubelets' DRA histogram
and the simulated dcgm-exporter at ``/kubelab/metrics``; Prometheus scrapes it every second. After
two scrapes inside the test interval, 100 PrepareResources observations with known durations go into
``lab.claim_timings`` (40 x 20 ms, 50 x 70 ms, 10 x 400 ms); once Prometheus has them the module runs
through ansible-playbook with start/end = the test interval. Asserted: p50/p95/p99 are the values
``histogram_quantile`` interpolates from those buckets and lie in the bucket of the exact samples'
nearest-rank quantile; matchers that select nothing give null with "no series", an operation with no
observations gives null with "NaN" (never 0); DCGM presence for every GPU of both nodes, with the one
metric the lab leaves out for one GPU and an unknown GPU reported missing. Check mode runs the same
queries; ``interval: 5m`` evaluated now gives the same p95. ``DRA_GATE_RECORD_PROMETHEUS=1`` also writes the raw API answers to tests/fixtures/prometheus/.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import os
import re
import shutil
import socket
import subprocess
import textwrap
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
import yaml

from kubelab.testing import start_lab, stop_lab, wait_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
FIXTURES = os.path.join(REPO, "tests", "fixtures", "prometheus")
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SAMPLES = [0.02] * 40 + [0.07] * 50 + [0.4] * 10
LEFT_OUT = "DCGM_FI_DEV_GPU_TEMP"
UNKNOWN_GPU = "GPU-00000000-0000-0000-0000-00000000dead"
SELECT = 'dra_operations_duration_seconds_count{node="gpu-1",operation_name="PrepareResources",is_error="false"}'

PLAYBOOK = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      vars: @VARS@
      module_defaults:
        gpufleet.dra_gate.dra_metrics:
          url: "{{ prom }}"
          start: "{{ start }}"
          end: "{{ end }}"
          timeout: 20
      tasks:
        - name: The test interval
          gpufleet.dra_gate.dra_metrics:
            dcgm:
              gpus: "{{ gpus }}"
          register: measured
        - name: Matchers that select nothing
          gpufleet.dra_gate.dra_metrics:
            quantiles: [0.95]
            matchers:
              node: no-such-node
          register: nothing
        - name: An operation with no observations (check mode runs the queries too)
          gpufleet.dra_gate.dra_metrics:
            operation: UnprepareResources
            quantiles: [0.95]
          check_mode: true
          register: nan
        - name: The last 5 minutes, evaluated now
          gpufleet.dra_gate.dra_metrics:
            start: "{{ omit }}"
            end: "{{ omit }}"
            interval: 5m
            quantiles: [0.95]
          register: recent
        - name: A bad duration
          gpufleet.dra_gate.dra_metrics:
            start: "{{ omit }}"
            end: "{{ omit }}"
            interval: 5 minutes
          register: bad
          ignore_errors: true
        - name: Keep the results
          ansible.builtin.copy:
            content: "{{ {'measured': measured, 'nothing': nothing, 'nan': nan, 'recent': recent, 'bad': bad} | to_json }}"
            dest: "{{ out }}"
            mode: "0600"
    """)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stamp(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + ".%06dZ" % int(round((epoch % 1) * 1e6) % 1000000)


def raw_query(port, expr, at=None):
    params = [("query", expr)] + ([("time", "%.3f" % at)] if at is not None else [])
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (port, urllib.parse.urlencode(params))
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:  # noqa: S310 - loopback
            return resp.getcode(), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:
        return None, b""


def values(port, expr):
    code, body = raw_query(port, expr)
    if code != 200:
        return None
    return [float(item["value"][1]) for item in json.loads(body)["data"]["result"]]


def expected_quantile(q, samples):
    """histogram_quantile's linear interpolation inside the bucket of rank q * count (lowest bucket from 0)."""
    rank = q * len(samples)
    lower, below = 0.0, 0
    for bound in BUCKETS:
        count = sum(1 for s in samples if s <= bound)
        if count >= rank:
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return math.inf


def bucket_of(value):
    lower = 0.0
    for bound in BUCKETS:
        if value <= bound:
            return lower, bound
        lower = bound
    return lower, math.inf


def nearest_rank(q, samples):
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def start_prometheus(tmp_path, lab_url):
    """The real Prometheus scraping the lab's /kubelab/metrics every second: (process, port)."""
    port = free_port()
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
              "scrape_configs": [{"job_name": "kubelab", "metrics_path": "/kubelab/metrics",
                                  "static_configs": [{"targets": [urllib.parse.urlsplit(lab_url).netloc]}]}]}
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    prom = subprocess.Popen([PROMETHEUS, "--config.file", str(tmp_path / "prometheus.yml"),  # noqa: S603
                             "--storage.tsdb.path", str(tmp_path / "tsdb"),
                             "--web.listen-address", "127.0.0.1:%d" % port],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return prom, port


def play(lab, template, extra, tmp_path, name, timeout=120):
    """ansible-playbook of ``template`` with ``extra`` as its vars; it must succeed."""
    proc = lab.run_playbook(template.replace("@VARS@", json.dumps(extra)), tmp_path, name=name, timeout=timeout,
                            ANSIBLE_COLLECTIONS_PATH=COLLECTIONS)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def stop_prometheus(prom):
    prom.terminate()
    try:
        prom.wait(timeout=20)
    except subprocess.TimeoutExpired:
        prom.kill()
        prom.wait(timeout=10)


@pytest.fixture()
def lab(tmp_path):
    started = start_lab(str(tmp_path / "lab"), "two-backends-one-node")
    yield started
    stop_lab(started)


@pytest.mark.skipif(not os.path.exists(PROMETHEUS), reason="the Debian package prometheus is not installed")
def test_dra_metrics_against_real_prometheus(lab, tmp_path):
    gpus = lab.server.metrics.dcgm_gpus()
    assert {node for node, _gpu in gpus} == {"gpu-1", "gpu-2"} and len(gpus) == 9
    uuids = [gpu["uuid"] for _node, gpu in gpus]
    thinned = uuids[0]
    lab.server.metrics.dcgm_missing.add((thinned, LEFT_OUT))

    prom, port = start_prometheus(tmp_path, lab.url)
    try:
        wait_for(lambda: values(port, 'up{job="kubelab"}') == [1.0], 30, "Prometheus scraping the lab")
        start = time.time()
        # two scrapes of the zero counters inside the interval, so rate() sees the whole increase
        wait_for(lambda: (values(port, "timestamp(%s)" % SELECT) or [0])[0] >= start + 2.2, 20, "two scrapes after start")
        base = time.monotonic()
        for i, duration in enumerate(SAMPLES):
            lab.server.claim_timings[("default", "claim-%d" % i)] = {
                "created": base + i, "allocated": base + i + 0.01, "prepared": base + i + 0.01 + duration,
                "pod_started": base + i + 0.5, "node": "gpu-1"}
        total = 'sum(dra_operations_duration_seconds_count{operation_name="PrepareResources"})'
        wait_for(lambda: values(port, total) == [float(len(SAMPLES))], 20, "Prometheus has the observations")
        end = time.time()
        if os.environ.get("DRA_GATE_RECORD_PROMETHEUS"):
            record(port, start, end, uuids)

        out = tmp_path / "results.json"
        extra = {"prom": "http://127.0.0.1:%d" % port, "start": stamp(start), "end": stamp(end),
                 "gpus": uuids + [UNKNOWN_GPU], "out": str(out)}
        play(lab, PLAYBOOK, extra, tmp_path, "dra_metrics.yml")
    finally:
        stop_prometheus(prom)
    results = json.loads(out.read_text())

    measured = results["measured"]
    assert not measured["changed"] and not measured.get("failed")
    assert measured["evaluated_at"] == stamp(end) and measured["interval"]["source"] == "start_end"
    assert abs(measured["interval"]["range_seconds"] - (end - start)) < 0.002
    assert re.match(r"^[0-9]+m?s$", measured["interval"]["range"])
    by_q = {entry["quantile"]: entry for entry in measured["quantiles"]}
    assert list(by_q) == [0.5, 0.95, 0.99]
    for q, entry in by_q.items():
        assert entry["query"] == measured["query"][repr(q)]
        assert entry["query"] == ('histogram_quantile(%r, sum by (le) (rate(dra_operations_duration_seconds_bucket'
                                  '{operation_name="PrepareResources"}[%s])))' % (q, measured["interval"]["range"]))
        assert entry["absent_reason"] is None
        # the samples' nearest-rank quantile and Prometheus' answer lie in the same bucket ...
        lower, upper = bucket_of(nearest_rank(q, SAMPLES))
        assert lower < entry["value_seconds"] <= upper, (q, entry)
        # ... and the answer is histogram_quantile's interpolation of exactly our 100 observations
        assert abs(entry["value_seconds"] - expected_quantile(q, SAMPLES)) < 1e-6, (q, entry)
    assert abs(by_q[0.95]["value_seconds"] - 0.375) < 1e-6

    dcgm = measured["dcgm"]
    assert not dcgm["all_present"]
    assert [g["uuid"] for g in dcgm["gpus"]] == uuids + [UNKNOWN_GPU]
    metrics = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"]
    for gpu in dcgm["gpus"]:
        if gpu["uuid"] == thinned:
            assert gpu["missing"] == [LEFT_OUT] and gpu["present"] == [m for m in metrics if m != LEFT_OUT]
        elif gpu["uuid"] == UNKNOWN_GPU:
            assert gpu["missing"] == metrics and gpu["present"] == []
        else:
            assert gpu["present"] == metrics and gpu["missing"] == [], gpu
    assert dcgm["missing"] == [{"uuid": thinned, "metric": LEFT_OUT}] + [{"uuid": UNKNOWN_GPU, "metric": m} for m in metrics]
    assert set(dcgm["query"]) == set(metrics)

    nothing = results["nothing"]["quantiles"]
    assert len(nothing) == 1 and nothing[0]["value_seconds"] is None
    assert nothing[0]["absent_reason"].startswith("no series")
    assert 'node="no-such-node"' in nothing[0]["query"]

    nan = results["nan"]
    assert not nan["changed"] and nan["quantiles"][0]["value_seconds"] is None
    assert nan["quantiles"][0]["absent_reason"].startswith("NaN")
    assert 'operation_name="UnprepareResources"' in nan["quantiles"][0]["query"]

    recent = results["recent"]   # the whole life of this Prometheus: the same 100 observations
    assert recent["interval"]["source"] == "interval" and recent["interval"]["range"] == "5m"
    assert recent["interval"]["range_seconds"] == 300 and recent["evaluated_at"] > measured["evaluated_at"]
    assert abs(recent["quantiles"][0]["value_seconds"] - 0.375) < 1e-6
    assert recent["quantiles"][0]["query"].endswith('{operation_name="PrepareResources"}[5m])))')

    bad = results["bad"]
    assert bad["failed"] and "interval: '5 minutes' is not a PromQL duration" in bad["msg"]


def record(port, start, end, uuids):
    """Write the raw answers of the queries the unit tests parse to tests/fixtures/prometheus/."""
    window = "%dms" % int(math.ceil((end - start) * 1000))
    series = 'dra_operations_duration_seconds_bucket{operation_name="%s"%s}[%s]'
    cases = {
        "quantile_p95.json": "histogram_quantile(0.95, sum by (le) (rate(%s)))" % (series % ("PrepareResources", "", window)),
        "quantile_no_series.json": ("histogram_quantile(0.95, sum by (le) (rate(%s)))"
                                    % (series % ("PrepareResources", ',node="no-such-node"', window))),
        "quantile_nan.json": "histogram_quantile(0.95, sum by (le) (rate(%s)))" % (series % ("UnprepareResources", "", window)),
        "quantile_top_bucket.json": ("histogram_quantile(0.999, sum by (le) (rate(%s)))"
                                     % (series % ("PrepareResources", ',le=~"0.005|0.01|0.025|\\\\+Inf"', window))),
        "bad_data.json": "histogram_quantile(0.95, sum by (le) (rate(dra_operations_duration_seconds_bucket[5 minutes])))",
        "dcgm_gpu_temp.json": 'count by (UUID) (DCGM_FI_DEV_GPU_TEMP{UUID=~"%s"})' % "|".join(uuids),
        "matrix.json": "dra_operations_duration_seconds_count[5s]",
    }
    os.makedirs(FIXTURES, exist_ok=True)
    for name, expr in cases.items():
        code, body = raw_query(port, expr, end)
        with open(os.path.join(FIXTURES, name), "w", encoding="utf-8") as handle:
            json.dump({"query": expr, "http_status": code, "answer": json.loads(body)}, handle, indent=1, sort_keys=True)
            handle.write("\n")


COMPARE_PLAYBOOK = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      vars: @VARS@
      tasks:
        - name: Claim lifecycles with an injected preparation latency
          gpufleet.dra_gate.claim_lifecycle:
            kubeconfig: "{{ kubeconfig }}"
            run_id: prom
            namespace: dra-acceptance
            count: "{{ count }}"
            concurrency: 8
            kinds: [template]
            delete_grace_seconds: 0
            evidence_dir: "{{ evidence }}"
          register: run
        - name: Keep the run
          ansible.builtin.copy:
            content: "{{ run | to_json }}"
            dest: "{{ out }}"
            mode: "0600"
    """)

QUERY_PLAYBOOK = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      vars: @VARS@
      tasks:
        - name: The kubelets' PrepareResources p95 over the run
          gpufleet.dra_gate.dra_metrics:
            url: "{{ prom }}"
            start: "{{ start }}"
            end: "{{ end }}"
            quantiles: [0.5, 0.95]
            timeout: 20
          register: measured
        - name: Keep it
          ansible.builtin.copy:
            content: "{{ measured | to_json }}"
            dest: "{{ out }}"
            mode: "0600"
    """)


@pytest.fixture()
def canary(tmp_path):
    started = start_lab(str(tmp_path / "lab"), "dra-acceptance")
    from kubernetes import client, config
    custom = client.CustomObjectsApi(config.new_client_from_config(config_file=started.kubeconfig))

    def ready():
        classes = {c["metadata"]["name"] for c in custom.list_cluster_custom_object(
            "resource.k8s.io", "v1", "deviceclasses")["items"]}
        return "gpu.nvidia.com" in classes and len(custom.list_cluster_custom_object(
            "resource.k8s.io", "v1", "resourceslices")["items"]) >= 5
    wait_for(ready, 90, "the canary's DeviceClasses and ResourceSlices")
    yield started
    stop_lab(started)


@pytest.mark.skipif(not os.path.exists(PROMETHEUS), reason="the Debian package prometheus is not installed")
def test_prometheus_p95_agrees_with_the_modules_own(canary, tmp_path):
    """The same claims measured twice: by claim_lifecycle from watch events (each pod's bound -> Ready, its start
    on the node, which the claims' preparation dominates) and by the kubelets' dra_operations_duration_seconds
    PrepareResources histogram through a real Prometheus (dra_metrics). With a lognormal preparation latency
    injected, the two p95s agree within the width of the histogram bucket Prometheus' p95 falls in. (The lab's
    kubelets observe PrepareResources from NodePrepareResources' call to its return, the injected delay included.)"""
    count = 40
    canary.server.fault_engine.add({"claim_latency": {"prepare": {"distribution": "lognormal", "median": 0.3,
                                                                  "sigma": 0.4}, "seed": 5}})
    prom, port = start_prometheus(tmp_path, canary.url)
    total = 'sum(dra_operations_duration_seconds_count{operation_name="PrepareResources"})'
    try:
        wait_for(lambda: values(port, 'up{job="kubelab"}') == [1.0], 30, "Prometheus scraping the lab")
        start = time.time()
        wait_for(lambda: (values(port, "timestamp(up)") or [0])[0] >= start + 2.2, 20, "two scrapes after start")
        evidence = tmp_path / "evidence"
        evidence.mkdir(mode=0o700)
        run_out = tmp_path / "run.json"
        extra = {"kubeconfig": canary.kubeconfig, "evidence": str(evidence), "out": str(run_out), "count": count}
        play(canary, COMPARE_PLAYBOOK, extra, tmp_path, "run.yml", timeout=300)
        wait_for(lambda: (values(port, total) or [0])[0] >= count, 30, "Prometheus has every PrepareResources")
        end = time.time()
        query_out = tmp_path / "query.json"
        extra = {"prom": "http://127.0.0.1:%d" % port, "start": stamp(start), "end": stamp(end), "out": str(query_out)}
        play(canary, QUERY_PLAYBOOK, extra, tmp_path, "query.yml")
    finally:
        stop_prometheus(prom)
    run = json.loads(run_out.read_text())
    assert run["success_rate"] == {"numerator": count, "denominator": count, "percent": 100.0}, run.get("msg")
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import claim_stats
    with open(run["records_path"]) as handle:
        records = [json.loads(line) for line in handle]
    # the pod's start on its node (bound -> Ready), which the kubelet's NodePrepareResources call dominates
    windows = [float(claim_stats.parse_time(r["ready_at"]) - claim_stats.parse_time(r["scheduled_at"])) for r in records]
    own = claim_stats.quantiles(windows, (0.5, 0.95))
    assert own["count"] == count and own["method"] == "nearest-rank"
    measured = json.loads(query_out.read_text())
    by_q = {entry["quantile"]: entry["value_seconds"] for entry in measured["quantiles"]}
    for q, name in ((0.5, "p50"), (0.95, "p95")):
        prometheus = by_q[q]
        assert prometheus is not None, measured
        lower, upper = bucket_of(prometheus)
        print("%s: Prometheus %.3f s (bucket %.3f-%.3f), claim_lifecycle %.3f s" % (name, prometheus, lower, upper, own[name]))
    # the check is p95 (p50 is printed: the module's window also holds the kubelet's first pass)
    lower, upper = bucket_of(by_q[0.95])
    assert abs(by_q[0.95] - own["p95"]) <= upper - lower, (by_q[0.95], own["p95"], (lower, upper))
