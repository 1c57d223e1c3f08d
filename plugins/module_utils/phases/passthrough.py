# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""VFIO passthrough on the DRA canary: the decision and the claim guard (docs/canary.md).

Pure logic (no I/O, no Ansible). Passthrough is alpha (the DRA driver's ``PassthroughSupport`` gate,
default off): it is enabled only with the explicit acceptance, the gate set on purpose in the
GPUCluster's ``draDriver.featureGates``, and on every node that serves VMs: IOMMU on, at least one GPU
bound to ``vfio-pci``, no device-plugin ``nvidia.com/gpu`` allocatable. The node-dedication policy
(which nodes serve VMs, which containers) is part of the decision and goes to the evidence.

GPU Operator 26.7.0 has a known double-allocation race between a container (``gpu``) claim and a
``vfio`` claim of one physical GPU (the driver publishes a GPU it can rebind under both types). The
guard: container and VFIO claims that could land on the same physical GPU (the same node) are never in
flight together; they are submitted in separate waves, each wave released before the next is submitted
(``serialize``), or refused (``refuse``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock

GATE = "PassthroughSupport"
# DRA driver gates that conflict with PassthroughSupport (DOMAIN.md §2, CND dra-intro-install.rst).
CONFLICTS = ("DynamicMIG", "NVMLDeviceHealthCheck")
VFIO_DRIVER = "vfio-pci"
GPU_RESOURCE = "nvidia.com/gpu"
KINDS = ("container", "extended", "vfio")
GUARD_MODES = ("serialize", "refuse")


class PassthroughError(ValueError):
    """Bad input (the message names the field and the expected form)."""


def family(kind):
    """``container`` (a gpu claim or the extended resource) or ``vfio``."""
    if kind not in KINDS:
        raise PassthroughError("kind: expected one of %s, got %r" % (", ".join(KINDS), kind))
    return "vfio" if kind == "vfio" else "container"


def gate_enabled(feature_gates, name=GATE):
    """Whether ``name`` is set to true on purpose in a featureGates mapping (``{"PassthroughSupport": true}``)."""
    if not isinstance(feature_gates, dict):
        return False
    value = feature_gates.get(name)
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _allocatable_gpus(node_obj):
    value = ((node_obj or {}).get("status") or {}).get("allocatable") or {}
    try:
        return int(str(value.get(GPU_RESOURCE, "0")) or 0)
    except ValueError:
        return 0


def node_checks(name, facts, node_obj):
    """Problems (strings) that keep node ``name`` from serving VMs, from its gpu_node facts and its Node."""
    problems = []
    if not isinstance(facts, dict) or not facts:
        return ["no gpu_node facts were read for %s" % name]
    iommu = facts.get("iommu") or {}
    if iommu.get("enabled") is not True:
        problems.append("IOMMU is not enabled (iommu.enabled %s, group_count %s)" % (iommu.get("enabled"), iommu.get("group_count")))
    vfio = [g.get("pci_bus_id") for g in facts.get("gpus") or [] if g.get("kernel_driver") == VFIO_DRIVER]
    if not vfio:
        problems.append("no GPU is bound to %s (drivers: %s)" % (
            VFIO_DRIVER, ", ".join(sorted(set(str(g.get("kernel_driver")) for g in facts.get("gpus") or []))) or "no GPU"))
    if node_obj is None:
        problems.append("the Node %s is not in the API" % name)
    elif _allocatable_gpus(node_obj) > 0:
        problems.append("the device plugin serves %s there (allocatable %d): it must be off on a VM node"
                        % (GPU_RESOURCE, _allocatable_gpus(node_obj)))
    return problems


def decide(requested, accepted, feature_gates, canary_nodes, vm_nodes, facts, node_objs):
    """The passthrough decision.

    ``requested``: whether passthrough is asked for (VM nodes named); ``accepted``: the explicit
    ``accept_alpha_passthrough``; ``feature_gates``: the GPUCluster's ``draDriver.featureGates``;
    ``canary_nodes``/``vm_nodes``: node names; ``facts``: {node: gpu_node facts}; ``node_objs``:
    {node: Node object or None}. Returns ``{"decision": not_requested|enabled|refused, "reasons",
    "policy": {"vm_nodes", "container_nodes"}, "nodes": {node: [problems]}, "feature_gate"}``."""
    canary_nodes, vm_nodes = list(canary_nodes or []), list(vm_nodes or [])
    policy = {"vm_nodes": vm_nodes, "container_nodes": [n for n in canary_nodes if n not in vm_nodes]}
    out = {"requested": bool(requested), "accepted": bool(accepted), "policy": policy, "nodes": {},
           "feature_gate": {"name": GATE, "enabled": gate_enabled(feature_gates)}, "reasons": []}
    if not requested:
        if gate_enabled(feature_gates):
            out.update(decision="refused",
                       reasons=["the %s gate is set in draDriver.featureGates but no VM node is named: the gate is "
                                "enabled only on purpose, with the nodes that serve VMs" % GATE])
        else:
            out["decision"] = "not_requested"
        return out
    reasons = []
    if not accepted:
        reasons.append("VFIO passthrough is alpha (%s, default off): it needs accept_alpha_passthrough: true" % GATE)
    if not gate_enabled(feature_gates):
        reasons.append("the %s gate is not enabled in the GPUCluster's draDriver.featureGates" % GATE)
    conflicting = [g for g in CONFLICTS if gate_enabled(feature_gates, g)]
    if conflicting:
        reasons.append("%s conflicts with %s (both enabled)" % (GATE, ", ".join(conflicting)))
    if not vm_nodes:
        reasons.append("no VM node is named")
    for node in vm_nodes:
        if node not in canary_nodes:
            reasons.append("VM node %s is not a canary node" % node)
            continue
        problems = node_checks(node, (facts or {}).get(node), (node_objs or {}).get(node))
        out["nodes"][node] = problems
        reasons.extend("%s: %s" % (node, p) for p in problems)
    if not policy["container_nodes"] and vm_nodes:
        policy["note"] = "every canary node serves VMs; no node is dedicated to containers"
    out.update(decision="refused" if reasons else "enabled", reasons=reasons)
    return out


def plan_waves(workloads, mode="serialize", vm_nodes=None):
    """Waves of submissions such that a container and a VFIO claim that could share a physical GPU are
    never in flight together.

    ``workloads``: dicts with ``name``, ``kind`` (container|extended|vfio) and optional ``node``. Two
    workloads conflict when their families differ and they may land on the same node (the same node, or
    either unpinned). ``mode=serialize``: each wave holds workloads of one family only; consecutive
    waves alternate families and a wave is released before the next is submitted. ``mode=refuse``:
    conflicting workloads raise PassthroughError naming them. Workloads that conflict with nothing share
    the first wave of their family. Returns ``[{"family", "workloads": [names]}]`` in submission order."""
    if mode not in GUARD_MODES:
        raise PassthroughError("guard: expected one of %s, got %r" % (", ".join(GUARD_MODES), mode))
    items = []
    for index, item in enumerate(workloads or []):
        if not isinstance(item, dict) or not item.get("name"):
            raise PassthroughError("workloads[%d]: expected a dict with name and kind" % index)
        items.append((item["name"], family(item.get("kind", "container")), item.get("node") or None))
    del vm_nodes  # the node of a workload decides; an unpinned one may land anywhere

    def conflict(left, right):
        return left[1] != right[1] and (left[2] is None or right[2] is None or left[2] == right[2])

    pairs = [(a[0], b[0]) for i, a in enumerate(items) for b in items[i + 1:] if conflict(a, b)]
    if pairs and mode == "refuse":
        raise PassthroughError("container and VFIO claims could be in flight together on one physical GPU (the 26.7.0 "
                               "double-allocation race): %s; refused (guard refuse)" % ", ".join("%s + %s" % p for p in pairs))
    waves = []
    for name, fam, node in items:
        # the latest wave it may join: same family and no conflicting workload in a later wave
        target = None
        for position in range(len(waves) - 1, -1, -1):
            wave = waves[position]
            if wave["family"] == fam:
                target = position
                break
            if any(conflict((name, fam, node), other) for other in wave["members"]):
                break
        if target is None:
            waves.append({"family": fam, "members": [(name, fam, node)]})
        else:
            waves[target]["members"].append((name, fam, node))
    return [{"family": w["family"], "workloads": [m[0] for m in w["members"]]} for w in waves]


def overlapping(records):
    """Pairs of records (mappings with ``name``, ``kind``, ``node``, ``submitted_at``, ``released_at``) whose
    families differ (a kind other than ``vfio`` counts as a container), whose nodes are the same, and whose
    in-flight intervals overlap: what the guard must never let happen. The times are compared as times (one
    parser: common/clock.py), never as text; a record without both times is ignored."""
    timed = []
    for record in records or []:
        if not isinstance(record, dict):
            continue
        start, end = clock.parse_or_none(record.get("submitted_at")), clock.parse_or_none(record.get("released_at"))
        if start is not None and end is not None:
            timed.append((record, start, end))
    found = []
    for i, (left, left_start, left_end) in enumerate(timed):
        for right, right_start, right_end in timed[i + 1:]:
            if (left.get("kind") == "vfio") == (right.get("kind") == "vfio") or left.get("node") != right.get("node"):
                continue
            if left_start < right_end and right_start < left_end:
                found.append((left, right))
    return found


def overlaps(records):
    """The names of :func:`overlapping` pairs."""
    return [(left.get("name"), right.get("name")) for left, right in overlapping(records)]
