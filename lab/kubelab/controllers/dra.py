# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Dynamic Resource Allocation in the lab: the NVIDIA GPU kubelet plugin, the claim controller, the
device-taint eviction controller, and the device allocator that the scheduler's ``DraScheduling`` uses.

* ``DraDriverController`` (the ``gpu.nvidia.com`` kubelet plugin of every node): a Node labelled
  ``kubelab.gpufleet.io/gpu-backend`` = ``dra`` or ``both`` that is Ready gets one ResourceSlice
  (``generateName <node>-gpu.nvidia.com-``, owned by the Node; pool = node name, generation bumped
  on every change) with a device ``gpu-<index>`` per GPU of the annotation
  ``kubelab.gpufleet.io/gpus`` (JSON list of ``{uuid, name, pci_bus_id, numa_node, memory_mib,
  mig_mode, index, device_id}``, optional ``mig_devices: [{uuid, profile, memory_mib}]`` and
  ``taints``), attributes as deviceinfo.go publishes them. With the driver's ``PassthroughSupport`` gate
  (``FEATURE_GATES`` of the ``nvidia-dra-driver-kubelet-plugin`` DaemonSet the operator renders) the
  plugin also publishes ``vfio`` devices: ``gpu-vfio-<n>`` for each GPU bound to vfio-pci (annotation
  ``kubelab.gpufleet.io/vfio-gpus``) and ``gpu-<index>-vfio`` for each GPU it can rebind (same
  ``pciBusID`` as ``gpu-<index>``). Nothing makes the two devices of one physical GPU mutually
  exclusive (26.7.0's double-allocation race): the canary's guard must serialize such claims.
  On a node annotated ``kubelab.gpufleet.io/cdi-specs: dra-plugin`` a Running kubelet plugin pod writes,
  once per pod, its CDI spec ``/var/run/cdi/k8s.gpu.nvidia.com-device.yaml`` (kind ``k8s.gpu.nvidia.com/device``,
  a device per GPU UUID) into the node's tree (``scenario["gpu_node_roots"]``). A GPU with ``mig_mode: enabled`` is
  published as its MIG devices (``gpu-<index>-mig-<profile>-<n>``, ``type: mig``) only. GFD's node
  labels ``nvidia.com/cuda.driver.major|minor|rev`` (else ``nvidia.com/cuda.driver-version.full``,
  else 580.95.05) give ``driverVersion``; ``cudaDriverVersion`` follows from the driver branch. Slices go
  when the node goes, leaves DRA or is not Ready, and come back when it is Ready again.
* ``ResourceClaimController`` (kube-controller-manager's resourceclaim controller): drops
  ``reservedFor`` entries of pods that are gone or finished, clears ``status.allocation`` of a claim
  reserved for nobody, deletes generated claims of such pods, and removes the
  ``resource.kubernetes.io/delete-protection`` finalizer of a deleted claim once deallocated.
* ``DeviceTaintEvictionController``: pods holding a device with an untolerated NoExecute taint (from
  a DeviceTaintRule or the slice) are marked DisruptionTarget and deleted; each rule's status gets
  an ``EvictionInProgress`` condition. ``tolerationSeconds`` is not honoured (tolerated for good).

``lab.claim_timings[(namespace, name)]`` holds monotonic seconds of ``created``, ``allocated``,
``prepare_started`` and ``prepared`` (the kubelet's NodePrepareResources call, from the kubelet seeing the pod
bound until the claim_latency prepare delay ends), ``driver_prepared`` (the plugin saw the pod on its
node), ``pod_started``, ``deallocated`` and ``deleted``.

Ground truth (``lab.claim_truth``, ``record_truth`` is a Store listener set up by LabServer): per claim,
keyed (namespace, claim name), or ("pod", namespace, pod name) for a pod refused by an injected failure
before any claim existed, ``{namespace, claim, pod, pod_uid, kind: template|extended|claim, created,
allocated, prepared, running, ready, deallocated, deleted, devices: [{driver, pool, device}], injected:
{allocation_delay, prepare_delay, allocation_failure, numa_violation, leak}}``; the times are wall clock
(RFC 3339 UTC, 9 fraction digits) taken when the store recorded the write (``prepared``: the kubelet's
NodePrepareResources over, just before its Running write). A MIG-enabled GPU whose annotation lists no
``mig_devices`` (node trees such as ``mig-h100``) is published with ``default_mig_devices``. The
``numa_violation`` fault makes the Allocator ignore a claim's ``matchAttribute`` numaNode constraint and
pick devices on different NUMA nodes when there are such (else it allocates normally).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import time

from kubelab.clone import clone
from kubelab import cel
from kubelab.controllers import Controller
from kubelab.controllers.common import (meta, node_ready, random_suffix, set_condition, spec, status, terminating,
                                        tolerates, write_status)
from kubelab.errors import ApiError

DRIVER = "gpu.nvidia.com"
BACKEND_LABEL = "kubelab.gpufleet.io/gpu-backend"
GPUS_ANNOTATION = "kubelab.gpufleet.io/gpus"
VFIO_ANNOTATION = "kubelab.gpufleet.io/vfio-gpus"
PLUGIN = "nvidia-dra-driver-kubelet-plugin"
CDI_SPEC_PATH = "var/run/cdi/k8s.gpu.nvidia.com-device.yaml"
CDI_ANNOTATION = "kubelab.gpufleet.io/cdi-specs"
DRIVER_VERSION_LABEL = "nvidia.com/cuda.driver-version.full"
DEFAULT_DRIVER_VERSION = "580.95.05"
FINALIZER = "resource.kubernetes.io/delete-protection"
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
EXTENDED_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
NO_FIT = "cannot allocate all claims"
NUMA_ATTRIBUTE = "resource.kubernetes.io/numaNode"
# productName fragment -> (architecture, CUDA compute capability)
_ARCH = (("GB200", "Blackwell", "10.0"), ("B200", "Blackwell", "10.0"), ("H200", "Hopper", "9.0"),
         ("H100", "Hopper", "9.0"), ("H800", "Hopper", "9.0"), ("L40", "Ada Lovelace", "8.9"),
         ("L4", "Ada Lovelace", "8.9"), ("A100", "Ampere", "8.0"), ("A30", "Ampere", "8.0"),
         ("A10", "Ampere", "8.6"), ("T4", "Turing", "7.5"), ("V100", "Volta", "7.0"))
_CUDA = {580: "13.0.0", 575: "12.9.0", 570: "12.8.0", 565: "12.7.0", 560: "12.6.0", 555: "12.5.0", 550: "12.4.0"}


def timings(lab, namespace: str, name: str) -> dict:
    table = getattr(lab, "claim_timings", None)
    if table is None:
        table = lab.claim_timings = {}
    return table.setdefault((namespace, name), {})


def mark(lab, namespace: str, name: str, what: str, once: bool = True) -> None:
    entry = timings(lab, namespace, name)
    if not once or what not in entry:
        entry[what] = time.monotonic()


# -- ground truth per claim (lab.claim_truth), in wall-clock time -------------------------------

TRUTH_TIMES = ("pod_created", "created", "allocated", "prepared", "running", "ready", "deallocated", "deleted",
               "pod_deleted")
# What a watching client could first know, and when (record_delivery): the lab's watch streams send an event some
# milliseconds after it was recorded (one interpreter runs the streams beside every controller), so a client's
# time can be later than the commit by that much; ``delivered`` is the moment the first stream sent the evidence.
DELIVERED_TIMES = ("created", "allocated", "ready")


def rfc3339_ns(ns: int | None = None) -> str:
    """``time.time_ns()`` as RFC 3339 UTC with 9 fraction digits (2026-01-02T03:04:05.123456789Z)."""
    ns = time.time_ns() if ns is None else ns
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 1_000_000_000)) + ".%09dZ" % (ns % 1_000_000_000)


def truth(lab, key: tuple) -> dict:
    """The ground-truth entry of ``key``: (namespace, claim name), or ("pod", namespace, pod name) for a pod
    refused before any claim of it existed."""
    table = getattr(lab, "claim_truth", None)
    if table is None:
        table = lab.claim_truth = {}
    entry = table.get(key)
    if entry is None:
        entry = {"namespace": key[-2], "claim": key[-1] if len(key) == 2 else None,
                 "pod": key[-1] if len(key) == 3 else None, "pod_uid": None,
                 "kind": "extended" if len(key) == 3 else "claim"}
        entry.update({name: None for name in TRUTH_TIMES})
        entry["delivered"] = {name: None for name in DELIVERED_TIMES}
        entry.update(devices=[], injected={"allocation_delay": 0.0, "prepare_delay": 0.0, "allocation_failure": False,
                                           "numa_violation": False, "leak": False})
        entry = table.setdefault(key, entry)  # one entry when a stream and a listener make it at once
    return entry


def stamp(lab, key: tuple, what: str, once: bool = True, at_ns: int | None = None) -> None:
    entry = truth(lab, key)
    if not once or entry.get(what) is None:
        entry[what] = rfc3339_ns(at_ns)


def inject(lab, key: tuple, what: str, value) -> None:
    truth(lab, key)["injected"][what] = value


def truth_list(lab) -> list:
    """``lab.claim_truth`` as GET /kubelab/claims/truth serves it: sorted by namespace, claim (or pod)."""
    entries = list((getattr(lab, "claim_truth", None) or {}).values())
    return sorted(clone(entries), key=lambda e: (e["namespace"] or "", e["claim"] or "", e["pod"] or ""))


def _deliver(entry: dict | None, what: str, at: str) -> None:
    if entry is not None:
        delivered = entry["delivered"]
        if delivered[what] is None or at < delivered[what]:  # RFC 3339 with 9 digits: text order is time order
            delivered[what] = at


def record_delivery(lab, kind: str, obj: dict, at_ns: int) -> None:
    """A watch stream sends an event of ``obj`` now (``at_ns``): stamp ``delivered`` by the evidence a client
    takes from it, as the acceptance harness does (plugins/module_utils/phases/claim_lifecycle.py): any event of
    a claim or a pod status naming it shows the claim exists; a claim with an allocation, or its pod bound to a
    node (the scheduler writes the allocation before it binds), shows it allocated; the pod Ready, ready."""
    if kind not in ("ResourceClaim", "Pod"):
        return
    at = rfc3339_ns(at_ns)
    ns = meta(obj).get("namespace")
    # The claim's entry is made here when the stream is first: the store wakes the streams before it calls
    # its listeners (record_truth), so a stream can send a new claim before its entry exists; skipping it
    # would stamp ``created`` at the next event that shows the claim (the pod's status, ms later).
    if kind == "ResourceClaim":
        entry = truth(lab, (ns, meta(obj).get("name")))
        _deliver(entry, "created", at)
        if status(obj).get("allocation"):
            _deliver(entry, "allocated", at)
        return
    table = getattr(lab, "claim_truth", None) or {}
    pod_status = status(obj)
    named = [e.get("resourceClaimName") for e in pod_status.get("resourceClaimStatuses") or []]
    named.append((pod_status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName"))
    for name in named:
        if name:
            _deliver(truth(lab, (ns, name)), "created", at)
    keys = (getattr(lab, "claim_truth_pods", None) or {}).get(meta(obj).get("uid")) or ()
    bound = bool((obj.get("spec") or {}).get("nodeName"))
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in pod_status.get("conditions") or [])
    for key in keys:
        entry = table.get(key)
        if bound:
            _deliver(entry, "created", at)
            _deliver(entry, "allocated", at)
        if ready:
            _deliver(entry, "ready", at)


def record_truth(lab, event_type: str, kind: str, obj: dict, at_ns: int | None = None) -> None:
    """Called for every store event: claim created / allocated / deallocated / deleted, and running / ready
    of the pods holding claims, stamped ``at_ns`` (``Store.event_ns``: when the event entered the event log,
    so before any watch delivered it; now when not given)."""
    if kind == "Pod":
        ns, uid = meta(obj).get("namespace"), meta(obj).get("uid")
        if event_type == "ADDED":
            created = getattr(lab, "pod_created", None)
            if created is None:
                created = lab.pod_created = {}
            created[uid] = time.time()
            stamps = getattr(lab, "pod_created_at", None)
            if stamps is None:
                stamps = lab.pod_created_at = {}
            stamps[uid] = rfc3339_ns(at_ns)  # the claims' truth takes it once a claim names the pod
        keys = (getattr(lab, "claim_truth_pods", None) or {}).get(uid) or ()
        if event_type == "DELETED":
            for key in keys:
                stamp(lab, key, "pod_deleted", at_ns=at_ns)
            (getattr(lab, "pod_created", None) or {}).pop(uid, None)
            (getattr(lab, "pod_created_at", None) or {}).pop(uid, None)
            return
        if not keys:
            return
        running = status(obj).get("phase") == "Running"
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status(obj).get("conditions") or [])
        for key in keys:
            if running:
                stamp(lab, key, "running", at_ns=at_ns)
            if ready:
                stamp(lab, key, "ready", at_ns=at_ns)
        return
    if kind != "ResourceClaim":
        return
    key = (meta(obj).get("namespace"), meta(obj).get("name"))
    entry = truth(lab, key)
    if event_type == "ADDED":
        stamp(lab, key, "created", at_ns=at_ns)
        created = getattr(lab, "claim_created", None)
        if created is None:
            created = lab.claim_created = {}
        created[key] = time.time()  # t0 of the claim_latency allocation delay
        annotations = meta(obj).get("annotations") or {}
        entry["kind"] = ("extended" if annotations.get(EXTENDED_ANNOTATION) == "true"
                         else "template" if annotations.get(POD_CLAIM_ANNOTATION) else "claim")
    if event_type == "DELETED":
        stamp(lab, key, "deleted", at_ns=at_ns)
        return
    owner = next((r for r in meta(obj).get("ownerReferences") or [] if r.get("kind") == "Pod"), None)
    reserved = next((r for r in status(obj).get("reservedFor") or [] if r.get("resource") == "pods"), None)
    ref = reserved or owner
    if ref is not None and entry["pod_uid"] is None:
        entry["pod"], entry["pod_uid"] = ref.get("name"), ref.get("uid")
        entry["pod_created"] = (getattr(lab, "pod_created_at", None) or {}).get(ref.get("uid"))
        pods = getattr(lab, "claim_truth_pods", None)
        if pods is None:
            pods = lab.claim_truth_pods = {}
        pods.setdefault(ref.get("uid"), []).append(key)
    results = ((status(obj).get("allocation") or {}).get("devices") or {}).get("results") or []
    if status(obj).get("allocation"):
        if entry["allocated"] is None:
            stamp(lab, key, "allocated", at_ns=at_ns)
            entry["devices"] = [{"driver": r.get("driver"), "pool": r.get("pool"), "device": r.get("device")}
                                for r in results]
    elif entry["allocated"] is not None:
        stamp(lab, key, "deallocated", at_ns=at_ns)


def semver(text: str) -> str:
    parts = [str(int(p)) if p.isdigit() else p for p in str(text).split(".")][:3]
    return ".".join(parts + ["0"] * (3 - len(parts)))


def backend(node: dict) -> str:
    return (meta(node).get("labels") or {}).get(BACKEND_LABEL, "")


# -- the kubelet plugin ----------------------------------------------------------------------------

def _bdf(text: str) -> tuple[str, str]:
    """nvidia-smi's ``00000000:18:00.0`` -> (``0000:18:00.0``, pcieRoot ``pci0000:18``)."""
    parts = str(text or "0000:00:00.0").lower().split(":")
    if len(parts) == 2:
        parts.insert(0, "0000")
    domain = parts[0][-4:].rjust(4, "0")
    return "%s:%s" % (domain, ":".join(parts[1:])), "pci%s:%s" % (domain, parts[1])


def _attributes(gpu: dict, kind: str, versions: dict) -> dict:
    name = str(gpu.get("name") or "")
    arch, compute = next(((a, c) for frag, a, c in _ARCH if frag in name.upper()), ("Unknown", "0.0"))
    bus_id, root = _bdf(gpu.get("pci_bus_id"))
    attrs = {"type": {"string": kind}, "uuid": {"string": str(gpu.get("uuid", ""))}, "productName": {"string": name},
             "brand": {"string": "Nvidia"}, "architecture": {"string": arch},
             "cudaComputeCapability": {"version": semver(compute)}, "driverVersion": {"version": versions["driver"]},
             "cudaDriverVersion": {"version": versions["cuda"]},
             "resource.kubernetes.io/pciBusID": {"string": bus_id}, "resource.kubernetes.io/pcieRoot": {"string": root}}
    if isinstance(gpu.get("numa_node"), int) and gpu["numa_node"] >= 0:
        attrs["resource.kubernetes.io/numaNode"] = {"int": gpu["numa_node"]}
    return attrs


def _vfio_device(name: str, gpu: dict, iommufd: bool) -> dict:
    bus_id, root = _bdf(gpu.get("pci_bus_id"))
    attrs = {"type": {"string": "vfio"}, "productName": {"string": str(gpu.get("name") or "")},
             "deviceID": {"string": str(gpu.get("device_id") or "")}, "vendorID": {"string": "0x10de"},
             "iommuFDEnabled": {"bool": bool(iommufd)},
             "resource.kubernetes.io/pciBusID": {"string": bus_id}, "resource.kubernetes.io/pcieRoot": {"string": root}}
    if isinstance(gpu.get("numa_node"), int) and gpu["numa_node"] >= 0:
        attrs["resource.kubernetes.io/numaNode"] = {"int": gpu["numa_node"]}
    return {"name": name, "attributes": attrs, "capacity": {}}


def default_mig_devices(gpu: dict) -> list:
    """The MIG instances of a MIG-enabled GPU whose annotation lists none (``kubelab.gpunodes`` only knows
    ``mig_mode``, e.g. the ``mig-h100`` node tree): two half-GPU instances ``3g.<half>gb``, as the tree's
    nvidia-ctk spec (devices 0:0 and 0:1) has, with UUIDs derived from the parent's."""
    memory = int(gpu.get("memory_mib") or 0)
    half = memory // 2
    profile = "3g.%dgb" % max(1, round(half / 1024))
    out = []
    for number in range(2):
        digest = hashlib.sha256(("%s/mig/%d" % (gpu.get("uuid", ""), number)).encode()).hexdigest()
        uuid = "MIG-%s-%s-%s-%s-%s" % (digest[:8], digest[8:12], digest[12:16], digest[16:20], digest[20:32])
        out.append({"uuid": uuid, "profile": profile, "memory_mib": half})
    return out


def node_devices(node: dict, passthrough: bool = False) -> list:
    """The devices the plugin publishes for ``node`` (raises ValueError on a malformed annotation);
    with ``passthrough`` (the PassthroughSupport gate) also the ``vfio`` devices."""
    raw = (meta(node).get("annotations") or {}).get(GPUS_ANNOTATION) or "[]"
    gpus = json.loads(raw)
    if not isinstance(gpus, list):
        raise ValueError("%s is not a list" % GPUS_ANNOTATION)
    labels = meta(node).get("labels") or {}
    gfd = [labels.get("nvidia.com/cuda.driver.%s" % part) for part in ("major", "minor", "rev")]
    driver = semver(".".join(p for p in gfd if p) if all(p and p.isdigit() for p in gfd[:2])
                    else labels.get(DRIVER_VERSION_LABEL) or DEFAULT_DRIVER_VERSION)
    versions = {"driver": driver, "cuda": _CUDA.get(int(driver.split(".", 1)[0]), "12.0.0")}
    devices = []
    for position, gpu in enumerate(gpus):
        index = int(gpu.get("index", position))
        if str(gpu.get("mig_mode", "")).lower() == "enabled":
            for number, mig in enumerate(gpu.get("mig_devices") or default_mig_devices(gpu)):
                profile = str(mig.get("profile", ""))
                attrs = _attributes(gpu, "mig", versions)
                attrs.update(uuid={"string": str(mig.get("uuid", ""))}, parentUUID={"string": str(gpu.get("uuid", ""))},
                             profile={"string": profile})
                short = "".join(c for c in profile.lower() if c.isalnum())
                device = {"name": "gpu-%d-mig-%s-%d" % (index, short, number), "attributes": attrs, "capacity": {}}
                if mig.get("memory_mib"):
                    device["capacity"]["memory"] = {"value": "%dMi" % int(mig["memory_mib"])}
                devices.append(device)
            continue
        device = {"name": "gpu-%d" % index, "attributes": _attributes(gpu, "gpu", versions),
                  "capacity": {"memory": {"value": "%dMi" % int(gpu.get("memory_mib") or 0)}}}
        if gpu.get("taints"):
            device["taints"] = clone(gpu["taints"])
        devices.append(device)
        if passthrough:
            devices.append(_vfio_device("gpu-%d-vfio" % index, gpu, True))
    if passthrough:
        vfio = json.loads((meta(node).get("annotations") or {}).get(VFIO_ANNOTATION) or "[]")
        if not isinstance(vfio, list):
            raise ValueError("%s is not a list" % VFIO_ANNOTATION)
        for number, gpu in enumerate(vfio):
            devices.append(_vfio_device("gpu-vfio-%d" % number, gpu, True))
    return devices


def passthrough_gate(daemonsets: list) -> bool:
    """Whether the kubelet plugin DaemonSet runs with ``PassthroughSupport=true`` in FEATURE_GATES."""
    for ds in daemonsets:
        if meta(ds).get("name") != PLUGIN or terminating(ds):
            continue
        for container in ((spec(ds).get("template") or {}).get("spec") or {}).get("containers") or []:
            for env in container.get("env") or []:
                if env.get("name") == "FEATURE_GATES" and "PassthroughSupport=true" in str(env.get("value", "")).split(","):
                    return True
    return False


def cdi_spec_text(node: dict) -> str:
    """The kubelet plugin's CDI spec for ``node``'s GPUs (JSON is YAML)."""
    gpus = json.loads((meta(node).get("annotations") or {}).get(GPUS_ANNOTATION) or "[]")
    devices = [{"name": str(g.get("uuid")), "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia%d" % int(g.get("index", i))}]}}
               for i, g in enumerate(gpus) if g.get("uuid")]
    return json.dumps({"cdiVersion": "0.5.0", "kind": "k8s.gpu.nvidia.com/device", "devices": devices,
                       "containerEdits": {"deviceNodes": [{"path": "/dev/nvidiactl"}, {"path": "/dev/nvidia-uvm"}]}},
                      indent=2) + "\n"


class DraDriverController(Controller):
    resync_seconds = 1.0

    def __init__(self, lab):
        super().__init__(lab)
        self.nodes = self.rtype("", "v1", "nodes")
        self.slices = self.rtype("resource.k8s.io", "v1", "resourceslices")
        self.claims = self.rtype("resource.k8s.io", "v1", "resourceclaims")
        self.pods = self.rtype("", "v1", "pods")
        self.daemonsets = self.rtype("apps", "v1", "daemonsets")
        self.cdi_written: set = set()

    def reconcile(self) -> None:
        nodes = {meta(n)["name"]: n for n in self.api.list(self.nodes, None, shared=True)["items"]}
        passthrough = passthrough_gate(self.api.list(self.daemonsets, None, shared=True)["items"]) if self.daemonsets else False
        self._cdi_specs(nodes)
        mine: dict = {}
        for item in self.api.list(self.slices, None, shared=True)["items"]:
            if spec(item).get("driver") == DRIVER and spec(item).get("nodeName"):
                mine.setdefault(spec(item)["nodeName"], []).append(item)
        serving = set()
        for name, node in nodes.items():
            if backend(node) not in ("dra", "both") or not node_ready(node) or terminating(node):
                continue
            if getattr(self.lab, "fault_active", None) and self.lab.fault_active("dra_plugin_restart", name):
                continue  # fault injection: the plugin is restarting, its slices are withdrawn

            try:
                devices = node_devices(node, passthrough)
            except (ValueError, TypeError, AttributeError) as exc:
                problem = "DraDriverController: node %s: bad %s: %s" % (name, GPUS_ANNOTATION, exc)
                if problem not in self.lab.controller_errors:
                    self.lab.controller_errors.append(problem)
                continue
            serving.add(name)
            self._publish(node, devices, mine.get(name, []))
        for name, items in mine.items():
            if name not in serving:
                for item in items:
                    self._delete(item)
        self._prepared(nodes, serving)

    def _publish(self, node: dict, devices: list, existing: list) -> None:
        name = meta(node)["name"]
        keep = existing[0] if existing else None
        for extra in existing[1:]:
            self._delete(extra)
        if keep is None:
            body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                    "metadata": {"generateName": "%s-%s-" % (name, DRIVER),
                                 "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name,
                                                      "uid": meta(node)["uid"], "controller": True}]},
                    "spec": {"driver": DRIVER, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                             "nodeName": name, "devices": devices}}
            self.api.create(self.slices, None, body, field_manager="kubelet")
            return
        pool = spec(keep).get("pool") or {}
        _keep_time_added(spec(keep).get("devices") or [], devices)
        if spec(keep).get("devices") == devices and pool.get("name") == name:
            return
        body = clone(keep)
        body["spec"].update(devices=devices, pool={"name": name, "generation": int(pool.get("generation") or 0) + 1,
                                                   "resourceSliceCount": 1})
        self.api.update(self.slices, None, meta(keep)["name"], body, field_manager="kubelet")

    def _cdi_specs(self, nodes: dict) -> None:
        """A Running kubelet plugin pod writes its CDI spec into its node's tree once (annotated nodes)."""
        roots = (getattr(self.lab, "scenario", None) or {}).get("gpu_node_roots") or {}
        if not roots:
            return
        for pod in self.api.list(self.pods, None, label_selector="app=" + PLUGIN, shared=True)["items"]:
            node_name, uid = spec(pod).get("nodeName"), meta(pod).get("uid")
            if status(pod).get("phase") != "Running" or uid in self.cdi_written or node_name not in roots or node_name not in nodes:
                continue
            if (meta(nodes[node_name]).get("annotations") or {}).get(CDI_ANNOTATION) != "dra-plugin":
                continue
            path = os.path.join(roots[node_name], CDI_SPEC_PATH)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(cdi_spec_text(nodes[node_name]))
            self.cdi_written.add(uid)

    def _delete(self, item: dict) -> None:
        try:
            self.api.delete(self.slices, None, meta(item)["name"], {"preconditions": {"uid": meta(item)["uid"]}})
        except ApiError as exc:
            if exc.code not in (404, 409):
                raise

    def _prepared(self, nodes: dict, serving: set) -> None:
        """NodePrepareResources: a claim of ours reserved for a pod bound to a node we serve."""
        pods = {meta(p).get("uid"): p for p in self.api.list(self.pods, None, shared=True)["items"]}
        for claim in self.api.list(self.claims, None, shared=True)["items"]:
            results = (((status(claim).get("allocation") or {}).get("devices") or {}).get("results") or [])
            if not any(r.get("driver") == DRIVER for r in results):
                continue
            for ref in status(claim).get("reservedFor") or []:
                pod = pods.get(ref.get("uid"))
                if pod is not None and spec(pod).get("nodeName") in serving:
                    # the kubelet's NodePrepareResources call ends when its claim_latency "prepare" does: it marks
                    # "prepared"; the driver's side is ready here
                    mark(self.lab, meta(claim)["namespace"], meta(claim)["name"], "driver_prepared")
                    self._device_status(claim, results)

    def _device_status(self, claim: dict, results: list) -> None:
        """The claim's ``status.devices``: a Ready condition per allocated device whose health the driver
        reported (``lab.device_health``), as a driver reports what it knows of the devices it prepared."""
        health = getattr(self.lab, "device_health", None) or {}
        keys = [(r.get("driver"), r.get("pool"), r.get("device")) for r in results if r.get("driver") == DRIVER]
        if not any(key in health for key in keys):
            return
        reasons = {"Healthy": ("True", "DeviceHealthy", "the device reports healthy"),
                   "Unhealthy": ("False", "DeviceUnhealthy", "the driver reports the device unhealthy"),
                   "Unknown": ("Unknown", "HealthTimeout", "no health update from the driver within 30s")}
        current = {(d.get("driver"), d.get("pool"), d.get("device")): d for d in status(claim).get("devices") or []}
        devices = []
        for key in keys:
            entry = dict(current.get(key) or {"driver": key[0], "pool": key[1], "device": key[2]})
            if key in health:
                state, reason, message = reasons[health[key]]
                entry["conditions"] = set_condition(entry.get("conditions"), "Ready", state, reason, message)
            devices.append(entry)
        if devices != (status(claim).get("devices") or []):
            new_status = clone(status(claim))
            new_status["devices"] = devices
            write_status(self.api, self.claims, claim, new_status, DRIVER)


def _keep_time_added(published: list, devices: list) -> None:
    """Carry the server-set ``timeAdded`` of the published device taints into ``devices`` (in place).

    The API server stamps a device taint's ``timeAdded`` when it is unset; without this a slice
    with taints would compare unequal on every pass and be republished (its pool generation bumped).
    """
    stamps = {}
    for device in published:
        for taint in device.get("taints") or []:
            key = (device.get("name"), taint.get("key"), taint.get("value"), taint.get("effect"))
            if taint.get("timeAdded"):
                stamps[key] = taint["timeAdded"]
    for device in devices:
        for taint in device.get("taints") or []:
            key = (device.get("name"), taint.get("key"), taint.get("value"), taint.get("effect"))
            if not taint.get("timeAdded") and key in stamps:
                taint["timeAdded"] = stamps[key]


# -- devices, taints and the allocator -------------------------------------------------------------

class AllocationError(Exception):
    """The pod's claims cannot be allocated on a node; the message is the reason."""


class Unresolvable(Exception):
    """The pod cannot be scheduled anywhere yet (a missing claim or template)."""


class Dev:
    __slots__ = ("driver", "pool", "name", "device", "key", "env")

    def __init__(self, driver: str, pool: str, device: dict):
        self.driver, self.pool, self.name, self.device = driver, pool, device.get("name", ""), device
        self.key = (driver, pool, self.name)
        self.env = cel.device_env(driver, device)

    def attribute(self, qualified_name: str):
        domain, short = cel.qualified(self.driver, qualified_name)
        return self.env["attributes"][domain].get(short)


def selectors_match(selectors: list, dev: Dev) -> bool:
    for selector in selectors or []:
        expression = ((selector or {}).get("cel") or {}).get("expression")
        if expression is None:
            raise AllocationError("unsupported selector %s" % json.dumps(selector))
        if not cel.device_matches(expression, dev.env):
            return False
    return True


class DeviceView:
    """Slices, classes, claims and taint rules read once; shared by the allocator and the evictor."""

    def __init__(self, api, registry):
        def items(plural):
            return api.list(registry.get("resource.k8s.io", "v1", plural), None, shared=True)["items"]
        self.classes = {meta(c)["name"]: c for c in items("deviceclasses")}
        self.claims = {(meta(c)["namespace"], meta(c)["name"]): c for c in items("resourceclaims")}
        self.rules = items("devicetaintrules")
        self.by_node: dict = {}
        self.by_key: dict = {}
        shared = []
        for item in items("resourceslices"):
            pool = (spec(item).get("pool") or {}).get("name", "")
            devs = [Dev(spec(item).get("driver", ""), pool, d) for d in spec(item).get("devices") or []]
            for dev in devs:
                self.by_key[dev.key] = dev
            if spec(item).get("nodeName"):
                self.by_node.setdefault(spec(item)["nodeName"], []).extend(devs)
            elif spec(item).get("allNodes"):
                shared.extend(devs)
        self.shared = shared
        self.in_use = set()
        for claim in self.claims.values():
            self.in_use.update(claim_devices(claim))

    def devices(self, node: str) -> list:
        return self.by_node.get(node, []) + self.shared

    def taints(self, dev: Dev) -> list:
        """The device's taints: its own in the slice plus those of matching DeviceTaintRules."""
        found = [t for t in dev.device.get("taints") or [] if isinstance(t, dict)]
        for rule in self.rules:
            sel = spec(rule).get("deviceSelector") or {}
            wanted = (("driver", dev.driver), ("pool", dev.pool), ("device", dev.name))
            if any(sel.get(k) and sel[k] != v for k, v in wanted):
                continue
            if sel.get("deviceClassName"):
                cls = self.classes.get(sel["deviceClassName"])
                try:
                    if cls is None or not selectors_match(spec(cls).get("selectors"), dev):
                        continue
                except (cel.CelError, AllocationError):
                    continue
            taint = dict(spec(rule).get("taint") or {})
            taint["rule"] = meta(rule)["name"]
            found.append(taint)
        return found


def claim_devices(claim: dict) -> set:
    """(driver, pool, device) of a claim's allocation, admin-access results excluded."""
    results = ((status(claim).get("allocation") or {}).get("devices") or {}).get("results") or []
    return {(r.get("driver"), r.get("pool"), r.get("device")) for r in results if not r.get("adminAccess")}


def _alternatives(request: dict) -> list:
    if request.get("exactly") is not None:
        return [(request.get("name", ""), request["exactly"])]
    subs = request.get("firstAvailable") or []
    if not subs:
        raise AllocationError("request %s has neither exactly nor firstAvailable" % request.get("name"))
    return [("%s/%s" % (request.get("name", ""), s.get("name", "")), s) for s in subs]


class Allocator:
    """Picks devices of one node for a set of claims (their ``spec.devices``), all or nothing."""

    LIMIT = 20000  # combinations tried before giving up

    def __init__(self, view: DeviceView, node: str, violate=()):
        self.view, self.node = view, node
        self.devices = view.devices(node)
        self.tries = 0
        # fault numa_violation: indices of claim specs whose matchAttribute numaNode constraint is ignored and
        # whose devices are to span NUMA nodes when the node has such devices (else allocated normally)
        self.violate: set = set(violate)
        self.strict = False

    def candidates(self, wanted: dict) -> list:
        cls = self.view.classes.get(wanted.get("deviceClassName", ""))
        if cls is None:
            raise AllocationError("device class %s does not exist" % wanted.get("deviceClassName"))
        found = []
        for dev in self.devices:
            if not selectors_match(spec(cls).get("selectors"), dev) or not selectors_match(wanted.get("selectors"), dev):
                continue
            if any(t.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(wanted.get("tolerations"), t)
                   for t in self.view.taints(dev)):
                continue
            found.append(dev)
        return found

    def allocate(self, claim_specs: list) -> list | None:
        """Per claim spec: ``[(request name, exactly, Dev), ...]``; None when nothing fits."""
        slots = []
        for index, claim_spec in enumerate(claim_specs):
            for request in (claim_spec.get("devices") or {}).get("requests") or []:
                slots.append((index, _alternatives(request)))
        chosen: list = []
        found = False
        if self.violate:
            self.strict = True
            found = self._search(slots, 0, chosen, claim_specs)
            self.strict, self.tries = False, 0
            if not found:
                self.violate, chosen = set(), []
        if not found and not self._search(slots, 0, chosen, claim_specs):
            return None
        out: list = [[] for _spec in claim_specs]
        for index, name, wanted, dev in chosen:
            out[index].append((name, wanted, dev))
        return out

    def _search(self, slots: list, position: int, chosen: list, claim_specs: list) -> bool:
        if position == len(slots):
            return not self.strict or all(
                len({(dev.attribute(NUMA_ATTRIBUTE) or 0) for i, _n, _w, dev in chosen if i == index}) > 1
                for index in self.violate)
        index, alternatives = slots[position]
        used = {dev.key for _i, _n, w, dev in chosen if not w.get("adminAccess")}
        for name, wanted in alternatives:
            admin = bool(wanted.get("adminAccess"))
            devs = self.candidates(wanted)
            free = [d for d in devs if admin or (d.key not in used and d.key not in self.view.in_use)]
            if (wanted.get("allocationMode") or "ExactCount") == "All":
                combos = [free] if free and len(free) == len(devs) else []
            else:
                count = int(wanted.get("count") or 1)
                combos = itertools.combinations(free, count) if 0 < count <= len(free) else []
            for combo in combos:
                self.tries += 1
                if self.tries > self.LIMIT:
                    return False
                added = [(index, name, wanted, dev) for dev in combo]
                chosen.extend(added)
                if self._constraints_hold(claim_specs[index], [c for c in chosen if c[0] == index],
                                          index in self.violate) and \
                        self._search(slots, position + 1, chosen, claim_specs):
                    return True
                del chosen[len(chosen) - len(added):]
        return False

    @staticmethod
    def _constraints_hold(claim_spec: dict, picks: list, ignore_numa: bool = False) -> bool:
        for constraint in (claim_spec.get("devices") or {}).get("constraints") or []:
            if ignore_numa and constraint.get("matchAttribute") == NUMA_ATTRIBUTE:
                continue  # fault numa_violation
            names = constraint.get("requests") or []
            devs = [dev for _i, name, _w, dev in picks if not names or name in names or name.split("/")[0] in names]
            for field, distinct in (("matchAttribute", False), ("distinctAttribute", True)):
                attribute = constraint.get(field)
                if not attribute or not devs:
                    continue
                values = [dev.attribute(attribute) for dev in devs]
                if any(v is None for v in values):
                    return False
                keys = [v.key if isinstance(v, cel.Semver) else v for v in values]
                if (len(set(keys)) != len(keys)) if distinct else len(set(keys)) > 1:
                    return False
        return True


def numa_eligible(claim_spec: dict) -> bool:
    """A claim the ``numa_violation`` fault applies to: a request of count >= 2 and a matchAttribute
    constraint on resource.kubernetes.io/numaNode."""
    devices = claim_spec.get("devices") or {}
    if not any(c.get("matchAttribute") == NUMA_ATTRIBUTE for c in devices.get("constraints") or []):
        return False
    return any(int(alt.get("count") or 1) >= 2 for request in devices.get("requests") or []
               for _name, alt in _alternatives(request))


def numa_nodes(picks: list) -> set:
    return {dev.attribute(NUMA_ATTRIBUTE) for _name, _wanted, dev in picks}


def allocation_status(view: DeviceView, claim_spec: dict, picks: list, node: str) -> dict:
    results, config, requests = [], [], []
    for name, wanted, dev in picks:
        result = {"request": name, "driver": dev.driver, "pool": dev.pool, "device": dev.name}
        if wanted.get("adminAccess"):
            result["adminAccess"] = True
        if wanted.get("tolerations"):
            result["tolerations"] = clone(wanted["tolerations"])
        results.append(result)
        requests.append(name)
        cls = view.classes.get(wanted.get("deviceClassName", "")) or {}
        for entry in spec(cls).get("config") or []:
            config.append(dict(clone(entry), source="FromClass", requests=[name]))
    for entry in (claim_spec.get("devices") or {}).get("config") or []:
        config.append(dict(clone(entry), source="FromClaim"))
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {"devices": {"results": results, "config": config}, "nodeSelector": {"nodeSelectorTerms": [term]}}


# -- kube-controller-manager: resourceclaim controller and device-taint eviction -------------------

def _pod_done(pod: dict | None, uid: str | None) -> bool:
    return pod is None or meta(pod).get("uid") != uid or status(pod).get("phase") in ("Succeeded", "Failed")


def generated_for(claim: dict) -> dict | None:
    """The owning Pod reference of a claim made from a template or for extended resources."""
    for ref in meta(claim).get("ownerReferences") or []:
        if ref.get("kind") == "Pod" and ref.get("controller"):
            return ref
    return None


def pod_owner_ref(pod: dict) -> dict:
    """The controller ownerReference of a claim made for ``pod``."""
    return {"apiVersion": "v1", "kind": "Pod", "name": meta(pod)["name"], "uid": meta(pod)["uid"],
            "controller": True, "blockOwnerDeletion": True}


class ResourceClaimController(Controller):
    """kube-controller-manager's resource claim controller: makes a pod's claims from its templates (and names
    them in the pod's ``status.resourceClaimStatuses``), drops reservations of pods that are gone or done,
    deallocates claims nobody reserves, deletes generated claims whose pod is done, and removes the
    allocation finalizer of a deleted claim once it is deallocated."""

    watches = ("Pod", "ResourceClaim", "ResourceClaimTemplate")
    resync_seconds = 0.5
    workers = 8  # kube-controller-manager's resource claim controller syncs claims on several workers

    def __init__(self, lab):
        super().__init__(lab)
        self.pods = self.rtype("", "v1", "pods")
        self.claims = self.rtype("resource.k8s.io", "v1", "resourceclaims")
        self.templates = self.rtype("resource.k8s.io", "v1", "resourceclaimtemplates")

    def reconcile(self) -> None:
        # Claims before pods: every pod a listed claim names existed when the pods are listed.
        claims = self.api.list(self.claims, None, shared=True)["items"]
        listed = self.api.list(self.pods, None, shared=True)["items"]
        pods = {(meta(p)["namespace"], meta(p)["name"]): p for p in listed}
        owned: dict = {}  # (pod uid, pod claim name) -> claim made for it
        for claim in claims:
            owner = generated_for(claim)
            name = (meta(claim).get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
            if owner is not None and name:
                owned[(owner.get("uid"), name)] = claim
        todo = [p for p in listed if not terminating(p) and not _pod_done(p, meta(p).get("uid"))
                and any(e.get("resourceClaimTemplateName") for e in spec(p).get("resourceClaims") or [])
                and len(status(p).get("resourceClaimStatuses") or []) < sum(
                    1 for e in spec(p).get("resourceClaims") or [] if e.get("resourceClaimTemplateName"))]
        self.each(todo, lambda pod: self._pod_claims(pod, owned))
        self.each(claims, lambda claim: self._sync(claim, pods))
        # listed again: the claims this pass made are alive too
        alive = {(meta(c)["namespace"], meta(c)["name"]) for c in self.api.list(self.claims, None, shared=True)["items"]}
        for key, entry in list((getattr(self.lab, "claim_timings", None) or {}).items()):
            if key not in alive and "created" in entry and "deleted" not in entry:
                entry["deleted"] = time.monotonic()

    def _pod_claims(self, pod: dict, owned: dict) -> None:
        """The claims of ``pod``'s template entries (made when missing), then their names in its status."""
        ns, uid = meta(pod)["namespace"], meta(pod)["uid"]
        statuses = []
        for entry in spec(pod).get("resourceClaims") or []:
            if not entry.get("resourceClaimTemplateName"):
                continue
            claim = owned.get((uid, entry.get("name")))
            if claim is None:
                claim = self._from_template(pod, entry)
                if claim is None:
                    return  # no such template: the scheduler reports it; tried again on the next pass
            statuses.append({"name": entry.get("name"), "resourceClaimName": meta(claim)["name"]})
        new_status = clone(status(pod))
        new_status["resourceClaimStatuses"] = statuses
        write_status(self.api, self.pods, pod, new_status, "resourceclaim-controller")

    def _from_template(self, pod: dict, entry: dict) -> dict | None:
        ns, pod_name = meta(pod)["namespace"], meta(pod)["name"]
        template = self.api.store.get_or_none(self.templates, ns, entry["resourceClaimTemplateName"])
        if template is None:
            return None
        tmeta = spec(template).get("metadata") or {}
        annotations = dict(tmeta.get("annotations") or {}, **{POD_CLAIM_ANNOTATION: entry.get("name")})
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": "%s-%s-%s" % (pod_name, entry.get("name"), random_suffix()), "namespace": ns,
                             "annotations": annotations, "ownerReferences": [pod_owner_ref(pod)]},
                "spec": clone(spec(template).get("spec") or {})}
        if tmeta.get("labels"):
            body["metadata"]["labels"] = dict(tmeta["labels"])
        claim = self.api.create(self.claims, ns, body, field_manager="resourceclaim-controller")
        mark(self.lab, ns, meta(claim)["name"], "created")
        return claim

    def _sync(self, claim: dict, pods: dict) -> None:
        ns, name = meta(claim)["namespace"], meta(claim)["name"]
        mark(self.lab, ns, name, "created")
        reserved = status(claim).get("reservedFor") or []
        valid = [r for r in reserved if r.get("resource") != "pods"
                 or not _pod_done(pods.get((ns, r.get("name"))), r.get("uid"))]
        for ref in valid:
            pod = pods.get((ns, ref.get("name")))
            if pod is not None and status(pod).get("phase") == "Running":
                mark(self.lab, ns, name, "pod_started")
        allocated = bool(status(claim).get("allocation"))
        if getattr(self.lab, "fault_active", None) and self.lab.fault_active("claim_leak"):
            owner = generated_for(claim)
            if valid != reserved or (allocated and not valid) or (
                    owner is not None and not terminating(claim) and not valid
                    and _pod_done(pods.get((ns, owner.get("name"))), owner.get("uid"))):
                inject(self.lab, (ns, name), "leak", True)  # truth: this claim was affected by the leak
            return  # fault injection: claims are not unreserved, deallocated or deleted (a leak)
        if valid != reserved or (allocated and not valid):
            new_status = clone(status(claim))
            if valid:
                new_status["reservedFor"] = valid
            else:
                for key in ("reservedFor", "allocation", "devices"):
                    new_status.pop(key, None)
            claim = write_status(self.api, self.claims, claim, new_status, "resourceclaim-controller")
            if allocated and not valid:
                mark(self.lab, ns, name, "deallocated", once=False)
            allocated = bool(status(claim).get("allocation"))
        owner = generated_for(claim)
        if owner is not None and not terminating(claim) and not valid \
                and _pod_done(pods.get((ns, owner.get("name"))), owner.get("uid")):
            self.api.delete(self.claims, ns, name, {"preconditions": {"uid": meta(claim)["uid"]}})
            return
        if terminating(claim) and not allocated and FINALIZER in (meta(claim).get("finalizers") or []):
            body = clone(claim)
            body["metadata"]["finalizers"] = [f for f in meta(claim)["finalizers"] if f != FINALIZER]
            self.api.update(self.claims, ns, name, body, field_manager="resourceclaim-controller")


class DeviceTaintEvictionController(Controller):
    resync_seconds = 0.5

    def __init__(self, lab):
        super().__init__(lab)
        self.pods = self.rtype("", "v1", "pods")
        self.rules = self.rtype("resource.k8s.io", "v1", "devicetaintrules")
        self.deletions = 0  # device_taint_eviction_controller_pod_deletions_total

    def reconcile(self) -> None:
        view = DeviceView(self.api, self.registry)
        if not view.rules and not any(d.device.get("taints") for d in view.by_key.values()):
            return
        pods = {(meta(p)["namespace"], meta(p)["name"]): p for p in self.api.list(self.pods, None, shared=True)["items"]}
        per_rule: dict = {}  # rule -> [pending, evicted or would-be-evicted]
        for (ns, _name), claim in view.claims.items():
            results = ((status(claim).get("allocation") or {}).get("devices") or {}).get("results") or []
            for result in results:
                dev = view.by_key.get((result.get("driver"), result.get("pool"), result.get("device")))
                for taint in view.taints(dev) if dev is not None else []:
                    if taint.get("effect") not in ("NoExecute", "None") or tolerates(result.get("tolerations"), taint):
                        continue
                    counts = per_rule.setdefault(taint.get("rule"), [0, 0])
                    for ref in status(claim).get("reservedFor") or []:
                        pod = pods.get((ns, ref.get("name")))
                        if pod is None or meta(pod).get("uid") != ref.get("uid"):
                            continue
                        counts[1] += 1
                        if taint["effect"] == "NoExecute":
                            counts[0] += 1
                            self._evict(pod, taint)
        for rule in view.rules:
            self._rule_status(rule, per_rule.get(meta(rule)["name"], [0, 0]))

    def _evict(self, pod: dict, taint: dict) -> None:
        if terminating(pod):
            return
        new_status = clone(status(pod))
        new_status["conditions"] = set_condition(new_status.get("conditions"), "DisruptionTarget", "True",
                                                 "DeletionByDeviceTaintManager", "Device Taint manager: deleting due "
                                                 "to NoExecute taint %s" % taint.get("key"))
        try:
            write_status(self.api, self.pods, pod, new_status, "device-taint-eviction-controller")
            self.api.delete(self.pods, meta(pod)["namespace"], meta(pod)["name"],
                            {"preconditions": {"uid": meta(pod)["uid"]}})
            self.deletions += 1
        except ApiError as exc:
            if exc.code not in (404, 409):
                raise

    def _rule_status(self, rule: dict, counts: list) -> None:
        effect = (spec(rule).get("taint") or {}).get("effect")
        if effect == "None":
            args = ("False", "NoEffect", "%d pods would be evicted" % counts[1])
        elif counts[0]:
            args = ("True", "PodsPendingEviction", "%d pods are pending eviction" % counts[0])
        else:
            args = ("False", "Completed" if effect == "NoExecute" else "NoEffect", "no pods are pending eviction")
        new_status = clone(status(rule))
        new_status["conditions"] = set_condition(new_status.get("conditions"), "EvictionInProgress", *args)
        for cond in new_status["conditions"]:
            cond.setdefault("observedGeneration", meta(rule).get("generation", 1))
        try:
            write_status(self.api, self.rules, rule, new_status, "device-taint-eviction-controller")
        except ApiError as exc:
            if exc.code not in (404, 409):
                raise
