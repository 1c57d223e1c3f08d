# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""claim_stats: exact ratios, nearest-rank quantiles, cleanup defects, NUMA, records and JSONL."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import os
import random
import stat
from decimal import Decimal

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import claim_stats as cs
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence.private_files import ArtifactExists

T0 = "2026-12-02T07:00:00Z"


def stamp(offset_us):
    """T0 + offset microseconds as RFC 3339 with microseconds (what Kubernetes writes)."""
    seconds, micros = divmod(offset_us, 1000000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return "2026-12-02T%02d:%02d:%02d.%06dZ" % (7 + hours, minutes, seconds, micros)


def good(name="c0", alloc_us=100000, ready_us=900000, **extra):
    rec = {
        "claim": name, "kind": "template", "node": "gpu-1",
        "created_at": stamp(0), "allocated_at": stamp(alloc_us), "scheduled_at": stamp(alloc_us),
        "ready_at": stamp(ready_us), "delete_requested_at": stamp(ready_us + 1000),
        "deallocated_at": stamp(ready_us + 2000), "deleted_at": stamp(ready_us + 3000),
        "devices": [{"driver": "gpu.nvidia.com", "pool": "gpu-1", "device": "gpu-0", "uuid": "GPU-0",
                     "pci_bus_id": "0000:3b:00.0", "numa_node": 0}],
    }
    rec.update(extra)
    return rec


def failed(name, error_class):
    return {"claim": name, "kind": "template", "created_at": stamp(0), "error_class": error_class,
            "error": "allocation failed", "delete_requested_at": stamp(5000), "deleted_at": stamp(6000)}


def reference_nearest_rank(samples, q):
    """Brute force: the smallest sample x such that at least q*n samples are <= x (exact integers)."""
    n = len(samples)
    q_num, q_den = {0.5: (50, 100), 0.95: (95, 100), 0.99: (99, 100)}[q]
    for x in sorted(samples):
        if sum(1 for value in samples if value <= x) * q_den >= q_num * n:
            return x
    raise AssertionError("unreachable")


# --- parse_time ----------------------------------------------------------------------------------

def test_parse_time_seconds_micro_nano_exact():
    assert cs.parse_time("1970-01-01T00:00:00Z") == 0
    assert cs.parse_time("2026-12-02T07:36:45Z") == Decimal(1796197005)
    assert cs.parse_time("2026-12-02T07:36:45.123456Z") - cs.parse_time("2026-12-02T07:36:45Z") == Decimal("0.123456")
    nano = cs.parse_time("2026-12-02T07:36:45.000000001Z") - cs.parse_time("2026-12-02T07:36:45Z")
    assert nano == Decimal("1E-9")
    assert cs.parse_time("2026-12-02T07:36:45.999999999Z") - cs.parse_time("2026-12-02T07:36:44.999999999Z") == 1


def test_parse_time_offsets_and_leap_year():
    assert cs.parse_time("2026-12-02T09:36:45+02:00") == cs.parse_time("2026-12-02T07:36:45Z")
    assert cs.parse_time("2026-12-02T02:06:45.5-05:30") == cs.parse_time("2026-12-02T07:36:45.5Z")
    assert cs.parse_time("2028-03-01T00:00:00Z") - cs.parse_time("2028-02-28T00:00:00Z") == 2 * 86400


@pytest.mark.parametrize("text, needle", [
    ("2026-12-02 07:36:45Z", "RFC 3339"),
    ("2026-12-02T07:36:45", "RFC 3339"),
    ("2026-12-02T07:36:45.1234567890Z", "more than 9 fraction digits"),
    ("2026-02-30T07:36:45Z", "not a valid time"),
    ("2026-12-02T23:59:60Z", "not a valid time"),
    ("2026-12-02T07:36:45+24:00", "UTC offset"),
    (1796197005, "got int"),
    (None, "got NoneType"),
])
def test_parse_time_errors_name_the_field(text, needle):
    with pytest.raises(cs.ClaimStatsError) as err:
        cs.parse_time(text, "records[2].ready_at")
    assert str(err.value).startswith("records[2].ready_at: ")
    assert needle in str(err.value)
    assert err.value.field == "records[2].ready_at"


# --- quantiles -----------------------------------------------------------------------------------

def test_quantiles_empty_is_null_not_zero():
    assert cs.quantiles([]) == {"method": "nearest-rank", "count": 0, "p50": None, "p95": None, "p99": None, "max": None}


def test_quantiles_hand_checked_small_cases():
    assert cs.quantiles([0.25]) == {"method": "nearest-rank", "count": 1, "p50": 0.25, "p95": 0.25, "p99": 0.25, "max": 0.25}
    two = cs.quantiles([3.0, 1.0])
    assert (two["p50"], two["p95"], two["p99"], two["max"], two["count"]) == (1.0, 3.0, 3.0, 3.0, 2)
    ties = cs.quantiles([2, 2, 2, 5])
    assert (ties["p50"], ties["p95"], ties["max"]) == (2, 5, 5)
    hundred = cs.quantiles(list(range(100, 0, -1)))
    assert (hundred["p50"], hundred["p95"], hundred["p99"], hundred["max"]) == (50, 95, 99, 100)
    twenty = cs.quantiles(list(range(1, 21)))
    assert (twenty["p50"], twenty["p95"], twenty["p99"]) == (10, 19, 20)


def test_quantile_rank_is_exact_not_float():
    # 0.07 * 100 is 7.000000000000001 in floats: ceil would give rank 8.
    assert cs.nearest_rank(100, 0.07) == 7
    assert cs.quantiles(list(range(1, 101)), qs=(0.07, 0.999))["p7"] == 7
    assert cs.quantiles(list(range(1, 1001)), qs=(0.999,))["p99.9"] == 999


def test_quantiles_match_brute_force_on_seeded_random_samples():
    rng = random.Random(12)
    for trial in range(200):
        n = rng.randint(1, 300)
        samples = [rng.randint(0, 50) for _index in range(n)] if trial % 2 else [rng.randint(0, 10 ** 6) for _index in range(n)]
        got = cs.quantiles(samples)
        for q, key in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
            assert got[key] == reference_nearest_rank(samples, q), (trial, key)
        assert got["max"] == max(samples)
        assert got["count"] == n


@pytest.mark.parametrize("samples, qs, field", [
    ([1.0, float("nan")], (0.5,), "samples[1]"),
    ([True], (0.5,), "samples[0]"),
    (["1"], (0.5,), "samples[0]"),
    ([1.0], (0,), "qs"),
    ([1.0], (1.5,), "qs"),
])
def test_quantiles_bad_input(samples, qs, field):
    with pytest.raises(cs.ClaimStatsError) as err:
        cs.quantiles(samples, qs)
    assert err.value.field == field


# --- summarize: ratios ---------------------------------------------------------------------------

def test_success_rate_9900_of_10000():
    records = [good("c%d" % i) for i in range(9900)] + [failed("f%d" % i, "AllocationFailed") for i in range(100)]
    result = cs.summarize(records)
    assert result["attempted"] == 10000
    assert result["successful"] == 9900
    assert result["success_rate"] == {"numerator": 9900, "denominator": 10000, "percent": 99.0}
    assert result["errors"] == {"AllocationFailed": 100}


def test_two_percent_failures_over_500_and_error_classes():
    records = []
    for i in range(500):
        if i % 50 == 7:
            records.append(failed("c%d" % i, "Unschedulable" if i < 250 else "AllocationTimeout"))
        else:
            records.append(good("c%d" % i))
    result = cs.summarize(records)
    assert result["success_rate"] == {"numerator": 490, "denominator": 500, "percent": 98.0}
    assert result["errors"] == {"AllocationTimeout": 5, "Unschedulable": 5}
    assert list(result["errors"]) == ["AllocationTimeout", "Unschedulable"]
    assert result["attempted"] - result["successful"] == sum(result["errors"].values())
    assert result["allocation_latency_seconds"]["count"] == 490


def test_percent_never_overstates_success_and_empty_is_null():
    records = [good("c%d" % i) for i in range(1999)] + [failed("f", "X")]
    # 99.95 exactly: stays 99.95; one in 3 fails: 66.666.. reads 66.66 (rounded down)
    assert cs.summarize(records)["success_rate"]["percent"] == 99.95
    assert cs.ratio(19999, 20000)["percent"] == 99.99
    assert cs.ratio(2, 3)["percent"] == 66.66
    assert cs.ratio(1, 3, rounding=cs.ROUND_CEILING)["percent"] == 33.34
    empty = cs.summarize([])
    assert empty["success_rate"] == {"numerator": 0, "denominator": 0, "percent": None}
    assert empty["allocation_latency_seconds"]["p95"] is None
    assert empty["cleanup_defects"]["percent"] is None


@pytest.mark.parametrize("numerator, denominator, up, down", [
    (1, 3, 33.34, 33.33), (2, 3, 66.67, 66.66), (0, 4, 0.0, 0.0), (4, 4, 100.0, 100.0), (0, 0, None, None),
])
def test_ratio_is_the_one_rounding_rule(numerator, denominator, up, down):
    """claim_stats' rates are rates.py's (docs/evidence.md "Rates"): success down, defects up, 2 places."""
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import rates
    assert cs.ratio(numerator, denominator) == rates.success_rate(numerator, denominator)
    assert cs.ratio(numerator, denominator)["percent"] == down
    assert cs.ratio(numerator, denominator, rounding=cs.ROUND_CEILING) == rates.failure_rate(numerator, denominator)
    assert cs.ratio(numerator, denominator, rounding=cs.ROUND_CEILING)["percent"] == up


def test_summarize_rounds_success_down_and_defects_up():
    records = [good("c%d" % i) for i in range(4)] + [good("leaky", leaked=True), failed("f", "X")]
    result = cs.summarize(records)
    assert result["success_rate"] == {"numerator": 5, "denominator": 6, "percent": 83.33}  # 83.333.. down
    defects = result["cleanup_defects"]
    assert (defects["numerator"], defects["denominator"], defects["percent"]) == (1, 6, 16.67)  # 16.666.. up


def test_ratio_bad_rounding_and_counts():
    with pytest.raises(cs.ClaimStatsError) as err:
        cs.ratio(1, 3, rounding="ROUND_HALF_UP")
    assert err.value.field == "rounding"
    with pytest.raises(cs.ClaimStatsError) as err:
        cs.ratio(4, 3)
    assert err.value.field == "ratio" and "4 is more than the denominator 3" in str(err.value)


def test_incomplete_record_without_class_counts_as_error():
    rec = good("c1")
    rec["ready_at"] = None
    result = cs.summarize([good("c0"), rec])
    assert result["successful"] == 1
    assert result["errors"] == {"incomplete": 1}


# --- summarize: latencies ------------------------------------------------------------------------

def test_latencies_are_exact_differences_over_successful_claims():
    records = [good("c%d" % i, alloc_us=1000 * (i + 1), ready_us=1000 * (i + 1) + 500000) for i in range(100)]
    records.append(failed("f", "AllocationFailed"))
    result = cs.summarize(records)
    alloc = result["allocation_latency_seconds"]
    assert alloc == {"method": "nearest-rank", "count": 100, "p50": 0.05, "p95": 0.095, "p99": 0.099, "max": 0.1}
    start = result["start_latency_seconds"]
    assert (start["p50"], start["p95"], start["max"]) == (0.55, 0.595, 0.6)


def test_nanosecond_latency_survives():
    rec = good("c0")
    rec.update({"created_at": "2026-12-02T07:00:00.000000001Z", "allocated_at": "2026-12-02T07:00:00.000000003Z",
                "scheduled_at": None, "ready_at": "2026-12-02T07:00:01.000000001Z"})
    result = cs.summarize([rec])
    assert result["allocation_latency_seconds"]["p50"] == 2e-9
    assert result["start_latency_seconds"]["max"] == 1.0


# --- cleanup defects -----------------------------------------------------------------------------

def test_cleanup_defects_name_the_claims():
    left = good("c1", deleted_at=None)
    leak = good("c2", leaked=True)
    never_deleted = good("c3", delete_requested_at=None, deallocated_at=None, deleted_at=None)
    result = cs.summarize([good("c0"), left, leak, never_deleted, good("c4")])
    defects = result["cleanup_defects"]
    assert (defects["numerator"], defects["denominator"]) == (2, 4)
    assert defects["claims"] == ["c1", "c2"]
    assert defects["percent"] == 50.0
    assert defects["details"] == [{"claim": "c1", "namespace": None, "reasons": ["not deleted"]},
                                  {"claim": "c2", "namespace": None, "reasons": ["leaked"]}]
    clean = cs.summarize([good("c0")])["cleanup_defects"]
    assert (clean["numerator"], clean["denominator"], clean["claims"], clean["percent"]) == (0, 1, [], 0.0)


def test_cleanup_defect_percent_rounds_up():
    records = [good("c%d" % i) for i in range(2999)] + [good("leak", leaked=True)]
    defects = cs.summarize(records)["cleanup_defects"]
    assert (defects["numerator"], defects["denominator"], defects["percent"]) == (1, 3000, 0.04)


# --- NUMA ----------------------------------------------------------------------------------------

def dev(name, numa, request=None):
    out = {"driver": "gpu.nvidia.com", "pool": "gpu-1", "device": name, "uuid": "GPU-" + name,
           "pci_bus_id": "0000:3b:00.0", "numa_node": numa}
    if request is not None:
        out["request"] = request
    return out


def test_numa_violations_split_and_unknown():
    same = good("ok", numa_constraint=True, devices=[dev("gpu-0", 1), dev("gpu-1", 1)])
    split = good("split", numa_constraint=True, devices=[dev("gpu-0", 0), dev("gpu-4", 1)])
    unknown = good("unk", numa_constraint=True, devices=[dev("gpu-0", 0), dev("gpu-1", -1)])
    missing = good("none", numa_constraint=True, devices=[dev("gpu-2", None)])
    per_request = good("req", numa_constraint=True, devices=[dev("gpu-0", 0, "a"), dev("gpu-4", 1, "b")])
    unconstrained = good("free", devices=[dev("gpu-0", 0), dev("gpu-4", 1)])
    not_placed = failed("unplaced", "AllocationFailed")
    not_placed["numa_constraint"] = True
    numa = cs.summarize([same, split, unknown, missing, per_request, unconstrained, not_placed])["numa"]
    assert numa["checked"] == 5
    assert numa["violations"] == 3
    assert numa["not_checked"] == ["unplaced"]
    assert numa["details"] == [
        {"claim": "split", "namespace": None, "request": None, "reason": "split",
         "devices": ["gpu.nvidia.com/gpu-1/gpu-0", "gpu.nvidia.com/gpu-1/gpu-4"], "numa_nodes": [0, 1]},
        {"claim": "unk", "namespace": None, "request": None, "reason": "unknown",
         "devices": ["gpu.nvidia.com/gpu-1/gpu-0", "gpu.nvidia.com/gpu-1/gpu-1"], "numa_nodes": [0, "unknown"]},
        {"claim": "none", "namespace": None, "request": None, "reason": "unknown",
         "devices": ["gpu.nvidia.com/gpu-1/gpu-2"], "numa_nodes": ["unknown"]},
    ]


# --- records: validation -------------------------------------------------------------------------

def test_record_builder_normalises():
    rec = cs.record("c0", "template", created_at=T0, devices=[dev("gpu-0", 0)])
    assert set(rec) == set(cs.RECORD_FIELDS)
    assert rec["leaked"] is False and rec["numa_constraint"] is False and rec["error_class"] is None
    assert rec["devices"][0]["request"] is None
    original = good("c0")
    copy_before = json.dumps(original, sort_keys=True)
    cs.validate_record(original)
    assert json.dumps(original, sort_keys=True) == copy_before


@pytest.mark.parametrize("change, field, needle", [
    ({"claim": None}, "records[0].claim", "required"),
    ({"kind": ""}, "records[0].kind", "non-empty string"),
    ({"allocatedAt": T0}, "records[0].allocatedAt", "unknown record field"),
    ({"allocated_at": "yesterday"}, "records[0].allocated_at", "RFC 3339"),
    ({"allocated_at": "2026-12-02T06:59:59Z"}, "records[0].allocated_at", "before created_at"),
    ({"ready_at": stamp(50000)}, "records[0].ready_at", "before allocated_at"),
    ({"deleted_at": stamp(900500)}, "records[0].deleted_at", "before delete_requested_at"),
    ({"delete_requested_at": None}, "records[0].delete_requested_at", "required when deleted_at"),
    ({"created_at": None}, "records[0].created_at", "required when allocated_at"),
    ({"devices": {"driver": "x"}}, "records[0].devices", "list of devices"),
    ({"devices": [{"driver": "d", "pool": "p"}]}, "records[0].devices[0].device", "required"),
    ({"devices": [dict(dev("g", 0), numa_node="0")]}, "records[0].devices[0].numa_node", "NUMA node"),
    ({"devices": [dict(dev("g", 0), numa_node=True)]}, "records[0].devices[0].numa_node", "NUMA node"),
    ({"devices": [dict(dev("g", 0), numa_node=-2)]}, "records[0].devices[0].numa_node", "NUMA node"),
    ({"devices": [dict(dev("g", 0), pci_bus_id="3b:00")]}, "records[0].devices[0].pci_bus_id", "PCI address"),
    ({"devices": [dict(dev("g", 0), numa=0)]}, "records[0].devices[0].numa", "unknown device field"),
    ({"leaked": "yes"}, "records[0].leaked", "true or false"),
    ({"numa_constraint": 1}, "records[0].numa_constraint", "true or false"),
    ({"error": "boom"}, "records[0].error", "needs an error_class"),
])
def test_bad_records_name_the_field(change, field, needle):
    rec = good("c0")
    rec.update(change)
    with pytest.raises(cs.ClaimStatsError) as err:
        cs.summarize([rec])
    assert err.value.field == field, str(err.value)
    assert needle in str(err.value)


def test_leak_needs_a_delete_request_and_records_must_be_a_list():
    with pytest.raises(cs.ClaimStatsError) as err:
        cs.validate_record(good("c0", leaked=True, delete_requested_at=None, deallocated_at=None, deleted_at=None))
    assert err.value.field == "record.delete_requested_at"
    with pytest.raises(cs.ClaimStatsError) as err:
        cs.summarize({"claim": "c0"})
    assert err.value.field == "records"
    with pytest.raises(cs.ClaimStatsError) as err:
        cs.summarize(["c0"])
    assert err.value.field == "records[0]"


# --- JSONL ---------------------------------------------------------------------------------------

def test_jsonl_roundtrip_mode_0600_and_never_replaced(tmp_path):
    path = str(tmp_path / "claims.jsonl")
    records = [good("c0"), failed("f1", "AllocationFailed"),
               good("c2", created_at="2026-12-02T07:00:00Z", allocated_at="2026-12-02T07:00:00.000000007Z")]
    assert cs.write_jsonl(path, records) == 3
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as handle:
        lines = handle.read().splitlines()
    assert len(lines) == 3 and json.loads(lines[2])["allocated_at"] == "2026-12-02T07:00:00.000000007Z"
    back = cs.read_jsonl(path)
    assert back == [cs.validate_record(rec) for rec in records]
    assert cs.summarize(back) == cs.summarize(records)
    with pytest.raises(ArtifactExists):
        cs.write_jsonl(path, records)
    assert cs.write_jsonl(path, records[:1], replace=True) == 1
    assert len(cs.read_jsonl(path)) == 1
    assert [name for name in os.listdir(str(tmp_path)) if name.endswith(".part")] == []


def test_jsonl_bad_input_writes_nothing_and_bad_lines_are_named(tmp_path):
    path = str(tmp_path / "claims.jsonl")
    with pytest.raises(cs.ClaimStatsError) as err:
        cs.write_jsonl(path, [good("c0"), {"claim": "c1"}])
    assert err.value.field == "records[1].kind"
    assert not os.path.exists(path)
    with open(path, "w") as handle:
        handle.write(json.dumps(good("c0")) + "\n\n{not json\n")
    with pytest.raises(cs.ClaimStatsError) as err:
        cs.read_jsonl(path)
    assert err.value.field == path + ":3"
    with pytest.raises(cs.ClaimStatsError) as err:
        cs.read_jsonl(str(tmp_path / "missing.jsonl"))
    assert "cannot read" in str(err.value)


# --- progress ------------------------------------------------------------------------------------

def test_progress_line():
    assert cs.progress(120, 500, 2) == "claims 120/500 done, 2 failed"
    assert cs.progress(0, 0, 0) == "claims 0/0 done, 0 failed"
    for args, field in (((501, 500, 0), "done"), ((10, 500, 11), "failures"), ((-1, 5, 0), "done"), ((1.0, 5, 0), "done")):
        with pytest.raises(cs.ClaimStatsError) as err:
            cs.progress(*args)
        assert err.value.field == field


def test_reference_helper_is_sane():
    assert reference_nearest_rank([1, 2, 3, 4], 0.5) == 2
    assert math.isclose(cs.quantiles([0.1, 0.2])["p50"], 0.1)
