# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for what cluster_state captures: CRD selection, served versions, GPU node selection,
managedFields stripping, file naming and the capture plan."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import state as cs


def crd(plural, group, kind, versions=(("v1", True, True),), scope="Cluster"):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (plural, group), "managedFields": [{"manager": "helm"}]},
            "spec": {"group": group, "scope": scope, "names": {"plural": plural, "kind": kind},
                     "versions": [{"name": n, "served": s, "storage": st} for n, s, st in versions]}}


def node(name, labels=None, capacity=None, taints=None):
    return {"metadata": {"name": name, "uid": "u-" + name, "resourceVersion": "7", "labels": labels or {},
                         "managedFields": [{}]},
            "spec": dict({"taints": taints} if taints else {}),
            "status": {"capacity": capacity or {}, "allocatable": capacity or {}}}


def test_select_crds_by_group():
    crds = [crd("clusterpolicies", "nvidia.com", "ClusterPolicy"), crd("widgets", "example.com", "Widget"),
            crd("computedomains", "resource.nvidia.com", "ComputeDomain")]
    names = [c["metadata"]["name"] for c in cs.select_crds(crds, cs.DEFAULT_GROUPS)]
    assert names == ["clusterpolicies.nvidia.com", "computedomains.resource.nvidia.com"]


def test_served_version_prefers_the_storage_version():
    assert cs.served_version(crd("a", "g", "A", (("v1alpha1", True, False), ("v1", True, True)))) == "v1"
    assert cs.served_version(crd("a", "g", "A", (("v1alpha1", True, False), ("v1", False, True)))) == "v1alpha1"
    assert cs.served_version(crd("a", "g", "A", (("v1", False, True),))) is None
    assert cs.custom_resource_path(crd("nvidiadrivers", "nvidia.com", "NVIDIADriver", (("v1alpha1", True, True),))) \
        == "/apis/nvidia.com/v1alpha1/nvidiadrivers"


def test_gpu_nodes():
    assert kube.is_gpu_node(node("a", labels={"nvidia.com/gpu.present": "true"}))
    assert kube.is_gpu_node(node("b", capacity={"nvidia.com/gpu": "8"}))
    # the lab's DRA node is a GPU node the real way (GPU Feature Discovery's label); the lab's own label is not
    assert kube.is_gpu_node(node("c", labels={"kubelab.gpufleet.io/gpu-backend": "dra", "nvidia.com/gpu.present": "true"}))
    assert not kube.is_gpu_node(node("c", labels={"kubelab.gpufleet.io/gpu-backend": "dra"}))
    assert not kube.is_gpu_node(node("d", capacity={"nvidia.com/gpu": "0"}))
    assert not kube.is_gpu_node(node("e", labels={"nvidia.com/gpu.present": "false"}))


def test_strip_managed_fields_copies():
    original = crd("a", "g", "A")
    stripped = cs.strip_managed_fields(original)
    assert "managedFields" not in stripped["metadata"] and "managedFields" in original["metadata"]


def test_node_labels_taints_keeps_what_a_rollback_puts_back():
    taint = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
    got = cs.node_labels_taints(node("gpu-1", labels={"x": "y"}, taints=[taint]))
    assert got == {"apiVersion": "v1", "kind": "Node",
                   "metadata": {"name": "gpu-1", "uid": "u-gpu-1", "resourceVersion": "7", "labels": {"x": "y"}},
                   "spec": {"taints": [taint], "unschedulable": False}}


def test_file_names():
    assert cs.object_filename({"metadata": {"name": "cluster-policy"}}) == "cluster-policy.json"
    assert cs.object_filename({"metadata": {"name": "a", "namespace": "ns"}}) == "ns_a.json"
    assert cs.safe_name("../x") == ".._x" and cs.safe_name("..") == "_.."
    assert cs.stamp_name("20261130T080000Z", set()) == "20261130T080000Z"
    assert cs.stamp_name("S", {"S", "S-2"}) == "S-3"


def test_plan_and_render():
    policy_crd = crd("clusterpolicies", "nvidia.com", "ClusterPolicy")
    claims_crd = crd("computedomains", "resource.nvidia.com", "ComputeDomain", scope="Namespaced")
    policy = {"kind": "ClusterPolicy", "metadata": {"name": "cluster-policy", "managedFields": [{}]}, "status": {"state": "ready"}}
    domain = {"kind": "ComputeDomain", "metadata": {"name": "cd", "namespace": "team"}}
    files = cs.render(cs.plan(
        crds=[policy_crd], custom_resources=[(policy_crd, [policy]), (claims_crd, [domain])],
        device_classes=[{"metadata": {"name": "gpu.nvidia.com"}}], runtime_classes=[],
        nodes=[node("cp"), node("gpu-1", capacity={"nvidia.com/gpu": "8"})]))
    assert [(f["relpath"], f["kind"]) for f in files] == [
        ("crds/clusterpolicies.nvidia.com.json", "crd"),
        ("clusterpolicies.nvidia.com/cluster-policy.json", "custom-resource"),
        ("computedomains.resource.nvidia.com/team_cd.json", "custom-resource"),
        ("deviceclasses/gpu.nvidia.com.json", "device-class"),
        ("node-labels-taints/gpu-1.json", "node-labels-taints"),
    ]
    assert files[1]["source"] == "/apis/nvidia.com/v1/clusterpolicies/cluster-policy"
    assert files[2]["source"] == "/apis/resource.nvidia.com/v1/namespaces/team/computedomains/cd"
    for item in files:
        assert item["sha256"] == hashlib.sha256(item["text"]).hexdigest() and item["size"] == len(item["text"])
        assert "managedFields" not in json.loads(item["text"].decode("utf-8"))["metadata"]
    assert cs.counts(files) == {"crd": 1, "custom-resource": 2, "device-class": 1, "node-labels-taints": 1}
    assert cs.plan() == []
