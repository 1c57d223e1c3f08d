# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/phases/dra_canary.py (ownership/isolation, CDI discovery against ResourceSlices, desired objects) with
facts gathered from the constructed node trees and slices as the lab's DRA kubelet plugin publishes them, and
the judge dra_canary_judge.dra_canary_findings."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import dra_canary as dc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import records as evidence
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import dra_canary as dra_canary_judge
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import registry
from kubelab import gpunodes, nodetrees
from kubelab.controllers import dra

LABELS = {"gpufleet.io/dra-canary": "true"}
TAINTS = ["gpufleet.io/dra-canary=true:NoSchedule"]


def node(name, labels=None, taints=None, allocatable=None, gpus=None):
    return {"metadata": {"name": name, "labels": dict(labels or {}),
                         "annotations": {gpunodes.GPUS_ANNOTATION: json.dumps(gpus or [])}},
            "spec": {"taints": list(taints or [])},
            "status": {"allocatable": dict({"cpu": "8"}, **(allocatable or {}))}}


CANARY_TAINT = {"key": "gpufleet.io/dra-canary", "value": "true", "effect": "NoSchedule"}


def test_a_cluster_policy_and_device_plugin_allocatable_block_naming_them():
    nodes = [node("c-1", LABELS, [CANARY_TAINT]), node("p-1", allocatable={"nvidia.com/gpu": "8"})]
    policies = [{"metadata": {"name": "cluster-policy"}, "status": {"state": "ready"}}]
    found = dc.ownership_findings(policies, nodes, ["c-1", "p-1"], "group", LABELS, TAINTS)
    got = {(f["id"], f["subject"]) for f in found if f["severity"] == "block"}
    assert got == {("dra_canary.cluster_policy_present", "ClusterPolicy/cluster-policy"),
                   ("dra_canary.device_plugin_allocatable", "Node/p-1"),
                   ("dra_canary.isolation_label_missing", "Node/p-1"), ("dra_canary.isolation_taint_missing", "Node/p-1")}
    assert "allocatable nvidia.com/gpu: 8" in [f for f in found if f["subject"] == "Node/p-1"][0]["observed"]


def test_isolation_group_and_cluster():
    nodes = [node("c-1", LABELS, [CANARY_TAINT]), node("x-1", dict(LABELS, **{"nvidia.com/gpu.present": "true"}))]
    assert [f["id"] for f in dc.ownership_findings([], nodes, ["c-1"], "group", LABELS, TAINTS)] == [
        "dra_canary.isolation_label_outside"]
    assert [f["id"] for f in dc.ownership_findings([], nodes, ["c-1"], "cluster")] == ["dra_canary.gpu_node_outside"]
    assert [f["id"] for f in dc.ownership_findings([], nodes, ["c-9"], "cluster")][0] == "dra_canary.node_missing"
    # the one GPU-node rule (cluster/objects.py): a Device Plugin node without GPU Feature Discovery's label counts too
    plain = [node("c-1", LABELS, [CANARY_TAINT]), node("y-1", allocatable={"nvidia.com/gpu": "8"}), node("cpu-1")]
    assert [f["subject"] for f in dc.ownership_findings([], plain, ["c-1"], "cluster")] == ["Node/y-1"]


@pytest.mark.parametrize("bad", ["no-effect", "k=v:Sometimes", "=v:NoSchedule", 3])
def test_bad_taints(bad):
    with pytest.raises(dc.CanaryError):
        dc.parse_taint(bad)
    assert dc.parse_taint("k:NoExecute") == {"key": "k", "value": "", "effect": "NoExecute"}
    with pytest.raises(dc.CanaryError, match="isolation"):
        dc.ownership_findings([], [], [], "island")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """ubuntu2204-containerd2-cdi with the kubelet plugin's CDI spec written as the lab's plugin writes it."""
    root = str(tmp_path_factory.mktemp("tree")) + "/t"
    nodetrees.materialize("ubuntu2204-containerd2-cdi", root)
    facts = gpunodes.gather(root)
    kube_node = node("c-1", gpus=gpunodes.gpu_entries(facts))
    with open(root + "/var/run/cdi/k8s.gpu.nvidia.com-device.yaml", "w") as handle:
        handle.write(dra.cdi_spec_text(kube_node))
    return root, kube_node


def slice_for(kube_node, devices=None):
    return {"metadata": {"name": "c-1-gpu.nvidia.com-abcde"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": "c-1", "devices": devices or dra.node_devices(kube_node)}}


def test_cdi_discovery_matches_the_slices(tree):
    root, kube_node = tree
    facts = gpunodes.gather(root)
    summary, found = dc.cdi_findings("c-1", facts, [slice_for(kube_node)])
    assert [f for f in found if f["severity"] == "block"] == []
    assert [g["slice_device"] for g in summary["gpus"]] == ["gpu-0", "gpu-1"] and all(g["cdi"] for g in summary["gpus"])
    assert summary["gpus"][1]["numa_node"] == 1 and summary["gpus"][0]["pci_bus_id"] == "0000:18:00.0"
    assert "/var/run/cdi/k8s.gpu.nvidia.com-device.yaml" in summary["cdi_specs"]


def test_cdi_spec_missing_and_slice_mismatches(tree, tmp_path):
    root, kube_node = tree
    facts = copy.deepcopy(gpunodes.gather(root))
    facts["cdi"]["specs"] = [s for s in facts["cdi"]["specs"] if s["kind"] != "k8s.gpu.nvidia.com/device"
                             and s["path"] != "/var/run/cdi/nvidia.yaml"]
    devices = dra.node_devices(kube_node)
    devices[1]["attributes"]["resource.kubernetes.io/numaNode"] = {"int": 0}
    devices.append(dict(devices[0], name="gpu-7", attributes=dict(devices[0]["attributes"], uuid={"string": "GPU-x"})))
    del devices[0]
    ids = sorted(f["id"] for f in dc.cdi_findings("c-1", facts, [slice_for(kube_node, devices)])[1])
    assert ids == ["dra_canary.cdi_spec_missing", "dra_canary.slice_device_mismatch", "dra_canary.slice_device_missing",
                   "dra_canary.slice_device_unknown"]


def test_cdi_off_invalid_specs_and_no_facts(tree):
    root, kube_node = tree
    facts = copy.deepcopy(gpunodes.gather(root))
    facts["containerd"]["cdi_enabled"] = False
    facts["cdi"]["specs"].append({"path": "/etc/cdi/bad.yaml", "error": "invalid YAML", "loaded_by_runtime": True})
    found = {f["id"]: f["severity"] for f in dc.cdi_findings("c-1", facts, [slice_for(kube_node)])[1]}
    assert found == {"dra_canary.cdi_disabled": "block", "dra_canary.cdi_spec_invalid": "warn"}
    assert [f["id"] for f in dc.cdi_findings("c-1", None, [])[1]] == ["dra_canary.node_facts_missing"]


def test_desired_objects():
    cluster = dc.desired_gpu_cluster({"draDriver": {"version": "v0.5.0", "featureGates": {"PassthroughSupport": True}}})
    assert cluster["metadata"]["name"] == "gpu-cluster" and cluster["apiVersion"] == "nvidia.com/v1alpha1"
    for bad in ({}, {"draDriver": "x"}, {"draDriver": {"featureGates": {"A": "on"}}}):
        with pytest.raises(dc.CanaryError):
            dc.desired_gpu_cluster(bad)
    cls = dc.desired_device_class("gpu-extended.nvidia.com")
    assert cls["spec"]["extendedResourceName"] == "nvidia.com/gpu" and "type == 'gpu'" in cls["spec"]["selectors"][0]["cel"]["expression"]
    assert dc.contains({"a": {"b": 1, "c": 2}}, {"a": {"b": 1}}) and not dc.contains({"a": [1, 2]}, {"a": [1]})


def test_plugin_pods_ready():
    pods = [{"metadata": {"name": "p", "labels": {"app": "nvidia-dra-driver-kubelet-plugin"}}, "spec": {"nodeName": "c-1"},
             "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}]
    assert dc.plugin_pods_ready(pods, ["c-1", "v-1"]) == {"v-1": "no Ready nvidia-dra-driver-kubelet-plugin pod"}


def results(**extra):
    base = {"check_mode": False, "refused": None, "failure": None, "completed": True,
            "gpu_cluster": {"ready": True, "state": "ready", "problems": []},
            "device_class": {"requested": True, "name": "gpu-extended.nvidia.com", "action": "created"}, "workloads": []}
    base.update(extra)
    return base


def test_judge_passes_a_complete_build_and_blocks_the_rest():
    assert registry.JUDGES["dra_canary"] is dra_canary_judge.dra_canary_findings and "dra_canary" in evidence.PHASES
    assert dra_canary_judge.dra_canary_findings(results()) == []
    ids = [f["id"] for f in dra_canary_judge.dra_canary_findings(results(refused="ClusterPolicy cluster-policy exists",
                                                                 completed=False))]
    assert ids == ["dra_canary.refused"]
    ids = [f["id"] for f in dra_canary_judge.dra_canary_findings(results(gpu_cluster={"ready": False, "state": "notReady"},
                                                                 device_class={"requested": True, "action": None},
                                                                 completed=False, failure="the GPUCluster failed"))]
    assert ids == ["dra_canary.gpu_cluster_not_ready", "dra_canary.device_class_missing", "dra_canary.incomplete"]
    assert [f["id"] for f in dra_canary_judge.dra_canary_findings(results(), check_mode=True)] == ["dra_canary.check_mode"]


def test_judge_rechecks_claims_in_flight_together():
    work = [{"name": "c", "kind": "container", "node": "v-1", "submitted_at": "2026-12-02T06:00:00.000Z",
             "released_at": "2026-12-02T06:00:05.000Z"},
            {"name": "v", "kind": "vfio", "node": "v-1", "submitted_at": "2026-12-02T06:00:04.000Z",
             "released_at": "2026-12-02T06:00:09.000Z"}]
    assert [f["id"] for f in dra_canary_judge.dra_canary_findings(results(workloads=work))] == ["dra_canary.claims_in_flight_together"]
    work[1]["submitted_at"] = "2026-12-02T06:00:05.000Z"
    assert dra_canary_judge.dra_canary_findings(results(workloads=work)) == []
