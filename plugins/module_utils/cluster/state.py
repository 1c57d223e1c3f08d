# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``cluster_state`` captures and how it names the files: pure logic, no I/O, no Ansible.

The capture is the cluster-side part of the rollback unit (docs/artifacts.md): the GPU Operator's
CRDs as served (a chart rollback does not restore a CRD's schema), its ClusterPolicy and GPUCluster
objects, DeviceClasses, RuntimeClasses and the labels and taints of the GPU nodes. Objects are kept
whole as the API served them, less ``metadata.managedFields`` (server-side-apply bookkeeping: large,
rewritten on every write, and refused by a create).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import json
import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
DEVICE_CLASS_PATH = "/apis/resource.k8s.io/v1/deviceclasses"
RUNTIME_CLASS_PATH = "/apis/node.k8s.io/v1/runtimeclasses"
NODE_PATH = "/api/v1/nodes"
DEFAULT_GROUPS = ("nvidia.com", "resource.nvidia.com")
DEFAULT_KINDS = ("ClusterPolicy", "GPUCluster")
SECTIONS = ("crds", "custom_resources", "device_classes", "runtime_classes", "gpu_nodes")
# Artifact kinds written by the capture (the index's ``kind``).
KIND_CRD = "crd"
KIND_CUSTOM_RESOURCE = "custom-resource"
KIND_DEVICE_CLASS = "device-class"
KIND_RUNTIME_CLASS = "runtime-class"
KIND_NODE = "node-labels-taints"
SAFE_NAME_RE = re.compile(r"[^A-Za-z0-9._-]")


def strip_managed_fields(obj):
    """A deep copy of ``obj`` without ``metadata.managedFields``."""
    result = copy.deepcopy(obj)
    metadata = result.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return result


def select_crds(crds, groups):
    """The CRDs whose ``spec.group`` is one of ``groups``, sorted by name."""
    wanted = set(groups)
    chosen = [c for c in crds if ((c.get("spec") or {}).get("group")) in wanted]
    return sorted(chosen, key=lambda c: (c.get("metadata") or {}).get("name") or "")


def served_version(crd):
    """The version to read a CRD's objects through: the storage version when served, else the first served."""
    versions = (crd.get("spec") or {}).get("versions") or []
    served = [v for v in versions if v.get("served")]
    for version in served:
        if version.get("storage"):
            return version.get("name")
    return served[0].get("name") if served else None


def custom_resource_path(crd):
    """The list path of a CRD's objects (all namespaces for a namespaced kind); None when nothing is served."""
    spec = crd.get("spec") or {}
    version = served_version(crd)
    plural = (spec.get("names") or {}).get("plural")
    if not version or not plural or not spec.get("group"):
        return None
    return "/apis/%s/%s/%s" % (spec["group"], version, plural)


def crds_for_kinds(crds, kinds):
    """``[(kind, crd)]`` for each wanted kind that one of ``crds`` defines, in ``kinds`` order."""
    found = []
    for kind in kinds:
        for crd in crds:
            if ((crd.get("spec") or {}).get("names") or {}).get("kind") == kind:
                found.append((kind, crd))
    return found


def node_labels_taints(node):
    """The part of a Node that a rollback may have to put back: labels, annotations, taints and the
    cordon, with the identity it was read under (name, uid, resourceVersion)."""
    metadata = node.get("metadata") or {}
    spec = node.get("spec") or {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": dict((k, metadata.get(k)) for k in ("name", "uid", "resourceVersion", "labels", "annotations")
                         if metadata.get(k) is not None),
        "spec": {"taints": spec.get("taints") or [], "unschedulable": bool(spec.get("unschedulable"))},
    }


def safe_name(name):
    """A file-name-safe form of an object name (Kubernetes names already are; this guards the rest)."""
    text = SAFE_NAME_RE.sub("_", str(name or "unnamed"))
    return text if text not in (".", "..") else "_" + text


def object_filename(obj):
    metadata = obj.get("metadata") or {}
    name = safe_name(metadata.get("name"))
    if metadata.get("namespace"):
        return "%s_%s.json" % (safe_name(metadata["namespace"]), name)
    return name + ".json"


def _namespaced_name(obj):
    metadata = obj.get("metadata") or {}
    return (metadata.get("namespace") or "", metadata.get("name") or "")


def dumps(obj):
    return json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n"


def plan(crds=None, custom_resources=None, device_classes=None, runtime_classes=None, nodes=None):
    """The files of one capture: ``[{relpath, kind, source, object}]`` in a stable order.

    ``crds``: the selected CRDs; ``custom_resources``: ``[(crd, [objects])]``; ``device_classes``,
    ``runtime_classes``: objects; ``nodes``: every node (the GPU nodes are chosen here). ``None``
    for a section means it was not captured. ``source`` is the API path the object was read from.
    """
    files = []
    for crd in crds or []:
        name = (crd.get("metadata") or {}).get("name")
        files.append({"relpath": "crds/" + object_filename(crd), "kind": KIND_CRD,
                      "source": "%s/%s" % (CRD_PATH, name), "object": strip_managed_fields(crd)})
    for crd, objects in custom_resources or []:
        base = custom_resource_path(crd)
        plural = ((crd.get("spec") or {}).get("names") or {}).get("plural")
        directory = "%s.%s" % (plural, (crd.get("spec") or {}).get("group"))
        for obj in sorted(objects, key=_namespaced_name):
            metadata = obj.get("metadata") or {}
            if metadata.get("namespace"):
                group_version = base.rsplit("/", 1)[0]
                source = "%s/namespaces/%s/%s/%s" % (group_version, metadata["namespace"], plural, metadata.get("name"))
            else:
                source = "%s/%s" % (base, metadata.get("name"))
            files.append({"relpath": "%s/%s" % (directory, object_filename(obj)), "kind": KIND_CUSTOM_RESOURCE,
                          "source": source, "object": strip_managed_fields(obj)})
    for items, path, directory, kind in ((device_classes, DEVICE_CLASS_PATH, "deviceclasses", KIND_DEVICE_CLASS),
                                         (runtime_classes, RUNTIME_CLASS_PATH, "runtimeclasses", KIND_RUNTIME_CLASS)):
        for obj in sorted(items or [], key=lambda o: (o.get("metadata") or {}).get("name") or ""):
            files.append({"relpath": "%s/%s" % (directory, object_filename(obj)), "kind": kind,
                          "source": "%s/%s" % (path, (obj.get("metadata") or {}).get("name")),
                          "object": strip_managed_fields(obj)})
    gpu_nodes = [n for n in nodes or [] if kube.is_gpu_node(n)]
    for node in sorted(gpu_nodes, key=lambda n: (n.get("metadata") or {}).get("name") or ""):
        files.append({"relpath": "node-labels-taints/" + object_filename(node), "kind": KIND_NODE,
                      "source": "%s/%s" % (NODE_PATH, (node.get("metadata") or {}).get("name")),
                      "object": node_labels_taints(node)})
    return files


def render(files):
    """Add ``text``, ``sha256`` and ``size`` (of the UTF-8 bytes) to each planned file."""
    for item in files:
        data = dumps(item["object"]).encode("utf-8")
        item["text"] = data
        item["sha256"] = hashlib.sha256(data).hexdigest()
        item["size"] = len(data)
    return files


def stamp_name(stamp, existing):
    """The capture directory's name: ``stamp``, or ``stamp-2``, ``stamp-3``... when taken already."""
    if stamp not in existing:
        return stamp
    number = 2
    while "%s-%d" % (stamp, number) in existing:
        number += 1
    return "%s-%d" % (stamp, number)


def counts(files):
    result = {}
    for item in files:
        result[item["kind"]] = result.get(item["kind"], 0) + 1
    return result
