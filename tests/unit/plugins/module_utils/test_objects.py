# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""cluster/objects.py: metadata, conditions, owners, get-or-none, quantities and the one GPU-node rule."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from decimal import Decimal

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError, K8sReader


POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"app": "a"}, "annotations": {"x": "y"},
                    "ownerReferences": [{"kind": "Other", "name": "o"},
                                        {"kind": "ReplicaSet", "name": "rs", "uid": "u2", "controller": True}]},
       "status": {"conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}]}}


def test_metadata():
    assert (kube.name(POD), kube.namespace(POD), kube.uid(POD)) == ("p", "ns", "u1")
    assert kube.labels(POD) == {"app": "a"} and kube.annotations(POD) == {"x": "y"}


@pytest.mark.parametrize("obj", [None, {}, {"metadata": None}, {"metadata": "oops"}, "not an object", {"status": None},
                                 {"status": {"conditions": None}}, {"status": {"conditions": "x"}},
                                 {"metadata": {"labels": None, "ownerReferences": None}}])
def test_none_safe(obj):
    assert kube.name(obj) is None and kube.labels(obj) == {} and kube.annotations(obj) == {}
    assert kube.spec(obj) == {} and isinstance(kube.status(obj), dict)
    assert kube.condition(obj, "Ready") is None and kube.condition_true(obj, "Ready") is False
    assert kube.controller_of(obj) is None and kube.owner_chain(obj, lambda ref, child: None) == []
    assert kube.owner_name(obj, "ReplicaSet") is None


def test_conditions():
    assert kube.condition(POD, "Ready") == {"type": "Ready", "status": "False"}
    assert kube.condition_true(POD, "PodScheduled") and not kube.condition_true(POD, "Ready")
    assert kube.condition(POD, "Initialized") is None
    # an item that is not a mapping is skipped, never a crash (one of the old copies crashed here)
    assert kube.condition({"status": {"conditions": [None, "x", {"type": "Ready", "status": "True"}]}}, "Ready")


def test_owner_chain():
    rs = {"metadata": {"name": "rs", "ownerReferences": [{"kind": "Deployment", "name": "d", "controller": True}]}}
    deployment = {"metadata": {"name": "d"}}
    found = {"rs": rs, "d": deployment}
    assert kube.controller_of(POD)["name"] == "rs"
    assert [r["kind"] for r in kube.owner_chain(POD, lambda ref, child: found.get(ref["name"]))] == ["ReplicaSet", "Deployment"]
    assert [r["kind"] for r in kube.owner_chain(POD, lambda ref, child: None)] == ["ReplicaSet"]  # the owner is gone
    looped = {"metadata": {"ownerReferences": [{"kind": "X", "name": "x", "controller": True}]}}
    assert len(kube.owner_chain(looped, lambda ref, child: looped, limit=4)) == 4


def test_owner_name():
    assert kube.owner_name(POD, "ReplicaSet") == "rs" and kube.owner_name(POD, "DaemonSet") is None
    recorded = {"metadata": {"ownerReferences": [{"kind": "DaemonSet", "name": "ds"}]}}  # no controller field
    assert kube.owner_name(recorded, "DaemonSet") == "ds"
    adopted = {"metadata": {"ownerReferences": [{"kind": "DaemonSet", "name": "ds", "controller": False}, "junk"]}}
    assert kube.owner_name(adopted, "DaemonSet") is None


class Reader:
    def __init__(self, status):
        self.status = status  # 0: answers
        self.calls = []

    def get(self, path, query=None):
        self.calls.append((path, query))
        if self.status != 0:
            raise K8sApiError("GET " + path, self.status, "answer")
        return {"metadata": {"name": "x"}}

    def list(self, path, **selectors):
        self.calls.append((path, selectors))
        if self.status != 0:
            raise K8sApiError("GET " + path, self.status, "answer")
        return [{"metadata": {"name": "x"}}]


def test_get_or_none_404_only():
    assert kube.get_or_none(Reader(0), "/api/v1/nodes/x") == {"metadata": {"name": "x"}}
    assert kube.get_or_none(Reader(404), "/api/v1/nodes/x") is None
    assert kube.list_or_none(Reader(404), "/apis/nvidia.com/v1/clusterpolicies", label_selector="a=b") is None
    assert kube.list_or_none(Reader(0), "/x", field_selector="spec.nodeName=n") == [{"metadata": {"name": "x"}}]
    for status in (403, 409, 500, None):
        with pytest.raises(K8sApiError) as info:
            kube.get_or_none(Reader(status), "/api/v1/nodes/x")
        assert info.value.status == status
        with pytest.raises(K8sApiError):
            kube.list_or_none(Reader(status), "/api/v1/nodes")
    assert not kube.not_found(K8sApiError("GET /x", 403, "forbidden")) and kube.not_found(K8sApiError("GET /x", 404, "nf"))
    assert not kube.not_found(ValueError("404"))


def test_the_reader_uses_the_one_rule():
    class Fake(K8sReader):
        def __init__(self, status):  # pylint: disable=super-init-not-called
            self.status = status

        def get(self, path, query=None):
            raise K8sApiError("GET " + path, self.status, "answer")

    assert Fake(404).get_or_none("/api/v1/nodes/x") is None
    with pytest.raises(K8sApiError) as info:
        Fake(403).get_or_none("/api/v1/nodes/x")
    assert info.value.forbidden


@pytest.mark.parametrize("value, number", [
    ("8", 8), (4, 4), ("0", 0), ("2k", 2000), ("500m", Decimal("0.5")), ("1Gi", 2 ** 30), ("1Ki", 1024),
    ("1e3", 1000), ("1E3", 1000), ("1.5", Decimal("1.5")), ("2M", 2000000), ("1E", 10 ** 18), ("3n", Decimal("3E-9")),
    ("100u", Decimal("0.0001")), (" 4 ", 4), ("-1", -1), ("+2", 2), (".5", Decimal("0.5")), ("1.5Gi", 3 * 2 ** 29),
    ("2e-3", Decimal("0.002")),
])
def test_quantity_as_kubernetes(value, number):
    assert kube.quantity(value) == number


@pytest.mark.parametrize("value", ["", "abc", "1ki", "1KI", "Gi", "1 Gi", "1.2.3", "1x", "--1", None, True, [], "e3"])
def test_quantity_malformed_names_the_value(value):
    with pytest.raises(ValueError) as info:
        kube.quantity(value)
    assert repr(value) in str(info.value)


@pytest.mark.parametrize("value, number", [("8", 8), ("0", 0), (4, 4), ("2k", 2000), ("1Ki", 1024), ("1e3", 1000)])
def test_quantity_int(value, number):
    assert kube.quantity_int(value) == number and isinstance(kube.quantity_int(value), int)


@pytest.mark.parametrize("value", ["1.5", "100m", "abc", "-1", None])
def test_quantity_int_refuses(value):
    with pytest.raises(ValueError, match="quantity: %s" % repr(value).replace("[", r"\[")):
        kube.quantity_int(value)


def node(labels=None, capacity=None, allocatable=None):
    return {"metadata": {"name": "n", "labels": labels or {}},
            "status": {"capacity": capacity or {}, "allocatable": allocatable or {}}}


def test_gpu_node_rule():
    assert kube.is_gpu_node(node(labels={"nvidia.com/gpu.present": "true"}))
    assert kube.is_gpu_node(node(labels={"nvidia.com/gpu.present": "True"}))
    assert kube.is_gpu_node(node(capacity={"nvidia.com/gpu": "8"}))
    assert kube.is_gpu_node(node(allocatable={"nvidia.com/gpu": "1"}))
    assert kube.is_gpu_node(node(capacity={"nvidia.com/gpu": "1k"}))
    assert not kube.is_gpu_node(node(capacity={"nvidia.com/gpu": "0"}, allocatable={"nvidia.com/gpu": "0"}))
    assert not kube.is_gpu_node(node(labels={"nvidia.com/gpu.present": "false"}))
    assert not kube.is_gpu_node(node(capacity={"nvidia.com/gpu": "garbage"}))  # malformed: not a GPU
    assert not kube.is_gpu_node(node(capacity={"cpu": "8"}))
    assert not kube.is_gpu_node(None) and not kube.is_gpu_node({})


def test_gpu_node_rule_never_reads_lab_labels():
    # the lab's own backend label alone does not make a GPU node; its DRA nodes carry GFD's label like real ones
    assert not kube.is_gpu_node(node(labels={"kubelab.gpufleet.io/gpu-backend": "dra"}))
    assert not kube.is_gpu_node(node(labels={"kubelab.gpufleet.io/gpu-backend": "both"}))
    assert kube.is_gpu_node(node(labels={"kubelab.gpufleet.io/gpu-backend": "dra", "nvidia.com/gpu.present": "true"}))


def test_gpu_quantity():
    assert kube.gpu_quantity(node(allocatable={"nvidia.com/gpu": "4"})) == 4
    assert kube.gpu_quantity(node(), "capacity") is None
    with pytest.raises(ValueError, match="'1.5'"):
        kube.gpu_quantity(node(allocatable={"nvidia.com/gpu": "1.5"}))
