# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU nodes built from recorded or constructed node trees.

A scenario node with ``gpu: {tree: <name>, backend: device-plugin|dra|both|none}`` is completed at
start by :func:`prepare`: the tree is written under ``<workdir>/trees/<node>/`` (a ``count:`` pool
shares ``trees/<pool>/``), the collection's ``node_config.gather`` reads it (recorded commands) and
the Node gets from the facts:

* ``status.nodeInfo``: kernelVersion (kernel.release), osImage (os.pretty_name),
  containerRuntimeVersion ``containerd://<version>``, kubeletVersion (the tree's kubelet) unless
  the scenario gives them (``nodeInfo``, ``kubelet_version``);
* GPU Feature Discovery / NFD labels (``nvidia.com/gpu.present``, ``gpu.count``, ``gpu.product``,
  ``gpu.memory``, ``cuda.driver.major|minor|rev``, ``mig.capable``,
  ``feature.node.kubernetes.io/pci-10de.present``) and ``kubelab.gpufleet.io/gpu-backend``;
* the annotation ``kubelab.gpufleet.io/gpus``: a JSON list of ``{"uuid", "name", "pci_bus_id",
  "numa_node", "memory_mib", "mig_mode", "index", "device_id"}`` (GPUs the NVIDIA driver holds;
  vfio-bound ones are left out), which the DRA part publishes as devices;
* the annotation ``kubelab.gpufleet.io/vfio-gpus``: a JSON list of ``{"pci_bus_id", "numa_node",
  "device_id", "iommu_group"}`` of the GPUs bound to ``vfio-pci`` (what the DRA driver publishes as
  ``vfio`` devices when its ``PassthroughSupport`` gate is on), only when there is one;
* capacity and allocatable ``nvidia.com/gpu`` for the ``device-plugin`` and ``both`` backends.

GPU UUIDs are unique in the cluster: the first node that uses a tree keeps the recorded UUIDs;
other nodes' trees (and other nodes of a pool, in the annotation) get UUIDs derived from the
node name. ``<workdir>/inventory.yml`` lists the GPU nodes for the collection's playbooks, and
``scenario["gpu_node_roots"]`` maps each GPU node to its tree (the DRA kubelet plugin writes its CDI
spec there, kubelab.controllers.dra).
"""

from __future__ import annotations

import hashlib
import json
import os
import re

import yaml

from kubelab.clone import clone
from kubelab import nodetrees

BACKEND_LABEL = "kubelab.gpufleet.io/gpu-backend"
GPUS_ANNOTATION = "kubelab.gpufleet.io/gpus"
VFIO_ANNOTATION = "kubelab.gpufleet.io/vfio-gpus"
VFIO_FIELDS = ("pci_bus_id", "numa_node", "device_id", "iommu_group")
GPU_RESOURCE = "nvidia.com/gpu"
DEVICE_PLUGIN_BACKENDS = ("device-plugin", "both")
DRA_BACKENDS = ("dra", "both")
GPU_FIELDS = ("uuid", "name", "pci_bus_id", "numa_node", "memory_mib", "mig_mode", "index", "device_id")
_UUID = re.compile(r"GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def gather(root: str) -> dict:
    """The collection's ``gpu_node`` facts of the tree at ``root`` (recorded commands)."""
    nodetrees.collection_importable()
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import config as node_config
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import NodeTree, RecordedCommands  # pylint: disable=import-outside-toplevel
    tree = NodeTree(root)
    return node_config.gather(tree, RecordedCommands(tree))


def derive_uuid(uuid: str, salt: str) -> str:
    """A GPU UUID of the same shape, unique to ``salt`` (a node name)."""
    if not uuid:
        return uuid
    return uuid[:-12] + hashlib.sha256(("%s/%s" % (salt, uuid)).encode("utf-8")).hexdigest()[:12]


def personalize(root: str, salt: str) -> None:
    """Rewrite the GPU UUIDs of a materialized tree (nvidia-smi recording, procfs) for node ``salt``."""
    paths = [os.path.join(root, ".gpufleet", "commands", "nvidia-smi.json")]
    gpus_dir = os.path.join(root, "proc", "driver", "nvidia", "gpus")
    if os.path.isdir(gpus_dir):
        paths += [os.path.join(gpus_dir, name, "information") for name in os.listdir(gpus_dir)]
    for path in paths:
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        new = _UUID.sub(lambda m: derive_uuid(m.group(0), salt), text)
        if new != text:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(new)


def driver_gpus(facts: dict) -> list:
    """The GPUs the NVIDIA driver holds (what NVML, the device plugin and the DRA driver see)."""
    return [g for g in facts.get("gpus") or [] if g.get("kernel_driver") in (None, "nvidia") and g.get("uuid")]


def gpu_entries(facts: dict, salt: str | None = None) -> list:
    """The ``kubelab.gpufleet.io/gpus`` annotation's list (field order of the contract)."""
    entries = []
    for gpu in driver_gpus(facts):
        entry = {key: gpu.get(key) for key in GPU_FIELDS}
        if salt:
            entry["uuid"] = derive_uuid(entry["uuid"], salt)
        entries.append(entry)
    return entries


def vfio_entries(facts: dict) -> list:
    """The ``kubelab.gpufleet.io/vfio-gpus`` annotation's list: the GPUs bound to vfio-pci."""
    return [{key: g.get(key) for key in VFIO_FIELDS} for g in facts.get("gpus") or [] if g.get("kernel_driver") == "vfio-pci"]


def gpu_labels(facts: dict, backend: str) -> dict:
    """Labels as GPU Feature Discovery and NFD publish them, plus the lab's backend label."""
    labels = {BACKEND_LABEL: backend}
    gpus = driver_gpus(facts)
    if any(g.get("device_id") for g in facts.get("gpus") or []):
        labels["feature.node.kubernetes.io/pci-10de.present"] = "true"
    if not gpus:
        return labels
    first = gpus[0]
    labels.update({"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": str(len(gpus))})
    if first.get("name"):
        labels["nvidia.com/gpu.product"] = re.sub(r"[^A-Za-z0-9_.-]", "-", first["name"].strip())[:63].strip("-_.")
    if first.get("memory_mib"):
        labels["nvidia.com/gpu.memory"] = str(first["memory_mib"])
    modes = {(g.get("mig_mode") or "").lower() for g in gpus}
    labels["nvidia.com/mig.capable"] = "true" if modes & {"enabled", "disabled"} else "false"
    version = ((facts.get("driver") or {}).get("version") or "").split(".")
    for key, part in zip(("major", "minor", "rev"), version):
        if part:
            labels["nvidia.com/cuda.driver.%s" % key] = part
    return labels


def complete_node(node: dict, facts: dict, entry: dict, salt: str | None = None) -> dict:
    """``node`` (a scenario Node manifest) completed from ``facts`` for the scenario's ``entry``."""
    node = clone(node)
    backend = entry.get("backend", "device-plugin")
    given = set(entry.get("node_info_given") or [])
    info = node["status"]["nodeInfo"]
    kernel = (facts.get("kernel") or {}).get("release")
    pretty = (facts.get("os") or {}).get("pretty_name")
    runtime = (facts.get("containerd") or {}).get("version")
    kubelet = (facts.get("kubelet") or {}).get("version")
    for key, value in (("kernelVersion", kernel), ("osImage", pretty),
                       ("containerRuntimeVersion", "containerd://%s" % runtime if runtime else None),
                       ("kubeletVersion", "v%s" % kubelet.lstrip("v") if kubelet else None),
                       ("kubeProxyVersion", "v%s" % kubelet.lstrip("v") if kubelet else None)):
        if value and key not in given:
            info[key] = value
    labels = node["metadata"].setdefault("labels", {})
    for key, value in gpu_labels(facts, backend).items():
        labels.setdefault(key, value)
    annotations = node["metadata"].setdefault("annotations", {})
    annotations[GPUS_ANNOTATION] = json.dumps(gpu_entries(facts, salt), separators=(",", ":"))
    vfio = vfio_entries(facts)
    if vfio:
        annotations[VFIO_ANNOTATION] = json.dumps(vfio, separators=(",", ":"))
    count = len(driver_gpus(facts))
    for part in ("capacity", "allocatable"):
        if backend in DEVICE_PLUGIN_BACKENDS and count:
            node["status"][part].setdefault(GPU_RESOURCE, str(count))
        elif GPU_RESOURCE not in (entry.get("explicit_capacity") or []):
            node["status"][part].pop(GPU_RESOURCE, None)
    return node


def prepare(scenario: dict, workdir: str, kubeconfig: str) -> dict:
    """Materialize the GPU nodes' trees, complete their Node manifests in ``scenario`` (in place) and
    write ``<workdir>/inventory.yml``. Returns ``{node name: tree directory}``."""
    entries = scenario.get("gpu_nodes") or []
    control_planes = {}
    for entry in scenario.get("control_plane_nodes") or []:
        root = os.path.join(workdir, "trees", entry["node"])
        if not os.path.isdir(root):
            nodetrees.materialize(entry["tree"], root)
        control_planes[entry["node"]] = os.path.abspath(root)
    if not entries:
        return {}
    by_name = {n["metadata"]["name"]: i for i, n in enumerate(scenario.get("nodes") or [])}
    trees_dir = os.path.join(workdir, "trees")
    roots, facts_of, used_trees, pools_first = {}, {}, set(), {}
    for entry in entries:
        name, pool = entry["node"], entry.get("pool")
        key = pool or name
        if key not in facts_of:
            root = os.path.join(trees_dir, key)
            if not os.path.isdir(root):  # a restart on the same workdir keeps the trees
                nodetrees.materialize(entry["tree"], root)
                if entry["tree"] in used_trees:
                    personalize(root, key)
            used_trees.add(entry["tree"])
            facts_of[key] = gather(root)
            roots[key] = root
        salt = None
        if pool:
            pools_first.setdefault(pool, name)
            salt = name if pools_first[pool] != name else None
        index = by_name[name]
        scenario["nodes"][index] = complete_node(scenario["nodes"][index], facts_of[key], entry, salt)
        roots[name] = roots[key]
    write_inventory(os.path.join(workdir, "inventory.yml"), {e["node"]: roots[e["node"]] for e in entries}, kubeconfig,
                    control_planes)
    scenario["gpu_node_roots"] = {e["node"]: os.path.abspath(roots[e["node"]]) for e in entries}
    return {e["node"]: roots[e["node"]] for e in entries}


def write_inventory(path: str, roots: dict, kubeconfig: str, control_planes: dict | None = None) -> str:
    """An Ansible inventory: group ``gpu_nodes`` (local connection, recorded trees), group
    ``control_plane`` for control-plane nodes with a ``node_tree`` (their static pod manifests and
    kubelet config), and the kubeconfig."""
    def host(root):
        return {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                "dra_gate_node_root": root, "dra_gate_node_commands": "recorded"}
    group = {"hosts": {name: host(root) for name, root in roots.items()},
             "vars": {"dra_gate_kubeconfig": os.path.abspath(kubeconfig)}}
    children = {"gpu_nodes": group}
    if control_planes:
        children["control_plane"] = {"hosts": {name: host(root) for name, root in control_planes.items()}}
    inventory = {"all": {"children": children}}
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("# Written by kubelab (kubelab.gpunodes) for this lab cluster's GPU nodes.\n")
        yaml.safe_dump(inventory, handle, default_flow_style=False, sort_keys=False)
    return path
