# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU scenarios: nodes from node trees, the simulated GPU Operator, reboots and kubelet DRA metrics."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest
import yaml

from kubelab import gpunodes
from kubelab.metrics import parse_text
from kubelab.testing import start_lab, stop_lab
from kubelab import testing

SCENARIOS = ("prod-26.3-device-plugin", "dra-canary", "both-crs", "kubelet-skew", "two-backends-one-node", "scale-100")
PROMETHEUS = "/usr/bin/prometheus"


def wait_for(check, timeout: float = 60.0, what: str = "condition"):
    return testing.wait_for(check, timeout, what, interval=0.2)


def http(lab, path: str, method: str = "GET", body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(lab.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, resp.headers.get("Content-Type"), resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type"), exc.read().decode()


def rtype(lab, group, version, plural):
    return lab.server.registry.get(group, version, plural)


def node(lab, name):
    return lab.server.api.get(rtype(lab, "", "v1", "nodes"), None, name)


def cr_status(lab, version, plural, name):
    kind = rtype(lab, "nvidia.com", version, plural)
    return lab.server.store.get(kind, None, name).get("status") or {}


def ready(obj_status):
    return obj_status.get("state") == "ready" and obj_status


@pytest.fixture(scope="module")
def labs(tmp_path_factory):
    started = {}

    def get(name):
        if name not in started:
            started[name] = start_lab(str(tmp_path_factory.mktemp(name)), name)
        return started[name]
    yield get
    errors = []
    for lab in started.values():
        stop_lab(lab)
        errors += lab.server.controller_errors
    assert not errors, errors[:5]


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_starts_with_gpu_nodes_and_inventory(name, tmp_path):
    begin = time.monotonic()
    lab = start_lab(str(tmp_path), name)
    try:
        elapsed = time.monotonic() - begin
        nodes = lab.server.api.list(rtype(lab, "", "v1", "nodes"), None)["items"]
        gpu_nodes = [n for n in nodes if gpunodes.BACKEND_LABEL in n["metadata"]["labels"]]
        inventory = yaml.safe_load((tmp_path / "inventory.yml").read_text())
        group = inventory["all"]["children"]["gpu_nodes"]
        assert sorted(group["hosts"]) == sorted(n["metadata"]["name"] for n in gpu_nodes)
        assert group["vars"]["dra_gate_kubeconfig"] == str(tmp_path / "kubeconfig")
        for host, hostvars in group["hosts"].items():
            assert hostvars["ansible_connection"] == "local"
            assert hostvars["ansible_python_interpreter"] == "{{ ansible_playbook_python }}"
            assert hostvars["dra_gate_node_commands"] == "recorded"
            assert os.path.isdir(hostvars["dra_gate_node_root"]), host
        uuids = [g["uuid"] for n in gpu_nodes for g in json.loads(n["metadata"]["annotations"][gpunodes.GPUS_ANNOTATION])]
        assert len(uuids) == len(set(uuids)), "GPU UUIDs must be unique in the cluster"
        for item in nodes:
            assert len(item["status"]["nodeInfo"]) == 10
        if name == "scale-100":
            assert len(nodes) == 103 and len(gpu_nodes) == 100
            assert len({h["dra_gate_node_root"] for h in group["hosts"].values()}) == 1  # one shared tree
            assert elapsed < 30, "scale-100 took %.1f s to start" % elapsed
    finally:
        stop_lab(lab)


def test_nodes_from_trees_prod(labs):
    # The recorded H200 tree is gpu-1 of kubelet-skew (prod uses constructed trees only).
    h200 = node(labs("kubelet-skew"), "gpu-1")
    lab = labs("prod-26.3-device-plugin")
    labels, info = h200["metadata"]["labels"], h200["status"]["nodeInfo"]
    assert labels["nvidia.com/gpu.present"] == "true"
    assert labels["nvidia.com/gpu.count"] == "1"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200"
    assert labels["nvidia.com/gpu.memory"] == "143771"
    assert (labels["nvidia.com/cuda.driver.major"], labels["nvidia.com/cuda.driver.minor"],
            labels["nvidia.com/cuda.driver.rev"]) == ("580", "159", "04")
    assert labels["nvidia.com/mig.capable"] == "true"
    assert labels["feature.node.kubernetes.io/pci-10de.present"] == "true"
    assert labels[gpunodes.BACKEND_LABEL] == "device-plugin"
    assert info["kernelVersion"] == "6.18.44-fc-v657-gpu"
    assert info["osImage"] == "Ubuntu 24.04.3 LTS"
    assert info["kubeletVersion"] == "v1.36.4"  # the tree has no kubelet: the scenario's kubelet_version
    gpus = json.loads(h200["metadata"]["annotations"][gpunodes.GPUS_ANNOTATION])
    assert gpus == [{"uuid": "GPU-f06f0ae7-4822-3c65-0972-1d839772e142", "name": "NVIDIA H200",
                     "pci_bus_id": "0000:00:06.0", "numa_node": None, "memory_mib": 143771, "mig_mode": "disabled",
                     "index": 0, "device_id": "0x2335"}]
    assert list(gpus[0]) == list(gpunodes.GPU_FIELDS)
    assert h200["status"]["capacity"]["nvidia.com/gpu"] == "1" == h200["status"]["allocatable"]["nvidia.com/gpu"]
    hgx = node(lab, "gpu-2")
    assert hgx["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert hgx["status"]["nodeInfo"]["containerRuntimeVersion"] == "containerd://2.3.1"
    assert hgx["status"]["nodeInfo"]["kubeletVersion"] == "v1.36.4"
    assert hgx["status"]["nodeInfo"]["osImage"] == "Ubuntu 22.04.5 LTS"
    vfio = node(lab, "gpu-6")  # one of its two GPUs is bound to vfio-pci: not the driver's
    assert vfio["status"]["allocatable"]["nvidia.com/gpu"] == "1"
    assert node(lab, "gpu-5")["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert "nvidia.com/gpu" not in node(lab, "cp-1")["status"]["capacity"]


def test_cluster_policy_becomes_ready_with_operands(labs):
    lab = labs("prod-26.3-device-plugin")
    st = wait_for(lambda: ready(cr_status(lab, "v1", "clusterpolicies", "cluster-policy")), 90, "ClusterPolicy ready")
    conditions = {c["type"]: c for c in st["conditions"]}
    assert conditions["Ready"]["status"] == "True" and conditions["Ready"]["reason"] == "Reconciled"
    assert conditions["Error"]["status"] == "False"
    daemonsets = rtype(lab, "apps", "v1", "daemonsets")
    plugin = lab.server.api.get(daemonsets, "gpu-operator", "nvidia-device-plugin-daemonset")
    pod_spec = plugin["spec"]["template"]["spec"]
    assert pod_spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert pod_spec["containers"][0]["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.19.0"  # from the ClusterPolicy
    assert plugin["status"]["numberReady"] == 6
    for name in ("nvidia-operator-validator", "nvidia-container-toolkit-daemonset", "gpu-feature-discovery"):
        assert lab.server.api.get(daemonsets, "gpu-operator", name)["status"]["numberReady"] == 6


def test_gpu_cluster_ready_and_device_classes(labs):
    lab = labs("dra-canary")
    canary = node(lab, "canary-1")
    assert canary["metadata"]["labels"][gpunodes.BACKEND_LABEL] == "dra"
    assert "nvidia.com/gpu" not in canary["status"]["capacity"]
    assert canary["status"]["nodeInfo"]["kubeletVersion"] == "v1.37.0"
    wait_for(lambda: ready(cr_status(lab, "v1alpha1", "gpuclusters", "gpu-cluster")), 90, "GPUCluster ready")
    classes = rtype(lab, "resource.k8s.io", "v1", "deviceclasses")
    gpu_class = wait_for(lambda: lab.server.store.get_or_none(classes, None, "gpu.nvidia.com"), 20, "DeviceClass")
    assert gpu_class["spec"]["selectors"] == [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                                                     "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]
    assert "extendedResourceName" not in gpu_class["spec"]
    for name in ("mig.nvidia.com", "vfio.gpu.nvidia.com"):
        wait_for(lambda n=name: lab.server.store.get_or_none(classes, None, n), 20, "DeviceClass %s" % name)
    apps = {"DaemonSet": rtype(lab, "apps", "v1", "daemonsets"), "Deployment": rtype(lab, "apps", "v1", "deployments")}
    assert lab.server.api.get(apps["Deployment"], "gpu-operator", "nvidia-dra-driver-controller")
    plugin = lab.server.api.get(apps["DaemonSet"], "gpu-operator", "nvidia-dra-driver-kubelet-plugin")
    assert plugin["spec"]["template"]["spec"]["containers"][0]["image"] == "nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.0"


def test_both_crs_prerequisite_not_met(labs):
    lab = labs("both-crs")
    for version, plural, name in (("v1", "clusterpolicies", "cluster-policy"), ("v1alpha1", "gpuclusters", "gpu-cluster")):
        st = wait_for(lambda v=version, p=plural, n=name: cr_status(lab, v, p, n).get("conditions") and
                      cr_status(lab, v, p, n), 30, "%s status" % name)
        assert st["state"] == "notReady"
        cond = {c["type"]: c for c in st["conditions"]}
        assert cond["Ready"]["status"] == "False" and cond["Error"]["status"] == "True"
        assert cond["Ready"]["reason"] == cond["Error"]["reason"] == "PrerequisiteNotMet"
        assert "ClusterPolicy cluster-policy" in cond["Ready"]["message"]
        assert "GPUCluster gpu-cluster" in cond["Ready"]["message"]


def test_kubelet_skew_and_two_backends(labs):
    skew = labs("kubelet-skew")
    assert node(skew, "gpu-2")["status"]["nodeInfo"]["kubeletVersion"] == "v1.33.5"
    assert node(skew, "gpu-1")["status"]["nodeInfo"]["kubeletVersion"] == "v1.36.4"
    both = labs("two-backends-one-node")
    gpu1 = node(both, "gpu-1")
    assert gpu1["metadata"]["labels"][gpunodes.BACKEND_LABEL] == "both"
    assert gpu1["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert len(json.loads(gpu1["metadata"]["annotations"][gpunodes.GPUS_ANNOTATION])) == 8


def test_reboot_not_ready_then_ready_with_new_boot_id(labs):
    lab = labs("prod-26.3-device-plugin")
    before = node(lab, "gpu-3")["status"]["nodeInfo"]["bootID"]
    code, _ctype, _body = http(lab, "/kubelab/faults", "POST", {"reboot": {"node": "gpu-3", "seconds": 1.5}})
    assert code == 201

    def ready_status():
        return {c["type"]: c for c in node(lab, "gpu-3")["status"]["conditions"]}["Ready"]
    down = wait_for(lambda: ready_status()["status"] == "False" and ready_status(), 10, "gpu-3 NotReady")
    assert "rebooting" in down["message"]
    wait_for(lambda: ready_status()["status"] == "True", 15, "gpu-3 Ready again")
    assert node(lab, "gpu-3")["status"]["nodeInfo"]["bootID"] != before
    http(lab, "/kubelab/faults", "DELETE")


def _observe(lab, count: int, node_name: str, base: float):
    for i in range(count):
        lab.server.claim_timings[("default", "claim-%s-%d" % (node_name, base))] = {
            "created": base, "allocated": base + 0.01, "prepared": base + 0.01 + 0.02 * (i + 1),
            "pod_started": base + 0.2, "node": node_name}
        base += 1


def test_metrics_exposition_counters_increase(labs):
    lab = labs("two-backends-one-node")
    code, ctype, text = http(lab, "/kubelab/metrics/nodes/gpu-1")
    assert code == 200 and ctype.startswith("text/plain; version=0.0.4")
    samples = parse_text(text)
    key = ("dra_operations_duration_seconds_count", (("is_error", "false"), ("operation_name", "PrepareResources")))
    assert samples[key] == 0
    assert samples[("dra_resource_claims_in_use", (("driver_name", "<any>"),))] == 0
    assert "# TYPE dra_operations_duration_seconds histogram" in text
    _observe(lab, 3, "gpu-1", time.monotonic())
    samples = parse_text(http(lab, "/kubelab/metrics/nodes/gpu-1")[2])
    assert samples[key] == 3
    inf = ("dra_operations_duration_seconds_bucket", (("is_error", "false"), ("le", "+Inf"),
                                                      ("operation_name", "PrepareResources")))
    assert samples[inf] == 3
    assert 0.11 < samples[("dra_operations_duration_seconds_sum", key[1])] < 0.13
    _observe(lab, 2, "gpu-1", time.monotonic() + 100)
    assert parse_text(http(lab, "/kubelab/metrics/nodes/gpu-1")[2])[key] == 5
    everything = parse_text(http(lab, "/kubelab/metrics")[2])
    assert everything[("dra_operations_duration_seconds_count", (("is_error", "false"), ("node", "gpu-1"),
                                                                 ("operation_name", "PrepareResources")))] == 5
    assert everything[("dra_operations_duration_seconds_count", (("is_error", "false"), ("node", "gpu-2"),
                                                                 ("operation_name", "PrepareResources")))] == 0
    assert http(lab, "/kubelab/metrics/nodes/no-such-node")[0] == 404


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _query(port: int, expr: str):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": expr}))
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return json.loads(resp.read().decode())["data"]["result"]
    except (OSError, ValueError, KeyError):
        return None


@pytest.mark.skipif(not os.path.exists(PROMETHEUS), reason="the Debian package prometheus is not installed")
def test_prometheus_scrapes_histogram_quantile(labs, tmp_path):
    lab = labs("two-backends-one-node")
    port = _free_port()
    host = urllib.parse.urlsplit(lab.url).netloc
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
              "scrape_configs": [{"job_name": "kubelet", "metrics_path": "/kubelab/metrics",
                                  "static_configs": [{"targets": [host]}]}]}
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    with subprocess.Popen([PROMETHEUS, "--config.file", str(tmp_path / "prometheus.yml"),  # noqa: S603
                           "--storage.tsdb.path", str(tmp_path / "data"), "--web.listen-address", "127.0.0.1:%d" % port],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as prom:
        try:
            up = wait_for(lambda: (_query(port, "up") or [None])[0], 60, "Prometheus scraping the lab")
            assert up["value"][1] == "1"
            time.sleep(2.5)
            _observe(lab, 4, "gpu-2", time.monotonic() + 1000)
            expr = "histogram_quantile(0.95, sum by (le) (rate(dra_operations_duration_seconds_bucket[1m])))"

            def answer():
                result = _query(port, expr)
                return result and result[0]["value"][1] not in ("NaN", "+Inf") and result
            result = wait_for(answer, 30, "histogram_quantile")
            assert 0 < float(result[0]["value"][1]) <= 10
        finally:
            prom.terminate()
            prom.wait(timeout=20)
    shutil.rmtree(tmp_path / "data", ignore_errors=True)
