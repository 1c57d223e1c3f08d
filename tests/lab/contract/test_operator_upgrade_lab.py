# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: the GPU Operator's Helm upgrade path in the lab, driven by the Helm v4 Go library.

One lab (scenario ``operator-upgrade``: 2 device-plugin GPU nodes, ``operator_ready_seconds: 2``) and
the operator-shaped test charts of ``tests/operator_charts.py``: install v26.3.1, upgrade to v26.6.2
(from its ``.tgz``) and v26.7.0 with Helm's ``watcher`` wait, then roll back to revision 1. At each
step the simulated operator follows the ClusterPolicy Helm rendered: the ClusterPolicy passes
``notReady`` -> ``ready``, the device plugin DaemonSet's pods run the target image, the operator
Deployment runs the release's image, ``nvidia.com/gpu`` allocatable on the GPU nodes is unchanged and
no GPUCluster or DRA object appears. Helm does not upgrade ``crds/``: after the upgrades the
ClusterPolicy CRD still lacks the 26.7.0 fields, and the CRDs new in 26.7.0 are absent.
"""

from __future__ import annotations

import shutil
import time

import pytest

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

import operator_charts  # tests/ is on pytest's pythonpath (pytest.ini)
from kubelab.testing import start_lab, stop_lab, wait_for

NAMESPACE = "gpu-operator"
PLUGIN = "nvidia-device-plugin-daemonset"
OPERANDS = (PLUGIN, "nvidia-operator-validator", "nvidia-container-toolkit-daemonset", "gpu-feature-discovery")
GPU_NODES = ("gpu-1", "gpu-2")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("operator-upgrade"))
    cluster = start_lab(work, "operator-upgrade")
    yield cluster
    stop_lab(cluster)
    errors = list(cluster.server.controller_errors)
    shutil.rmtree(work, ignore_errors=True)
    assert not errors, "controller errors: %s" % errors[:5]


@pytest.fixture(scope="module")
def charts(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("charts"))
    return {"26.3.1": operator_charts.write_chart(root, "26.3.1"),
            "26.6.2": operator_charts.chart_archive(root, "26.6.2"),
            "26.7.0": operator_charts.write_chart(root, "26.7.0")}


@pytest.fixture(scope="module")
def helm(lab):
    return helm_python.Config(kubeconfig_path=lab.kubeconfig, namespace=NAMESPACE, storage_driver="secret")


@pytest.fixture(scope="module")
def kube(lab):
    from kubernetes import client, config
    api = config.new_client_from_config(config_file=lab.kubeconfig)
    return {"core": client.CoreV1Api(api), "apps": client.AppsV1Api(api), "batch": client.BatchV1Api(api),
            "custom": client.CustomObjectsApi(api), "crds": client.ApiextensionsV1Api(api),
            "resource": client.ResourceV1Api(api), "api": api}


@pytest.fixture(scope="module")
def baseline():
    return {}


def policy(kube) -> dict:
    return kube["custom"].get_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy")


def policy_states(kube, since: str) -> list:
    """ClusterPolicy ``status.state`` values in the order the watch from ``since`` saw them."""
    from kubernetes import watch
    states = []
    stream = watch.Watch().stream(kube["custom"].list_cluster_custom_object, "nvidia.com", "v1", "clusterpolicies",
                                  resource_version=since, timeout_seconds=1)
    for event in stream:
        state = ((event["object"] or {}).get("status") or {}).get("state")
        if state and (not states or states[-1] != state):
            states.append(state)
    return states


def list_rv(kube) -> str:
    listing = kube["custom"].list_cluster_custom_object("nvidia.com", "v1", "clusterpolicies")
    return listing["metadata"]["resourceVersion"]


def allocatable(kube) -> dict:
    return {n.metadata.name: (n.status.allocatable or {}).get("nvidia.com/gpu")
            for n in kube["core"].list_node().items if n.metadata.name in GPU_NODES}


def plugin_images(kube) -> set:
    pods = kube["core"].list_namespaced_pod(NAMESPACE, label_selector="app=" + PLUGIN).items
    return {(p.spec.node_name, p.spec.containers[0].image) for p in pods if not p.metadata.deletion_timestamp}


def settled(kube, plugin_version: str):
    """The ClusterPolicy is ready and every device plugin pod runs ``plugin_version``."""
    want = {(n, "nvcr.io/nvidia/k8s-device-plugin:" + plugin_version) for n in GPU_NODES}
    if (policy(kube).get("status") or {}).get("state") != "ready":
        return False
    return plugin_images(kube) == want


def operator_image(kube) -> str:
    return kube["apps"].read_namespaced_deployment("gpu-operator", NAMESPACE).spec.template.spec.containers[0].image


def crd_names(kube) -> set:
    return {c.metadata.name for c in kube["crds"].list_custom_resource_definition().items}


def dra_objects(kube) -> dict:
    """GPUClusters (when the CRD exists) and the resource.k8s.io objects a DRA path would create."""
    found = {}
    if "gpuclusters.nvidia.com" in crd_names(kube):
        listing = kube["custom"].list_cluster_custom_object("nvidia.com", "v1alpha1", "gpuclusters")
        found["gpuclusters"] = listing["items"]
    resource = kube["resource"]
    found["deviceclasses"] = resource.list_device_class().items
    found["resourceslices"] = resource.list_resource_slice().items
    found["resourceclaims"] = resource.list_resource_claim_for_all_namespaces().items
    return {k: v for k, v in found.items() if v}


def step_checks(kube, baseline: dict, version: str, since: str, started: float) -> None:
    """After a Helm step to ``version``: notReady -> ready, images, allocatable, no DRA objects."""
    rel = operator_charts.RELEASES[version]
    plugin = rel["devicePlugin"]
    wait_for(lambda: settled(kube, plugin), 60, "ClusterPolicy ready, device plugin " + plugin)
    took = time.monotonic() - started
    states = policy_states(kube, since)
    assert states[-2:] == ["notReady", "ready"], states
    assert took >= 2.0, "ready %.1fs after the Helm step, before operator_ready_seconds" % took
    assert operator_image(kube) == "nvcr.io/nvidia/gpu-operator:v" + version
    daemonsets = {d.metadata.name: d for d in kube["apps"].list_namespaced_daemon_set(NAMESPACE).items}
    assert set(OPERANDS) <= set(daemonsets), sorted(daemonsets)
    assert daemonsets[PLUGIN].spec.template.spec.containers[0].image == \
        "nvcr.io/nvidia/k8s-device-plugin:" + rel["devicePlugin"]
    assert daemonsets["nvidia-container-toolkit-daemonset"].spec.template.spec.containers[0].image == \
        "nvcr.io/nvidia/k8s/container-toolkit:" + rel["toolkit"]
    assert daemonsets["nvidia-operator-validator"].spec.template.spec.containers[0].image == \
        "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v" + version
    assert allocatable(kube) == baseline["allocatable"]
    assert dra_objects(kube) == {}
    # The pre-upgrade hook's Job ran and was deleted (hook-succeeded); the lab's applies nothing.
    assert not kube["batch"].list_namespaced_job(NAMESPACE).items


def test_install_26_3_1(helm, charts, kube, baseline):
    baseline["allocatable"] = allocatable(kube)
    assert sorted(baseline["allocatable"]) == list(GPU_NODES) and all(baseline["allocatable"].values())
    started = time.monotonic()
    helm.install(charts["26.3.1"], "gpu-operator", namespace=NAMESPACE, wait="watcher", timeout=120)
    wait_for(lambda: settled(kube, "v0.19.0"), 60, "ClusterPolicy ready after the install")
    assert time.monotonic() - started >= 2.0
    assert operator_image(kube) == "nvcr.io/nvidia/gpu-operator:v26.3.1"
    assert allocatable(kube) == baseline["allocatable"]
    names = crd_names(kube)
    # crds/ of the chart and of the NFD subchart are created on install.
    assert set(operator_charts.crds("26.3.1")) <= names
    assert not names & set(operator_charts.DRA_CRDS)
    assert dra_objects(kube) == {}


@pytest.mark.parametrize("version", ["26.6.2", "26.7.0"])
def test_upgrade_hop(helm, charts, kube, baseline, version):
    since, started = list_rv(kube), time.monotonic()
    helm.upgrade(charts[version], "gpu-operator", namespace=NAMESPACE, wait="watcher", timeout=120)
    step_checks(kube, baseline, version, since, started)
    hooks = {h["name"]: h for h in helm.get_all("gpu-operator").get("hooks") or []}
    job = hooks["gpu-operator-upgrade-crd"]
    assert job["kind"] == "Job" and job["events"] == ["pre-upgrade"] and job["last_run"]["phase"] == "Succeeded"
    assert policy(kube)["spec"]["devicePlugin"]["enabled"] is True
    assert "gpuclusters" not in dra_objects(kube)


def test_crds_not_upgraded_by_helm(kube):
    names = crd_names(kube)
    # New in 26.7.0's crds/, never created by an upgrade.
    assert not names & set(operator_charts.DRA_CRDS), sorted(names)
    for crd_name, fields in operator_charts.NEW_CRD_FIELDS.items():
        crd = kube["api"].sanitize_for_serialization(kube["crds"].read_custom_resource_definition(crd_name))
        assert crd["metadata"]["name"] == crd_name
        assert operator_charts.schema_has(crd, "spec.devicePlugin.version") or crd_name != "clusterpolicies.nvidia.com"
        for field in fields:
            assert not operator_charts.schema_has(crd, field), "%s: %s came with a helm upgrade" % (crd_name, field)


def test_history_and_rollback_to_first_revision(helm, kube, baseline):
    history = helm.history("gpu-operator")
    assert [str(r.get("status") or (r.get("info") or {}).get("status")) for r in history] == \
        ["superseded", "superseded", "deployed"], history
    since, started = list_rv(kube), time.monotonic()
    helm.rollback("gpu-operator", version=1, wait="watcher", timeout=120)
    step_checks(kube, baseline, "26.3.1", since, started)
    assert len(helm.history("gpu-operator")) == 4
