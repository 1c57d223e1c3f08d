# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``cluster`` option of ``compat_check`` in either of its two forms: pure logic, no I/O.

- the **simple form**: ``kubernetes_version``, ``kubelet_versions``, ``cluster_policy``,
  ``gpu_cluster``, ``operator_version``, ``distribution`` (:func:`compat_options.normalize_simple_cluster`);
- the **facts form**: what ``gpufleet.dra_gate.gpu_cluster_facts`` returns, recognised by a
  ``schema_version`` or an ``api_server`` key. The simple keys may sit next to the facts (the
  preflight role merges the operator's explicit ``preflight_cluster`` over the gathered facts) and
  win where they are set.

Both normalise to one dict: the simple keys, plus ``form``, the ClusterPolicy/GPUCluster names
when known, where the current operator version came from, and ``state`` (the facts only the
facts form carries: per-node backends, the DRA API, operator CR states, DeviceClasses,
ResourceClaims; None for the simple form).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.options import (
    CompatError,
    _type_name,
    normalize_simple_cluster,
)

FACTS_SCHEMA_VERSIONS = (1,)
FACTS_KEYS = ("schema_version", "api_server", "apis", "nodes", "operator", "device_classes", "runtime_classes",
              "pdbs", "resource_claims", "problems")
SIMPLE_KEYS = ("kubernetes_version", "kubelet_versions", "cluster_policy", "gpu_cluster", "operator_version",
               "distribution")
BACKENDS = ("device_plugin", "dra", "both", "none")
#: The GPU Feature Discovery / NFD label of a node with NVIDIA GPUs.
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
#: The operator's custom resources: facts key -> kind.
CR_KINDS = (("cluster_policies", "ClusterPolicy"), ("gpu_clusters", "GPUCluster"))


def is_facts_form(cluster):
    """True when ``cluster`` is (or contains) gpu_cluster_facts output."""
    return isinstance(cluster, dict) and (cluster.get("schema_version") is not None or
                                          cluster.get("api_server") is not None)


def normalize_cluster(cluster):
    """The normalised cluster (see the module doc), or None when no cluster was given. Raises CompatError."""
    if not is_facts_form(cluster):
        if isinstance(cluster, dict):  # Ansible's validator sets every documented key, facts ones to None
            cluster = dict((k, v) for k, v in cluster.items() if v is not None or k not in FACTS_KEYS)
        return normalize_simple_cluster(cluster)
    simple = dict((key, cluster.get(key)) for key in SIMPLE_KEYS)
    out = normalize_simple_cluster(simple)
    schema = cluster.get("schema_version")
    if schema is not None and schema not in FACTS_SCHEMA_VERSIONS:
        raise CompatError("cluster.schema_version: gpu_cluster_facts schema %s is supported, got %r"
                          % (", ".join(str(v) for v in FACTS_SCHEMA_VERSIONS), schema))
    out["form"] = "facts"
    api = _mapping(cluster.get("api_server"), "cluster.api_server")
    if out["kubernetes_version"] is None and api:
        version = api.get("version") or api.get("git_version")
        if version is not None and (isinstance(version, bool) or not isinstance(version, str)):
            raise CompatError("cluster.api_server.version: expected a version string, got %s %r"
                              % (_type_name(version), version))
        out["kubernetes_version"] = version
    nodes = _nodes(cluster.get("nodes"))
    kubelets = dict((name, node["kubelet_version"]) for name, node in nodes.items())
    kubelets.update(out["kubelet_versions"])  # explicit entries win
    out["kubelet_versions"] = kubelets
    operator = _mapping(cluster.get("operator"), "cluster.operator")
    crs = None
    if operator is not None:
        crs = []
        for key, kind in CR_KINDS:
            items = _objects(operator.get(key), "cluster.operator.%s" % key)
            if items is None:
                continue
            names = [item.get("name") for item in items]
            field = "cluster_policy" if kind == "ClusterPolicy" else "gpu_cluster"
            if simple.get(field) is None:  # the explicit value wins
                out[field] = bool(items)
                out[field + "_names"] = names
            crs.extend({"kind": kind, "name": item.get("name"), "state": item.get("state"),
                        "conditions": item.get("conditions") if isinstance(item.get("conditions"), list) else []}
                       for item in items)
    release = _mapping(operator.get("helm_release") if operator else None, "cluster.operator.helm_release")
    if out["operator_version"] is None:
        if release:
            version = release.get("chart_version") or release.get("app_version")
            if version is not None and not isinstance(version, str):
                raise CompatError("cluster.operator.helm_release.chart_version: expected a string, got %s %r"
                                  % (_type_name(version), version))
            out["operator_version"] = version
            out["operator_version_origin"] = "Helm release %s/%s (chart %s %s, %s)" % (
                release.get("namespace"), release.get("name"), release.get("chart"), version, release.get("status"))
        else:
            out["operator_version_problem"] = ("cluster.operator_version not given and the cluster facts have no "
                                               "GPU Operator Helm release")
    apis = _mapping(cluster.get("apis"), "cluster.apis")
    out["state"] = {
        "nodes": nodes,
        "nodes_gathered": cluster.get("nodes") is not None,
        "apis": apis,
        "crs": crs,
        "helm_release": release,
        "device_classes": _objects(cluster.get("device_classes"), "cluster.device_classes"),
        "resource_claims": _mapping(cluster.get("resource_claims"), "cluster.resource_claims"),
    }
    return out


def api_served(apis, group_version):
    """True/False when the facts say whether ``group/version`` is served, else None."""
    if not apis:
        return None
    key = group_version.replace(".", "_").replace("/", "_")
    value = apis.get(key)
    if isinstance(value, bool):
        return value
    groups = apis.get("groups")
    if isinstance(groups, dict) and groups:
        group, version = group_version.split("/", 1)
        return version in (groups.get(group) or [])
    return None


def link_hosts(cluster, hosts):
    """Key the facts form's per-node data by the play's host names where a node is one of them.

    A Kubernetes node matches a host by name, or by the short name (``gpu-07`` and
    ``gpu-07.example.internal``). Sets ``state["subjects"]`` (node name -> finding subject) and
    ``state["play_nodes"]`` (node names of the play's hosts) and re-keys ``kubelet_versions``.
    """
    state = cluster["state"] if cluster else None
    if state is None:
        return
    by_name = dict((name, name) for name in state["nodes"])
    by_short = {}
    for name in state["nodes"]:
        by_short.setdefault(name.split(".", 1)[0], []).append(name)
    subjects = dict(by_name)
    play_nodes = []
    for host in hosts:
        node = by_name.get(host)
        if node is None:
            short = host.split(".", 1)[0]
            node = by_name.get(short)
            if node is None and len(by_short.get(short, ())) == 1:
                node = by_short[short][0]
        if node is not None and subjects[node] == node:
            subjects[node] = host
            play_nodes.append(node)
    kubelets = {}
    for name, version in cluster["kubelet_versions"].items():
        host = subjects.get(name, name)
        if host not in kubelets or host == name:
            kubelets[host] = version
    cluster["kubelet_versions"] = kubelets
    state["subjects"] = subjects
    state["play_nodes"] = play_nodes


# ---- field readers: None stays None (unknown); a wrong type is a CompatError naming the field -----

def _mapping(value, field):
    if value is None:
        return None
    if not isinstance(value, dict):
        raise CompatError("%s: expected a dict (gpu_cluster_facts schema 1), got %s" % (field, _type_name(value)))
    return value


def _objects(value, field):
    if value is None:
        return None
    if not isinstance(value, list):
        raise CompatError("%s: expected a list (gpu_cluster_facts schema 1), got %s" % (field, _type_name(value)))
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise CompatError("%s[%d]: expected a dict, got %s" % (field, index, _type_name(item)))
    return value


def _nodes(value):
    value = _mapping(value, "cluster.nodes") or {}
    out = {}
    for name, node in value.items():
        field = "cluster.nodes[%r]" % (name,)
        if not isinstance(name, str):
            raise CompatError("cluster.nodes: node names must be strings, got %s %r" % (_type_name(name), name))
        node = _mapping(node, field) or {}
        kubelet = node.get("kubelet_version")
        if kubelet is not None and (isinstance(kubelet, bool) or not isinstance(kubelet, str)):
            raise CompatError("%s.kubelet_version: expected a version as a string, got %s %r"
                              % (field, _type_name(kubelet), kubelet))
        backend = node.get("gpu_backend")
        if backend is not None and backend not in BACKENDS:
            raise CompatError("%s.gpu_backend: expected one of %s or null, got %r" % (field, ", ".join(BACKENDS), backend))
        devices = node.get("dra_devices")
        labels = node.get("labels") if isinstance(node.get("labels"), dict) else {}
        allocatable = node.get("allocatable_gpu")
        gpu_node = bool(backend in ("device_plugin", "dra", "both") or allocatable is not None or
                        (isinstance(devices, list) and devices) or labels.get(GPU_PRESENT_LABEL) == "true")
        out[name] = {"kubelet_version": kubelet, "gpu_backend": backend, "allocatable_gpu": allocatable,
                     "dra_device_count": len(devices) if isinstance(devices, list) else None, "gpu_node": gpu_node}
    return out


def gpu_node_names(cluster):
    """The Kubernetes node names the cluster facts know as GPU nodes (sorted), or None without the facts form.

    A GPU node serves ``nvidia.com/gpu`` (allocatable, even 0: a node whose Device Plugin is down),
    publishes DRA devices, or carries the ``nvidia.com/gpu.present=true`` label of GPU Feature
    Discovery.
    """
    state = cluster["state"] if cluster else None
    if state is None or not state.get("nodes_gathered"):
        return None
    return sorted(name for name, node in state["nodes"].items() if node["gpu_node"])
