# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Scenario files: what the lab cluster holds when it starts (see lab/scenarios/README.md).

``load_scenario(path)`` reads and validates one and returns::

    {"name": str, "description": str,
     "namespaces": [str, ...],           # to create (besides the built-in ones the server makes)
     "nodes": [<v1 Node manifest>, ...], # complete: labels, taints, capacity, status.nodeInfo, Ready
     "objects": [<manifest>, ...]}       # created in file order after namespaces and nodes

Bad input raises ``ScenarioError`` naming the file and the field (``nodes[1].taints[0].effect``).
"""

from __future__ import annotations

import copy
import datetime
import re

import yaml

TOP_LEVEL = ("name", "description", "namespaces", "nodes", "objects")
NODE_FIELDS = ("name", "labels", "annotations", "taints", "capacity", "allocatable", "nodeInfo",
               "ready", "unschedulable", "addresses", "conditions", "role")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# The ten fields the kubernetes Python client's V1NodeSystemInfo requires.
NODE_INFO_FIELDS = ("architecture", "bootID", "containerRuntimeVersion", "kernelVersion", "kubeProxyVersion",
                    "kubeletVersion", "machineID", "operatingSystem", "osImage", "systemUUID")
DEFAULT_CAPACITY = {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
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


def _node(chk: _Checker, entry, index: int, now: str) -> dict:
    field = "nodes[%d]" % index
    chk.mapping(entry, field)
    unknown = set(entry) - set(NODE_FIELDS)
    if unknown:
        chk.fail(field, "unknown field(s) %s (known: %s)" % (", ".join(sorted(map(str, unknown))), ", ".join(NODE_FIELDS)))
    if "name" not in entry:
        chk.fail("%s.name" % field, "is required")
    name = chk.name(entry["name"], "%s.name" % field)
    field = "nodes[%d] (%s)" % (index, name)
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
    for key, value in chk.mapping(entry.get("nodeInfo") or {}, "%s.nodeInfo" % field).items():
        if key not in NODE_INFO_FIELDS:
            chk.fail("%s.nodeInfo.%s" % (field, key), "unknown field (known: %s)" % ", ".join(NODE_INFO_FIELDS))
        node_info[key] = chk.string(value, "%s.nodeInfo.%s" % (field, key), allow_empty=False)

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


def _object(chk: _Checker, manifest, index: int) -> dict:
    field = "objects[%d]" % index
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
    return copy.deepcopy(manifest)


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

    nodes = []
    for i, entry in enumerate(chk.sequence(data.get("nodes") or [], "nodes")):
        node = _node(chk, entry, i, now)
        if any(n["metadata"]["name"] == node["metadata"]["name"] for n in nodes):
            chk.fail("nodes[%d].name" % i, "%r is listed twice" % node["metadata"]["name"])
        nodes.append(node)

    objects = [_object(chk, manifest, i) for i, manifest in enumerate(chk.sequence(data.get("objects") or [], "objects"))]
    return {
        "name": chk.string(data.get("name", ""), "name"),
        "description": chk.string(data.get("description", ""), "description"),
        "namespaces": namespaces,
        "nodes": nodes,
        "objects": objects,
    }


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
    return namespaces + copy.deepcopy(scenario.get("nodes", [])) + copy.deepcopy(scenario.get("objects", []))
