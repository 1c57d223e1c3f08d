# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/phases/passthrough.py: the VFIO passthrough decision (facts from the constructed node trees) and
the guard that keeps container and VFIO claims on one physical GPU from being in flight together."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import passthrough as pt
from kubelab import gpunodes, nodetrees


@pytest.fixture(scope="module")
def facts(tmp_path_factory):
    out = {}
    for name in ("vfio-passthrough", "ubuntu2204-containerd2-cdi", "h200-vm"):
        root = str(tmp_path_factory.mktemp(name))
        nodetrees.materialize(name, root + "/t")
        out[name] = gpunodes.gather(root + "/t")
    return out


def node(name, allocatable=None):
    return {"metadata": {"name": name}, "status": {"allocatable": dict({"cpu": "8"}, **(allocatable or {}))}}


GATE_ON = {"PassthroughSupport": True}


def test_not_requested_without_nodes_or_gate():
    decision = pt.decide(False, False, {}, ["c-1"], [], {}, {})
    assert decision["decision"] == "not_requested" and decision["policy"] == {"vm_nodes": [], "container_nodes": ["c-1"]}


def test_the_gate_alone_is_refused():
    decision = pt.decide(False, True, GATE_ON, ["c-1"], [], {}, {})
    assert decision["decision"] == "refused" and "on purpose" in decision["reasons"][0]


def test_enabled_on_the_vfio_shape_with_acceptance(facts):
    decision = pt.decide(True, True, GATE_ON, ["c-1", "v-1"], ["v-1"], {"v-1": facts["vfio-passthrough"]},
                         {"v-1": node("v-1")})
    assert decision["decision"] == "enabled", decision["reasons"]
    assert decision["policy"] == {"vm_nodes": ["v-1"], "container_nodes": ["c-1"]}
    assert decision["nodes"] == {"v-1": []} and decision["feature_gate"] == {"name": "PassthroughSupport", "enabled": True}


def test_refused_without_acceptance_or_gate(facts):
    decision = pt.decide(True, False, {}, ["v-1"], ["v-1"], {"v-1": facts["vfio-passthrough"]}, {"v-1": node("v-1")})
    assert decision["decision"] == "refused"
    text = "; ".join(decision["reasons"])
    assert "accept_alpha_passthrough" in text and "PassthroughSupport gate is not enabled" in text
    assert decision["policy"]["note"].startswith("every canary node serves VMs")


def test_refused_on_a_node_without_vfio_or_iommu_or_with_the_device_plugin(facts):
    # h200-vm: no IOMMU, the GPU on the nvidia driver; the device plugin serves it
    decision = pt.decide(True, True, GATE_ON, ["p-1"], ["p-1"], {"p-1": facts["h200-vm"]},
                         {"p-1": node("p-1", {"nvidia.com/gpu": "1"})})
    problems = decision["nodes"]["p-1"]
    assert decision["decision"] == "refused" and len(problems) == 3, problems
    assert "IOMMU is not enabled" in problems[0] and "vfio-pci" in problems[1] and "device plugin" in problems[2]


def test_conflicting_gates_and_unknown_nodes_refused(facts):
    decision = pt.decide(True, True, dict(GATE_ON, NVMLDeviceHealthCheck=True), ["c-1"], ["v-9"], {}, {})
    text = "; ".join(decision["reasons"])
    assert "conflicts with NVMLDeviceHealthCheck" in text and "v-9 is not a canary node" in text


def test_gate_values_must_be_true_on_purpose():
    assert pt.gate_enabled({"PassthroughSupport": "true"}) and not pt.gate_enabled({"PassthroughSupport": "yes"})
    assert not pt.gate_enabled(None) and not pt.gate_enabled({"PassthroughSupport": False})


def test_waves_serialize_container_and_vfio_on_one_node():
    waves = pt.plan_waves([{"name": "c", "kind": "container"}, {"name": "v", "kind": "vfio", "node": "v-1"},
                           {"name": "e", "kind": "extended", "node": "c-1"}, {"name": "v2", "kind": "vfio", "node": "v-1"}])
    # the unpinned container claim may land on v-1: it never shares a wave with a VFIO claim
    assert waves == [{"family": "container", "workloads": ["c", "e"]}, {"family": "vfio", "workloads": ["v", "v2"]}]


def test_a_container_after_a_vfio_claim_waits_for_it():
    waves = pt.plan_waves([{"name": "v", "kind": "vfio", "node": "v-1"}, {"name": "c", "kind": "container", "node": "v-1"},
                           {"name": "c2", "kind": "container", "node": "c-1"}])
    assert waves == [{"family": "vfio", "workloads": ["v"]}, {"family": "container", "workloads": ["c", "c2"]}]


def test_different_nodes_do_not_conflict():
    assert pt.plan_waves([{"name": "v", "kind": "vfio", "node": "v-1"}, {"name": "c", "kind": "container", "node": "c-1"}]) == [
        {"family": "vfio", "workloads": ["v"]}, {"family": "container", "workloads": ["c"]}]
    # nothing conflicts: refuse accepts it
    assert len(pt.plan_waves([{"name": "v", "kind": "vfio", "node": "v-1"}, {"name": "c", "kind": "container", "node": "c-1"}],
                             "refuse")) == 2


def test_refuse_names_the_conflicting_pairs():
    with pytest.raises(pt.PassthroughError, match="c \\+ v.*refused"):
        pt.plan_waves([{"name": "c", "kind": "container"}, {"name": "v", "kind": "vfio", "node": "v-1"}], "refuse")


@pytest.mark.parametrize("bad, match", [
    ([{"kind": "vfio"}], "workloads\\[0\\]"), ([{"name": "x", "kind": "vm"}], "kind: expected"), ("no", "workloads\\[0\\]")])
def test_bad_workloads(bad, match):
    with pytest.raises(pt.PassthroughError, match=match):
        pt.plan_waves(bad)
    with pytest.raises(pt.PassthroughError, match="guard"):
        pt.plan_waves([], "parallel")


def test_overlaps_finds_claims_in_flight_together():
    records = [{"name": "c", "kind": "container", "node": "v-1", "submitted_at": "2026-12-02T06:00:00.000Z",
                "released_at": "2026-12-02T06:00:05.000Z"},
               {"name": "v", "kind": "vfio", "node": "v-1", "submitted_at": "2026-12-02T06:00:04.000Z",
                "released_at": "2026-12-02T06:00:09.000Z"},
               {"name": "w", "kind": "vfio", "node": "v-1", "submitted_at": "2026-12-02T06:00:05.000Z",
                "released_at": "2026-12-02T06:00:06.000Z"},
               {"name": "x", "kind": "container", "node": "c-1", "submitted_at": "2026-12-02T06:00:04.000Z",
                "released_at": "2026-12-02T06:00:09.000Z"}]
    assert pt.overlaps(records) == [("c", "v")]
    # compared as times: a whole-second release after a fractional submission still overlaps
    mixed = [{"name": "c", "kind": "container", "node": "v-1", "submitted_at": "2026-12-02T06:00:00Z",
              "released_at": "2026-12-02T06:00:05Z"},
             {"name": "v", "kind": "vfio", "node": "v-1", "submitted_at": "2026-12-02T06:00:04.999999Z",
              "released_at": "2026-12-02T06:00:09Z"}]
    assert pt.overlaps(mixed) == [("c", "v")]
    # ... and a submission a microsecond after a whole-second release does not ("...:05.000001Z" < "...:05Z" as text)
    after = [mixed[0], dict(mixed[1], submitted_at="2026-12-02T06:00:05.000001Z")]
    assert pt.overlaps(after) == []
    assert pt.overlaps([dict(mixed[0], released_at="not a time"), mixed[1], "junk"]) == []
