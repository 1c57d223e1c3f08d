# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DRA canary build's checks (docs/canary.md): who owns the canary nodes, CDI discovery against the
ResourceSlices, the GPUCluster and the extended-resource DeviceClass as desired objects.

Pure logic (no I/O, no Ansible): the module ``dra_canary_check`` and ``gpu_cluster`` read the API and
hand the objects here. Findings have the evidence shape (id, severity, subject, observed, expected,
message, source).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import passthrough

SOURCE = "gpufleet.dra_gate dra_canary phase"
DRIVER = "gpu.nvidia.com"
GPU_RESOURCE = "nvidia.com/gpu"
STD = "resource.kubernetes.io/"
MANAGER = "gpufleet-dra-gate"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpufleet.dra_gate"}
GPU_CLUSTER_NAME = "gpu-cluster"
GPU_CLUSTER_API = "nvidia.com/v1alpha1"
# CDI kinds that name a node's GPUs: nvidia-ctk / the toolkit (nvidia.com/gpu, devices by index or UUID)
# and the DRA kubelet plugin's own spec (k8s.gpu.nvidia.com/device, devices by UUID).
CDI_KINDS = ("nvidia.com/gpu", "k8s.gpu.nvidia.com/device")
ISOLATIONS = ("cluster", "group")
GPU_SELECTOR = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"


class CanaryError(ValueError):
    """Bad input (the message names the field and the expected form)."""


class RefusedError(Exception):
    """A request the canary refuses before any change (an object it does not own, a guard)."""


def step_result(run, out, extra=None):
    """``out`` (with ``extra``) as a step's result: ``ok`` when no finding blocks, and the run's timing
    fields (``run``: a :class:`module_run.ModuleRun`)."""
    result = dict(out)
    result.update(extra or {})
    result["ok"] = not any(f["severity"] == "block" for f in result["findings"])
    return run.timed(result)


def finish_step(module, run, label, out, work, close):
    """Run one step of dra_canary_check or dra_canary_workloads and end the module. ``work()`` returns
    ``(changed, fields)``; a canary, passthrough or refusal error fails the module naming ``label``, an API
    error with its call and status (a 403 flagged ``forbidden``); ``close()`` runs in every case. The result's
    ``msg`` lists the blocking findings, else ``ok``."""
    try:
        changed, got = work()
        out.update(got)
    except (CanaryError, passthrough.PassthroughError, RefusedError) as exc:
        module.fail_json(msg="%s: %s" % (label, exc), **step_result(run, out))
    except K8sApiError as exc:
        module.fail_json(msg="%s: the API call failed: %s" % (label, exc), call=exc.call, status=exc.status,
                         forbidden=exc.forbidden, **step_result(run, out))
    finally:
        close()
    result = step_result(run, out)
    blocks = [f for f in result["findings"] if f["severity"] == "block"]
    result["msg"] = "%s: %s" % (label, "; ".join(f["message"] for f in blocks) if blocks else "ok")
    module.exit_json(changed=changed, **result)


def finding(fid, severity, subject, observed, expected, message):
    return {"id": fid, "severity": severity, "subject": subject, "observed": observed, "expected": expected,
            "message": message, "source": SOURCE}


def _gpu_count_or_zero(value):
    """The allocatable GPU count; 0 where it is absent or not an integer quantity (no device plugin serves it)."""
    try:
        return kube.quantity_int(value) if value not in (None, "") else 0
    except ValueError:
        return 0


def parse_taint(text):
    """``key=value:Effect`` or ``key:Effect`` -> {key, value, effect}; CanaryError otherwise."""
    if not isinstance(text, str) or ":" not in text:
        raise CanaryError("taint: expected key[=value]:Effect, got %r" % (text,))
    head, effect = text.rsplit(":", 1)
    if effect not in ("NoSchedule", "NoExecute", "PreferNoSchedule"):
        raise CanaryError("taint %r: the effect must be NoSchedule, NoExecute or PreferNoSchedule" % text)
    key, _sep, value = head.partition("=")
    if not key:
        raise CanaryError("taint %r: the key is empty" % text)
    return {"key": key, "value": value, "effect": effect}


def ownership_findings(cluster_policies, nodes, canary_nodes, isolation="group", labels=None, taints=None):
    """Hard blocks before anything is installed on the GPUCluster path.

    ``cluster_policies``: the ClusterPolicy objects (any is a block: ClusterPolicy and GPUCluster never
    coexist); ``nodes``: every Node object; ``canary_nodes``: names; ``isolation``: ``cluster`` (a
    cluster of its own: every GPU node must be a canary node) or ``group`` (an isolated group: every
    canary node carries ``labels`` and ``taints``, no other node carries the labels)."""
    if isolation not in ISOLATIONS:
        raise CanaryError("isolation: expected one of %s, got %r" % (", ".join(ISOLATIONS), isolation))
    labels = dict(labels or {})
    wanted_taints = [parse_taint(t) if isinstance(t, str) else t for t in taints or []]
    findings = []
    for policy in cluster_policies or []:
        name = kube.meta(policy).get("name")
        findings.append(finding("dra_canary.cluster_policy_present", "block", "ClusterPolicy/%s" % name,
                                "ClusterPolicy %s exists (state %s)" % (name, ((policy.get("status") or {}).get("state"))),
                                "no ClusterPolicy", "the GPUCluster path owns the canary alone: ClusterPolicy %s must be "
                                "removed first (it is an invalid configuration for both CRs to exist)" % name))
    by_name = dict((kube.meta(n).get("name"), n) for n in nodes or [])
    for name in canary_nodes or []:
        node = by_name.get(name)
        if node is None:
            findings.append(finding("dra_canary.node_missing", "block", "Node/%s" % name, "absent", "a Node",
                                    "canary node %s is not in the cluster" % name))
            continue
        allocatable = _gpu_count_or_zero(((node.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE))
        if allocatable > 0:
            findings.append(finding("dra_canary.device_plugin_allocatable", "block", "Node/%s" % name,
                                    "allocatable %s: %d" % (GPU_RESOURCE, allocatable), "0 (no device plugin)",
                                    "canary node %s has device-plugin allocatable %s %d: the device plugin still serves "
                                    "it; DRA must own the canary's GPUs alone" % (name, GPU_RESOURCE, allocatable)))
        if isolation == "group":
            node_labels = kube.meta(node).get("labels") or {}
            missing = ["%s=%s" % (k, v) for k, v in sorted(labels.items()) if node_labels.get(k) != v]
            if missing:
                findings.append(finding("dra_canary.isolation_label_missing", "block", "Node/%s" % name,
                                        "labels lack %s" % ", ".join(missing), "labels %s" % json.dumps(labels, sort_keys=True),
                                        "canary node %s is not labelled as the isolated canary group" % name))
            have = [(t.get("key"), t.get("value") or "", t.get("effect")) for t in (node.get("spec") or {}).get("taints") or []]
            absent = ["%s=%s:%s" % (t["key"], t.get("value") or "", t["effect"]) for t in wanted_taints
                      if (t["key"], t.get("value") or "", t["effect"]) not in have]
            if absent:
                findings.append(finding("dra_canary.isolation_taint_missing", "block", "Node/%s" % name,
                                        "taints lack %s" % ", ".join(absent), "taints %s" % ", ".join(
                                            "%s=%s:%s" % (t["key"], t.get("value") or "", t["effect"]) for t in wanted_taints),
                                        "canary node %s is not tainted: production workloads could land on it" % name))
    for name, node in sorted(by_name.items()):
        if name in (canary_nodes or []):
            continue
        node_labels = kube.meta(node).get("labels") or {}
        if isolation == "group" and labels and all(node_labels.get(k) == v for k, v in labels.items()):
            findings.append(finding("dra_canary.isolation_label_outside", "block", "Node/%s" % name,
                                    "carries the canary labels", "only canary nodes carry them",
                                    "node %s carries the canary group's labels but is not a canary host" % name))
        if isolation == "cluster" and kube.is_gpu_node(node):
            findings.append(finding("dra_canary.gpu_node_outside", "block", "Node/%s" % name,
                                    "a GPU node outside the canary hosts", "every GPU node of a canary cluster is a canary node",
                                    "isolation cluster: GPU node %s is not a canary host" % name))
    return findings


def normalize_bdf(text):
    """``00000000:18:00.0`` / ``0000:18:00.0`` -> ``0000:18:00.0`` (lower case); None for nothing."""
    if not text:
        return None
    parts = str(text).lower().split(":")
    if len(parts) == 2:
        parts.insert(0, "0000")
    return "%s:%s" % (parts[0][-4:].rjust(4, "0"), ":".join(parts[1:]))


def _attr(device, name):
    value = (device.get("attributes") or {}).get(name) or {}
    for key in ("string", "int", "version", "bool"):
        if key in value:
            return value[key]
    return None


def slice_devices(slices, node):
    """{uuid: device summary} of the gpu.nvidia.com devices published for ``node`` (type gpu only)."""
    out = {}
    for item in slices or []:
        spec = item.get("spec") or {}
        if spec.get("driver") != DRIVER or spec.get("nodeName") != node:
            continue
        for device in spec.get("devices") or []:
            kind = _attr(device, "type")
            uuid = _attr(device, "uuid")
            if kind != "gpu" or not uuid:
                continue
            out[uuid] = {"name": device.get("name"), "uuid": uuid, "pci_bus_id": normalize_bdf(_attr(device, STD + "pciBusID")),
                         "numa_node": _attr(device, STD + "numaNode"), "slice": kube.meta(item).get("name")}
    return out


def cdi_findings(node, facts, slices):
    """CDI discovery on one canary node against its ResourceSlices.

    ``facts``: the node's gpu_node facts (gpu_node_facts through the node's root prefix); ``slices``:
    the ResourceSlices. Blocks: no facts; containerd with CDI off; no valid CDI spec naming GPUs; a GPU
    the driver holds that no CDI spec lists (by UUID or index); a GPU without a ResourceSlice device; a
    slice device whose UUID the node does not have, or whose PCI address or NUMA node differs. Warns:
    an invalid spec in a directory the runtime loads. Returns (summary, findings)."""
    subject = "Node/%s" % node
    findings = []
    if not isinstance(facts, dict) or not facts.get("gpus") and not facts.get("cdi"):
        findings.append(finding("dra_canary.node_facts_missing", "block", subject, "no facts", "gpu_node facts",
                                "no gpu_node facts were read for canary node %s" % node))
        return {"node": node, "gpus": [], "cdi_devices": [], "slice_devices": []}, findings
    gpus = [g for g in facts.get("gpus") or [] if g.get("kernel_driver") in (None, "nvidia") and g.get("uuid")]
    containerd = facts.get("containerd") or {}
    if containerd.get("cdi_enabled") is False:
        findings.append(finding("dra_canary.cdi_disabled", "block", subject, "containerd cdi_enabled false (%s)"
                                % containerd.get("cdi_enabled_source"), "CDI enabled",
                                "containerd on %s does not load CDI specs: run the containerd_cdi role first" % node))
    specs = (facts.get("cdi") or {}).get("specs") or []
    listed = set()
    valid = []
    for spec in specs:
        if spec.get("error"):
            if spec.get("loaded_by_runtime", True):
                findings.append(finding("dra_canary.cdi_spec_invalid", "warn", "%s %s" % (subject, spec.get("path")),
                                        spec.get("error"), "a valid CDI spec",
                                        "CDI spec %s on %s is invalid: %s" % (spec.get("path"), node, spec.get("error"))))
            continue
        if spec.get("kind") in CDI_KINDS and spec.get("loaded_by_runtime", True):
            valid.append(spec.get("path"))
            listed.update(str(d) for d in spec.get("devices") or [])
    if not valid:
        findings.append(finding("dra_canary.cdi_spec_missing", "block", subject,
                                "no valid CDI spec of kind %s in %s" % (" or ".join(CDI_KINDS), ", ".join(
                                    (facts.get("cdi") or {}).get("spec_dirs") or [])),
                                "a valid spec listing the node's GPUs",
                                "CDI discovery failed on %s: no valid CDI spec names its GPUs (the runtime cannot "
                                "inject a DRA-allocated GPU)" % node))
    published = slice_devices(slices, node)
    gpu_summary = []
    for gpu in gpus:
        uuid = gpu["uuid"]
        bdf = normalize_bdf(gpu.get("pci_bus_id"))
        numa = gpu.get("numa_node") if isinstance(gpu.get("numa_node"), int) and gpu.get("numa_node") >= 0 else None
        in_cdi = uuid in listed or (gpu.get("index") is not None and str(gpu.get("index")) in listed)
        gpu_summary.append({"uuid": uuid, "pci_bus_id": bdf, "numa_node": numa, "cdi": in_cdi,
                            "slice_device": (published.get(uuid) or {}).get("name")})
        if valid and not in_cdi:
            findings.append(finding("dra_canary.cdi_device_missing", "block", "%s GPU %s" % (subject, uuid),
                                    "not listed in %s" % ", ".join(valid), "listed by UUID or index",
                                    "GPU %s (%s) on %s is not a CDI device" % (uuid, bdf, node)))
        device = published.get(uuid)
        if device is None:
            findings.append(finding("dra_canary.slice_device_missing", "block", "%s GPU %s" % (subject, uuid),
                                    "no ResourceSlice device", "a gpu.nvidia.com device with this uuid",
                                    "GPU %s on %s is not published in a ResourceSlice" % (uuid, node)))
            continue
        for field, want in (("pci_bus_id", bdf), ("numa_node", numa)):
            if device.get(field) != want:
                findings.append(finding("dra_canary.slice_device_mismatch", "block", "%s GPU %s" % (subject, uuid),
                                        "%s %s in %s" % (field, device.get(field), device.get("slice")),
                                        "%s %s (node facts)" % (field, want),
                                        "ResourceSlice device %s of %s disagrees with the node facts on %s" % (
                                            device.get("name"), node, field)))
    known = set(g["uuid"] for g in gpus)
    for uuid, device in sorted(published.items()):
        if uuid not in known:
            findings.append(finding("dra_canary.slice_device_unknown", "block", "%s device %s" % (subject, device.get("name")),
                                    "uuid %s" % uuid, "a GPU of the node facts",
                                    "ResourceSlice %s publishes GPU %s that %s does not have" % (device.get("slice"), uuid, node)))
    summary = {"node": node, "gpus": gpu_summary, "cdi_specs": valid, "cdi_devices": sorted(listed),
               "slice_devices": sorted(d["name"] for d in published.values()),
               "containerd_cdi_enabled": containerd.get("cdi_enabled")}
    return summary, findings


def desired_gpu_cluster(spec):
    """The GPUCluster ``gpu-cluster`` for server-side apply from the data values ``spec``."""
    if not isinstance(spec, dict) or not spec:
        raise CanaryError("spec: expected the GPUCluster spec as a non-empty mapping (draDriver, validator, ...)")
    dra = spec.get("draDriver")
    if not isinstance(dra, dict):
        raise CanaryError("spec.draDriver: expected a mapping (repository, image, version, featureGates)")
    gates = dra.get("featureGates", {})
    if not isinstance(gates, dict) or not all(isinstance(v, bool) for v in gates.values()):
        raise CanaryError("spec.draDriver.featureGates: expected a mapping of gate name -> true/false")
    return {"apiVersion": GPU_CLUSTER_API, "kind": "GPUCluster",
            "metadata": {"name": GPU_CLUSTER_NAME, "labels": dict(MANAGED_BY)}, "spec": copy.deepcopy(spec)}


def contains(live, wanted):
    """Whether every field of ``wanted`` is in ``live`` with the same value (lists compared whole)."""
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(k in live and contains(live[k], v) for k, v in wanted.items())
    return live == wanted


def desired_device_class(name, extended_resource=GPU_RESOURCE, selector=GPU_SELECTOR):
    """The extended-resource DeviceClass: the operator's ``gpu.nvidia.com`` selector plus
    ``spec.extendedResourceName`` (which the operator-managed class does not set)."""
    if not isinstance(name, str) or not name or len(name) > 253:
        raise CanaryError("device_class: expected a DeviceClass name (a DNS subdomain), got %r" % (name,))
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name, "labels": dict(MANAGED_BY)},
            "spec": {"selectors": [{"cel": {"expression": selector}}], "extendedResourceName": extended_resource}}


def strip_server_fields(obj):
    """``obj`` without the server-populated metadata (for diffs and artifacts)."""
    if not obj:
        return obj
    out = copy.deepcopy(obj)
    meta = out.get("metadata") or {}
    for key in ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"):
        meta.pop(key, None)
    out.pop("status", None)
    return out


def gpu_cluster_state(obj):
    """(state, Ready condition reason/message) of a GPUCluster."""
    status = (obj or {}).get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
    return status.get("state"), "%s: %s" % (ready.get("reason"), ready.get("message")) if ready else ""


def plugin_pods_ready(pods, nodes, daemonset="nvidia-dra-driver-kubelet-plugin"):
    """{node: problem} for canary nodes without a Ready kubelet plugin pod (empty when all have one)."""
    ready = set()
    for pod in pods or []:
        labels = kube.meta(pod).get("labels") or {}
        if labels.get("app") != daemonset or kube.meta(pod).get("deletionTimestamp"):
            continue
        conditions = (pod.get("status") or {}).get("conditions") or []
        if (pod.get("status") or {}).get("phase") == "Running" and any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            ready.add((pod.get("spec") or {}).get("nodeName"))
    return dict((n, "no Ready %s pod" % daemonset) for n in nodes if n not in ready)
