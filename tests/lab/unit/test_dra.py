# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DRA in the lab (kubelab.controllers.dra and the scheduler's claim allocation) against a real lab.

Every test adds its own GPU node(s), labelled ``lab-node=<name>``, and pins its pods there with a
nodeSelector, so tests sharing the module's lab do not compete for devices.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time

import pytest

from kubelab.controllers.dra import BACKEND_LABEL, EXTENDED_ANNOTATION, FINALIZER, GPUS_ANNOTATION
from kubelab.errors import ApiError
from kubelab.testing import start_lab, stop_lab
from kubelab import testing

GPU_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
             "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                                           "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}],
                      "extendedResourceName": "nvidia.com/gpu"}}
MIG_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "mig.nvidia.com"},
             "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                                           "device.attributes['gpu.nvidia.com'].type == 'mig'"}}]}}


def wait_for(check, timeout: float = 20.0, what: str = "condition"):
    return testing.wait_for(check, timeout, what, interval=0.05)


def dra_lab(tmp_path_factory, name: str):
    """A minimal lab with fast pods and this file's DeviceClasses (a fixture body: test_claim_knobs uses it too)."""
    work = str(tmp_path_factory.mktemp(name))
    cluster = start_lab(work, scenario="minimal")
    cluster.server.scenario.update(pod_start_seconds=0.05, pod_stop_seconds=0.05)
    kube = Kube(cluster.server, None)
    for cls in (GPU_CLASS, MIG_CLASS):
        try:
            kube.create("deviceclasses", cls)
        except ApiError as exc:  # made by the lab's GPU Operator: ours (the standalone chart's) wins
            assert exc.code == 409
            kube.patch("deviceclasses", cls["metadata"]["name"], {"spec": cls["spec"]})
    yield cluster
    stop_lab(cluster)
    errors = list(cluster.server.controller_errors)
    shutil.rmtree(work, ignore_errors=True)
    assert not errors, errors[:5]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    yield from dra_lab(tmp_path_factory, "dra")


class Kube:
    def __init__(self, server, namespace):
        self.server, self.api, self.ns = server, server.api, namespace
        if namespace:
            self.api.create(self.t("namespaces"), None, {"metadata": {"name": namespace}})

    def t(self, plural):
        return next(r for r in self.server.registry.all() if r.plural == plural)

    def _ns(self, plural):
        return self.ns if self.t(plural).namespaced else None

    def create(self, plural, obj):
        return self.api.create(self.t(plural), self._ns(plural), obj)

    def get(self, plural, name):
        return self.api.get(self.t(plural), self._ns(plural), name)

    def list(self, plural):
        return self.api.list(self.t(plural), self._ns(plural))["items"]

    def delete(self, plural, name):
        return self.api.delete(self.t(plural), self._ns(plural), name)

    def patch(self, plural, name, body):
        return self.api.patch(self.t(plural), self._ns(plural), name, "application/merge-patch+json",
                              json.dumps(body).encode())[0]

    def gone(self, plural, name):
        try:
            self.get(plural, name)
        except ApiError as exc:
            return exc.code == 404
        return False

    def running(self, name):
        pod = self.get("pods", name)
        return pod if pod.get("status", {}).get("phase") == "Running" else None

    def unschedulable(self, name):
        for cond in self.get("pods", name).get("status", {}).get("conditions", []):
            if cond["type"] == "PodScheduled" and cond["status"] == "False" and cond.get("reason") == "Unschedulable":
                return cond["message"]
        return None

    def slices(self, node):
        return [s for s in self.list("resourceslices") if s["spec"].get("nodeName") == node]

    def claim_of(self, pod_name, claim="gpu"):
        statuses = self.get("pods", pod_name).get("status", {}).get("resourceClaimStatuses") or []
        return next((self.get("resourceclaims", s["resourceClaimName"]) for s in statuses if s["name"] == claim), None)


def gpu(node, index, numa=0, name="NVIDIA H200", memory=143771, **extra):
    uid = hashlib.sha256(("%s/%d" % (node, index)).encode()).hexdigest()
    entry = {"uuid": "GPU-%s-%s-%s-%s-%s" % (uid[:8], uid[8:12], uid[12:16], uid[16:20], uid[20:32]), "name": name,
             "pci_bus_id": "00000000:%02X:00.0" % (0x18 + 0x10 * index), "numa_node": numa, "memory_mib": memory,
             "mig_mode": "disabled", "index": index, "device_id": "0x233510DE"}
    entry.update(extra)
    return entry


def add_node(kube, name, gpus, backend="dra", allocatable=None):
    body = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {BACKEND_LABEL: backend, "lab-node": name},
                         "annotations": {GPUS_ANNOTATION: json.dumps(gpus)}},
            "status": {"capacity": {"cpu": "64", "memory": "1Ti", "pods": "110"},
                       "allocatable": dict({"cpu": "63", "memory": "1000Gi", "pods": "110"}, **(allocatable or {}))}}
    kube.create("nodes", body)
    wait_for(lambda: kube.slices(name), what="slice of %s" % name)


def template(name="gpu", count=1, selectors=None, constraints=None, **exactly):
    request = {"name": "gpu", "exactly": dict({"deviceClassName": "gpu.nvidia.com", "count": count}, **exactly)}
    if selectors:
        request["exactly"]["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    devices = {"requests": [request]}
    if constraints:
        devices["constraints"] = constraints
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": name},
            "spec": {"spec": {"devices": devices}}}


def pod(name, node, template_name=None, claim_name=None, limits=None):
    container = {"name": "ctr", "image": "nvcr.io/nvidia/cuda:12.8.0-base", "command": ["nvidia-smi", "-L"]}
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeSelector": {"lab-node": node}, "containers": [container]}}
    if template_name:
        body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template_name}]
        container["resources"] = {"claims": [{"name": "gpu"}]}
    if claim_name:
        body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    if limits:
        container["resources"] = {"limits": limits}
    return body


def devices_of(claim):
    return [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]]


# -- the kubelet plugin ----------------------------------------------------------------------------

def test_slices_published_republished_and_removed(lab):
    kube = Kube(lab.server, "dra-slices")
    gpus = [gpu("n-slices", 0, numa=0), gpu("n-slices", 1, numa=None)]
    add_node(kube, "n-slices", gpus)
    (item,) = kube.slices("n-slices")
    assert item["metadata"]["name"].startswith("n-slices-gpu.nvidia.com-")
    assert item["metadata"]["ownerReferences"][0]["kind"] == "Node"
    assert item["spec"]["driver"] == "gpu.nvidia.com" and item["spec"]["nodeName"] == "n-slices"
    assert item["spec"]["pool"] == {"name": "n-slices", "generation": 1, "resourceSliceCount": 1}
    dev0, dev1 = item["spec"]["devices"]
    assert dev0["name"] == "gpu-0" and dev1["name"] == "gpu-1"
    attrs = dev0["attributes"]
    assert attrs["type"] == {"string": "gpu"} and attrs["uuid"] == {"string": gpus[0]["uuid"]}
    assert attrs["productName"] == {"string": "NVIDIA H200"} and attrs["brand"] == {"string": "Nvidia"}
    assert attrs["architecture"] == {"string": "Hopper"}
    assert attrs["cudaComputeCapability"] == {"version": "9.0.0"}
    assert re.match(r"^\d+\.\d+\.\d+$", attrs["driverVersion"]["version"])
    assert attrs["resource.kubernetes.io/pciBusID"] == {"string": "0000:18:00.0"}
    assert attrs["resource.kubernetes.io/pcieRoot"] == {"string": "pci0000:18"}
    assert attrs["resource.kubernetes.io/numaNode"] == {"int": 0}
    assert "resource.kubernetes.io/numaNode" not in dev1["attributes"]  # numa_node null: omitted
    assert dev0["capacity"] == {"memory": {"value": "143771Mi"}}

    # A change republishes (generation bumps); MIG devices replace their parent.
    mig = gpu("n-slices", 1, mig_mode="enabled", mig_devices=[
        {"uuid": "MIG-aaaa", "profile": "1g.18gb", "memory_mib": 16384},
        {"uuid": "MIG-bbbb", "profile": "3g.71gb", "memory_mib": 72704}])
    kube.patch("nodes", "n-slices", {"metadata": {"annotations": {GPUS_ANNOTATION: json.dumps([gpus[0], mig])}}})
    item = wait_for(lambda: next((s for s in kube.slices("n-slices") if s["spec"]["pool"]["generation"] == 2), None),
                    what="republished slice")
    names = [d["name"] for d in item["spec"]["devices"]]
    assert names == ["gpu-0", "gpu-1-mig-1g18gb-0", "gpu-1-mig-3g71gb-1"]
    mig_attrs = item["spec"]["devices"][1]["attributes"]
    assert mig_attrs["type"] == {"string": "mig"} and mig_attrs["parentUUID"] == {"string": mig["uuid"]}
    assert mig_attrs["profile"] == {"string": "1g.18gb"} and mig_attrs["uuid"] == {"string": "MIG-aaaa"}

    # Node reboot: NotReady removes the slice, Ready publishes it again.
    lab.server.scenario["nodes_not_ready"] = ["n-slices"]
    wait_for(lambda: not kube.slices("n-slices"), what="slice removed while NotReady")
    lab.server.scenario["nodes_not_ready"] = []
    wait_for(lambda: kube.slices("n-slices"), what="slice back after Ready")
    kube.delete("nodes", "n-slices")
    wait_for(lambda: not kube.slices("n-slices"), what="slice removed with the node")


def test_device_plugin_nodes_publish_nothing(lab):
    kube = Kube(lab.server, "dra-plugin")
    kube.create("nodes", {"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": "n-plugin", "labels": {BACKEND_LABEL: "device-plugin"},
                                       "annotations": {GPUS_ANNOTATION: json.dumps([gpu("n-plugin", 0)])}}})
    time.sleep(1.0)
    assert not kube.slices("n-plugin")


# -- claims ----------------------------------------------------------------------------------------

def test_template_claim_lifecycle(lab):
    kube = Kube(lab.server, "dra-template")
    add_node(kube, "n-template", [gpu("n-template", 0), gpu("n-template", 1)])
    kube.create("resourceclaimtemplates", template())
    created = kube.create("pods", pod("app", "n-template", template_name="gpu"))
    running = wait_for(lambda: kube.running("app"), what="pod running")
    assert running["spec"]["nodeName"] == "n-template"
    (entry,) = running["status"]["resourceClaimStatuses"]
    assert entry["name"] == "gpu" and re.match(r"^app-gpu-[a-z0-9]{5}$", entry["resourceClaimName"])
    claim = kube.get("resourceclaims", entry["resourceClaimName"])
    owner = claim["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "Pod" and owner["uid"] == created["metadata"]["uid"] and owner["controller"]
    assert claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpu"
    assert FINALIZER in claim["metadata"]["finalizers"]
    allocation = claim["status"]["allocation"]
    (result,) = allocation["devices"]["results"]
    assert result == {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "n-template", "device": "gpu-0"}
    assert allocation["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n-template"]}]}]}
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "app", "uid": created["metadata"]["uid"]}]
    key = ("dra-template", entry["resourceClaimName"])
    stamps = wait_for(lambda: "pod_started" in lab.server.claim_timings.get(key, {}) and lab.server.claim_timings[key],
                      what="timings")
    assert stamps["created"] <= stamps["allocated"] <= stamps["prepared"] <= stamps["pod_started"]

    kube.delete("pods", "app")
    wait_for(lambda: kube.gone("resourceclaims", entry["resourceClaimName"]), what="generated claim deleted")
    stamps = wait_for(lambda: "deleted" in lab.server.claim_timings[key] and lab.server.claim_timings[key])
    assert stamps["pod_started"] <= stamps["deallocated"] <= stamps["deleted"], stamps


def test_second_pod_waits_for_the_only_gpu(lab):
    kube = Kube(lab.server, "dra-one")
    add_node(kube, "n-one", [gpu("n-one", 0)])
    kube.create("resourceclaimtemplates", template())
    kube.create("pods", pod("first", "n-one", template_name="gpu"))
    wait_for(lambda: kube.running("first"), what="first running")
    kube.create("pods", pod("second", "n-one", template_name="gpu"))
    message = wait_for(lambda: kube.unschedulable("second"), what="second unschedulable")
    assert "cannot allocate all claims" in message and message.startswith("0/")
    assert kube.claim_of("second") is not None and not kube.claim_of("second").get("status", {}).get("allocation")
    kube.delete("pods", "first")
    wait_for(lambda: kube.running("second"), what="second running after first went")
    assert devices_of(kube.claim_of("second")) == ["gpu-0"]


def test_numa_match_attribute(lab):
    kube = Kube(lab.server, "dra-numa")
    add_node(kube, "n-numa", [gpu("n-numa", 0, numa=0), gpu("n-numa", 1, numa=1), gpu("n-numa", 2, numa=0),
                              gpu("n-numa", 3, numa=1)])
    kube.create("resourceclaimtemplates", template("numa0", selectors=[
        "device.attributes['resource.kubernetes.io'].numaNode == 0"]))
    kube.create("resourceclaimtemplates", template("pair", count=2, constraints=[
        {"requests": ["gpu"], "matchAttribute": "resource.kubernetes.io/numaNode"}]))
    kube.create("resourceclaimtemplates", template("three", count=3, constraints=[
        {"matchAttribute": "resource.kubernetes.io/numaNode"}]))
    kube.create("pods", pod("one", "n-numa", template_name="numa0"))
    wait_for(lambda: kube.running("one"))
    assert devices_of(kube.claim_of("one")) == ["gpu-0"]
    kube.create("pods", pod("pair", "n-numa", template_name="pair"))
    wait_for(lambda: kube.running("pair"))
    assert devices_of(kube.claim_of("pair")) == ["gpu-1", "gpu-3"]  # gpu-1 + gpu-2 would straddle NUMA nodes
    kube.create("pods", pod("three", "n-numa", template_name="three"))
    assert "cannot allocate all claims" in wait_for(lambda: kube.unschedulable("three"))


def test_extended_resource_through_device_class(lab):
    kube = Kube(lab.server, "dra-extres")
    # The node advertises device-plugin GPUs too: on a DRA node they must not count.
    add_node(kube, "n-extres", [gpu("n-extres", 0), gpu("n-extres", 1)], allocatable={"nvidia.com/gpu": "8"})
    created = kube.create("pods", pod("plain", "n-extres", limits={"nvidia.com/gpu": "1"}))
    running = wait_for(lambda: kube.running("plain"), what="plain GPU pod running")
    ext = running["status"]["extendedResourceClaimStatus"]
    assert ext["requestMappings"] == [{"containerName": "ctr", "resourceName": "nvidia.com/gpu",
                                       "requestName": "container-0-request-0"}]
    assert re.match(r"^plain-extended-resources-[a-z0-9]{5}$", ext["resourceClaimName"])
    claim = kube.get("resourceclaims", ext["resourceClaimName"])
    assert claim["metadata"]["annotations"][EXTENDED_ANNOTATION] == "true"
    assert claim["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.nvidia.com"
    assert devices_of(claim) == ["gpu-0"]
    kube.create("pods", pod("greedy", "n-extres", limits={"nvidia.com/gpu": "2"}))
    assert "cannot allocate all claims" in wait_for(lambda: kube.unschedulable("greedy"))
    kube.delete("pods", "plain")
    wait_for(lambda: kube.gone("resourceclaims", ext["resourceClaimName"]), what="extended claim deleted")
    wait_for(lambda: kube.running("greedy"), what="greedy running on both GPUs")


def test_shared_claim_and_first_available(lab):
    kube = Kube(lab.server, "dra-shared")
    add_node(kube, "n-shared", [gpu("n-shared", 0), gpu("n-shared", 1)])
    kube.create("resourceclaims", {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                   "metadata": {"name": "shared"}, "spec": {"devices": {"requests": [
                                       {"name": "gpu", "firstAvailable": [
                                           {"name": "four", "deviceClassName": "gpu.nvidia.com", "count": 4},
                                           {"name": "one", "deviceClassName": "gpu.nvidia.com", "count": 1}]}]}}})
    kube.create("pods", pod("a", "n-shared", claim_name="shared"))
    kube.create("pods", pod("b", "n-shared", claim_name="shared"))
    wait_for(lambda: kube.running("a") and kube.running("b"), what="both pods running")
    claim = kube.get("resourceclaims", "shared")
    assert claim["status"]["allocation"]["devices"]["results"][0]["request"] == "gpu/one"
    assert sorted(r["name"] for r in claim["status"]["reservedFor"]) == ["a", "b"]
    kube.delete("pods", "a")
    wait_for(lambda: [r["name"] for r in kube.get("resourceclaims", "shared")["status"].get("reservedFor", [])] == ["b"])
    assert kube.get("resourceclaims", "shared")["status"]["allocation"]
    kube.delete("pods", "b")
    wait_for(lambda: not kube.get("resourceclaims", "shared").get("status", {}).get("allocation"), what="deallocated")
    kube.delete("resourceclaims", "shared")  # finalizer gone with the allocation: deleted at once
    wait_for(lambda: kube.gone("resourceclaims", "shared"))


def test_missing_claim_and_bad_cel(lab):
    kube = Kube(lab.server, "dra-bad")
    add_node(kube, "n-bad", [gpu("n-bad", 0)])
    kube.create("pods", pod("orphan", "n-bad", claim_name="nope"))
    assert 'resourceclaim "nope" not found' in wait_for(lambda: kube.unschedulable("orphan"))
    kube.create("resourceclaimtemplates", template("bad", selectors=["device.attributes['gpu.nvidia.com'].x ? 1 : 2"]))
    kube.create("pods", pod("bad", "n-bad", template_name="bad"))
    message = wait_for(lambda: kube.unschedulable("bad"))
    assert "cannot allocate all claims: CEL: unsupported construct" in message and "ternary" in message
    kube.create("resourceclaimtemplates", template("missing-key", selectors=[
        "device.attributes['gpu.nvidia.com'].noSuchAttribute == 1"]))
    kube.create("pods", pod("missing-key", "n-bad", template_name="missing-key"))
    assert "no such key: noSuchAttribute" in wait_for(lambda: kube.unschedulable("missing-key"))


def test_device_taints(lab):
    kube = Kube(lab.server, "dra-taints")
    add_node(kube, "n-taint", [gpu("n-taint", 0), gpu("n-taint", 1)])
    kube.create("devicetaintrules", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
                                     "metadata": {"name": "gpu0-maintenance"},
                                     "spec": {"deviceSelector": {"driver": "gpu.nvidia.com", "pool": "n-taint",
                                                                 "device": "gpu-0"},
                                              "taint": {"key": "maintenance", "value": "true", "effect": "NoSchedule"}}})
    kube.create("resourceclaimtemplates", template())
    kube.create("resourceclaimtemplates", template("tolerant", tolerations=[
        {"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}]))
    kube.create("pods", pod("first", "n-taint", template_name="gpu"))
    wait_for(lambda: kube.running("first"))
    assert devices_of(kube.claim_of("first")) == ["gpu-1"]  # gpu-0 is tainted
    kube.create("pods", pod("second", "n-taint", template_name="gpu"))
    assert "cannot allocate all claims" in wait_for(lambda: kube.unschedulable("second"))
    kube.create("pods", pod("tolerant", "n-taint", template_name="tolerant"))
    wait_for(lambda: kube.running("tolerant"))
    assert devices_of(kube.claim_of("tolerant")) == ["gpu-0"]

    # NoExecute on gpu-1 evicts the pod using it.
    first_claim = kube.claim_of("first")["metadata"]["name"]
    kube.create("devicetaintrules", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
                                     "metadata": {"name": "gpu1-broken"},
                                     "spec": {"deviceSelector": {"deviceClassName": "gpu.nvidia.com", "pool": "n-taint",
                                                                 "device": "gpu-1"},
                                              "taint": {"key": "gpu.nvidia.com/xid", "value": "79",
                                                        "effect": "NoExecute"}}})
    wait_for(lambda: kube.gone("pods", "first"), what="first evicted")
    wait_for(lambda: kube.gone("resourceclaims", first_claim), what="evicted pod's claim deleted")
    assert kube.running("tolerant")  # gpu-0 has no NoExecute taint

    def settled():
        conds = kube.get("devicetaintrules", "gpu1-broken").get("status", {}).get("conditions", [])
        return next((c for c in conds if c["type"] == "EvictionInProgress" and c["status"] == "False"), None)
    assert wait_for(settled, what="EvictionInProgress=False")["reason"] == "Completed"
    assert kube.get("pods", "second")["spec"].get("nodeName") is None  # gpu-1 is now NoExecute-tainted
    for name in ("gpu0-maintenance", "gpu1-broken"):
        kube.delete("devicetaintrules", name)
    wait_for(lambda: kube.running("second"), what="second runs once the taints are gone")


# -- fault injection on the DRA path ---------------------------------------------------------------

def test_faults_allocation_failure_leak_and_plugin_restart(lab):
    engine = lab.server.fault_engine
    kube = Kube(lab.server, "dra-faults")
    add_node(kube, "n-faults", [gpu("n-faults", 0)])
    kube.create("resourceclaimtemplates", template())
    # claim_allocation_failure at rate 1: the pod stays Pending with the injected reason.
    engine.add({"claim_allocation_failure": {"rate": 1}})
    kube.create("pods", pod("unlucky", "n-faults", template_name="gpu"))
    message = wait_for(lambda: kube.unschedulable("unlucky"), what="injected failure")
    assert "injected claim allocation failure" in message
    engine.remove()
    wait_for(lambda: kube.running("unlucky"), what="runs once the fault is gone")
    claim = kube.claim_of("unlucky")
    # claim_leak: the pod goes, its claim stays allocated and reserved.
    engine.add({"claim_leak": {}})
    kube.api.delete(kube.t("pods"), "dra-faults", "unlucky", {"gracePeriodSeconds": 0})
    wait_for(lambda: kube.gone("pods", "unlucky"), what="pod gone")
    time.sleep(1.5)
    leaked = kube.get("resourceclaims", claim["metadata"]["name"])
    assert leaked["status"].get("allocation") and leaked["status"].get("reservedFor")
    engine.remove()
    wait_for(lambda: kube.gone("resourceclaims", claim["metadata"]["name"]), what="claim cleaned after the leak ends")
    # dra_plugin_restart: the node's slices are withdrawn for the window, then republished.
    engine.add({"dra_plugin_restart": {"node": "n-faults", "seconds": 2}})
    wait_for(lambda: not kube.slices("n-faults"), what="slices withdrawn")
    wait_for(lambda: kube.slices("n-faults"), what="slices republished")
