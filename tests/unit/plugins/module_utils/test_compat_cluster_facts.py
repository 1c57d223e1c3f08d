# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""compat.evaluate with ``cluster`` in the gpu_cluster_facts form: one table per check, plus the
merge with the simple keys, the mapping of play hosts to Kubernetes nodes and bad facts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.evaluate import CompatError, evaluate, summarize
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.cluster_facts import (
    api_served,
    is_facts_form,
    normalize_cluster,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.matrix import load_matrix

MATRIX_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir, os.pardir,
                          "data", "matrix")


def k8s_node(kubelet="1.37.0", backend="device_plugin", gpus=8):
    dra = [{"name": "gpu-%d" % i, "driver": "gpu.nvidia.com", "pool": "p"} for i in range(gpus)] \
        if backend in ("dra", "both") else []
    return {"kubelet_version": kubelet, "labels": {}, "taints": [], "unschedulable": False, "ready": True,
            "allocatable_gpu": gpus if backend in ("device_plugin", "both") else None, "gpu_backend": backend,
            "dra_devices": dra}


def cr(name, state="ready", conditions=None):
    return {"name": name, "state": state, "conditions": conditions or []}


HELM = {"name": "gpu-operator", "namespace": "gpu-operator", "revision": 3, "chart": "gpu-operator",
        "chart_version": "v26.3.1", "app_version": "v26.3.1", "status": "deployed"}

# A healthy Device Plugin cluster on Kubernetes 1.37 with GPU Operator 26.3.1, as gpu_cluster_facts returns it.
FACTS = {
    "schema_version": 1,
    "api_server": {"version": "1.37.0", "git_version": "v1.37.0", "platform": "linux/amd64", "major": "1", "minor": "37"},
    "apis": {"resource_k8s_io_v1": True, "groups": {"resource.k8s.io": ["v1", "v1beta2"]}},
    "nodes": {"cp-1": k8s_node(backend="none", gpus=0), "gpu-01": k8s_node(), "gpu-02": k8s_node()},
    "operator": {"helm_release": HELM, "workloads": [], "cluster_policies": [cr("cluster-policy")], "gpu_clusters": [],
                 "crds": [{"name": "clusterpolicies.nvidia.com", "group": "nvidia.com", "served_versions": ["v1"],
                           "stored_versions": ["v1"]}]},
    "device_classes": [{"name": "gpu.nvidia.com", "extended_resource_name": None, "selectors": []}],
    "runtime_classes": [{"name": "nvidia", "handler": "nvidia"}],
    "pdbs": [],
    "resource_claims": {"total": 0, "allocated": 0, "reserved": 0, "deleting_allocated": 0, "by_namespace": {},
                        "stuck": []},
    "problems": [],
}

GOOD_NODE = {
    "driver": {"loaded": True, "version": "595.91.07", "flavor": "open"},
    "iommu": {"enabled": True},
    "containerd": {"present": True, "version": "2.3.1", "cdi_enabled": True},
    "kubelet": {"present": True, "version": "1.37.0"},
}


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(MATRIX_DIR)


def facts(**changes):
    """A copy of FACTS with dotted-path changes: facts(**{"apis.resource_k8s_io_v1": False})."""
    out = copy.deepcopy(FACTS)
    for path, value in changes.items():
        target = out
        keys = path.split(".")
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return out


def run(matrix, cluster, nodes=None, target=None, coverage="answered"):
    """evaluate(); by default every host of ``nodes`` was expected and answered."""
    if nodes is None:
        nodes = {"gpu-01": GOOD_NODE, "gpu-02": GOOD_NODE}
    if coverage == "answered":
        coverage = {"expected_hosts": list(nodes)}
    return evaluate(nodes, cluster=cluster, target=target, matrix=matrix, coverage=coverage)


def found(result, prefix=""):
    """(id, severity, subject) of the findings whose id starts with ``prefix``."""
    return set((f["id"], f["severity"], f["subject"]) for f in result["findings"] if f["id"].startswith(prefix))


def one(result, fid, subject=None):
    matches = [f for f in result["findings"] if f["id"] == fid and (subject is None or f["subject"] == subject)]
    assert len(matches) == 1, (fid, result["findings"])
    return matches[0]


# ---- the whole picture ----------------------------------------------------------------------------

def test_healthy_facts_pass(matrix):
    result = run(matrix, FACTS)
    assert result["verdict"] == "pass", result["findings"]
    ids = set(f["id"] for f in result["findings"])
    assert ids == {"operator.lifecycle", "operator.upgrade_hops", "distribution.not_assessed"}
    assert [h["to"] for h in result["upgrade_path"]] == ["26.6.x", "26.7.0"]
    for finding in result["findings"]:
        assert set(finding) == {"id", "severity", "subject", "observed", "expected", "message", "source"}
        assert finding["message"] and finding["source"]


def test_detection_and_normalisation():
    assert is_facts_form(FACTS) and is_facts_form({"api_server": {"version": "1.37.0"}})
    assert not is_facts_form({"kubernetes_version": "1.37.0"}) and not is_facts_form(None)
    norm = normalize_cluster(FACTS)
    assert norm["form"] == "facts"
    assert norm["kubernetes_version"] == "1.37.0"
    assert norm["kubelet_versions"] == {"cp-1": "1.37.0", "gpu-01": "1.37.0", "gpu-02": "1.37.0"}
    assert (norm["cluster_policy"], norm["cluster_policy_names"]) == (True, ["cluster-policy"])
    assert (norm["gpu_cluster"], norm["gpu_cluster_names"]) == (False, [])
    assert norm["operator_version"] == "v26.3.1"
    assert normalize_cluster({"kubernetes_version": "1.37.0"})["form"] == "simple"
    assert normalize_cluster({"kubernetes_version": "1.37.0"})["state"] is None


def test_simple_keys_win_over_facts(matrix):
    merged = dict(FACTS, kubernetes_version="1.36.4", operator_version="26.6.2", distribution="upstream",
                  kubelet_versions={"gpu-01": "1.33.0"}, gpu_cluster=False)
    norm = normalize_cluster(merged)
    assert norm["kubernetes_version"] == "1.36.4" and norm["operator_version"] == "26.6.2"
    assert norm["kubelet_versions"]["gpu-01"] == "1.33.0" and norm["kubelet_versions"]["gpu-02"] == "1.37.0"
    result = run(matrix, merged)
    # The explicit API server version 1.36.4 is the current one: the facts' 1.37.0 kubelets are newer; the
    # explicit 1.33.0 of gpu-01 is three minors older, within the policy.
    assert found(result, "kubelet.") == {("kubelet.skew", "block", "cp-1"), ("kubelet.skew", "block", "gpu-02")}
    assert "distribution.not_assessed" not in set(f["id"] for f in result["findings"])
    assert result["upgrade_path"] == [{"from": "26.6.2", "to": "26.7.0", "kind": "next_major"}]


def test_api_served_helper():
    assert api_served({"resource_k8s_io_v1": True}, "resource.k8s.io/v1") is True
    assert api_served({"resource_k8s_io_v1": False}, "resource.k8s.io/v1") is False
    assert api_served({"groups": {"resource.k8s.io": ["v1beta2"]}}, "resource.k8s.io/v1") is False
    assert api_served({}, "resource.k8s.io/v1") is None
    assert api_served(None, "resource.k8s.io/v1") is None


# ---- kubelet skew per node against the API server -------------------------------------------------

@pytest.mark.parametrize("api, kubelet, expected", [
    ("1.37.0", "1.37.0", set()),
    ("1.37.0", "1.37.4", set()),                                   # a newer patch is not a newer minor
    ("1.37.0", "1.34.9", set()),                                   # exactly three minors older
    ("1.37.0", "1.33.9", {("kubelet.skew", "block", "gpu-03")}),  # four minors older
    ("1.36.4", "1.37.0", {("kubelet.skew", "block", "gpu-03")}),  # newer than the API server
    ("1.37.0", None, {("kubelet.skew.not_assessed", "block", "gpu-03")}),
])
def test_kubelet_skew_per_node(matrix, api, kubelet, expected):
    cluster = facts(**{"api_server.version": api})
    cluster["nodes"]["gpu-03"] = k8s_node(kubelet=kubelet)
    result = run(matrix, cluster, target={"kubernetes_version": api})
    assert set(x for x in found(result, "kubelet.") if x[2] == "gpu-03") == expected


def test_kubelet_skew_messages(matrix):
    cluster = facts()
    cluster["nodes"]["old"] = k8s_node(kubelet="1.33.2")
    cluster["nodes"]["new"] = k8s_node(kubelet="1.38.0")
    result = run(matrix, cluster, target={"kubernetes_version": "1.37.0"})
    old = one(result, "kubelet.skew", "old")
    assert old["observed"] == "1.33.2" and old["expected"] == ">= 1.34"
    assert old["message"] == "kubelet 1.33.2 is 4 minors older than the current API server 1.37.0 (at most 3)"
    new = one(result, "kubelet.skew", "new")
    assert new["message"] == "kubelet 1.38.0 is newer than the current API server 1.37.0 (a kubelet must not be newer)"


def test_api_server_git_version_with_suffix(matrix):
    cluster = facts(**{"api_server": {"version": None, "git_version": "v1.36.4-eks-1a2b3c"}})
    result = run(matrix, cluster, target={"kubernetes_version": "1.36.4"})
    assert ("kubelet.skew", "block", "gpu-01") in found(result, "kubelet.")   # 1.37.0 kubelet, 1.36 API server


def test_play_hosts_map_to_nodes_by_short_name(matrix):
    cluster = facts()
    cluster["nodes"]["gpu-01"]["kubelet_version"] = "1.33.0"
    nodes = {"gpu-01.example.internal": dict(GOOD_NODE), "gpu-02.example.internal": dict(GOOD_NODE)}
    result = run(matrix, cluster, nodes=nodes, target={"kubernetes_version": "1.37.0"})
    # The API server's kubelet version wins over the node's own, reported under the play's host name, once.
    assert found(result, "kubelet.") == {("kubelet.skew", "block", "gpu-01.example.internal")}


# ---- ClusterPolicy / GPUCluster -------------------------------------------------------------------

@pytest.mark.parametrize("policies, gpuclusters, expected, fragment", [
    ([cr("cluster-policy")], [cr("gpu-cluster")], {("operator.exclusive_resources", "block", "cluster")},
     "ClusterPolicy cluster-policy and GPUCluster gpu-cluster both exist"),
    ([cr("cluster-policy")], [], set(), None),
    ([], [cr("gpu-cluster")], set(), None),
    ([], [], set(), None),
    (None, [cr("gpu-cluster")], {("operator.exclusive_resources.not_assessed", "block", "cluster")},
     "cluster.cluster_policy not given"),
])
def test_exclusive_resources_named(matrix, policies, gpuclusters, expected, fragment):
    cluster = facts()
    cluster["operator"]["cluster_policies"] = policies
    cluster["operator"]["gpu_clusters"] = gpuclusters
    if policies is None:
        del cluster["operator"]["cluster_policies"]
    result = run(matrix, cluster)
    assert found(result, "operator.exclusive") == expected
    if fragment:
        assert fragment in result["findings"][[f["id"] for f in result["findings"]].index(list(expected)[0][0])]["message"]


def test_exclusive_observed_names_both(matrix):
    cluster = facts(**{"operator.gpu_clusters": [cr("gpu-cluster")]})
    finding = one(run(matrix, cluster), "operator.exclusive_resources")
    assert finding["observed"] == "ClusterPolicy cluster-policy, GPUCluster gpu-cluster"
    assert finding["expected"] == "at most one of ClusterPolicy, GPUCluster"


def test_dra_cluster_policy_named(matrix):
    result = run(matrix, facts(), target={"allocation_mode": "dra"})
    finding = one(result, "dra.managed.cluster_policy")
    assert finding["severity"] == "block" and "ClusterPolicy cluster-policy removed" in finding["message"]


# ---- one GPU backend per node ---------------------------------------------------------------------

@pytest.mark.parametrize("backend, mode, expected", [
    ("both", "device_plugin", {("backend.single_per_node", "block", "gpu-03")}),
    ("both", "dra", {("backend.single_per_node", "block", "gpu-03")}),
    ("device_plugin", "device_plugin", set()),
    ("dra", "device_plugin", set()),
    ("none", "dra", set()),
    (None, "device_plugin", {("backend.single_per_node.not_assessed", "block", "cluster")}),
])
def test_single_backend_per_node(matrix, backend, mode, expected):
    cluster = facts()
    cluster["nodes"]["gpu-03"] = dict(k8s_node(backend=backend or "none"), gpu_backend=backend)
    result = run(matrix, cluster, target={"allocation_mode": mode})
    assert found(result, "backend.single") == expected


def test_single_backend_message(matrix):
    cluster = facts()
    cluster["nodes"]["gpu-03"] = k8s_node(backend="both", gpus=4)
    finding = one(run(matrix, cluster), "backend.single_per_node")
    assert finding["observed"] == "gpu_backend both (allocatable nvidia.com/gpu 4, 4 DRA devices)"
    assert "node gpu-03 serves nvidia.com/gpu through both the Device Plugin and DRA" in finding["message"]
    assert "each node has only one backend for that name" not in finding["message"]
    assert "each node has only one backend" in finding["source"] or "Kubernetes 1.37 makes a stable bridge" in finding["source"]


DRA_FACTS_CHANGES = {"operator.cluster_policies": [], "operator.gpu_clusters": [cr("gpu-cluster")]}


@pytest.mark.parametrize("backends, expected", [
    ({"gpu-01": "device_plugin", "gpu-02": "none"}, {("backend.dra_canary_pool", "warn", "gpu-01")}),
    ({"gpu-01": "dra", "gpu-02": "none"}, set()),
    ({"gpu-01": "device_plugin", "gpu-02": "device_plugin"},
     {("backend.dra_canary_pool", "warn", "gpu-01"), ("backend.dra_canary_pool", "warn", "gpu-02")}),
])
def test_dra_play_on_device_plugin_nodes(matrix, backends, expected):
    cluster = facts(**DRA_FACTS_CHANGES)
    for name, backend in backends.items():
        cluster["nodes"][name] = k8s_node(backend=backend)
    cluster["nodes"]["prod-09"] = k8s_node(backend="device_plugin")   # not in the play: not reported
    result = run(matrix, cluster, target={"allocation_mode": "dra"})
    assert found(result, "backend.dra") == expected
    for finding in result["findings"]:
        if finding["id"] == "backend.dra_canary_pool":
            assert "separate canary pool" in finding["message"]


def test_dra_play_not_in_cluster(matrix):
    result = run(matrix, facts(**DRA_FACTS_CHANGES), nodes={"elsewhere": GOOD_NODE}, target={"allocation_mode": "dra"})
    assert found(result, "backend.dra") == {("backend.dra_canary_pool.not_assessed", "warn", "cluster")}


def test_device_plugin_play_is_not_told_about_canary(matrix):
    assert found(run(matrix, facts()), "backend.dra") == set()


# ---- the DRA API ----------------------------------------------------------------------------------

@pytest.mark.parametrize("apis, mode, expected", [
    ({"resource_k8s_io_v1": False, "groups": {}}, "dra", {("kubernetes.dra_api", "block", "cluster")}),
    ({"resource_k8s_io_v1": True, "groups": {}}, "dra", set()),
    (None, "dra", {("kubernetes.dra_api.not_assessed", "block", "cluster")}),
    ({"resource_k8s_io_v1": False, "groups": {}}, "device_plugin", set()),
])
def test_dra_api_served(matrix, apis, mode, expected):
    result = run(matrix, facts(apis=apis, **DRA_FACTS_CHANGES), target={"allocation_mode": mode})
    assert found(result, "kubernetes.dra_api") == expected


def test_dra_api_messages(matrix):
    blocked = one(run(matrix, facts(apis={"resource_k8s_io_v1": False}), target={"allocation_mode": "dra"}),
                  "kubernetes.dra_api")
    assert blocked["observed"] == "resource.k8s.io/v1 not served" and blocked["expected"] == "resource.k8s.io/v1 served"
    assert "does not serve resource.k8s.io/v1" in blocked["message"]
    simple = run(matrix, {"kubernetes_version": "1.37.0", "cluster_policy": False}, target={"allocation_mode": "dra"})
    assert "simple form" in one(simple, "kubernetes.dra_api.not_assessed")["message"]
    none = run(matrix, None, target={"allocation_mode": "dra"})
    assert "no cluster facts given" in one(none, "kubernetes.dra_api.not_assessed")["message"]


# ---- the current operator version from the Helm release ------------------------------------------

@pytest.mark.parametrize("release, explicit, path, fragment", [
    (HELM, None, ["26.6.x", "26.7.0"], "Helm release gpu-operator/gpu-operator (chart gpu-operator v26.3.1, deployed)"),
    (dict(HELM, chart_version=None, app_version="v26.6.1"), None, ["26.7.0"], "chart gpu-operator v26.6.1"),
    (HELM, "26.6.2", ["26.7.0"], None),
    (None, None, None, "the cluster facts have no GPU Operator Helm release"),
])
def test_operator_version_from_helm(matrix, release, explicit, path, fragment):
    cluster = facts(**{"operator.helm_release": release})
    if explicit:
        cluster["operator_version"] = explicit
    result = run(matrix, cluster)
    if path is None:
        assert result["upgrade_path"] is None
        assert fragment in one(result, "operator.upgrade_hops.not_assessed")["message"]
        return
    assert [h["to"] for h in result["upgrade_path"]] == path
    message = one(result, "operator.upgrade_hops")["message"]
    if fragment:
        assert fragment in message
    else:
        assert "Helm release" not in message


# ---- ClusterPolicy / GPUCluster state ---------------------------------------------------------------

NOT_READY = [{"type": "Ready", "status": "False", "reason": "PrerequisiteNotMet",
              "message": "Kubernetes 1.34.2 or later is required", "lastTransitionTime": "2026-11-30T08:00:00Z"},
             {"type": "Error", "status": "False", "reason": "Reconciled", "message": ""}]


@pytest.mark.parametrize("policy, expected, fragment", [
    (cr("cluster-policy"), set(), None),
    (cr("cluster-policy", "notReady", NOT_READY), {("operator.cr_state", "warn", "ClusterPolicy/cluster-policy")},
     "ClusterPolicy cluster-policy is notReady: Ready=False reason PrerequisiteNotMet (Kubernetes 1.34.2 or later is required)"),
    (cr("cluster-policy", "ignored"), {("operator.cr_state", "warn", "ClusterPolicy/cluster-policy")},
     "is ignored (no conditions explain it)"),
    (cr("cluster-policy", None), {("operator.cr_state", "warn", "ClusterPolicy/cluster-policy")},
     "not reconciled yet (no status.state)"),
    (cr("cluster-policy", "notReady", [{"type": "Error", "status": "True", "reason": "ReconcileFailed"}]),
     {("operator.cr_state", "warn", "ClusterPolicy/cluster-policy")}, "Error=True reason ReconcileFailed"),
])
def test_cluster_policy_state(matrix, policy, expected, fragment):
    result = run(matrix, facts(**{"operator.cluster_policies": [policy]}))
    assert found(result, "operator.cr_state") == expected
    if fragment:
        assert fragment in one(result, "operator.cr_state")["message"]


def test_gpu_cluster_state(matrix):
    gpucluster = cr("gpu-cluster", "notReady", [{"type": "Ready", "status": "False", "reason": "OperandNotReady"}])
    result = run(matrix, facts(**{"operator.cluster_policies": [], "operator.gpu_clusters": [gpucluster]}),
                 target={"allocation_mode": "dra"})
    finding = one(result, "operator.cr_state")
    assert (finding["subject"], finding["observed"], finding["expected"]) == ("GPUCluster/gpu-cluster", "notReady", "ready")
    assert "OperandNotReady" in finding["message"]


def test_operator_section_missing(matrix):
    result = run(matrix, facts(operator=None))
    assert {("operator.cr_state.not_assessed", "warn", "cluster"),
            ("operator.exclusive_resources.not_assessed", "block", "cluster"),
            ("operator.upgrade_hops.not_assessed", "warn", "cluster")} <= found(result, "operator.")


# ---- DeviceClass bridging the Device Plugin's name -------------------------------------------------

BRIDGE = {"name": "gpu-legacy-name", "extended_resource_name": "nvidia.com/gpu", "selectors": ["true"]}


@pytest.mark.parametrize("classes, backends, expected", [
    ([BRIDGE], {"gpu-01": "device_plugin"}, {("backend.extended_resource_bridge", "info", "DeviceClass/gpu-legacy-name")}),
    ([BRIDGE], {"gpu-01": "both"}, {("backend.extended_resource_bridge", "info", "DeviceClass/gpu-legacy-name")}),
    ([BRIDGE], {"gpu-01": "dra", "gpu-02": "dra"}, set()),
    ([dict(BRIDGE, extended_resource_name=None)], {"gpu-01": "device_plugin"}, set()),
    ([dict(BRIDGE, extended_resource_name="example.com/gpu")], {"gpu-01": "device_plugin"}, set()),
    (None, {}, {("backend.extended_resource_bridge.not_assessed", "info", "cluster")}),
])
def test_extended_resource_bridge(matrix, classes, backends, expected):
    cluster = facts(device_classes=classes)
    for name, backend in backends.items():
        cluster["nodes"][name] = k8s_node(backend=backend)
    assert found(run(matrix, cluster), "backend.extended") == expected


def test_extended_resource_bridge_message(matrix):
    finding = one(run(matrix, facts(device_classes=[BRIDGE])), "backend.extended_resource_bridge")
    assert finding["message"].startswith(
        "DeviceClass gpu-legacy-name maps nvidia.com/gpu to DRA while 2 node(s) serve it through the Device Plugin "
        "(gpu-01, gpu-02): upstream permits")
    assert "one node pool and DRA on another" in finding["message"]


# ---- stuck ResourceClaims ------------------------------------------------------------------------

STUCK = [{"namespace": "ml", "name": "train-%d" % i, "state": "deleted,allocated,reserved",
          "deletion_timestamp": "2026-11-30T08:00:00Z"} for i in range(7)]


@pytest.mark.parametrize("claims, expected", [
    ({"total": 10, "allocated": 4, "reserved": 4, "deleting_allocated": 0, "stuck": []}, set()),
    ({"total": 10, "allocated": 4, "reserved": 4, "deleting_allocated": 2, "stuck": STUCK[:2]},
     {("dra.stuck_claims", "warn", "cluster")}),
    (None, {("dra.stuck_claims.not_assessed", "warn", "cluster")}),
])
def test_stuck_claims(matrix, claims, expected):
    assert found(run(matrix, facts(resource_claims=claims)), "dra.stuck") == expected


def test_stuck_claims_message(matrix):
    claims = {"total": 40, "allocated": 12, "reserved": 10, "deleting_allocated": 7, "stuck": STUCK}
    finding = one(run(matrix, facts(resource_claims=claims)), "dra.stuck_claims")
    assert (finding["observed"], finding["expected"]) == ("deleting_allocated 7", "<= 0")
    assert finding["message"] == (
        "7 ResourceClaim(s) are deleted but still allocated (deleted,allocated,reserved): the kubelet plugin has not "
        "unprepared them (ml/train-0, ml/train-1, ml/train-2, ml/train-3, ml/train-4 and 2 more); 12 of 40 claim(s) "
        "allocated")


# ---- the simple form is untouched by the state checks ------------------------------------------------

def test_simple_form_has_no_state_findings(matrix):
    simple = {"kubernetes_version": "1.37.0", "operator_version": "26.6.2", "cluster_policy": True,
              "gpu_cluster": False, "distribution": "upstream"}
    result = run(matrix, simple)
    assert result["verdict"] == "pass"
    assert set(f["id"] for f in result["findings"]) == {"operator.lifecycle", "operator.upgrade_hops"}


def test_simple_form_with_k8s_info_names_objects(matrix):
    simple = {"kubernetes_version": "1.37.0", "operator_version": "26.6.2", "distribution": "upstream",
              "cluster_policy": {"resources": [{"kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"}}]},
              "gpu_cluster": [{"kind": "GPUCluster", "metadata": {"name": "gpu-cluster"}}]}
    finding = one(run(matrix, simple), "operator.exclusive_resources")
    assert finding["subject"] == "cluster"
    assert finding["message"].startswith("ClusterPolicy cluster-policy and GPUCluster gpu-cluster both exist")


def test_release_file_alone_reports_missing_state_rows(matrix):
    single = load_matrix(os.path.join(MATRIX_DIR, "gpu-operator-26.7.0.yml"))
    result = evaluate({"gpu-01": GOOD_NODE}, cluster=FACTS, matrix=single)
    assert {"backend.single_per_node.not_assessed", "operator.cr_state.not_assessed", "dra.stuck_claims.not_assessed",
            "backend.extended_resource_bridge.not_assessed"} <= set(f["id"] for f in result["findings"])


# ---- bad facts ------------------------------------------------------------------------------------

@pytest.mark.parametrize("changes, message", [
    ({"schema_version": 2}, "cluster.schema_version: gpu_cluster_facts schema 1 is supported, got 2"),
    ({"nodes": ["gpu-01"]}, "cluster.nodes: expected a dict"),
    ({"nodes": {"gpu-01": "ready"}}, "cluster.nodes['gpu-01']: expected a dict"),
    ({"nodes": {"gpu-01": {"gpu_backend": "magic"}}}, "cluster.nodes['gpu-01'].gpu_backend: expected one of"),
    ({"nodes": {"gpu-01": {"kubelet_version": 1.37}}}, "cluster.nodes['gpu-01'].kubelet_version: expected a version"),
    ({"api_server": "1.37.0"}, "cluster.api_server: expected a dict"),
    ({"api_server": {"version": 1.37}}, "cluster.api_server.version: expected a version string"),
    ({"operator": {"cluster_policies": {"name": "x"}}}, "cluster.operator.cluster_policies: expected a list"),
    ({"device_classes": ["gpu.nvidia.com"]}, "cluster.device_classes[0]: expected a dict"),
    ({"kubernetes_version": 1.37}, "cluster.kubernetes_version: expected a version as a quoted string"),
])
def test_bad_facts(matrix, changes, message):
    with pytest.raises(CompatError) as info:
        run(matrix, facts(**changes))
    assert message in str(info.value)


def test_unknown_facts_keys_are_ignored(matrix):
    """A newer gpu_cluster_facts may add keys; schema_version guards incompatible changes."""
    result = run(matrix, dict(FACTS, gathered_at="2026-11-30T08:00:00Z"))
    assert result["verdict"] == "pass"


# ---- 10,000 Kubernetes nodes (functional, not timed) ----------------------------------------------

def test_ten_thousand_cluster_nodes(matrix):
    cluster = facts()
    cluster["nodes"] = {}
    for i in range(10000):
        backend = "both" if i % 1000 == 0 else "device_plugin"
        cluster["nodes"]["gpu-%05d" % i] = k8s_node(backend=backend, kubelet="1.33.0" if i % 500 == 1 else "1.37.0")
    result = run(matrix, cluster, nodes={"gpu-00000": GOOD_NODE})
    assert len([f for f in result["findings"] if f["id"] == "backend.single_per_node"]) == 10
    assert len([f for f in result["findings"] if f["id"] == "kubelet.skew"]) == 20
    assert one(result, "backend.single_per_node", "gpu-00000")


# ---- coverage: the play's hosts, the cluster's GPU nodes ---------------------------------------

def test_gpu_nodes_of_the_cluster():
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.cluster_facts import gpu_node_names
    cluster = facts(**{"nodes": {
        "cp-1": k8s_node(backend="none", gpus=0),
        "gpu-01": k8s_node(), "dra-01": k8s_node(backend="dra"),
        "down-01": dict(k8s_node(backend="none", gpus=0), allocatable_gpu=0),          # Device Plugin down
        "gfd-01": dict(k8s_node(backend=None, gpus=0), labels={"nvidia.com/gpu.present": "true"}),
    }})
    assert gpu_node_names(normalize_cluster(cluster)) == ["down-01", "dra-01", "gfd-01", "gpu-01"]
    assert gpu_node_names(normalize_cluster({"kubernetes_version": "1.37.0"})) is None
    assert gpu_node_names(normalize_cluster(facts(nodes=None))) is None
    assert gpu_node_names(None) is None


def test_unreachable_host_blocks_naming_it(matrix):
    result = run(matrix, FACTS, coverage={"expected_hosts": ["gpu-01", "gpu-02", "gpu-03"]})
    assert result["verdict"] == "block"
    assert found(result, "coverage.") == {("coverage.host_unreachable", "block", "gpu-03")}
    assert result["findings"][0]["id"] == "coverage.host_unreachable"  # coverage comes first
    assert "host gpu-03 was to be covered but did not answer" in result["findings"][0]["message"]
    assert result["counts"]["block"] == 1


def test_failed_host_and_the_roles_reasons(matrix):
    result = run(matrix, FACTS, nodes={"gpu-01": GOOD_NODE},
                 coverage={"expected_hosts": ["gpu-01", "gpu-02"], "answered_hosts": ["gpu-01"],
                           "failed_hosts": {"gpu-02": "failed: gpu_node_facts timed out after 60 s"}})
    assert found(result, "coverage.") == {("coverage.host_failed", "block", "gpu-02")}
    assert "gpu_node_facts timed out" in one(result, "coverage.host_failed")["message"]
    assert "coverage.host_failed [gpu-02]" in summarize(result)


def test_gpu_node_missing_from_the_inventory_warns(matrix):
    cluster = facts(**{"nodes.gpu-03": k8s_node()})
    result = run(matrix, cluster)
    assert result["verdict"] == "warn"
    assert found(result, "coverage.") == {("coverage.node_not_in_inventory", "warn", "gpu-03")}
    # The whole inventory (groups['all']) knows it: a play limited to one pool is not a gap.
    limited = run(matrix, cluster, coverage={"expected_hosts": ["gpu-01", "gpu-02"],
                                             "inventory_hosts": ["gpu-01", "gpu-02", "gpu-03"]})
    assert found(limited, "coverage.") == set() and limited["verdict"] == "pass"
    # host_node_names maps an inventory name to the node name.
    renamed = run(matrix, cluster, nodes={"gpu-01": GOOD_NODE, "gpu-02": GOOD_NODE, "worker-c": GOOD_NODE},
                  coverage={"expected_hosts": ["gpu-01", "gpu-02", "worker-c"], "host_node_names": {"worker-c": "gpu-03"}})
    assert found(renamed, "coverage.") == set()


def test_coverage_not_given_is_listed(matrix):
    result = run(matrix, FACTS, coverage=None)
    assert result["verdict"] == "pass"
    assert ("coverage.not_assessed", "info", "cluster") in found(result, "coverage.")
    assert [e["id"] for e in result["not_assessed"]] == ["coverage.not_assessed", "distribution.not_assessed"]


@pytest.mark.parametrize("coverage, message", [
    ({"expected_hosts": "gpu-01"}, "expected_hosts: expected a list of host names"),
    ({"expected_hosts": [1]}, "expected_hosts: expected a list of host names"),
    ({"failed_hosts": ["gpu-01"]}, "failed_hosts: expected a dict host -> reason"),
    ({"host_node_names": {"a": 1}}, "host_node_names: node names must be strings"),
    ({"hosts": []}, "coverage: unknown key 'hosts'"),
])
def test_bad_coverage(matrix, coverage, message):
    with pytest.raises(CompatError) as info:
        run(matrix, FACTS, coverage=coverage)
    assert message in str(info.value)
