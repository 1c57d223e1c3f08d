# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: gpufleet.dra_gate.gpu_cluster_facts run for real (ansible-playbook, the kubernetes client)
against the lab, which holds GPU nodes of each backend, NVIDIA DRA ResourceSlices, the GPU Operator's
CRDs and objects, a real Helm release (Helm library, two revisions), DeviceClasses, a RuntimeClass,
a PDB and ResourceClaims in every state."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import textwrap
import time

import pytest

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
H200 = "NVIDIA H200"
GPUS = "kubelab.gpufleet.io/gpus"


def node(name, allocatable_gpu=None, ready=True, unschedulable=False, labels=None, taints=None, annotations=None):
    capacity = {"cpu": "64", "memory": "1056Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    if allocatable_gpu is not None:
        capacity["nvidia.com/gpu"] = allocatable_gpu
    stamp = "2026-08-20T10:00:00Z"
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": dict(annotations or {}),
                     "labels": dict({"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                     "kubernetes.io/arch": "amd64"}, **(labels or {}))},
        "spec": dict({"taints": taints} if taints else {}, **({"unschedulable": True} if unschedulable else {})),
        "status": {
            "capacity": capacity, "allocatable": dict(capacity),
            "conditions": [{"type": "Ready", "status": "True" if ready else "Unknown",
                            "reason": "KubeletReady" if ready else "NodeStatusUnknown",
                            "message": "kubelet is posting ready status" if ready else "Kubelet stopped posting node status.",
                            "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}],
            "nodeInfo": {"architecture": "amd64", "bootID": "b-" + name, "containerRuntimeVersion": "containerd://2.2.1",
                         "kernelVersion": "6.8.0-87-generic", "kubeProxyVersion": "", "kubeletVersion": "v1.36.4",
                         "machineID": "m-" + name, "operatingSystem": "linux", "osImage": "Ubuntu 24.04.3 LTS",
                         "systemUUID": "u-" + name},
        },
    }


def gpus_annotation(node_name, count):
    """The lab's per-node GPU inventory (``kubelab.gpufleet.io/gpus``) from which its DRA kubelet plugin
    publishes ResourceSlices as the NVIDIA driver does (deviceinfo.go attributes)."""
    return json.dumps([{"index": i, "uuid": "GPU-%s-%04d" % (node_name, i), "name": H200,
                        "pci_bus_id": "00000000:%02X:00.0" % (0x17 + i), "numa_node": i // 2, "memory_mib": 143771}
                       for i in range(count)])


def dra_node_labels(backend):
    return {"kubelab.gpufleet.io/gpu-backend": backend}


def resource_slice(name, node_name, devices, driver, generation=1):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "nodeName": node_name, "devices": devices,
                     "pool": {"name": node_name, "generation": generation, "resourceSliceCount": 1}}}


def crd(group, plural, kind, version, scope="Cluster"):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (plural, group)},
            "spec": {"group": group, "scope": scope,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": kind + "List"},
                     "versions": [{"name": version, "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}]}}


def claim(namespace, name):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": namespace},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                                          "allocationMode": "ExactCount", "count": 1}}]}}}


def claim_pod(namespace, name, claim_name):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
                     "containers": [{"name": "cuda", "image": "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu24.04",
                                     "command": ["nvidia-smi", "-L"], "resources": {"claims": [{"name": "gpu"}]}}]}}


CHART_YAML = """\
apiVersion: v2
name: gpu-operator
description: A stand-in for NVIDIA's gpu-operator chart (the operator Deployment and the NFD worker DaemonSet).
type: application
version: {version}
appVersion: "{version}"
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gpu-operator
  labels: {app: gpu-operator}
spec:
  replicas: 1
  selector:
    matchLabels: {app: gpu-operator}
  template:
    metadata:
      labels: {app: gpu-operator}
    spec:
      containers:
        - name: gpu-operator
          image: nvcr.io/nvidia/gpu-operator:{{ .Chart.AppVersion }}
"""
DAEMONSET = """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: gpu-operator-node-feature-discovery-worker
  labels: {app: gpu-operator-node-feature-discovery-worker}
spec:
  selector:
    matchLabels: {app: gpu-operator-node-feature-discovery-worker}
  template:
    metadata:
      labels: {app: gpu-operator-node-feature-discovery-worker}
    spec:
      nodeSelector: {node-role.kubernetes.io/worker: ""}
      initContainers:
        - name: wait-for-master
          image: nvcr.io/nvidia/gpu-operator:{{ .Chart.AppVersion }}
      containers:
        - name: worker
          image: registry.k8s.io/nfd/node-feature-discovery:{{ .Values.nfdVersion }}
"""


def write_chart(root, version):
    files = {"Chart.yaml": CHART_YAML.format(version=version), "templates/deployment.yaml": DEPLOYMENT,
             "templates/daemonset.yaml": DAEMONSET, "values.yaml": "nfdVersion: v0.18.2\n"}
    for name, text in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
    return root


class Creator:
    """Creates objects through the lab's own API (the path its controllers use), status included."""

    def __init__(self, lab):
        self.api = lab.server.api
        self.registry = lab.server.registry

    def __call__(self, manifest, status=None):
        rtype = self.registry.by_kind(manifest["apiVersion"], manifest["kind"])
        namespace = manifest["metadata"].get("namespace") if rtype.namespaced else None
        created = self.api.create(rtype, namespace, manifest)
        if status is not None:
            created = dict(created, status=status)
            created, _code = self.api.update(rtype, namespace, created["metadata"]["name"], created, subresource="status")
        return created

    def delete(self, api_version, kind, namespace, name):
        self.api.delete(self.registry.by_kind(api_version, kind), namespace, name)


def wait_for(check, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


@pytest.fixture(scope="module")
def cluster(lab, tmp_path_factory):
    """The lab filled with a GPU cluster's objects; returns the lab."""
    return populate(lab, tmp_path_factory.mktemp("charts"))


def populate(lab, charts):
    """Fill ``lab`` with a GPU cluster's objects (charts written under the pathlib directory ``charts``)."""
    create = Creator(lab)
    helm = helm_python.Config(kubeconfig_path=lab.kubeconfig, namespace="gpu-operator", storage_driver="secret")
    helm.install(write_chart(str(charts / "v26.3.1"), "v26.3.1"), "gpu-operator", {}, wait="watcher", timeout=120)
    helm.upgrade(write_chart(str(charts / "v26.7.0"), "v26.7.0"), "gpu-operator", {"nfdVersion": "v0.19.0"},
                 wait="watcher", timeout=120)

    create(node("gpu-dp-1", allocatable_gpu="8"))
    create(node("gpu-dra-1", labels=dra_node_labels("dra"), annotations={GPUS: gpus_annotation("gpu-dra-1", 2)}))
    create(node("gpu-both-1", allocatable_gpu="4", labels=dra_node_labels("both"),
                annotations={GPUS: gpus_annotation("gpu-both-1", 4)}))
    lab.server.scenario["nodes_not_ready"] = ["gpu-down-1"]  # the lab kubelet's "node is down" knob
    create(node("gpu-down-1", allocatable_gpu="0", ready=False, unschedulable=True,
                taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]))
    # another driver's devices on a GPU node are not GPUs
    create(resource_slice("gpu-dra-1-compute-domain.nvidia.com-q9z8w", "gpu-dra-1",
                          [{"name": "channel-0", "attributes": {"type": {"string": "channel"}, "id": {"int": 0}}}],
                          driver="compute-domain.nvidia.com"))
    slice_type = lab.server.registry.by_kind("resource.k8s.io/v1", "ResourceSlice")

    def published():
        nodes = [s["spec"].get("nodeName") for s in lab.server.api.list(slice_type, None)["items"]
                 if s["spec"]["driver"] == "gpu.nvidia.com"]
        return sorted(nodes) == ["gpu-both-1", "gpu-dra-1"]

    wait_for(published, "the DRA plugin's ResourceSlices")
    node_type = lab.server.registry.by_kind("v1", "Node")
    wait_for(lambda: not any(c["type"] == "Ready" and c["status"] == "True" for c in
                             lab.server.api.get(node_type, None, "gpu-down-1")["status"]["conditions"]), "gpu-down-1 NotReady")

    gpu_cel = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
    create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
            "spec": {"selectors": [{"cel": {"expression": gpu_cel}}], "extendedResourceName": "nvidia.com/gpu"}})
    create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "mig.nvidia.com"},
            "spec": {"selectors": [{"cel": {"expression": gpu_cel.replace("'gpu'", "'mig'")}}]}})
    create({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia"})

    create(crd("nvidia.com", "clusterpolicies", "ClusterPolicy", "v1"))
    create(crd("nvidia.com", "gpuclusters", "GPUCluster", "v1alpha1"))
    create(crd("resource.nvidia.com", "computedomains", "ComputeDomain", "v1beta1", scope="Namespaced"))
    # both CRs: the fault the gate must catch; the lab's operator reports PrerequisiteNotMet on each
    create({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
            "spec": {"devicePlugin": {"enabled": True}, "cdi": {"enabled": True}}})
    create({"apiVersion": "nvidia.com/v1alpha1", "kind": "GPUCluster", "metadata": {"name": "gpu-cluster"}, "spec": {}})
    cp_type = lab.server.registry.by_kind("nvidia.com/v1", "ClusterPolicy")
    gc_type = lab.server.registry.by_kind("nvidia.com/v1alpha1", "GPUCluster")
    wait_for(lambda: (lab.server.api.get(cp_type, None, "cluster-policy").get("status") or {}).get("state")
             and (lab.server.api.get(gc_type, None, "gpu-cluster").get("status") or {}).get("state"),
             "the operator's status on both CRs")

    create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "train"}})
    create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "trainer", "namespace": "train"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "trainer"}}}})
    for namespace, name in (("train", "c-pending"), ("default", "c-other"), ("train", "c-reserved"), ("train", "c-stuck")):
        create(claim(namespace, name))
    create(claim_pod("train", "user-1", "c-reserved"))
    create(claim_pod("train", "user-2", "c-stuck"))
    claim_type = lab.server.registry.by_kind("resource.k8s.io/v1", "ResourceClaim")

    def reserved():
        return all((lab.server.api.get(claim_type, "train", n).get("status") or {}).get("reservedFor")
                   for n in ("c-reserved", "c-stuck"))

    wait_for(reserved, "the claims' allocation")
    # deleted while its pod still runs: "deleted,allocated,reserved" until the plugin unprepares it
    create.delete("resource.k8s.io/v1", "ResourceClaim", "train", "c-stuck")

    pdb_type = lab.server.registry.by_kind("policy/v1", "PodDisruptionBudget")
    wait_for(lambda: "expectedPods" in (lab.server.api.get(pdb_type, "train", "trainer").get("status") or {}),
             "the PDB's status")
    pod_type = lab.server.registry.by_kind("v1", "Pod")

    def operator_pods_run():
        pods = lab.server.api.list(pod_type, "gpu-operator")["items"]
        running = [p for p in pods if all(c.get("imageID") for c in (p.get("status") or {}).get("containerStatuses") or [{}])]
        return len(pods) >= 3 and len(running) == len(pods)

    wait_for(operator_pods_run, "the operator's pods")
    return lab


PLAYBOOK = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      module_defaults:
        group/gpufleet.dra_gate.k8s:
          kubeconfig: "{{ lookup('ansible.builtin.env', 'KUBECONFIG') }}"
      tasks:
        - name: Cluster facts in check mode
          gpufleet.dra_gate.gpu_cluster_facts:
          check_mode: true
          register: checked
        - name: Cluster facts, small pages
          gpufleet.dra_gate.gpu_cluster_facts:
            page_size: 2
          register: paged
        - name: Only nodes (no DRA)
          gpufleet.dra_gate.gpu_cluster_facts:
            include: [nodes]
          register: nodes_only
        - name: A release that does not exist, in another namespace
          gpufleet.dra_gate.gpu_cluster_facts:
            include: [operator]
            operator_release: absent
            operator_namespace: default
          register: absent
        - name: Wrong kubeconfig
          gpufleet.dra_gate.gpu_cluster_facts:
            kubeconfig: /nonexistent/kubeconfig
          register: wrong
          ignore_errors: true
        - name: Not changed, facts set
          ansible.builtin.assert:
            that:
              - checked is not changed
              - paged is not changed
              - wrong is failed
              - "'/nonexistent/kubeconfig' in wrong.msg"
              - checked.ansible_facts.gpu_cluster == paged.ansible_facts.gpu_cluster
        - name: Record what the module returned
          ansible.builtin.copy:
            dest: "{{ out }}"
            content: "{{ {'full': paged, 'nodes_only': nodes_only, 'absent': absent} | to_json }}"
            mode: "0600"
    """)


@pytest.fixture(scope="module")
def results(cluster, tmp_path_factory):
    work = tmp_path_factory.mktemp("play")
    playbook, out = work / "facts.yml", work / "facts.json"
    playbook.write_text(PLAYBOOK)
    env = cluster.env()
    env.update(ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_PYTHON_INTERPRETER=os.path.join(VENV_BIN, "python"),
               TMPDIR=str(work))
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), str(playbook), "-e", "out=%s" % out],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    return json.loads(out.read_text())


def test_api_server_and_groups(results):
    facts = results["full"]["ansible_facts"]["gpu_cluster"]
    assert facts["schema_version"] == 1
    assert facts["api_server"]["version"] == "1.37.0"
    assert facts["api_server"]["git_version"] == "v1.37.0-kubelab"
    assert facts["apis"]["resource_k8s_io_v1"] is True
    assert facts["apis"]["groups"]["nvidia.com"] == ["v1", "v1alpha1"] or set(facts["apis"]["groups"]["nvidia.com"]) == {"v1", "v1alpha1"}


def test_nodes_and_backends(results):
    nodes = results["full"]["ansible_facts"]["gpu_cluster"]["nodes"]
    assert {n: nodes[n]["gpu_backend"] for n in nodes} == {
        "cp-1": "none", "worker-1": "none", "worker-2": "none",
        "gpu-dp-1": "device_plugin", "gpu-dra-1": "dra", "gpu-both-1": "both", "gpu-down-1": "none"}
    assert nodes["gpu-dp-1"]["allocatable_gpu"] == 8
    assert nodes["gpu-down-1"]["allocatable_gpu"] == 0
    assert nodes["worker-1"]["allocatable_gpu"] is None
    down = nodes["gpu-down-1"]
    assert (down["ready"], down["unschedulable"]) == (False, True)
    assert down["taints"] == [{"key": "node.kubernetes.io/unschedulable", "value": None, "effect": "NoSchedule"}]
    assert nodes["gpu-dp-1"]["kubelet_version"] == "1.36.4"
    assert nodes["gpu-dp-1"]["container_runtime_version"] == "containerd://2.2.1"
    assert nodes["gpu-dra-1"]["labels"]["kubelab.gpufleet.io/gpu-backend"] == "dra"
    # as the NVIDIA plugin publishes them; the compute-domain driver's channel is not a GPU
    assert nodes["gpu-dra-1"]["dra_devices"] == [
        {"name": "gpu-0", "driver": "gpu.nvidia.com", "pool": "gpu-dra-1", "uuid": "GPU-gpu-dra-1-0000",
         "product": H200, "numa_node": 0, "pci_bus_id": "0000:17:00.0", "type": "gpu"},
        {"name": "gpu-1", "driver": "gpu.nvidia.com", "pool": "gpu-dra-1", "uuid": "GPU-gpu-dra-1-0001",
         "product": H200, "numa_node": 0, "pci_bus_id": "0000:18:00.0", "type": "gpu"}]
    assert len(nodes["gpu-both-1"]["dra_devices"]) == 4


def test_nodes_only_skips_dra(results):
    facts = results["nodes_only"]["ansible_facts"]["gpu_cluster"]
    assert facts["included"] == ["nodes"]
    assert facts["nodes"]["gpu-both-1"]["gpu_backend"] is None
    assert facts["nodes"]["gpu-both-1"]["dra_devices"] is None
    assert facts["operator"] is None and facts["resource_claims"] is None and facts["device_classes"] is None
    assert results["nodes_only"]["api_calls"] == 3  # /version, /apis, nodes


def test_operator(results):
    operator = results["full"]["ansible_facts"]["gpu_cluster"]["operator"]
    release = operator["helm_release"]
    assert {k: release[k] for k in ("name", "namespace", "revision", "chart", "chart_version", "app_version", "status")} == {
        "name": "gpu-operator", "namespace": "gpu-operator", "revision": 2, "chart": "gpu-operator",
        "chart_version": "v26.7.0", "app_version": "v26.7.0", "status": "deployed"}
    workloads = {(w["kind"], w["name"]): w for w in operator["workloads"]}
    nfd = workloads[("DaemonSet", "gpu-operator-node-feature-discovery-worker")]
    assert nfd["images"] == ["nvcr.io/nvidia/gpu-operator:v26.7.0", "registry.k8s.io/nfd/node-feature-discovery:v0.19.0"]
    assert nfd["image_ids"] and all("@sha256:" in i for i in nfd["image_ids"])
    assert any(i.startswith("registry.k8s.io/nfd/node-feature-discovery@sha256:") for i in nfd["image_ids"])
    deployment = workloads[("Deployment", "gpu-operator")]
    assert deployment["images"] == ["nvcr.io/nvidia/gpu-operator:v26.7.0"]
    assert len(deployment["image_ids"]) >= 1
    for kind, name in (("cluster_policies", "cluster-policy"), ("gpu_clusters", "gpu-cluster")):
        (only,) = operator[kind]
        assert (only["name"], only["state"]) == (name, "notReady")
        ready = [c for c in only["conditions"] if c["type"] == "Ready"][0]
        assert (ready["status"], ready["reason"]) == ("False", "PrerequisiteNotMet")
    assert [(c["name"], c["served_versions"], c["stored_versions"]) for c in operator["crds"]] == [
        ("clusterpolicies.nvidia.com", ["v1"], ["v1"]),
        ("computedomains.resource.nvidia.com", ["v1beta1"], ["v1beta1"]),
        ("gpuclusters.nvidia.com", ["v1alpha1"], ["v1alpha1"])]


def test_dra_objects_and_cluster_objects(results):
    facts = results["full"]["ansible_facts"]["gpu_cluster"]
    assert [(c["name"], c["extended_resource_name"]) for c in facts["device_classes"]] == [
        ("gpu.nvidia.com", "nvidia.com/gpu"), ("mig.nvidia.com", None)]
    assert "type == 'gpu'" in facts["device_classes"][0]["selectors"][0]
    assert facts["runtime_classes"] == [{"name": "nvidia", "handler": "nvidia"}]
    pdb = [p for p in facts["pdbs"] if p["name"] == "trainer"][0]
    assert (pdb["namespace"], pdb["min_available"], pdb["expected_pods"], pdb["disruptions_allowed"]) == ("train", 1, 0, 0)
    claims = facts["resource_claims"]
    assert {k: claims[k] for k in ("total", "allocated", "reserved", "deleting_allocated")} == {
        "total": 4, "allocated": 2, "reserved": 2, "deleting_allocated": 1}
    assert claims["by_namespace"]["default"] == {"total": 1, "allocated": 0, "reserved": 0, "deleting_allocated": 0}
    assert claims["by_namespace"]["train"] == {"total": 3, "allocated": 2, "reserved": 2, "deleting_allocated": 1}
    assert [(s["namespace"], s["name"], s["state"]) for s in claims["stuck"]] == [
        ("train", "c-stuck", "deleted,allocated,reserved")]
    assert claims["stuck"][0]["deletion_timestamp"]
    assert not [p for p in facts["problems"] if p["what"].startswith("resourceslices")]


def test_missing_release_is_a_problem_not_an_error(results):
    facts = results["absent"]["ansible_facts"]["gpu_cluster"]
    assert facts["operator"]["helm_release"] is None
    assert facts["operator"]["workloads"] == []
    assert any(p["what"] == "helm release default/absent" for p in facts["problems"])
