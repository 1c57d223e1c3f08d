# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gate: the one verdict and gate rule, and the coverage findings (hosts asked for vs answered)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import verdict as gate
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.verdict import (
    FAIL_ON,
    VERDICTS,
    GateError,
    counts_of,
    coverage_findings,
    decide,
    not_assessed_of,
    verdict_of,
)


def f(fid, severity, subject="cluster", message=None):
    return gate.finding(fid, severity, subject, None, None, message or "%s on %s" % (fid, subject), "test")


def test_constants():
    assert FAIL_ON == ("block", "warn", "never")
    assert VERDICTS == ("pass", "warn", "block")
    assert issubclass(GateError, ValueError)


@pytest.mark.parametrize("severities, verdict", [
    ([], "pass"), (["info"], "pass"), (["info", "info"], "pass"), (["warn"], "warn"), (["info", "warn"], "warn"),
    (["warn", "block", "info"], "block"), (["block"], "block"),
])
def test_verdict_of(severities, verdict):
    assert verdict_of([f("x.%d" % i, s) for i, s in enumerate(severities)]) == verdict


def test_unassessed_findings_count_with_their_severity():
    assert verdict_of([f("driver.not_assessed", "block")]) == "block"
    assert verdict_of([f("operator.cr_state.not_assessed", "warn")]) == "warn"
    assert verdict_of([f("distribution.not_assessed", "info")]) == "pass"
    findings = [f("driver.not_assessed", "block"), f("a", "block"), f("cr.not_assessed", "warn"),
                f("d.not_assessed", "info"), f("e", "info")]
    assert counts_of(findings) == {"block": 2, "warn": 1, "info": 1, "not_assessed": 3}
    assert not_assessed_of(findings) == [
        {"id": "driver.not_assessed", "subject": "cluster", "severity": "block", "reason": "driver.not_assessed on cluster"},
        {"id": "cr.not_assessed", "subject": "cluster", "severity": "warn", "reason": "cr.not_assessed on cluster"},
        {"id": "d.not_assessed", "subject": "cluster", "severity": "info", "reason": "d.not_assessed on cluster"}]


@pytest.mark.parametrize("bad", [[{"id": "x", "severity": "fatal"}], [{"id": "x"}], "block", {"id": "x"}])
def test_verdict_of_refuses_bad_findings(bad):
    with pytest.raises(GateError, match="findings"):
        verdict_of(bad)


@pytest.mark.parametrize("verdict, fail_on, failed", [
    ("block", "block", True), ("warn", "block", False), ("pass", "block", False),
    ("block", "warn", True), ("warn", "warn", True), ("pass", "warn", False),
    ("block", "never", False), ("warn", "never", False), ("pass", "never", False),
])
def test_decide_table(verdict, fail_on, failed):
    decision = decide(verdict, fail_on)
    assert decision["failed"] is failed
    assert (decision["verdict"], decision["fail_on"]) == (verdict, fail_on)
    assert decision["reason"].startswith("verdict %s" % verdict)
    assert set(decision) == {"verdict", "fail_on", "failed", "reason"}


def test_decide_reason_names_counts_and_first_blocking():
    findings = [f("driver.point_release", "warn", "n1", "older point release"), f("a.info", "info"),
                f("coverage.host_unreachable", "block", "gpu-7", "host gpu-7 did not answer"),
                f("kubelet.skew", "block", "n2", "too old")]
    decision = decide(verdict_of(findings), "block", findings)
    assert decision["failed"] is True
    assert "verdict block: 2 block, 1 warn, 1 info, 0 not assessed" in decision["reason"]
    assert "first blocking: coverage.host_unreachable [gpu-7]: host gpu-7 did not answer" in decision["reason"]
    warned = decide("warn", "block", findings[:2])
    assert warned["failed"] is False
    assert "first warning: driver.point_release [n1]: older point release" in warned["reason"]
    assert "passes" in warned["reason"]
    assert "first" not in decide("pass", "warn", [f("a", "info")])["reason"]


@pytest.mark.parametrize("verdict, fail_on, name", [
    ("block", "sometimes", "fail_on"), ("fatal", "block", "verdict"), (None, "block", "verdict"), ("pass", None, "fail_on"),
])
def test_decide_refuses_bad_values(verdict, fail_on, name):
    with pytest.raises(GateError) as info:
        decide(verdict, fail_on)
    assert str(info.value).startswith(name + ": expected one of")


# ---- coverage -------------------------------------------------------------------------------------

def by_id(findings):
    return sorted((x["id"], x["severity"], x["subject"]) for x in findings)


def test_every_host_answered():
    assert coverage_findings(["gpu-1", "gpu-2"], ["gpu-2", "gpu-1"]) == []
    assert coverage_findings(None, ["gpu-1"]) == []


def test_unreachable_and_failed_hosts_block_naming_them():
    findings = coverage_findings(["gpu-1", "gpu-2", "gpu-3"], ["gpu-1"], failed_hosts={"gpu-3": "gpu_node_facts timed out"})
    assert by_id(findings) == [("coverage.host_failed", "block", "gpu-3"), ("coverage.host_unreachable", "block", "gpu-2")]
    unreachable = [x for x in findings if x["subject"] == "gpu-2"][0]
    assert "gpu-2" in unreachable["message"] and "did not answer" in unreachable["message"]
    failed = [x for x in findings if x["subject"] == "gpu-3"][0]
    assert "gpu_node_facts timed out" in failed["message"] and failed["observed"] == "failed: gpu_node_facts timed out"
    assert set(failed) == set(gate.FINDING_KEYS) and failed["source"]
    assert verdict_of(findings) == "block"


def test_unreachable_reason_from_the_phase_role():
    findings = coverage_findings(["gpu-1", "gpu-2"], ["gpu-1"],
                                 failed_hosts={"gpu-2": "unreachable: Failed to connect to the host via ssh"})
    assert by_id(findings) == [("coverage.host_unreachable", "block", "gpu-2")]
    assert "is unreachable: Failed to connect" in findings[0]["message"]
    assert findings[0]["observed"] == "unreachable: Failed to connect to the host via ssh"


def test_failed_hosts_as_a_list_and_outside_expected():
    findings = coverage_findings(["a"], ["a"], failed_hosts=["b"])
    assert by_id(findings) == [("coverage.host_failed", "block", "b")]
    assert findings[0]["observed"] == "failed"


def test_gpu_node_missing_from_inventory_warns():
    findings = coverage_findings(["gpu-1"], ["gpu-1"], cluster_gpu_nodes=["gpu-1", "gpu-2"])
    assert by_id(findings) == [("coverage.node_not_in_inventory", "warn", "gpu-2")]
    assert "gpu-2" in findings[0]["message"]


def test_inventory_mapping_names_and_short_names():
    nodes = ["ip-10-0-0-7.ec2.internal", "gpu-07.example.internal", "canary-1"]
    findings = coverage_findings(["worker-a", "gpu-07"], ["worker-a", "gpu-07"], cluster_gpu_nodes=nodes,
                                 host_node_names={"worker-a": "ip-10-0-0-7.ec2.internal"},
                                 inventory_hosts=["worker-a", "gpu-07", "canary-1"])
    assert findings == []
    # A limited play (-l production) still knows the canary host from the inventory.
    assert coverage_findings(["gpu-07"], ["gpu-07"], cluster_gpu_nodes=["gpu-07", "canary-1"],
                             inventory_hosts=["gpu-07", "canary-1"]) == []


@pytest.mark.parametrize("kwargs, name", [
    (dict(expected_hosts="gpu-1", answered_hosts=[]), "expected_hosts"),
    (dict(expected_hosts=[1], answered_hosts=[]), "expected_hosts"),
    (dict(expected_hosts=[], answered_hosts=[], failed_hosts={1: "x"}), "failed_hosts"),
    (dict(expected_hosts=[], answered_hosts=[], host_node_names=["a"]), "host_node_names"),
    (dict(expected_hosts=[], answered_hosts=[], cluster_gpu_nodes="gpu-1"), "cluster_gpu_nodes"),
])
def test_coverage_refuses_bad_input(kwargs, name):
    with pytest.raises(GateError, match=name):
        coverage_findings(**kwargs)
