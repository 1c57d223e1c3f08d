# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""compat.evaluate: one test (or table) per rule, per missing fact and per bad option."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.evaluate import (
    CompatError,
    evaluate,
    should_fail,
    summarize,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.matrix import MatrixError, load_matrix

MATRIX_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir, os.pardir,
                          "data", "matrix")

# The real H200 node (a VM): Ubuntu 24.04, kernel 6.18.44, open driver 580.159.04, one H200 at
# 0000:00:06.0 with numa_node -1 (null), no IOMMU groups, no CDI specs, no containerd, no kubelet.
H200 = {
    "schema_version": 1,
    "os": {"id": "ubuntu", "version_id": "24.04", "pretty_name": "Ubuntu 24.04.3 LTS"},
    "kernel": {"release": "6.18.44", "iommu_params": {}},
    "driver": {"loaded": True, "version": "580.159.04", "flavor": "open"},
    "gpus": [{"pci_bus_id": "0000:00:06.0", "device_id": "0x2335", "name": "NVIDIA H200",
              "uuid": "GPU-5d1c6f0e-3a0b-4e38-9d47-2f0e6e0c1a77", "numa_node": None, "iommu_group": None,
              "kernel_driver": "nvidia", "mig_mode": "disabled", "memory_mib": 143771}],
    "gpu_count": 1,
    "iommu": {"enabled": False, "group_count": 0, "iommufd": False},
    "cdi": {"spec_dirs": ["/etc/cdi", "/var/run/cdi"], "specs": []},
    "containerd": {"present": False, "version": None, "config_path": None, "config_version": None,
                   "cdi_enabled": None, "cdi_spec_dirs": [], "nvidia_runtime": None, "imports": []},
    "kubelet": {"present": False, "version": None},
    "problems": [],
}

# A bare-metal node that meets every 26.7.0 row (driver 595.91.07, containerd 2.3.1 with CDI,
# kubelet 1.37.0, IOMMU on).
GOOD = copy.deepcopy(H200)
GOOD["driver"] = {"loaded": True, "version": "595.91.07", "flavor": "open"}
GOOD["gpus"][0].update(pci_bus_id="0000:17:00.0", numa_node=0, iommu_group=12)
GOOD["iommu"] = {"enabled": True, "group_count": 150, "iommufd": True}
GOOD["containerd"] = {"present": True, "version": "2.3.1", "config_path": "/etc/containerd/config.toml",
                      "config_version": 3, "cdi_enabled": True, "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"],
                      "nvidia_runtime": True, "imports": []}
GOOD["kubelet"] = {"present": True, "version": "1.37.0"}

CLUSTER = {"kubernetes_version": "1.37.0", "operator_version": "26.6.2", "cluster_policy": True,
           "gpu_cluster": False, "distribution": "upstream"}


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(MATRIX_DIR)


def node(base=GOOD, **changes):
    """A copy of ``base`` with dotted-path changes: node(**{"driver.version": "580.159.04"})."""
    facts = copy.deepcopy(base)
    for path, value in changes.items():
        target = facts
        keys = path.split(".")
        for key in keys[:-1]:
            target = target[key]
        if value is DELETE:
            del target[keys[-1]]
        else:
            target[keys[-1]] = value
    return facts


DELETE = object()


def run(matrix, nodes=None, cluster="default", target=None, releases=None, coverage="answered"):
    """evaluate(); by default every host of ``nodes`` was expected and answered (no coverage findings)."""
    if cluster == "default":
        cluster = CLUSTER
    if nodes is None:
        nodes = {"n1": GOOD}
    if coverage == "answered":
        coverage = {"expected_hosts": list(nodes)}
    return evaluate(nodes, cluster=cluster, target=target, matrix=matrix, releases=releases, coverage=coverage)


def found(result, subject=None):
    """The (id, severity) pairs, for one subject or all."""
    return set((f["id"], f["severity"]) for f in result["findings"] if subject is None or f["subject"] == subject)


def ids(result, subject=None):
    return set(fid for fid, _sev in found(result, subject))


def one(result, fid, subject=None):
    matches = [f for f in result["findings"] if f["id"] == fid and (subject is None or f["subject"] == subject)]
    assert len(matches) == 1, (fid, result["findings"])
    return matches[0]


# ---- the whole picture ----------------------------------------------------------------------------

def test_good_node_passes(matrix):
    result = run(matrix)
    assert result["verdict"] == "pass"
    assert result["counts"] == {"block": 0, "warn": 0, "info": 2, "not_assessed": 0}
    assert result["not_assessed"] == []
    assert ids(result) == {"operator.lifecycle", "operator.upgrade_hops"}
    assert result["upgrade_path"] == [{"from": "26.6.2", "to": "26.7.0", "kind": "next_major"}]
    assert result["target"]["operator_version"] == "26.7.0"
    assert result["target"]["allocation_mode"] == "device_plugin"
    assert result["target"]["components"]["dra_driver"] == "v0.5.0"
    assert result["matrix"]["release"] == "26.7.0"
    assert result["matrix"]["release_file"] == "gpu-operator-26.7.0.yml"


def test_real_h200_node_without_cluster(matrix):
    # Without cluster facts the required cluster checks are not assessed: block, never pass.
    result = run(matrix, nodes={"h200": H200}, cluster=None)
    assert result["verdict"] == "block"
    assert found(result, "h200") == {("driver.point_release", "warn"), ("containerd.not_assessed", "warn")}
    assert found(result, "cluster") >= {
        ("kubernetes.validated_range.not_assessed", "block"), ("kubelet.skew.not_assessed", "block"),
        ("containerd.kubernetes_tested.not_assessed", "warn"),
        ("operator.exclusive_resources.not_assessed", "block"), ("operator.upgrade_hops.not_assessed", "warn"),
    }
    assert result["upgrade_path"] is None
    assert result["counts"]["not_assessed"] == 6
    assert [(e["id"], e["subject"], e["severity"]) for e in result["not_assessed"]] == [
        (f["id"], f["subject"], f["severity"]) for f in result["findings"] if f["id"].endswith(".not_assessed")]
    assert all(e["reason"].startswith("not assessed: ") for e in result["not_assessed"])
    assert "no cluster facts given" in one(result, "kubernetes.validated_range.not_assessed")["message"]


def test_findings_have_the_documented_shape(matrix):
    result = run(matrix, nodes={"h200": H200, "good": GOOD, "none": None}, cluster=None,
                 target={"allocation_mode": "dra", "passthrough": True})
    keys = {"id", "severity", "subject", "observed", "expected", "message", "source"}
    for finding in result["findings"]:
        assert set(finding) == keys
        assert finding["severity"] in ("block", "warn", "info")
        assert finding["message"] and finding["source"]
    counts = result["counts"]
    unassessed = [f for f in result["findings"] if f["id"].endswith(".not_assessed")]
    assert counts["not_assessed"] == len(unassessed) == len(result["not_assessed"])
    for severity in ("block", "warn"):
        assert counts[severity] == len([f for f in result["findings"] if f["severity"] == severity])
    assert counts["info"] == len([f for f in result["findings"] if f["severity"] == "info" and f not in unassessed])


# ---- driver ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("driver, expected", [
    ({"loaded": False, "version": None, "flavor": None}, {("driver.not_found", "block")}),
    ({"loaded": None, "version": None}, {("driver.not_found", "block")}),
    ({}, {("driver.not_found", "block")}),
    (None, {("driver.not_assessed", "block")}),
    ({"loaded": True, "version": None}, {("driver.version.not_assessed", "block")}),
    ({"loaded": True, "version": "NVIDIA UNIX driver"}, {("driver.version.not_assessed", "block")}),
    ({"loaded": True, "version": "595.91.07"}, set()),
    ({"loaded": True, "version": "610.57.04"}, set()),
    ({"loaded": True, "version": "535.309.01"}, set()),
    ({"loaded": True, "version": "580.173.02"}, set()),
    ({"loaded": True, "version": "580.159.04"}, {("driver.point_release", "warn")}),
    ({"loaded": True, "version": "580.180.01"}, {("driver.point_release", "warn")}),
    ({"loaded": True, "version": "595.58.03"}, {("driver.point_release", "warn")}),
    ({"loaded": True, "version": "570.172.08"}, {("driver.branch", "block")}),
    ({"loaded": True, "version": "550.163.01"}, {("driver.branch", "block")}),
])
def test_driver(matrix, driver, expected):
    result = run(matrix, nodes={"n1": node(driver=driver)})
    assert found(result, "n1") == expected


def test_no_driver_message(matrix):
    result = run(matrix, nodes={"cpu-only": node(driver={"loaded": False, "version": None, "flavor": None})})
    finding = one(result, "driver.not_found")
    assert "no NVIDIA driver found" in finding["message"]
    assert finding["subject"] == "cpu-only"
    assert result["verdict"] == "block"


def test_driver_messages_name_values(matrix):
    result = run(matrix, nodes={"n1": node(**{"driver.version": "580.159.04"}),
                                "n2": node(**{"driver.version": "570.172.08"}),
                                "n3": node(**{"driver.version": "five-ninety"})})
    point = one(result, "driver.point_release", "n1")
    assert (point["observed"], point["expected"]) == ("580.159.04", "580.173.02")
    assert "older" in point["message"]
    assert "branch 570" in one(result, "driver.branch", "n2")["message"]
    assert "driver.version 'five-ninety'" in one(result, "driver.version.not_assessed", "n3")["message"]


@pytest.mark.parametrize("version, expected", [
    ("535.309.01", {("dra.managed.driver", "block")}),
    ("580.173.02", set()),
    ("580.159.04", {("driver.point_release", "warn")}),
    ("595.91.07", set()),
])
def test_dra_driver_floor(matrix, version, expected):
    cluster = dict(CLUSTER, cluster_policy=False)
    result = run(matrix, nodes={"n1": node(**{"driver.version": version})}, cluster=cluster,
                 target={"allocation_mode": "dra"})
    assert found(result, "n1") == expected


# ---- containerd -----------------------------------------------------------------------------------

@pytest.mark.parametrize("version, k8s, expected", [
    ("2.3.1", "1.37.0", set()),
    ("2.3.0", "1.37.0", set()),
    ("2.3.0-rc.1", "1.37.0", {("containerd.kubernetes_tested", "warn")}),
    ("2.2.1", "1.37.0", {("containerd.kubernetes_tested", "warn")}),
    ("2.0.6", "1.37.0", {("containerd.kubernetes_tested", "warn")}),
    ("2.4.0", "1.37.0", {("containerd.validated_range", "block")}),
    ("1.7.28", "1.37.0", {("containerd.validated_range", "block"), ("containerd.kubernetes_tested", "warn")}),
    ("1.6.20~ds1", "1.37.0", {("containerd.validated_range", "block"), ("containerd.kubernetes_tested", "warn")}),
    ("v2.1.4", "1.35.3", {("containerd.kubernetes_tested", "warn")}),
    ("2.1.5", "1.35.3", set()),
    ("2.0.4", "1.33.2", set()),
    ("2.3.1", "1.33.2", {("containerd.kubernetes_tested", "warn")}),
    ("2.2.0", "1.36.1", set()),
])
def test_containerd(matrix, version, k8s, expected):
    nodes = {"n1": node(**{"containerd.version": version, "kubelet.version": k8s})}
    result = run(matrix, nodes=nodes, cluster=dict(CLUSTER, kubernetes_version=k8s))
    assert found(result, "n1") == expected


@pytest.mark.parametrize("containerd, fragment", [
    ({"present": False, "version": None}, "containerd not found on this node"),
    (None, "no containerd section"),
    ({"present": True, "version": None, "cdi_enabled": True}, "containerd.version unknown"),
    ({"present": True, "version": "containerd-git", "cdi_enabled": True}, "containerd.version 'containerd-git'"),
])
def test_containerd_not_assessed(matrix, containerd, fragment):
    result = run(matrix, nodes={"n1": node(containerd=containerd)})
    assert found(result, "n1") == {("containerd.not_assessed", "warn")}
    assert fragment in one(result, "containerd.not_assessed")["message"]
    assert result["verdict"] == "warn"  # containerd.validated_range: when_not_assessed warn


def test_containerd_messages(matrix):
    result = run(matrix, nodes={"n1": node(**{"containerd.version": "2.2.1"})})
    finding = one(result, "containerd.kubernetes_tested")
    assert finding["expected"] == "2.4.0+ or 2.3.0+"
    assert "most thoroughly tested" in finding["message"] and "Kubernetes 1.37" in finding["message"]


def test_cri_table_without_row_for_the_minor(matrix):
    result = run(matrix, cluster=dict(CLUSTER, kubernetes_version="1.38.0"),
                 nodes={"n1": node(**{"kubelet.version": "1.38.0"})})
    assert ("containerd.kubernetes_tested.not_assessed", "warn") in found(result, "cluster")
    assert ("kubernetes.validated_range", "block") in found(result, "cluster")
    assert "containerd.kubernetes_tested" not in ids(result, "n1")


# ---- CDI and managed DRA --------------------------------------------------------------------------

DRA_CLUSTER = dict(CLUSTER, cluster_policy=False, gpu_cluster=True)


@pytest.mark.parametrize("cdi, mode, expected", [
    (True, "dra", set()),
    (False, "dra", {("dra.managed.cdi", "block")}),
    (None, "dra", {("dra.managed.cdi.not_assessed", "block")}),
    (False, "device_plugin", set()),
])
def test_cdi(matrix, cdi, mode, expected):
    result = run(matrix, nodes={"n1": node(**{"containerd.cdi_enabled": cdi})}, cluster=DRA_CLUSTER,
                 target={"allocation_mode": mode})
    assert found(result, "n1") == expected


def test_cdi_without_containerd(matrix):
    result = run(matrix, nodes={"h200": H200}, cluster=DRA_CLUSTER, target={"allocation_mode": "dra"})
    # Unassessed because containerd is not there: as severe as containerd.not_assessed (warn).
    assert {("dra.managed.cdi.not_assessed", "warn"), ("containerd.not_assessed", "warn")} <= found(result, "h200")
    assert "needed for DRA" in run(matrix, nodes={"n1": node(**{"containerd.cdi_enabled": False})}, cluster=DRA_CLUSTER,
                                   target={"allocation_mode": "dra"})["findings"][-1]["message"]


@pytest.mark.parametrize("k8s, expected", [
    ("1.34.1", {("dra.managed.kubernetes", "block")}),
    ("1.34.2", set()),
    ("v1.35.0-gke.100", set()),
    ("1.33.9", {("dra.managed.kubernetes", "block")}),
])
def test_dra_kubernetes_floor(matrix, k8s, expected):
    cluster = dict(DRA_CLUSTER, kubernetes_version=k8s, kubelet_versions={"n1": k8s})
    result = run(matrix, cluster=cluster, target={"allocation_mode": "dra"})
    assert set(x for x in found(result, "cluster") if x[0].startswith("dra.")) == expected


def test_dra_with_cluster_policy(matrix):
    result = run(matrix, cluster=dict(CLUSTER, cluster_policy=True), target={"allocation_mode": "dra"})
    assert ("dra.managed.cluster_policy", "block") in found(result, "cluster")
    assert result["verdict"] == "block"
    unknown = run(matrix, cluster=dict(CLUSTER, cluster_policy=None), target={"allocation_mode": "dra"})
    assert ("dra.managed.cluster_policy.not_assessed", "block") in found(unknown, "cluster")
    assert unknown["verdict"] == "block"


def test_dra_on_26_3_is_unavailable(matrix):
    result = run(matrix, cluster=dict(CLUSTER, kubernetes_version="1.36.0", operator_version="26.3.1"),
                 nodes={"n1": node(**{"kubelet.version": "1.36.0"})},
                 target={"operator_version": "26.3.2", "allocation_mode": "dra"})
    assert ("dra.managed.available", "block") in found(result, "cluster")
    assert "no GPUCluster CRD" in one(result, "dra.managed.available")["message"]
    assert not [i for i in ids(result, "n1") if i.startswith("dra.")]


# ---- passthrough ----------------------------------------------------------------------------------

ACCEPTED = ("dra.passthrough.alpha_accepted", "warn")


@pytest.mark.parametrize("target, iommu, expected", [
    ({"passthrough": True, "allocation_mode": "dra"}, True, {("dra.passthrough.acceptance", "block")}),
    ({"passthrough": True, "allocation_mode": "dra", "accept_alpha_passthrough": True}, True, {ACCEPTED}),
    ({"passthrough": True, "allocation_mode": "dra", "accept_alpha_passthrough": True}, False,
     {("dra.passthrough.iommu", "block"), ACCEPTED}),
    ({"passthrough": True, "allocation_mode": "dra", "accept_alpha_passthrough": True}, None,
     {("dra.passthrough.iommu.not_assessed", "block"), ACCEPTED}),
    ({"passthrough": True, "accept_alpha_passthrough": True}, True,
     {("dra.passthrough.allocation_mode", "block"), ACCEPTED}),
    ({"passthrough": False}, False, set()),
    ({"passthrough": False, "allocation_mode": "dra", "accept_alpha_passthrough": True}, True, set()),
])
def test_passthrough(matrix, target, iommu, expected):
    result = run(matrix, nodes={"n1": node(**{"iommu.enabled": iommu})}, cluster=DRA_CLUSTER, target=target)
    assert set(x for x in found(result) if x[0].startswith("dra.passthrough")) == expected


@pytest.mark.parametrize("accepted, expected", [
    (False, {("dra.passthrough.acceptance", "block")}),
    (True, {ACCEPTED}),
])
def test_accepted_alpha_passthrough_stays_a_visible_warning(matrix, accepted, expected):
    """Issue 27: an accepted alpha is a warning (never a pass), naming alpha, the acceptance and the production path."""
    target = {"passthrough": True, "allocation_mode": "dra", "accept_alpha_passthrough": accepted}
    result = run(matrix, nodes={"n1": GOOD}, cluster=DRA_CLUSTER, target=target)
    assert set(x for x in found(result) if x[0].startswith("dra.passthrough")) == expected
    baseline = run(matrix, nodes={"n1": GOOD}, cluster=DRA_CLUSTER, target=dict(target, passthrough=False))
    if not accepted:
        assert result["counts"]["block"] == baseline["counts"]["block"] + 1
        return
    assert result["counts"]["block"] == baseline["counts"]["block"]
    assert result["counts"]["warn"] == baseline["counts"]["warn"] + 1
    finding = one(result, "dra.passthrough.alpha_accepted", "cluster")
    assert "alpha" in finding["message"] and "PassthroughSupport" in finding["message"]
    assert "accepted through target.accept_alpha_passthrough" in finding["message"]
    assert "not a standard production path" in finding["message"]
    assert finding["observed"] == "alpha, accepted (accept_alpha_passthrough true)"
    assert "seeds/000_dec44a8f4647fff6.txt § Executive Summary" in finding["source"]
    assert "dra.passthrough.alpha_accepted" not in [n["id"] for n in result["not_assessed"]]


def test_accepted_passthrough_without_its_row_is_not_assessed(matrix):
    """A release with a passthrough row but no passthrough_accepted row reports the gap, never a silent pass."""
    documents = copy.deepcopy(matrix["documents"])
    for doc in documents:
        doc["rows"] = [r for r in doc["rows"] if r["rule"] != "passthrough_accepted"]
    stripped = {"files": matrix["files"], "documents": documents}
    result = run(stripped, nodes={"n1": GOOD}, cluster=DRA_CLUSTER,
                 target={"passthrough": True, "allocation_mode": "dra", "accept_alpha_passthrough": True})
    assert ("dra.passthrough.alpha_accepted.not_assessed", "warn") in found(result, "cluster")


def test_passthrough_on_real_h200(matrix):
    result = run(matrix, nodes={"h200": H200}, cluster=DRA_CLUSTER,
                 target={"passthrough": True, "allocation_mode": "dra", "accept_alpha_passthrough": True})
    assert ("dra.passthrough.iommu", "block") in found(result, "h200")


# ---- kubelet skew ---------------------------------------------------------------------------------

@pytest.mark.parametrize("api, kubelet, expected", [
    ("1.37.0", "1.37.0", set()),
    ("1.37.0", "1.37.3", set()),
    ("1.37.0", "1.34.9", set()),
    ("1.37.0", "1.33.9", {("kubelet.skew", "block")}),
    ("1.36.0", "1.37.0", {("kubelet.skew", "block")}),
    ("1.36.4", "v1.36.4+k3s1", set()),
    ("1.24.0", "1.22.5", set()),
    ("1.24.0", "1.21.5", {("kubelet.skew", "block")}),
    ("1.37.0", "2.0.0", {("kubelet.skew", "block")}),
    ("1.37.0", None, {("kubelet.skew.not_assessed", "block")}),
    ("1.37.0", "unknown", {("kubelet.skew.not_assessed", "block")}),
])
def test_kubelet_skew(matrix, api, kubelet, expected):
    result = run(matrix, nodes={"n1": node(**{"kubelet.version": kubelet})},
                 cluster=dict(CLUSTER, kubernetes_version=api))
    assert set(x for x in found(result, "n1") if x[0].startswith("kubelet")) == expected


def test_kubelet_skew_against_target(matrix):
    cluster = dict(CLUSTER, kubernetes_version="1.36.2")
    nodes = {"old": node(**{"kubelet.version": "1.33.4"}), "ok": node(**{"kubelet.version": "1.36.2"})}
    result = run(matrix, nodes=nodes, cluster=cluster, target={"kubernetes_version": "1.37.0"})
    finding = one(result, "kubelet.skew", "old")
    assert "target API server 1.37.0" in finding["message"] and "4 minors older" in finding["message"]
    assert "kubelet.skew" not in ids(result, "ok")


def test_kubelet_versions_from_cluster(matrix):
    cluster = dict(CLUSTER, kubelet_versions={"n1": "1.33.0", "cp-1": "1.37.0", "old-worker": "1.32.1"})
    result = run(matrix, nodes={"n1": node(**{"kubelet.version": "1.37.0"})}, cluster=cluster)
    assert ("kubelet.skew", "block") in found(result, "n1")          # the API server's view wins
    assert found(result, "cp-1") == set()
    assert found(result, "old-worker") == {("kubelet.skew", "block")}


def test_kubelet_skew_without_api_version(matrix):
    result = run(matrix, nodes={"n%d" % i: GOOD for i in range(5)}, cluster=dict(CLUSTER, kubernetes_version=None))
    assert ("kubelet.skew.not_assessed", "block") in found(result, "cluster")
    assert not [f for f in result["findings"] if f["subject"] != "cluster" and f["id"].startswith("kubelet")]


def test_kubelet_absent_on_node(matrix):
    result = run(matrix, nodes={"h200": H200})
    assert "kubelet not found on this node" in one(result, "kubelet.skew.not_assessed", "h200")["message"]


# ---- Kubernetes range -----------------------------------------------------------------------------

@pytest.mark.parametrize("operator, current, target_k8s, expected", [
    ("26.7.0", "1.37.0", None, set()),
    ("26.7.0", "1.33.0", None, set()),
    ("26.7.0", "1.32.9", None, {("kubernetes.validated_range", "block")}),
    ("26.7.0", "1.36.4", "1.37.1", set()),
    ("26.7.0", "1.36.4", "1.38.0", {("kubernetes.validated_range", "block")}),
    ("26.3.2", "1.36.4", None, set()),
    ("26.3.2", "1.37.0", None, {("kubernetes.validated_range", "block")}),
])
def test_kubernetes_range(matrix, operator, current, target_k8s, expected):
    result = run(matrix, nodes={}, cluster=dict(CLUSTER, kubernetes_version=current, operator_version="26.3.1"),
                 target={"operator_version": operator, "kubernetes_version": target_k8s})
    assert set(x for x in found(result, "cluster") if x[0].startswith("kubernetes.")) == expected


def test_unparseable_cluster_kubernetes_version(matrix):
    result = run(matrix, cluster=dict(CLUSTER, kubernetes_version="banana"))
    finding = one(result, "cluster.kubernetes_version.not_assessed")
    assert "'banana'" in finding["message"]
    assert {"kubernetes.validated_range.not_assessed", "kubelet.skew.not_assessed"} <= ids(result, "cluster")


# ---- ClusterPolicy / GPUCluster -------------------------------------------------------------------

K8S_INFO_FOUND = {"api_found": True, "resources": [{"kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"}}]}
K8S_INFO_EMPTY = {"api_found": True, "resources": []}


@pytest.mark.parametrize("policy, gpucluster, expected", [
    (True, True, {("operator.exclusive_resources", "block")}),
    (True, False, set()),
    (False, True, set()),
    (False, False, set()),
    (K8S_INFO_FOUND, {"kind": "GPUCluster", "metadata": {"name": "gpu-cluster"}}, {("operator.exclusive_resources", "block")}),
    (K8S_INFO_FOUND, K8S_INFO_EMPTY, set()),
    ([{"kind": "ClusterPolicy"}], [{"kind": "GPUCluster"}], {("operator.exclusive_resources", "block")}),
    ([], [], set()),
    (None, True, {("operator.exclusive_resources.not_assessed", "block")}),
    (True, None, {("operator.exclusive_resources.not_assessed", "block")}),
    (False, None, set()),
])
def test_exclusive_resources(matrix, policy, gpucluster, expected):
    result = run(matrix, cluster=dict(CLUSTER, cluster_policy=policy, gpu_cluster=gpucluster))
    assert set(x for x in found(result, "cluster") if x[0].startswith("operator.exclusive")) == expected


def test_exclusive_resources_names_both(matrix):
    message = one(run(matrix, cluster=dict(CLUSTER, gpu_cluster=True)), "operator.exclusive_resources")["message"]
    assert "ClusterPolicy" in message and "GPUCluster" in message


# ---- upgrade hops ---------------------------------------------------------------------------------

@pytest.mark.parametrize("current, target, releases, path, extra", [
    ("26.3.1", "26.7.0", None, ["26.3.1", "26.6.x", "26.7.0"], set()),
    ("26.3.1", "26.7.0", ["26.3", "26.6", "26.7"], ["26.3.1", "26.6", "26.7.0"], set()),
    ("26.3.1", "26.7.0", ["26.3.x", "26.7.0"], ["26.3.1", "26.7.0"], set()),
    ("26.6.2", "26.7.0", None, ["26.6.2", "26.7.0"], set()),
    ("v26.6.2", "26.7.0", None, ["v26.6.2", "26.7.0"], set()),
    ("26.3.0", "26.3.2", None, ["26.3.0", "26.3.2"], set()),
    ("26.7.0", "26.7.0", None, ["26.7.0"], set()),
    ("26.7.0", "26.3.2", None, ["26.7.0"], {("operator.upgrade_hops.downgrade", "warn")}),
    ("25.10.1", "26.7.0", None, ["25.10.1", "26.3.x", "26.6.x", "26.7.0"], {("operator.upgrade_hops.unverified", "warn")}),
])
def test_upgrade_hops(matrix, current, target, releases, path, extra):
    result = run(matrix, nodes={}, cluster=dict(CLUSTER, operator_version=current, kubernetes_version="1.36.0"),
                 target={"operator_version": target}, releases=releases)
    hops = result["upgrade_path"]
    assert [current] + [hop["to"] for hop in hops] == path
    assert set(x for x in found(result) if x[0].startswith("operator.upgrade_hops.")) == extra


def test_upgrade_hops_finding_says_so(matrix):
    result = run(matrix, cluster=dict(CLUSTER, operator_version="26.3.1"))
    finding = one(result, "operator.upgrade_hops")
    assert "26.3.1 -> 26.6.x -> 26.7.0" in finding["message"] and "not supported" in finding["message"]
    assert [h["kind"] for h in result["upgrade_path"]] == ["next_major", "next_major"]
    assert "[CND life-cycle-policy.rst]" in finding["source"]


@pytest.mark.parametrize("current, fragment", [
    (None, "cluster.operator_version not given"),
    ("twenty-six", "cluster.operator_version 'twenty-six'"),
    ("26", "cluster.operator_version '26'"),
])
def test_upgrade_hops_unknown_current(matrix, current, fragment):
    result = run(matrix, cluster=dict(CLUSTER, operator_version=current))
    assert result["upgrade_path"] is None
    assert fragment in one(result, "operator.upgrade_hops.not_assessed")["message"]


# ---- distributions, lifecycle, 26.3 gaps ----------------------------------------------------------

@pytest.mark.parametrize("distribution, k8s, expected, fragment", [
    ("eks", "1.37.0", {("distribution.eks", "info")}, "newer than the newest version eks offered then (1.36)"),
    ("EKS", "1.36.2", {("distribution.eks", "info")}, "only through 1.36"),
    ("openshift", "1.35.1", {("distribution.openshift", "info")}, "4.22 used Kubernetes 1.35"),
    ("doks", "1.37.0", {("distribution.doks", "info")}, "public preview"),
    ("aks", "1.37.0", {("distribution.aks", "info")}, "October 2026"),
    ("gke", "1.37.0", {("distribution.gke", "info")}, "beta"),
    ("oke", "1.37.0", {("distribution.oke", "info")}, "from Kubernetes 1.34"),
    ("upstream", "1.37.0", set(), None),
    ("rke2", "1.37.0", {("distribution.not_assessed", "info")}, "no status row for distribution 'rke2'"),
    (None, "1.37.0", {("distribution.not_assessed", "info")}, "cluster.distribution not given"),
])
def test_distribution(matrix, distribution, k8s, expected, fragment):
    result = run(matrix, nodes={}, cluster=dict(CLUSTER, distribution=distribution, kubernetes_version=k8s))
    got = set(x for x in found(result) if x[0].startswith("distribution"))
    assert got == expected
    if fragment:
        assert fragment in one(result, list(got)[0][0])["message"]


def test_target_26_3_reports_gaps(matrix):
    result = run(matrix, cluster=dict(CLUSTER, kubernetes_version="1.36.0", operator_version="26.3.1"),
                 nodes={"n1": node(**{"kubelet.version": "1.36.0", "containerd.version": "2.2.1"})},
                 target={"operator_version": "26.3.2", "passthrough": True, "accept_alpha_passthrough": True})
    assert found(result, "cluster") >= {
        ("operator.lifecycle", "warn"), ("driver.branch.not_assessed", "info"),
        ("operator.components.not_assessed", "info"), ("dra.passthrough.not_assessed", "info"),
    }
    assert "sources say nothing" in one(result, "driver.branch.not_assessed")["message"]
    assert result["target"]["components"] is None
    assert found(result, "n1") == set()
    assert result["matrix"]["release"] == "26.3"


def test_release_file_alone_reports_missing_common_rows(matrix):
    single = load_matrix(os.path.join(MATRIX_DIR, "gpu-operator-26.7.0.yml"))
    result = evaluate({"n1": GOOD}, cluster=CLUSTER, matrix=single)
    assert {"kubelet.skew.not_assessed", "containerd.kubernetes_tested.not_assessed",
            "operator.upgrade_hops.not_assessed"} <= ids(result, "cluster")
    assert "has no row for kubelet version skew" in one(result, "kubelet.skew.not_assessed")["message"]


# ---- nodes --------------------------------------------------------------------------------------

def test_no_nodes(matrix):
    for nodes in (None, {}):
        result = evaluate(nodes, cluster=CLUSTER, matrix=matrix)
        assert ("nodes.not_assessed", "block") in found(result, "cluster")
        assert result["verdict"] == "block"


def test_host_without_facts_and_wrapped_facts(matrix):
    result = run(matrix, nodes={"gone": None, "wrapped": {"gpu_node": node(**{"driver.version": "570.172.08"})}})
    assert found(result, "gone") == {("node.not_assessed", "block"), ("kubelet.skew.not_assessed", "block")}
    assert found(result, "wrapped") == {("driver.branch", "block")}


def test_sparse_node_never_raises(matrix):
    sparse = {"driver": {"loaded": True, "version": ["580"]}, "containerd": "weird", "kubelet": None, "iommu": 7}
    target = {"allocation_mode": "dra", "passthrough": True, "accept_alpha_passthrough": True}
    result = run(matrix, nodes={"s": sparse}, target=target, cluster=dict(CLUSTER, cluster_policy=False))
    assert ids(result, "s") == {"driver.version.not_assessed", "containerd.not_assessed", "dra.managed.cdi.not_assessed",
                                "dra.passthrough.iommu.not_assessed", "kubelet.skew.not_assessed"}


# ---- bad options ----------------------------------------------------------------------------------

BAD_OPTIONS = [
    (dict(target="26.7.0"), "target: expected a dict"),
    (dict(target={"allocation_mode": "mig"}), "target.allocation_mode: expected one of device_plugin, dra, got 'mig'"),
    (dict(target={"operator_version": 26.7}), "target.operator_version: expected a version as a quoted string"),
    (dict(target={"operator_version": "latest"}), "target.operator_version: 'latest' is not a version string"),
    (dict(target={"operator_version": "26"}), "target.operator_version: '26': expected YY.MM.PP"),
    (dict(target={"kubernetes_version": "one-three-seven"}), "target.kubernetes_version: 'one-three-seven' is not a version"),
    (dict(target={"kubernetes_version": 1.3}), "target.kubernetes_version: expected a version as a quoted string (YAML reads 1.30"),
    (dict(target={"passthrough": "yes"}), "target.passthrough: expected true or false, got str 'yes'"),
    (dict(target={"operator": "26.7.0"}), "target: unknown key 'operator'"),
    (dict(cluster=["1.37"]), "cluster: expected a dict"),
    (dict(cluster={"kubernetes_version": 1.37}), "cluster.kubernetes_version: expected a version as a quoted string"),
    (dict(cluster={"k8s": "1.37"}), "cluster: unknown key 'k8s'"),
    (dict(cluster={"kubelet_versions": ["1.37.0"]}), "cluster.kubelet_versions: expected a dict host -> version string"),
    (dict(cluster={"kubelet_versions": {"n1": 1.37}}), "cluster.kubelet_versions['n1']: expected a version as a quoted string"),
    (dict(cluster={"cluster_policy": "yes"}), "cluster.cluster_policy: expected true/false, the object"),
    (dict(cluster={"distribution": 5}), "cluster.distribution: expected a string"),
    (dict(nodes=["n1"]), "nodes: expected a dict host -> gpu_node facts, got list"),
    (dict(nodes={"n1": "ubuntu"}), "nodes['n1']: expected the gpu_node facts dict (or null), got str"),
    (dict(nodes={1: {}}), "nodes: host names must be strings"),
    (dict(releases="26.6.x"), "releases: expected a list of operator versions"),
    (dict(releases=[26.6]), "releases[0]: expected a quoted operator version"),
    (dict(releases=["next"]), "releases[0]: expected a quoted operator version"),
    (dict(matrix=None), "matrix: required"),
]


@pytest.mark.parametrize("options, message", BAD_OPTIONS)
def test_bad_options(matrix, options, message):
    kwargs = dict(nodes={"n1": GOOD}, cluster=CLUSTER, target=None, matrix=matrix, releases=None)
    kwargs.update(options)
    with pytest.raises(CompatError) as info:
        evaluate(kwargs["nodes"], cluster=kwargs["cluster"], target=kwargs["target"], matrix=kwargs["matrix"],
                 releases=kwargs["releases"])
    assert message in str(info.value)


def test_target_without_matrix_file(matrix):
    with pytest.raises(MatrixError, match="no matrix release file covers GPU Operator 26.10.0"):
        run(matrix, target={"operator_version": "26.10.0"})


# ---- verdict helpers ------------------------------------------------------------------------------

@pytest.mark.parametrize("verdict, fail_on, fails", [
    ("block", "block", True), ("warn", "block", False), ("pass", "block", False),
    ("block", "warn", True), ("warn", "warn", True), ("pass", "warn", False),
    ("block", "never", False), ("warn", "never", False),
])
def test_should_fail(verdict, fail_on, fails):
    assert should_fail(verdict, fail_on) is fails


def test_should_fail_rejects_unknown_level():
    with pytest.raises(CompatError, match="fail_on: expected one of block, warn, never"):
        should_fail("block", "sometimes")


def test_should_fail_is_the_gate_rule():
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import verdict as gate
    for verdict in ("pass", "warn", "block"):
        for fail_on in ("block", "warn", "never"):
            assert should_fail(verdict, fail_on) is gate.decide(verdict, fail_on)["failed"]


def test_summary_lists_every_unassessed_check(matrix):
    nodes = dict(("n%d" % i, node(containerd=None)) for i in range(5))
    nodes["gone"] = None
    result = run(matrix, nodes=nodes, cluster=dict(CLUSTER, distribution=None))
    text = summarize(result)
    assert text.endswith("; not assessed: distribution.not_assessed (info: cluster), "
                         "containerd.not_assessed (warn: n0, n1, n2 and 2 more), node.not_assessed (block: gone), "
                         "kubelet.skew.not_assessed (block: gone)")
    assert result["verdict"] == "block"
    assert "node.not_assessed [gone]" in text


def test_summarize(matrix):
    result = run(matrix, nodes={"n1": node(driver={"loaded": False, "version": None})})
    text = summarize(result, "block")
    assert text.startswith("compat_check verdict block for GPU Operator 26.7.0: 1 block, 0 warn")
    assert "(fail_on=block)" in text and "driver.not_found [n1]: no NVIDIA driver found" in text


# ---- 10,000 nodes (functional, not timed) ---------------------------------------------------------

FLEET_KINDS = [
    (GOOD, set()),
    (H200, {"driver.point_release", "containerd.not_assessed", "kubelet.skew.not_assessed"}),
    (node(**{"driver.version": "570.172.08", "containerd.version": "1.7.28"}),
     {"driver.branch", "containerd.validated_range", "containerd.kubernetes_tested"}),
    (node(**{"kubelet.version": "1.33.2", "containerd.version": "2.2.1"}), {"kubelet.skew", "containerd.kubernetes_tested"}),
    (None, {"node.not_assessed", "kubelet.skew.not_assessed"}),
]


def test_ten_thousand_nodes(matrix):
    nodes = {}
    for index in range(10000):
        facts, _expected = FLEET_KINDS[index % len(FLEET_KINDS)]
        nodes["gpu-%05d" % index] = copy.deepcopy(facts) if index < 50 else facts
    # Two more hosts were asked for and did not answer: coverage.host_unreachable, naming each.
    expected = list(nodes) + ["gpu-10000", "gpu-10001"]
    result = evaluate(nodes, cluster=CLUSTER, matrix=matrix, coverage={"expected_hosts": expected})
    by_host = {}
    for finding in result["findings"]:
        by_host.setdefault(finding["subject"], set()).add(finding["id"])
    for index in (0, 1, 2, 3, 4, 9995, 9996, 9997, 9998, 9999):
        assert by_host.get("gpu-%05d" % index, set()) == FLEET_KINDS[index % len(FLEET_KINDS)][1]
    per_kind = 10000 // len(FLEET_KINDS)
    # branch + containerd range, skew; unassessed: the H200's kubelet skew, the factless host's node and skew
    assert result["counts"]["block"] == per_kind * 6 + 2
    assert result["counts"]["warn"] == per_kind * 4           # point release, two CRI warnings, H200 containerd
    assert result["counts"]["not_assessed"] == per_kind * 4
    assert len(result["not_assessed"]) == per_kind * 4
    assert by_host["gpu-10000"] == by_host["gpu-10001"] == {"coverage.host_unreachable"}
    assert result["verdict"] == "block"
    # Memoised results are per-host copies, not shared dicts.
    first = [f for f in result["findings"] if f["subject"] == "gpu-00001"][0]
    first["message"] = "changed"
    assert [f for f in result["findings"] if f["subject"] == "gpu-00006"][0]["message"] != "changed"
