# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Scenario files: what the lab cluster holds when it starts (see lab/scenarios/README.md).

``load_scenario(path)`` reads and validates one and returns::

    {"name": str, "description": str,
     "namespaces": [str, ...],           # to create (besides the built-in ones the server makes)
     "nodes": [<v1 Node manifest>, ...], # complete: labels, taints, capacity, status.nodeInfo, Ready
     "objects": [<manifest>, ...],       # created in file order after namespaces and nodes
     "gpu_nodes": [{"node", "tree", "backend", "pool", "kubelet_version", "node_info_given"}, ...],
     "faults": [{<kind>: {...}}, ...],   # kubelab.faults, validated
     <knob>: float, ...}                 # pod_start_seconds, pod_stop_seconds, ... when given

A node with ``gpu: {tree, backend}`` is completed from its node tree when the lab starts
(``kubelab.gpunodes.prepare``); ``count: N`` makes N nodes ``<name>-1`` .. ``<name>-N`` that share one tree.

Bad input raises ``ScenarioError`` naming the file and the field (``nodes[1].taints[0].effect``).
"""

from __future__ import annotations

import datetime
import re

import yaml

from kubelab.clone import clone

# Kubelet and controller latencies (seconds) read by the simulated components (controllers/kubelet.py).
KNOBS = ("pod_start_seconds", "pod_ready_seconds", "pod_stop_seconds", "job_pod_seconds", "operator_ready_seconds",
         "device_plugin_register_seconds")
TOP_LEVEL = ("name", "description", "namespaces", "nodes", "objects", "faults", "kubelet_version",
             "helm_releases") + KNOBS
NODE_FIELDS = ("name", "labels", "annotations", "taints", "capacity", "allocatable", "nodeInfo",
               "ready", "unschedulable", "addresses", "conditions", "role", "gpu", "kubelet_version", "count",
               "node_tree")
GPU_FIELDS = ("tree", "backend")
GPU_BACKENDS = ("device-plugin", "dra", "both", "none")
MAX_POOL = 1000
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# The ten fields the kubernetes Python client's V1NodeSystemInfo requires.
NODE_INFO_FIELDS = ("architecture", "bootID", "containerRuntimeVersion", "kernelVersion", "kubeProxyVersion",
                    "kubeletVersion", "machineID", "operatingSystem", "osImage", "systemUUID")
DEFAULT_CAPACITY = {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_KUBE_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)([-+][0-9A-Za-z.+-]*)?$")
_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[numkMGTPE]|[KMGTPE]i)?$")


class ScenarioError(ValueError):
    """A scenario file is unreadable or invalid; the message names the file and the field."""


def _default_node_info(name: str, index: int) -> dict:
    uid = "%08x-0000-4000-8000-%012x" % (index + 1, index + 1)
    return {
        "architecture": "amd64",
        "bootID": uid,
        "containerRuntimeVersion": "containerd://1.7.24",
        "kernelVersion": "6.8.0-kubelab",
        "kubeProxyVersion": "v1.31.4",
        "kubeletVersion": "v1.31.4",
        "machineID": "%032x" % (index + 1),
        "operatingSystem": "linux",
        "osImage": "Ubuntu 24.04.1 LTS (%s)" % name,
        "systemUUID": uid,
    }


class _Checker:
    def __init__(self, source: str):
        self.source = source

    def fail(self, field: str, message: str):
        raise ScenarioError("%s: %s: %s" % (self.source, field, message))

    def mapping(self, value, field: str) -> dict:
        if not isinstance(value, dict):
            self.fail(field, "must be a mapping, got %s" % type(value).__name__)
        return value

    def sequence(self, value, field: str) -> list:
        if not isinstance(value, list):
            self.fail(field, "must be a list, got %s" % type(value).__name__)
        return value

    def string(self, value, field: str, allow_empty: bool = True) -> str:
        if not isinstance(value, str):
            self.fail(field, "must be a string (quote it in YAML), got %s %r" % (type(value).__name__, value))
        if not allow_empty and not value:
            self.fail(field, "must not be empty")
        return value

    def boolean(self, value, field: str) -> bool:
        if not isinstance(value, bool):
            self.fail(field, "must be true or false, got %r" % (value,))
        return value

    def name(self, value, field: str, pattern=_DNS1123_SUBDOMAIN) -> str:
        self.string(value, field, allow_empty=False)
        if len(value) > 253 or not pattern.match(value):
            self.fail(field, "%r is not a valid name (lowercase letters, digits, '-' and '.')" % value)
        return value

    def string_map(self, value, field: str) -> dict:
        for key, item in self.mapping(value, field).items():
            self.string(key, "%s key" % field, allow_empty=False)
            self.string(item, "%s[%s]" % (field, key))
        return dict(value)

    def quantities(self, value, field: str) -> dict:
        result = {}
        for key, item in self.mapping(value, field).items():
            self.string(key, "%s key" % field, allow_empty=False)
            if isinstance(item, bool) or not isinstance(item, (str, int)):
                self.fail("%s.%s" % (field, key), "must be a quantity such as 4, \"500m\" or \"16Gi\", got %r" % (item,))
            if not _QUANTITY.match(str(item)):
                self.fail("%s.%s" % (field, key), "%r is not a quantity (such as 4, \"500m\" or \"16Gi\")" % (item,))
            result[key] = str(item)
        return result


def _taints(chk: _Checker, value, field: str) -> list[dict]:
    taints = []
    for i, taint in enumerate(chk.sequence(value, field)):
        where = "%s[%d]" % (field, i)
        chk.mapping(taint, where)
        unknown = set(taint) - {"key", "value", "effect"}
        if unknown:
            chk.fail(where, "unknown field(s) %s (key, value, effect)" % ", ".join(sorted(map(str, unknown))))
        if "key" not in taint:
            chk.fail("%s.key" % where, "is required")
        chk.string(taint["key"], "%s.key" % where, allow_empty=False)
        if taint.get("effect") not in TAINT_EFFECTS:
            chk.fail("%s.effect" % where, "must be one of %s, got %r" % (", ".join(TAINT_EFFECTS), taint.get("effect")))
        item = {"key": taint["key"], "effect": taint["effect"]}
        if taint.get("value") is not None:
            item["value"] = chk.string(taint["value"], "%s.value" % where)
        taints.append(item)
    return taints


def _kubelet_version(chk: _Checker, value, field: str) -> str:
    chk.string(value, field, allow_empty=False)
    if not _KUBE_VERSION.match(value):
        chk.fail(field, "%r is not a Kubernetes version such as v1.36.4" % value)
    return value if value.startswith("v") else "v" + value


def _gpu(chk: _Checker, value, field: str) -> dict:
    from kubelab import nodetrees  # pylint: disable=import-outside-toplevel
    chk.mapping(value, field)
    unknown = set(value) - set(GPU_FIELDS)
    if unknown:
        chk.fail(field, "unknown field(s) %s (known: %s)" % (", ".join(sorted(map(str, unknown))), ", ".join(GPU_FIELDS)))
    if "tree" not in value:
        chk.fail("%s.tree" % field, "is required (one of %s)" % ", ".join(nodetrees.tree_names()))
    tree = chk.string(value["tree"], "%s.tree" % field, allow_empty=False)
    if tree not in nodetrees.tree_names():
        chk.fail("%s.tree" % field, "unknown node tree %r (known: %s)" % (tree, ", ".join(nodetrees.tree_names())))
    backend = value.get("backend", "device-plugin")
    if backend not in GPU_BACKENDS:
        chk.fail("%s.backend" % field, "must be one of %s, got %r" % (", ".join(GPU_BACKENDS), backend))
    return {"tree": tree, "backend": backend}


def _node(chk: _Checker, entry, index: int, now: str, field: str | None = None, defaults: dict | None = None) -> dict:
    field = field or "nodes[%d]" % index
    chk.mapping(entry, field)
    unknown = set(entry) - set(NODE_FIELDS)
    if unknown:
        chk.fail(field, "unknown field(s) %s (known: %s)" % (", ".join(sorted(map(str, unknown))), ", ".join(NODE_FIELDS)))
    if "name" not in entry:
        chk.fail("%s.name" % field, "is required")
    name = chk.name(entry["name"], "%s.name" % field)
    field = field if "(" in field else "%s (%s)" % (field, name)
    role = entry.get("role", "worker")
    if role not in ("worker", "control-plane"):
        chk.fail("%s.role" % field, "must be worker or control-plane, got %r" % (role,))

    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"}
    taints = []
    if role == "control-plane":
        labels[CONTROL_PLANE_LABEL] = ""
        taints.append({"key": CONTROL_PLANE_LABEL, "effect": "NoSchedule"})
    labels.update(chk.string_map(entry.get("labels") or {}, "%s.labels" % field))
    annotations = chk.string_map(entry.get("annotations") or {}, "%s.annotations" % field)
    if "taints" in entry:  # given explicitly: exactly these (an empty list clears the control-plane one)
        taints = _taints(chk, entry["taints"] or [], "%s.taints" % field)

    capacity = dict(DEFAULT_CAPACITY)
    capacity.update(chk.quantities(entry.get("capacity") or {}, "%s.capacity" % field))
    allocatable = dict(capacity)
    allocatable.update(chk.quantities(entry.get("allocatable") or {}, "%s.allocatable" % field))

    node_info = _default_node_info(name, index)
    node_info["architecture"] = labels.get("kubernetes.io/arch", "amd64")
    if (defaults or {}).get("kubelet_version"):
        node_info["kubeletVersion"] = node_info["kubeProxyVersion"] = defaults["kubelet_version"]
    given = []
    for key, value in chk.mapping(entry.get("nodeInfo") or {}, "%s.nodeInfo" % field).items():
        if key not in NODE_INFO_FIELDS:
            chk.fail("%s.nodeInfo.%s" % (field, key), "unknown field (known: %s)" % ", ".join(NODE_INFO_FIELDS))
        node_info[key] = chk.string(value, "%s.nodeInfo.%s" % (field, key), allow_empty=False)
        given.append(key)
    if "kubelet_version" in entry:
        node_info["kubeletVersion"] = node_info["kubeProxyVersion"] = \
            _kubelet_version(chk, entry["kubelet_version"], "%s.kubelet_version" % field)
        given += ["kubeletVersion", "kubeProxyVersion"]
    gpu = _gpu(chk, entry["gpu"], "%s.gpu" % field) if entry.get("gpu") is not None else None

    ready = chk.boolean(entry.get("ready", True), "%s.ready" % field)
    conditions = [{
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "KubeletReady" if ready else "KubeletNotReady",
        "message": "kubelet is posting ready status" if ready else "kubelab scenario: not ready",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }]
    for i, cond in enumerate(chk.sequence(entry.get("conditions") or [], "%s.conditions" % field)):
        where = "%s.conditions[%d]" % (field, i)
        chk.mapping(cond, where)
        for key in ("type", "status"):
            if key not in cond:
                chk.fail("%s.%s" % (where, key), "is required")
            chk.string(cond[key], "%s.%s" % (where, key), allow_empty=False)
        if cond["status"] not in ("True", "False", "Unknown"):
            chk.fail("%s.status" % where, "must be \"True\", \"False\" or \"Unknown\" (quoted), got %r" % cond["status"])
        item = {"lastHeartbeatTime": now, "lastTransitionTime": now}
        item.update(cond)
        conditions = [c for c in conditions if c["type"] != cond["type"]] + [item]

    addresses = [{"type": "InternalIP", "address": "10.88.%d.%d" % (index // 250, index % 250 + 2)},
                 {"type": "Hostname", "address": name}]
    if "addresses" in entry:
        addresses = []
        for i, addr in enumerate(chk.sequence(entry["addresses"], "%s.addresses" % field)):
            where = "%s.addresses[%d]" % (field, i)
            chk.mapping(addr, where)
            addresses.append({"type": chk.string(addr.get("type"), "%s.type" % where, allow_empty=False),
                              "address": chk.string(addr.get("address"), "%s.address" % where, allow_empty=False)})

    spec: dict = {"taints": taints} if taints else {}
    if chk.boolean(entry.get("unschedulable", False), "%s.unschedulable" % field):
        spec["unschedulable"] = True
    metadata: dict = {"name": name, "labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    if entry.get("node_tree") is not None:
        # a control-plane host's tree (static pod manifests, kubelet config): inventory group control_plane
        if role != "control-plane" or gpu is not None:
            chk.fail("%s.node_tree" % field, "is for control-plane nodes without gpu (GPU nodes take gpu.tree)")
        from kubelab import nodetrees  # pylint: disable=import-outside-toplevel
        if entry["node_tree"] not in nodetrees.tree_names():
            chk.fail("%s.node_tree" % field, "unknown node tree %r (known: %s)" % (entry["node_tree"], ", ".join(nodetrees.tree_names())))
        if defaults is not None:
            defaults.setdefault("control_plane_nodes", []).append({"node": name, "tree": entry["node_tree"]})
    if gpu is not None and defaults is not None:
        defaults.setdefault("gpu_nodes", []).append(dict(gpu, node=name, pool=None, node_info_given=sorted(set(given)),
                                                         explicit_capacity=sorted(entry.get("capacity") or {})))
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": conditions,
            "addresses": addresses,
            "nodeInfo": node_info,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }


def _object(chk: _Checker, manifest, index: int, field: str | None = None) -> dict:
    field = field or "objects[%d]" % index
    chk.mapping(manifest, field)
    for key in ("apiVersion", "kind"):
        if key not in manifest:
            chk.fail("%s.%s" % (field, key), "is required")
        chk.string(manifest[key], "%s.%s" % (field, key), allow_empty=False)
    metadata = chk.mapping(manifest.get("metadata"), "%s.metadata" % field)
    if "name" not in metadata:
        chk.fail("%s.metadata.name" % field, "is required (generateName is not supported here)")
    chk.name(metadata["name"], "%s.metadata.name" % field)
    if "namespace" in metadata:
        chk.name(metadata["namespace"], "%s.metadata.namespace" % field, _DNS1123_LABEL)
    for key in ("labels", "annotations"):
        if key in metadata:
            chk.string_map(metadata[key], "%s.metadata.%s" % (field, key))
    return clone(manifest)


def validate_scenario(data, source: str = "<scenario>") -> dict:
    """Validate already-parsed scenario data (None or ``{}`` is the empty scenario); see ``load_scenario``."""
    chk = _Checker(source)
    if data is None:
        data = {}
    chk.mapping(data, "(top level)")
    unknown = set(data) - set(TOP_LEVEL)
    if unknown:
        chk.fail("(top level)", "unknown field(s) %s (known: %s)" % (", ".join(sorted(map(str, unknown))), ", ".join(TOP_LEVEL)))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    namespaces = []
    for i, namespace in enumerate(chk.sequence(data.get("namespaces") or [], "namespaces")):
        chk.name(namespace, "namespaces[%d]" % i, _DNS1123_LABEL)
        if len(namespace) > 63:
            chk.fail("namespaces[%d]" % i, "%r is longer than 63 characters" % namespace)
        if namespace in namespaces:
            chk.fail("namespaces[%d]" % i, "%r is listed twice" % namespace)
        namespaces.append(namespace)

    extra = {}
    if "kubelet_version" in data:
        extra["kubelet_version"] = _kubelet_version(chk, data["kubelet_version"], "kubelet_version")
    for knob in KNOBS:
        if knob in data:
            value = data[knob]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                chk.fail(knob, "must be a number of seconds >= 0, got %r" % (value,))
            extra[knob] = float(value)
    nodes, names = [], set()
    context = {"kubelet_version": extra.get("kubelet_version"), "gpu_nodes": []}
    for i, entry in enumerate(chk.sequence(data.get("nodes") or [], "nodes")):
        for field, item, pool in _pool(chk, entry, i):
            node = _node(chk, item, len(nodes), now, field, context)
            if node["metadata"]["name"] in names:
                chk.fail("%s.name" % field, "%r is listed twice" % node["metadata"]["name"])
            names.add(node["metadata"]["name"])
            nodes.append(node)
            if pool and context["gpu_nodes"] and context["gpu_nodes"][-1]["node"] == node["metadata"]["name"]:
                context["gpu_nodes"][-1]["pool"] = pool
    faults = []
    if data.get("faults") is not None:
        from kubelab import faults as faults_mod  # pylint: disable=import-outside-toplevel
        for i, fault in enumerate(chk.sequence(data["faults"], "faults")):
            try:
                faults.append(faults_mod.validate_fault(fault))
            except ValueError as exc:
                chk.fail("faults[%d]" % i, str(exc))

    objects = [_object(chk, manifest, i) for i, manifest in enumerate(chk.sequence(data.get("objects") or [], "objects"))]
    objects += _helm_releases(chk, data.get("helm_releases") or [], now, objects)
    return {
        "name": chk.string(data.get("name", ""), "name"),
        "description": chk.string(data.get("description", ""), "description"),
        "namespaces": namespaces,
        "nodes": nodes,
        "objects": objects,
        "gpu_nodes": context["gpu_nodes"],
        "control_plane_nodes": context.get("control_plane_nodes", []),
        "faults": faults,
        **extra,
    }


def _pool(chk: _Checker, entry, index: int) -> list:
    """``[(field, node entry, pool name or None)]``: one entry, or ``count`` copies named ``<name>-<n>``."""
    if not isinstance(entry, dict) or "count" not in entry:
        return [("nodes[%d]" % index, entry, None)]
    count = entry["count"]
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_POOL:
        chk.fail("nodes[%d].count" % index, "must be an integer from 1 to %d, got %r" % (MAX_POOL, count))
    name = chk.name(entry.get("name"), "nodes[%d].name" % index)
    base = {k: v for k, v in entry.items() if k != "count"}
    return [("nodes[%d] (%s-%d)" % (index, name, n), dict(base, name="%s-%d" % (name, n)), name)
            for n in range(1, count + 1)]


def _helm_releases(chk, entries, stamp: str, objects: list) -> list[dict]:
    """``helm_releases``: the objects Helm applied for each release's deployed revision (its ``manifest``,
    with Helm's ownership annotations; one that ``objects`` already holds is left to it) and the Helm
    storage Secrets (kubelab.helmstore), checked field by field."""
    from kubelab.helmstore import STATUSES, release_objects, release_secrets
    created = {_identity(obj) for obj in objects}
    applied, secrets = [], []
    for index, entry in enumerate(chk.sequence(entries, "helm_releases")):
        where = "helm_releases[%d]" % index
        if not isinstance(entry, dict):
            chk.fail(where, "must be a mapping with name, namespace, chart, revisions")
        for key in ("name", "namespace", "chart"):
            if not isinstance(entry.get(key), str) or not entry.get(key):
                chk.fail("%s.%s" % (where, key), "required string")
        revisions = entry.get("revisions")
        if not isinstance(revisions, list) or not revisions:
            chk.fail("%s.revisions" % where, "must be a non-empty list of {chart_version, app_version, status}")
        for number, rev in enumerate(revisions):
            if not isinstance(rev, dict) or not isinstance(rev.get("chart_version"), str):
                chk.fail("%s.revisions[%d].chart_version" % (where, number), "required string (quote versions)")
            if rev.get("status", "deployed") not in STATUSES:
                chk.fail("%s.revisions[%d].status" % (where, number), "must be one of %s" % ", ".join(STATUSES))
            _release_manifest(chk, rev.get("manifest"), "%s.revisions[%d].manifest" % (where, number))
        for obj in release_objects(entry):
            if _identity(obj) not in created:
                created.add(_identity(obj))
                applied.append(obj)
        secrets += release_secrets(entry, stamp)
    return applied + secrets


def _identity(obj: dict) -> tuple:
    """(API group, kind, namespace, name) of a manifest."""
    metadata = obj.get("metadata") or {}
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    return group, obj.get("kind"), metadata.get("namespace"), metadata.get("name")


def _release_manifest(chk, manifest, where: str) -> None:
    """A revision's ``manifest``: template path -> list of objects (apiVersion, kind, metadata.name)."""
    if manifest is None:
        return
    if not isinstance(manifest, dict):
        chk.fail(where, "must be a mapping of template path (templates/x.yaml) to the objects it rendered")
    for path, objects in manifest.items():
        if not isinstance(path, str) or not path:
            chk.fail(where, "template paths must be strings, got %r" % (path,))
        if not isinstance(objects, list):
            chk.fail("%s[%s]" % (where, path), "must be a list of objects")
        for number, obj in enumerate(objects):
            _object(chk, obj, number, "%s[%s][%d]" % (where, path, number))


def load_scenario(path: str) -> dict:
    """Read, validate and expand the scenario file at ``path`` (YAML)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except OSError as exc:
        raise ScenarioError("%s: cannot read: %s" % (path, exc)) from exc
    except yaml.YAMLError as exc:
        raise ScenarioError("%s: not valid YAML: %s" % (path, exc)) from exc
    result = validate_scenario(data, path)
    if not result["name"]:
        result["name"] = re.sub(r"\.ya?ml$", "", path.rsplit("/", 1)[-1])
    return result


def scenario_objects(scenario: dict) -> list[dict]:
    """Every manifest to create, in order: Namespaces, Nodes, then ``objects``."""
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in scenario.get("namespaces", [])]
    return namespaces + clone(scenario.get("nodes", [])) + clone(scenario.get("objects", []))
