# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_components: the node's read through the root prefix, the controller's parse, the inventory shape."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import shutil

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import components as kc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import NodeTree

import node_trees

FIXTURES = os.path.join(node_trees.FIXTURES, "k8s_components")
MANIFESTS = "/etc/kubernetes/manifests"


def place(root, fixture, node_path):
    dest = os.path.join(str(root), node_path.lstrip("/"))
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copy(os.path.join(FIXTURES, fixture), dest)
    return dest


def control_plane(root):
    for name in kc.CONTROL_PLANE:
        place(root, name + ".yaml", "%s/%s.yaml" % (MANIFESTS, name))
    place(root, "kubelet-config.yaml", kc.DEFAULT_KUBELET_CONFIG)
    return str(root)


def test_kubeadm_control_plane_and_kubelet(tmp_path):
    facts = kc.gather(NodeTree(control_plane(tmp_path)))
    assert facts["problems"] == []
    api = facts["components"]["kube-apiserver"]
    assert api["present"] is True and api["path"] == MANIFESTS + "/kube-apiserver.yaml"
    assert api["image"] == "registry.k8s.io/kube-apiserver:v1.37.0" and api["version"] == "1.37.0"
    # two --feature-gates flags: merged, the last one wins per gate
    assert api["feature_gates"] == {"DRADeviceTaintRules": True, "DRAConsumableCapacity": False}
    assert api["runtime_config"] == {"resource.k8s.io/v1beta2": "true"}
    with open(os.path.join(FIXTURES, "kube-apiserver.yaml"), "rb") as handle:
        assert api["sha256"] == hashlib.sha256(handle.read()).hexdigest()
    assert facts["components"]["kube-scheduler"]["feature_gates"] == {"DRADeviceTaintRules": True}
    kcm = facts["components"]["kube-controller-manager"]
    assert kcm["feature_gates"] == {} and kcm["version"] == "1.37.0" and kcm["runtime_config"] == {}
    kubelet = facts["components"]["kubelet"]
    assert kubelet["feature_gates"] == {"DRADeviceTaintRules": True}
    assert kubelet["settings"]["topologyManagerPolicy"] == "single-numa-node"
    assert kubelet["settings"]["containerRuntimeEndpoint"] == "unix:///var/run/containerd/containerd.sock"
    assert "authentication" not in kubelet["settings"]


def test_gpu_node_without_manifests_reports_them_absent(tmp_path):
    place(tmp_path, "kubelet-config.yaml", kc.DEFAULT_KUBELET_CONFIG)
    facts = kc.gather(NodeTree(str(tmp_path)))
    for name in kc.CONTROL_PLANE:
        assert facts["components"][name]["present"] is False
        assert facts["components"][name]["feature_gates"] == {}
    assert facts["components"]["kubelet"]["present"] is True


def test_node_side_sends_raw_text_and_parses_nothing(tmp_path):
    facts, raw = kc.collect(NodeTree(control_plane(tmp_path)))
    assert facts["components"]["kube-apiserver"]["feature_gates"] == {}  # parsed on the controller only
    assert raw["files"]["kube-apiserver"]["text"].startswith("apiVersion: v1")
    kc.complete(facts, raw)
    assert "apiVersion" not in repr(facts)  # no raw text kept in the facts


def test_malformed_yaml_is_a_problem_with_its_path(tmp_path):
    control_plane(tmp_path)
    place(tmp_path, "broken/kube-scheduler-bad-yaml.yaml.broken", MANIFESTS + "/kube-scheduler.yaml")
    facts = kc.gather(NodeTree(str(tmp_path)))
    scheduler = facts["components"]["kube-scheduler"]
    assert scheduler["present"] is True and scheduler["error"].startswith("not parsed")
    assert scheduler["feature_gates"] == {}
    assert [p["path"] for p in facts["problems"]] == [MANIFESTS + "/kube-scheduler.yaml"]
    assert facts["components"]["kube-apiserver"]["error"] is None  # one bad file hides nothing else


def test_wrong_kind_kubelet_config_is_a_problem(tmp_path):
    place(tmp_path, "broken/kubelet-config-wrong-kind.yaml", kc.DEFAULT_KUBELET_CONFIG)
    facts = kc.gather(NodeTree(str(tmp_path)))
    kubelet = facts["components"]["kubelet"]
    assert "ClusterConfiguration" in kubelet["error"]
    assert facts["problems"][0]["path"] == kc.DEFAULT_KUBELET_CONFIG


def test_bad_gate_items_are_problems_and_a_digest_image_has_no_version(tmp_path):
    place(tmp_path, "broken/kube-apiserver-bad-gates.yaml", MANIFESTS + "/kube-apiserver.yaml")
    facts = kc.gather(NodeTree(str(tmp_path)))
    api = facts["components"]["kube-apiserver"]
    assert api["feature_gates"] == {"DRADeviceTaintRules": True}
    reasons = [p["reason"] for p in facts["problems"]]
    assert any("'DRAExtendedResource=yes'" in r for r in reasons) and any("'=true'" in r for r in reasons)
    assert api["version"] is None and any("no version tag" in r for r in reasons)


@pytest.mark.parametrize("text", ["[1, 2", "- a\n- b\n", "kind: Pod\nspec: {}\n", "\x00\x01", "a: " + "[" * 2000])
def test_garbage_never_raises(tmp_path, text):
    path = os.path.join(str(tmp_path), MANIFESTS.lstrip("/"), "kube-apiserver.yaml")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as handle:
        handle.write(text)
    facts = kc.gather(NodeTree(str(tmp_path)))
    assert facts["components"]["kube-apiserver"]["error"]
    assert facts["problems"]


def test_oversized_file_is_a_problem(tmp_path):
    path = os.path.join(str(tmp_path), "var/lib/kubelet/config.yaml")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as handle:
        handle.write("#" * (kc.MAX_FILE_BYTES + 10))
    facts = kc.gather(NodeTree(str(tmp_path)))
    assert facts["components"]["kubelet"]["present"] is True
    assert "larger than" in facts["components"]["kubelet"]["error"]


def test_flag_forms_and_parsers():
    argv = ["kube-scheduler", "--feature-gates", "A=true", "--feature-gates=B=False,A=0", "--v=2"]
    problems = []
    assert kc.parse_feature_gates(kc.flag_values(argv, "feature-gates"), problems, "p") == {"A": False, "B": False}
    assert problems == []
    assert kc.parse_runtime_config(["api/all=true,resource.k8s.io/v1beta2"]) == {"api/all": "true", "resource.k8s.io/v1beta2": "true"}
    assert kc.version_from_image("registry.k8s.io/kube-apiserver:v1.37.0@sha256:abc") == "1.37.0"
    assert kc.version_from_image("my-registry:5000/kube-apiserver") is None
    assert kc.version_from_image("registry.k8s.io/kube-apiserver:v1.37.1-eks-1a2b") == "1.37.1-eks-1a2b"


def test_constructed_lab_trees_give_consistent_dra_gates(tmp_path):
    cp = kc.gather(NodeTree(node_trees.materialize("control-plane-1.37", tmp_path / "cp")))
    gpu = kc.gather(NodeTree(node_trees.materialize("vfio-passthrough", tmp_path / "gpu")))
    assert cp["problems"] == [] and gpu["problems"] == []
    for name in kc.CONTROL_PLANE:
        assert cp["components"][name]["feature_gates"]["DRAExtendedResource"] is True
        assert cp["components"][name]["version"] == "1.37.0"
    assert gpu["components"]["kubelet"]["feature_gates"]["DRAExtendedResource"] is True
    assert gpu["components"]["kube-apiserver"]["present"] is False


def test_inventory_shape_for_a_managed_control_plane():
    facts = kc.from_inventory({
        "kube-apiserver": {"version": "1.37.2", "feature_gates": {"DRAExtendedResource": True},
                           "runtime_config": {"resource.k8s.io/v1beta2": True}},
        "kube-scheduler": {"image": "registry.k8s.io/kube-scheduler:v1.37.2"},
    })
    assert facts["source"] == "inventory"
    api = facts["components"]["kube-apiserver"]
    assert api["present"] is True and api["version"] == "1.37.2" and api["runtime_config"] == {"resource.k8s.io/v1beta2": "true"}
    assert facts["components"]["kube-scheduler"]["version"] == "1.37.2"
    assert facts["components"]["kube-controller-manager"]["present"] is False


@pytest.mark.parametrize("data, field", [
    ([], "dra_gate_control_plane_components:"),
    ({"etcd": {}}, "dra_gate_control_plane_components.etcd:"),
    ({"kube-apiserver": {"feature_gates": {"DRAExtendedResource": "yes"}}}, ".feature_gates.DRAExtendedResource:"),
    ({"kube-apiserver": {"version": 1.37}}, ".version:"),
    ({"kube-scheduler": {"runtime_config": {"a": "b"}}}, "kube-scheduler.runtime_config:"),
    ({"kube-apiserver": {"flags": []}}, "unknown keys flags"),
])
def test_inventory_shape_errors_name_the_field(data, field):
    with pytest.raises(kc.K8sComponentsError) as err:
        kc.from_inventory(data)
    assert field in str(err.value)
