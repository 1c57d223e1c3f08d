# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure functions that turn Kubernetes API objects (JSON dicts, as the API serves them) into the
``gpu_cluster`` facts (schema in docs/cluster-facts.md). No I/O, no Ansible, no kubernetes client:
the reads are planned in ``gpu_cluster_gather.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import gzip
import json
import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube

SCHEMA_VERSION = 1
GPU_DRIVER = "gpu.nvidia.com"  # the DRA driver's name (DOMAIN.md §2)
GPU_RESOURCE = "nvidia.com/gpu"  # the device plugin's extended resource
STD_ATTR = "resource.kubernetes.io/"  # standard DRA attributes (pciBusID, numaNode, pcieRoot)
_VERSION_RE = re.compile(r"^v?(\d+\.\d+(?:\.\d+)?)")
_GZIP_MAGIC = b"\x1f\x8b\x08"


def problem(what, reason):
    return {"what": what, "reason": reason}


def plain_version(text):
    """``v1.36.4`` / ``v1.30.4-eks-a737599`` -> ``1.36.4``; None when there is no version."""
    match = _VERSION_RE.match((text or "").strip())
    return match.group(1) if match else None


# -- API server --------------------------------------------------------------------------------


def api_server(version_doc):
    """``/version`` -> version (plain), git_version, platform, major, minor."""
    git = version_doc.get("gitVersion")
    return {
        "version": plain_version(git),
        "git_version": git,
        "platform": version_doc.get("platform"),
        "major": version_doc.get("major"),
        "minor": version_doc.get("minor"),
    }


def api_groups(group_list):
    """``/apis`` (APIGroupList) -> {"resource_k8s_io_v1": bool, "groups": {group: [versions]}}."""
    groups = {}
    for group in group_list.get("groups") or []:
        groups[group.get("name")] = [v.get("version") for v in group.get("versions") or []]
    return {"resource_k8s_io_v1": "v1" in groups.get("resource.k8s.io", []), "groups": groups}


# -- nodes and DRA devices ---------------------------------------------------------------------


def attribute_value(attr):
    """The one value a DeviceAttribute holds (``int``, ``string``, ``bool``, ``version`` or a list form)."""
    if not isinstance(attr, dict):
        return None
    for key in ("int", "string", "bool", "version", "ints", "strings", "bools", "versions"):
        if key in attr:
            return attr[key]
    return None


def _attribute(attrs, driver, name):
    """An attribute by name: unqualified names are in the driver's domain (``uuid`` == ``<driver>/uuid``)."""
    if name in attrs:
        return attribute_value(attrs[name])
    qualified = "%s/%s" % (driver, name)
    if qualified in attrs:
        return attribute_value(attrs[qualified])
    return None


def dra_device(device, driver, pool):
    attrs = device.get("attributes") or {}
    return {
        "name": device.get("name"),
        "driver": driver,
        "pool": pool,
        "uuid": _attribute(attrs, driver, "uuid"),
        "product": _attribute(attrs, driver, "productName"),
        "numa_node": attribute_value(attrs.get(STD_ATTR + "numaNode")),
        "pci_bus_id": attribute_value(attrs.get(STD_ATTR + "pciBusID")),
        "type": _attribute(attrs, driver, "type"),
    }


def _current_slices(slices, problems):
    """The slices of each pool's newest generation (older generations are outdated, as the scheduler reads them)."""
    newest = {}
    for item in slices:
        spec = item.get("spec") or {}
        key = (spec.get("driver"), (spec.get("pool") or {}).get("name"))
        generation = (spec.get("pool") or {}).get("generation") or 0
        newest[key] = max(newest.get(key, 0), generation)
    current, counts, expected = [], {}, {}
    for item in slices:
        spec = item.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (spec.get("driver"), pool.get("name"))
        if (pool.get("generation") or 0) != newest[key]:
            continue
        current.append(item)
        counts[key] = counts.get(key, 0) + 1
        expected[key] = pool.get("resourceSliceCount") or 1
    for key in sorted(counts, key=lambda k: (k[0] or "", k[1] or "")):
        if counts[key] < expected[key]:
            problems.append(problem("resourceslices %s pool %s" % key, "incomplete pool: %d of %d slices published"
                                    % (counts[key], expected[key])))
    return current


def dra_devices_by_node(slices, problems, driver=GPU_DRIVER):
    """ResourceSlices -> {node name: [device facts]} for ``driver``'s node-local devices."""
    by_node = {}
    own = [s for s in slices if (s.get("spec") or {}).get("driver") == driver]
    for item in _current_slices(own, problems):
        spec = item.get("spec") or {}
        pool = (spec.get("pool") or {}).get("name")
        if spec.get("nodeName"):
            devices = by_node.setdefault(spec["nodeName"], [])
            devices.extend(dra_device(d, driver, pool) for d in spec.get("devices") or [])
        elif spec.get("perDeviceNodeSelection"):
            for device in spec.get("devices") or []:
                if device.get("nodeName"):
                    by_node.setdefault(device["nodeName"], []).append(dra_device(device, driver, pool))
    for devices in by_node.values():
        devices.sort(key=lambda d: (d["pool"] or "", d["name"] or ""))
    return by_node


def gpu_backend(allocatable_gpu, dra_devices):
    device_plugin = bool(allocatable_gpu)
    dra = bool(dra_devices)
    if device_plugin and dra:
        return "both"
    if device_plugin:
        return "device_plugin"
    return "dra" if dra else "none"


def _taint(taint):
    return {"key": taint.get("key"), "value": taint.get("value"), "effect": taint.get("effect")}


def node_facts(node, dra_devices, problems):
    """One Node -> its facts. ``dra_devices`` None means DRA was not gathered (gpu_backend null)."""
    meta, spec, status = kube.meta(node), node.get("spec") or {}, node.get("status") or {}
    info = status.get("nodeInfo") or {}
    allocatable = status.get("allocatable") or {}
    allocatable_gpu = None
    if GPU_RESOURCE in allocatable:
        try:
            allocatable_gpu = kube.quantity_int(allocatable[GPU_RESOURCE])
        except ValueError as exc:
            problems.append(problem("node %s allocatable %s" % (meta.get("name"), GPU_RESOURCE), str(exc)))
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    return {
        "kubelet_version": plain_version(info.get("kubeletVersion")),
        "labels": dict(meta.get("labels") or {}),
        "taints": [_taint(t) for t in spec.get("taints") or []],
        "unschedulable": bool(spec.get("unschedulable")),
        "ready": ready,
        "allocatable_gpu": allocatable_gpu,
        "gpu_backend": None if dra_devices is None else gpu_backend(allocatable_gpu, dra_devices),
        "dra_devices": dra_devices,
        "kernel_version": info.get("kernelVersion"),
        "os_image": info.get("osImage"),
        "container_runtime_version": info.get("containerRuntimeVersion"),
    }


def nodes_facts(nodes, slices, problems):
    """Nodes (+ ResourceSlices, or None when DRA is not gathered) -> {name: facts}."""
    by_node = dra_devices_by_node(slices, problems) if slices is not None else None
    result = {}
    for node in nodes:
        name = kube.meta(node).get("name")
        devices = None if by_node is None else by_node.get(name, [])
        result[name] = node_facts(node, devices, problems)
    if by_node is not None:
        for name in sorted(set(by_node) - set(result)):
            problems.append(problem("resourceslices of node %s" % name,
                                    "%s publishes devices for a node that does not exist" % GPU_DRIVER))
    return result


# -- DRA API objects ---------------------------------------------------------------------------


def device_classes(items):
    result = []
    for item in items:
        spec = item.get("spec") or {}
        result.append({
            "name": kube.meta(item).get("name"),
            "extended_resource_name": spec.get("extendedResourceName"),
            "selectors": [(s.get("cel") or {}).get("expression") for s in spec.get("selectors") or []],
        })
    return sorted(result, key=lambda c: c["name"] or "")


def claim_state(claim):
    """kubectl's STATE column: ``pending``, ``allocated,reserved``, ``deleted,allocated,reserved``, ..."""
    status = claim.get("status") or {}
    deleted = bool(kube.meta(claim).get("deletionTimestamp"))
    states = ["deleted"] if deleted else []
    if status.get("allocation"):
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
        elif deleted:
            states.append("deallocating")
    elif not deleted:
        states.append("pending")
    return ",".join(states)


def resource_claims(items):
    """Counts per state and namespace; ``stuck``: deleted but still allocated (the kubelet plugin has not unprepared them)."""
    keys = ("total", "allocated", "reserved", "deleting_allocated")
    totals = dict.fromkeys(keys, 0)
    by_namespace, stuck = {}, []
    for claim in items:
        meta, status = kube.meta(claim), claim.get("status") or {}
        allocated = bool(status.get("allocation"))
        flags = {
            "total": True,
            "allocated": allocated,
            "reserved": bool(status.get("reservedFor")),
            "deleting_allocated": allocated and bool(meta.get("deletionTimestamp")),
        }
        ns = by_namespace.setdefault(meta.get("namespace"), dict.fromkeys(keys, 0))
        for key in keys:
            if flags[key]:
                totals[key] += 1
                ns[key] += 1
        if flags["deleting_allocated"]:
            stuck.append({"namespace": meta.get("namespace"), "name": meta.get("name"), "state": claim_state(claim),
                          "deletion_timestamp": meta.get("deletionTimestamp")})
    totals["by_namespace"] = by_namespace
    totals["stuck"] = sorted(stuck, key=lambda s: (s["namespace"] or "", s["name"] or ""))
    return totals


def empty_claims():
    return resource_claims([])


# -- cluster objects ---------------------------------------------------------------------------


def runtime_classes(items):
    return sorted(({"name": kube.meta(i).get("name"), "handler": i.get("handler")} for i in items),
                  key=lambda r: r["name"] or "")


def pdbs(items):
    result = []
    for item in items:
        meta, spec, status = kube.meta(item), item.get("spec") or {}, item.get("status") or {}
        result.append({
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "min_available": spec.get("minAvailable"),
            "max_unavailable": spec.get("maxUnavailable"),
            "disruptions_allowed": status.get("disruptionsAllowed"),
            "current_healthy": status.get("currentHealthy"),
            "desired_healthy": status.get("desiredHealthy"),
            "expected_pods": status.get("expectedPods"),
        })
    return sorted(result, key=lambda p: (p["namespace"] or "", p["name"] or ""))


def crd_facts(crd):
    spec, status = crd.get("spec") or {}, crd.get("status") or {}
    return {
        "name": kube.meta(crd).get("name"),
        "group": spec.get("group"),
        "kind": (spec.get("names") or {}).get("kind"),
        "scope": spec.get("scope"),
        "served_versions": [v.get("name") for v in spec.get("versions") or [] if v.get("served")],
        "stored_versions": list(status.get("storedVersions") or []),
    }


def read_version(crd):
    """The version to read a CRD's objects at: the storage version when served, else the first served one."""
    served = [v for v in (crd.get("spec") or {}).get("versions") or [] if v.get("served")]
    for version in served:
        if version.get("storage"):
            return version.get("name")
    return served[0].get("name") if served else None


def _condition_record(cond):
    return {k: cond.get(k) for k in ("type", "status", "reason", "message", "lastTransitionTime")}


def custom_resources(items):
    """ClusterPolicy / GPUCluster objects -> name, state, conditions."""
    result = []
    for item in items:
        status = item.get("status") or {}
        result.append({
            "name": kube.meta(item).get("name"),
            "state": status.get("state"),
            "conditions": [_condition_record(c) for c in status.get("conditions") or []],
        })
    return sorted(result, key=lambda r: r["name"] or "")


# -- Helm release (storage driver "secret") ----------------------------------------------------


def decode_helm_release(data_release):
    """A Helm storage Secret's ``data.release`` -> the release JSON.

    The Secret's data is base64 (Kubernetes) of Helm's encoding: base64 of gzip of the JSON
    (helm pkg/storage/driver/util.go; uncompressed JSON is accepted too, as Helm does).
    """
    raw = base64.b64decode(base64.b64decode(data_release))
    if raw[:3] == _GZIP_MAGIC:
        raw = gzip.decompress(raw)
    return json.loads(raw.decode("utf-8"))


def _revision(secret):
    try:
        return int((kube.meta(secret).get("labels") or {}).get("version") or 0)
    except ValueError:
        return 0


def helm_release(secrets, release, namespace, problems):
    """The release from its storage Secrets (labels ``owner=helm``, ``name=<release>``).

    The newest ``deployed`` revision is decoded; without one, the newest revision of any status
    (its ``status`` says which). Newer revisions that are not deployed (``pending-upgrade``,
    ``failed``, ...) become problems: an interrupted upgrade must not pass unnoticed.
    """
    what = "helm release %s/%s" % (namespace, release)
    if not secrets:
        problems.append(problem(what, "not found (no Secret with labels owner=helm,name=%s)" % release))
        return None
    ordered = sorted(secrets, key=_revision, reverse=True)
    deployed = [s for s in ordered if (kube.meta(s).get("labels") or {}).get("status") == "deployed"]
    chosen = deployed[0] if deployed else ordered[0]
    for secret in ordered:
        if _revision(secret) <= _revision(chosen):
            break
        problems.append(problem(what, "revision %d is %s (newer than the deployed revision %d)" % (
            _revision(secret), (kube.meta(secret).get("labels") or {}).get("status"), _revision(chosen))))
    if not deployed:
        problems.append(problem(what, "no deployed revision; the newest is revision %d (%s)" % (
            _revision(chosen), (kube.meta(chosen).get("labels") or {}).get("status"))))
    try:
        data = decode_helm_release((chosen.get("data") or {}).get("release") or "")
    except (ValueError, TypeError, OSError, EOFError) as exc:
        problems.append(problem(what, "revision %d: release data not decodable: %s" % (_revision(chosen), exc)))
        return None
    chart = (data.get("chart") or {}).get("metadata") or {}
    info = data.get("info") or {}
    return {
        "name": data.get("name"),
        "namespace": data.get("namespace"),
        "revision": data.get("version"),
        "chart": chart.get("name"),
        "chart_version": chart.get("version"),
        "app_version": chart.get("appVersion"),
        "status": info.get("status"),
        "last_deployed": info.get("last_deployed"),
    }


# -- workloads ---------------------------------------------------------------------------------


def _images(template):
    spec = (template or {}).get("spec") or {}
    images = []
    for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        image = container.get("image")
        if image and image not in images:
            images.append(image)
    return images


def workloads(daemonsets, deployments, replicasets, pods):
    """DaemonSets and Deployments with their template images and the image digests their pods run.

    Pods are matched to their workload by controller owner references (Pod -> DaemonSet, Pod ->
    ReplicaSet -> Deployment), never by name.
    """
    rs_owner = {}
    for rs in replicasets:
        deployment = kube.owner_name(rs, "Deployment")
        if deployment:
            rs_owner[(kube.meta(rs).get("namespace"), kube.meta(rs).get("name"))] = deployment
    image_ids = {}
    for pod in pods:
        ns = kube.meta(pod).get("namespace")
        key = None
        if kube.owner_name(pod, "DaemonSet"):
            key = ("DaemonSet", ns, kube.owner_name(pod, "DaemonSet"))
        elif kube.owner_name(pod, "ReplicaSet") and (ns, kube.owner_name(pod, "ReplicaSet")) in rs_owner:
            key = ("Deployment", ns, rs_owner[(ns, kube.owner_name(pod, "ReplicaSet"))])
        if key is None:
            continue
        status = pod.get("status") or {}
        ids = image_ids.setdefault(key, set())
        for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
            if cs.get("imageID"):
                ids.add(cs["imageID"])
    result = []
    for kind, items in (("DaemonSet", daemonsets), ("Deployment", deployments)):
        for item in items:
            meta, spec, status = kube.meta(item), item.get("spec") or {}, item.get("status") or {}
            if kind == "DaemonSet":
                desired, ready = status.get("desiredNumberScheduled"), status.get("numberReady")
                updated = status.get("updatedNumberScheduled")
            else:
                desired, ready, updated = spec.get("replicas"), status.get("readyReplicas"), status.get("updatedReplicas")
            result.append({
                "kind": kind,
                "namespace": meta.get("namespace"),
                "name": meta.get("name"),
                "images": _images(spec.get("template")),
                "image_ids": sorted(image_ids.get((kind, meta.get("namespace"), meta.get("name")), ())),
                "desired": desired,
                "ready": ready or 0,
                "updated": updated or 0,
            })
    return sorted(result, key=lambda w: (w["namespace"] or "", w["kind"], w["name"] or ""))
