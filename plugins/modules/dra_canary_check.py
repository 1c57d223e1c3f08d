#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: dra_canary_check
short_description: The DRA canary build's read-only checks - the chart, ownership, CDI discovery, passthrough
version_added: 0.4.0
description:
  - One read-only check of the DRA canary build (docs/canary.md), chosen by O(check); it never writes to the
    cluster. The build's writes (the extended-resource DeviceClass, the smoke workloads) are
    M(gpufleet.dra_gate.dra_canary_workloads)'s. Every check returns C(findings)
    (id, severity, subject, observed, expected, message, source) and C(ok) (no blocking finding); the
    phase records them and its gate decides.
  - C(chart) (read-only) - pins the chart of O(target_version) from O(charts) and verifies its sha256 with the
    upgrade phase's chart handling (module_utils operator_charts); nothing is installed before this passes.
  - C(ownership) (read-only) - any ClusterPolicy is a block naming it (the GPUCluster path owns the canary
    alone); a canary node with device-plugin allocatable C(nvidia.com/gpu) is a block naming the node;
    with O(isolation=group) every canary node carries O(isolation_labels) and O(isolation_taints) and no
    other node carries the labels; with O(isolation=cluster) every GPU node is a canary node.
  - C(cdi) (read-only) - per canary node, its C(gpu_node) facts (O(node_facts), gathered through the node's
    root prefix) against the C(gpu.nvidia.com) ResourceSlices - CDI specs present and valid, the node's
    GPUs listed as CDI devices, the slice devices matching the facts' UUID, PCI address and NUMA node.
  - C(passthrough) (read-only) - the VFIO passthrough decision (module_utils passthrough) - refused unless
    O(accept_alpha_passthrough), the C(PassthroughSupport) gate in O(feature_gates), and on every node of
    O(passthrough_nodes) IOMMU on, a GPU bound to C(vfio-pci) and no device-plugin allocatable; returns the
    node-dedication policy.
author:
  - gpufleet maintainers (@gpufleet)
options:
  check:
    description: Which check runs.
    type: str
    required: true
    choices: [chart, ownership, cdi, passthrough]
  charts:
    description:
      - C(chart) - the chart mapping (C(dra_gate_operator_charts), format of M(gpufleet.dra_gate.operator_charts)).
    type: dict
    default: {}
  target_version:
    description: C(chart) - the operator release the canary runs (its chart is pinned and verified).
    type: str
    default: 26.7.0
  nodes:
    description: The canary nodes (Kubernetes node names).
    type: list
    elements: str
    default: []
  isolation:
    description: C(cluster) (the canary is a cluster of its own) or C(group) (an isolated group, labels and taints).
    type: str
    choices: [cluster, group]
    default: group
  isolation_labels:
    description: Labels every canary node carries (O(isolation=group)).
    type: dict
    default: {}
  isolation_taints:
    description: Taints every canary node carries, as C(key[=value]:Effect) (O(isolation=group)).
    type: list
    elements: str
    default: []
  node_facts:
    description: Node name -> its C(gpu_node) facts (M(gpufleet.dra_gate.gpu_node_facts)), for C(cdi) and C(passthrough).
    type: dict
    default: {}
  passthrough_nodes:
    description: The canary nodes that serve VMs (VFIO passthrough); empty = passthrough not requested.
    type: list
    elements: str
    default: []
  accept_alpha_passthrough:
    description: The explicit acceptance of the alpha VFIO passthrough.
    type: bool
    default: false
  feature_gates:
    description: The GPUCluster's C(draDriver.featureGates) (gate name -> bool).
    type: dict
    default: {}
extends_documentation_fragment:
  - gpufleet.dra_gate.k8s_auth
  - gpufleet.dra_gate.attributes.k8s
attributes:
  check_mode:
    support: full
    description:
      - Every check only reads; check mode gives the same result.
  diff_mode:
    support: none
    description:
      - Changes nothing, so there is no diff.
notes:
  - Needs list on clusterpolicies, nodes and resourceslices and get on nodes.
seealso:
  - module: gpufleet.dra_gate.dra_canary_workloads
  - module: gpufleet.dra_gate.gpu_cluster
  - module: gpufleet.dra_gate.gpu_node_facts
"""

EXAMPLES = r"""
- name: Ownership and isolation before anything is installed
  gpufleet.dra_gate.dra_canary_check:
    check: ownership
    nodes: [canary-1, canary-2]
    isolation_labels: {gpufleet.io/dra-canary: "true"}
    isolation_taints: ["gpufleet.io/dra-canary=true:NoSchedule"]
  delegate_to: localhost
  run_once: true

- name: CDI discovery on the canary nodes against their ResourceSlices
  gpufleet.dra_gate.dra_canary_check:
    check: cdi
    nodes: [canary-1, canary-2]
    node_facts: "{{ dict(['canary-1', 'canary-2'] | zip(groups['canary'] | map('extract', hostvars, ['ansible_facts', 'gpu_node']))) }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
chart:
  description: C(chart) - the pinned chart (version, chart_version, key, source, kind, sha256, verified, images).
  returned: always
  type: dict
ok:
  description: Whether no finding blocks.
  returned: always
  type: bool
findings:
  description: The findings (id, severity, subject, observed, expected, message, source).
  returned: always
  type: list
  elements: dict
nodes:
  description: C(cdi) - per node the GPUs (uuid, pci_bus_id, numa_node, cdi, slice_device), CDI specs and devices, slice devices.
  returned: always
  type: dict
passthrough:
  description: C(passthrough) - decision (not_requested, enabled, refused), reasons, policy (vm_nodes, container_nodes), nodes.
  returned: always
  type: dict
started_at:
  description: When the module started (RFC 3339 UTC).
  returned: always
  type: str
finished_at:
  description: When the module finished (RFC 3339 UTC).
  returned: always
  type: str
duration_seconds:
  description: Run time in seconds.
  returned: always
  type: float
"""


from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.module_run import ModuleRun
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import dra_canary as dc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import operator_charts as oc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import passthrough as pt
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import (
    argspec,
    check_params,
    module_api_client,
    reader_from_params,
)

MODULE_ARG_SPEC = dict(
    check=dict(type="str", required=True, choices=["chart", "ownership", "cdi", "passthrough"]),
    charts=dict(type="dict", default={}),
    target_version=dict(type="str", default="26.7.0"),
    nodes=dict(type="list", elements="str", default=[]),
    isolation=dict(type="str", choices=list(dc.ISOLATIONS), default="group"),
    isolation_labels=dict(type="dict", default={}),
    isolation_taints=dict(type="list", elements="str", default=[]),
    node_facts=dict(type="dict", default={}),
    passthrough_nodes=dict(type="list", elements="str", default=[], no_log=False),
    accept_alpha_passthrough=dict(type="bool", default=False),
    feature_gates=dict(type="dict", default={}),
)


def check_chart(params):
    """The target's chart from the mapping, its sha256 verified (operator_charts' rules)."""
    mapping = oc.parse_charts(params["charts"])
    wanted = oc.release_key(params["target_version"])
    entry = next((e for e in mapping.values() if oc.release_key(e["version"]) == wanted), None) if wanted else None
    if entry is None:
        raise dc.RefusedError("dra_gate_operator_charts has no chart for %s (mapped: %s): map it with path and sha256; "
                              "nothing was installed" % (params["target_version"], ", ".join(sorted(mapping)) or "none"))
    chart = {"version": entry["version"], "chart_version": entry["chart_version"], "key": entry["key"],
             "source": entry["source"], "sha256": entry["sha256"], "images": dict(entry["images"]),
             "kind": entry["source_key"], "verified": False}
    if entry["source_key"] == "path":
        kind, actual = oc.local_digest(entry["source"])
        chart["kind"] = kind
        if actual != entry["sha256"]:
            raise dc.RefusedError("chart %s (%s %s): sha256 mismatch: expected %s, actual %s; nothing was installed" % (
                entry["key"], kind, entry["source"], entry["sha256"], actual))
        chart["verified"] = True
    else:
        raise dc.RefusedError("chart %s is %s: the canary installs a chart on the controller (path with sha256)" % (
            entry["key"], entry["source_key"]))
    return dict(chart=chart)


def check_ownership(reader, params):
    # None: the kind is not served, so no ClusterPolicy can exist
    policies = kube.list_or_none(reader, "/apis/nvidia.com/v1/clusterpolicies") or []
    nodes = reader.list("/api/v1/nodes")
    findings = dc.ownership_findings(policies, nodes, params["nodes"], params["isolation"], params["isolation_labels"],
                                     params["isolation_taints"])
    return dict(findings=findings, cluster_policies=[p["metadata"]["name"] for p in policies])


def check_cdi(reader, params):
    slices = reader.list("/apis/resource.k8s.io/v1/resourceslices")
    findings, nodes = [], {}
    for node in params["nodes"]:
        summary, found = dc.cdi_findings(node, params["node_facts"].get(node), slices)
        nodes[node] = summary
        findings.extend(found)
    return dict(findings=findings, nodes=nodes)


def check_passthrough(reader, params):
    node_objs = {}
    for node in params["passthrough_nodes"]:
        node_objs[node] = kube.get_or_none(reader, "/api/v1/nodes/%s" % node)
    decision = pt.decide(bool(params["passthrough_nodes"]), params["accept_alpha_passthrough"], params["feature_gates"],
                         params["nodes"], params["passthrough_nodes"], params["node_facts"], node_objs)
    findings = []
    if decision["decision"] == "refused":
        findings.append(dc.finding("dra_canary.passthrough_refused", "block", "passthrough",
                                   "; ".join(decision["reasons"]), "accepted, gate on, VM nodes ready for VFIO",
                                   "VFIO passthrough refused: %s" % "; ".join(decision["reasons"])))
    elif decision["decision"] == "enabled":
        findings.append(dc.finding("dra_canary.passthrough_alpha_accepted", "warn", "passthrough",
                                   "accepted on %s" % ", ".join(decision["policy"]["vm_nodes"]), "stable features only",
                                   "VFIO passthrough (%s, alpha) is enabled by explicit acceptance; container and VFIO "
                                   "claims are serialized (the 26.7.0 double-allocation race)" % pt.GATE))
    return dict(findings=findings, passthrough=decision)


def main():
    module = AnsibleModule(argument_spec=argspec(MODULE_ARG_SPEC), supports_check_mode=True)
    params = module.params
    run = ModuleRun(module)
    bad = check_params(params)
    if bad:
        run.fail(bad)
    if params["check"] == "cdi" and not isinstance(params["node_facts"], dict):
        run.fail("node_facts: expected a mapping node -> gpu_node facts")
    try:
        for taint in params["isolation_taints"]:
            dc.parse_taint(taint)
    except dc.CanaryError as exc:
        run.fail("isolation_taints: %s" % exc)
    out = dict(findings=[], nodes={}, passthrough={}, chart={})
    if params["check"] == "chart":
        try:
            got = check_chart(params)
        except (oc.ChartsError, dc.RefusedError, IOError, OSError) as exc:
            run.fail("chart: %s" % exc, ok=False, **out)
        out.update(got)
        run.exit(changed=False, ok=True, msg="chart %s verified" % got["chart"]["key"], **out)
    api_client = module_api_client(module)
    reader = reader_from_params(api_client, params)

    def work():
        if params["check"] == "ownership":
            return False, check_ownership(reader, params)
        if params["check"] == "cdi":
            return False, check_cdi(reader, params)
        return False, check_passthrough(reader, params)

    dc.finish_step(module, run, params["check"], out, work, api_client.close)


if __name__ == "__main__":
    main()
