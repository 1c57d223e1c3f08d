#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: compat_check
short_description: Check GPU nodes and a cluster against the GPU Operator compatibility matrix
version_added: 0.1.0
description:
  - Evaluates the C(gpu_node) facts of many hosts (from M(gpufleet.dra_gate.gpu_node_facts)) and optional
    cluster facts against the versioned compatibility matrix for a target NVIDIA GPU Operator release
    (by default the matrix's C(defaults.target_operator_version), 26.7.0 in the bundled matrix), and returns
    structured findings, counts, the checks that could not be assessed and a verdict.
  - The matrix is data (C(data/matrix/*.yml) in the collection), one file per operator release plus
    C(common.yml); every row carries its source. See C(docs/compat-matrix.md).
  - NVIDIA's support envelope (Kubernetes range, containerd range, driver branch, managed DRA floor,
    ClusterPolicy/GPUCluster exclusion, kubelet skew, passthrough acceptance and IOMMU) gives C(block)
    findings. containerd's own "most thoroughly tested" Kubernetes combinations, a driver point
    release other than the validated one of its branch, and VFIO passthrough that is requested and
    accepted as alpha (C(dra.passthrough.alpha_accepted), not a standard production path) give C(warn) findings.
  - Facts that are missing never pass silently; they give a finding whose id ends in C(.not_assessed),
    listed in RV(not_assessed) and counted in RV(counts.not_assessed). Its severity is the matrix row's
    C(when_not_assessed) (by default the row's own severity), so a check the target requires but that could
    not be assessed makes the verdict C(block) or C(warn), never C(pass). A version string that cannot be
    parsed gives such a finding naming the field and the string.
  - With O(expected_hosts) (for example C(ansible_play_hosts_all)), every expected host that did not answer
    (no entry in O(nodes), or listed in O(failed_hosts)) is a C(block) finding naming it
    (C(coverage.host_unreachable), C(coverage.host_failed)); with the facts form of O(cluster), a GPU node of the
    cluster that no host of O(inventory_hosts) maps to is a C(warn) finding (C(coverage.node_not_in_inventory)).
  - Runs on the controller through its action plugin and never transfers a module. Without the
    action plugin (for example run directly), O(matrix) must be given as a path.
author:
  - gpufleet maintainers (@gpufleet)
attributes:
  check_mode:
    description: Can run in check mode; it only reads, so check mode changes nothing.
    support: full
  diff_mode:
    description: Will return details on what has changed.
    support: none
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
  async:
    description: Supports being used with the C(async) keyword.
    support: none
extends_documentation_fragment:
  - gpufleet.dra_gate.attributes.controller
options:
  nodes:
    description:
      - The C(gpu_node) facts of each host, as a dict host name -> facts.
      - A value that only wraps the facts in a C(gpu_node) key (for example a host's C(ansible_facts)) is unwrapped.
      - Any key of the facts may be missing or null; a host whose value is null gives a
        C(node.not_assessed) finding.
      - When empty or omitted, a C(nodes.not_assessed) finding says so.
    type: dict
  cluster:
    description:
      - Facts about the cluster. When omitted, every cluster check gives a C(.not_assessed) finding.
      - Two forms. The simple form sets O(cluster.kubernetes_version) and the other simple keys below.
        The facts form is what M(gpufleet.dra_gate.gpu_cluster_facts) returns (schema 1), recognised by
        O(cluster.schema_version) or O(cluster.api_server); it adds per-node kubelet skew, one GPU backend
        per node, the nodes of a C(dra) play that serve the Device Plugin now, the served DRA API,
        ClusterPolicy/GPUCluster names and states, DeviceClasses that bridge C(nvidia.com/gpu), stuck
        ResourceClaims, and the current operator version from the Helm release.
      - A simple key set next to the facts wins over what the facts say (the preflight role merges
        C(preflight_cluster) over the gathered facts). Keys a newer facts module adds are ignored through
        the action plugin.
      - Kubernetes nodes are matched to the hosts of O(nodes) by name or short name (C(gpu-07) and
        C(gpu-07.example.internal)); node findings name the host where one matches, else the node.
    type: dict
    suboptions:
      kubernetes_version:
        description:
          - The kube-apiserver version, for example C("1.36.4") or C("v1.36.4-eks-1a2b3c"). Quote it.
        type: raw
      kubelet_versions:
        description:
          - Kubelet version per host (host name -> version string), as the API server reports them.
          - Takes precedence over a node's own C(kubelet.version) fact. Hosts only listed here are checked for skew too.
        type: dict
      cluster_policy:
        description:
          - Whether a ClusterPolicy exists. C(true)/C(false), the object, a list of objects, or a
            C(kubernetes.core.k8s_info) result (present when its C(resources) list is non-empty).
          - Omitted or null means unknown.
        type: raw
      gpu_cluster:
        description:
          - Whether a GPUCluster exists, in the same forms as O(cluster.cluster_policy).
        type: raw
      operator_version:
        description:
          - The GPU Operator release installed now, for example C("26.3.1"). Needed to plan the upgrade path.
        type: raw
      distribution:
        description:
          - The Kubernetes distribution, for example C(gke), C(aks), C(eks), C(openshift), C(doks), C(oke) or C(upstream).
          - A managed distribution gives a dated C(info) finding on its status; C(upstream) gives none.
        type: str
      schema_version:
        description:
          - Facts form. The gpu_cluster_facts schema version; only C(1) is understood.
        type: raw
      api_server:
        description:
          - Facts form. The API server's C(version) (plain, for example C(1.37.0)) and C(git_version); used
            when O(cluster.kubernetes_version) is not given.
        type: raw
      apis:
        description:
          - Facts form. C(resource_k8s_io_v1) (bool) and C(groups) (group -> served versions); with
            O(target.allocation_mode=dra), C(resource.k8s.io/v1) not served blocks.
        type: raw
      nodes:
        description:
          - Facts form. Kubernetes node name -> C(kubelet_version), C(gpu_backend)
            (C(device_plugin), C(dra), C(both), C(none) or null), C(allocatable_gpu), C(dra_devices) and more.
        type: raw
      operator:
        description:
          - Facts form. C(helm_release) (its C(chart_version), else C(app_version), is the current operator
            version when O(cluster.operator_version) is not given), C(cluster_policies) and C(gpu_clusters)
            (each C(name), C(state), C(conditions)), C(workloads), C(crds).
        type: raw
      device_classes:
        description:
          - Facts form. DeviceClasses with C(name), C(extended_resource_name) and C(selectors).
        type: raw
      runtime_classes:
        description:
          - Facts form. RuntimeClasses; recorded, not checked.
        type: raw
      pdbs:
        description:
          - Facts form. PodDisruptionBudgets; recorded, not checked.
        type: raw
      resource_claims:
        description:
          - Facts form. ResourceClaim counts (C(total), C(allocated), C(reserved), C(deleting_allocated),
            C(by_namespace)) and the C(stuck) claims.
        type: raw
      problems:
        description:
          - Facts form. What gpu_cluster_facts could not read; recorded, not checked.
        type: raw
  target:
    description:
      - What the cluster is to become.
    type: dict
    suboptions:
      operator_version:
        description:
          - The target GPU Operator release. A matrix release file must cover it.
          - When omitted, the matrix's C(defaults.target_operator_version) (C(data/matrix/common.yml); 26.7.0 in the
            bundled matrix), or the release of a release file given alone.
        type: raw
      kubernetes_version:
        description:
          - The target Kubernetes version. When given, the validated range and kubelet skew are checked
            against it as well as against the current API server version.
        type: raw
      allocation_mode:
        description:
          - C(device_plugin) keeps the Device Plugin (ClusterPolicy); C(dra) is managed DRA (GPUCluster) and adds
            its floor (Kubernetes, driver, CDI, no ClusterPolicy).
        type: str
        choices: [device_plugin, dra]
        default: device_plugin
      passthrough:
        description:
          - VFIO passthrough through the DRA driver is wanted.
        type: bool
        default: false
      accept_alpha_passthrough:
        description:
          - Explicit acceptance that passthrough is alpha (feature gate C(PassthroughSupport), disabled by default).
            Without it O(target.passthrough=true) is a C(block) finding (C(dra.passthrough.acceptance)).
          - With it (and O(target.passthrough=true)) the accepted alpha stays a C(warn) finding
            (C(dra.passthrough.alpha_accepted)) naming the stage, the acceptance and that it is not a standard
            production path; it never passes silently. Without O(target.passthrough) it changes nothing.
        type: bool
        default: false
  releases:
    description:
      - Known GPU Operator releases for upgrade-hop planning, for example C(["26.3.x", "26.6.x", "26.7.0"]).
      - Overrides the list in the matrix. Quote each entry.
    type: list
    elements: raw
  matrix:
    description:
      - A matrix file or a directory of matrix files (C(*.yml), C(*.yaml)).
      - Defaults to the matrix bundled with the collection when run through the action plugin;
        required when the module runs without it.
    type: path
  fail_on:
    description:
      - The verdict at which the task fails. The findings are returned either way.
    type: str
    choices: [block, warn, never]
    default: block
  expected_hosts:
    description:
      - The hosts the phase was asked to cover, for example C(ansible_play_hosts_all). Each one that did not
        answer (is not in O(answered_hosts)) is a C(coverage.host_unreachable) finding of severity C(block) naming it.
      - When omitted, a C(coverage.not_assessed) finding (severity C(info)) says the coverage was not checked.
    type: list
    elements: str
  answered_hosts:
    description:
      - The hosts that answered, for example C(ansible_play_hosts). Defaults to the hosts of O(nodes).
    type: list
    elements: str
  failed_hosts:
    description:
      - Hosts known to have failed, host name -> reason (the reason may be empty). Each is a
        C(coverage.host_failed) finding of severity C(block) naming the host and the reason.
    type: dict
  inventory_hosts:
    description:
      - Every host of the inventory, for example C(groups['all']), against which the GPU nodes of the cluster facts
        are compared (a play limited to one pool still knows the other pool's hosts). Defaults to O(expected_hosts).
      - A GPU node (allocatable C(nvidia.com/gpu), DRA devices or the C(nvidia.com/gpu.present=true) label) that no
        inventory host maps to is a C(coverage.node_not_in_inventory) finding of severity C(warn).
    type: list
    elements: str
  host_node_names:
    description:
      - Inventory host name -> Kubernetes node name, where they differ. Without an entry a host maps to the node of
        its name, else to the only node with its short name.
    type: dict
notes:
  - A relative O(matrix) path is resolved against the playbook directory.
  - Versions must be strings; YAML reads an unquoted C(1.30) as the number C(1.3), which is rejected with a message.
seealso:
  - module: gpufleet.dra_gate.gpu_node_facts
"""

EXAMPLES = r"""
- name: Gather node facts on the GPU nodes
  gpufleet.dra_gate.gpu_node_facts:

- name: Check the fleet against GPU Operator 26.7.0 and Kubernetes 1.37 (Device Plugin kept)
  gpufleet.dra_gate.compat_check:
    nodes: "{{ dict(groups['gpu'] | zip(groups['gpu'] | map('extract', hostvars, 'gpu_node'))) }}"
    cluster:
      kubernetes_version: "1.36.4"
      operator_version: "26.3.1"
      cluster_policy: true
      gpu_cluster: false
      distribution: upstream
    target:
      operator_version: "26.7.0"
      kubernetes_version: "1.37.0"
  run_once: true
  delegate_to: localhost
  register: compat

- name: The same, failing closed on hosts that did not answer
  gpufleet.dra_gate.compat_check:
    nodes: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, ['ansible_facts', 'gpu_node']))) }}"
    expected_hosts: "{{ ansible_play_hosts_all }}"
    answered_hosts: "{{ ansible_play_hosts }}"
    inventory_hosts: "{{ groups['all'] }}"
    cluster: "{{ cluster_read.ansible_facts.gpu_cluster }}"
  run_once: true
  delegate_to: localhost

- name: Show the upgrade path
  ansible.builtin.debug:
    msg: "{{ compat.upgrade_path | map(attribute='to') | list }}"

- name: Qualify a DRA canary pool, reporting without failing
  gpufleet.dra_gate.compat_check:
    nodes: "{{ canary_nodes }}"
    cluster:
      kubernetes_version: "1.37.0"
      cluster_policy: "{{ cluster_policy_info }}"  # a kubernetes.core.k8s_info result
      gpu_cluster: false
    target:
      allocation_mode: dra
    fail_on: never
  run_once: true
  register: canary

- name: Check against what the API server says (gpu_cluster_facts), naming the distribution explicitly
  gpufleet.dra_gate.compat_check:
    nodes: "{{ gpu_nodes }}"
    cluster: "{{ cluster_read.ansible_facts.gpu_cluster | combine({'distribution': 'upstream'}) }}"
    target:
      kubernetes_version: "1.37.0"
  run_once: true
  delegate_to: localhost

- name: Use a matrix directory of your own
  gpufleet.dra_gate.compat_check:
    nodes: "{{ gpu_nodes }}"
    matrix: files/matrix
"""

RETURN = r"""
findings:
  description:
    - Every violation and every check that could not be assessed. Checks that pass give no finding.
    - Ids of findings that could not be assessed end in C(.not_assessed); their severity is the matrix row's
      C(when_not_assessed) (docs/compat-matrix.md lists it per row).
    - Coverage findings (C(coverage.*)) come first.
  returned: success
  type: list
  elements: dict
  contains:
    id:
      description: The matrix row id, with a suffix for the part that failed (for example C(dra.managed.cdi)).
      type: str
      sample: driver.point_release
    severity:
      description: C(block), C(warn) or C(info).
      type: str
      sample: warn
    subject:
      description:
        - The host name (or the Kubernetes node name when no host of O(nodes) matches it), C(Kind/name) of an
          object (for example C(ClusterPolicy/cluster-policy), C(DeviceClass/gpu-legacy)), or C(cluster) for
          cluster-wide findings.
      type: str
      sample: gpu-node-01
    observed:
      description: What was found, or null when the fact is missing.
      type: str
      sample: 580.159.04
    expected:
      description: What the matrix allows.
      type: str
      sample: 580.173.02
    message:
      description: A sentence explaining the finding.
      type: str
      sample: driver 580.159.04 is not the validated point release 580.173.02 of branch 580 (older)
    source:
      description: The sources of the matrix row (seed document and section, or a source tag).
      type: str
      sample: seeds/000_dec44a8f4647fff6.txt § Key Changes > GPU Operator 26.7 changes the supported baseline
counts:
  description:
    - Findings per severity. C(block) and C(warn) include the not-assessed findings of that severity; C(info)
      does not; C(not_assessed) counts every not-assessed finding whatever its severity.
  returned: success
  type: dict
  sample: {"block": 1, "warn": 2, "info": 1, "not_assessed": 3}
  contains:
    block:
      description: Findings of severity C(block), not-assessed ones included.
      type: int
    warn:
      description: Findings of severity C(warn), not-assessed ones included.
      type: int
    info:
      description: Findings of severity C(info), not counting the not-assessed ones.
      type: int
    not_assessed:
      description: Findings whose id ends in C(.not_assessed), of any severity.
      type: int
not_assessed:
  description:
    - Every check that could not be assessed, in finding order; also named in the summary message.
  returned: success
  type: list
  elements: dict
  sample: [{"id": "containerd.not_assessed", "subject": "gpu-07", "severity": "warn",
            "reason": "not assessed: containerd not found on this node (another runtime, or none); containerd rows are not evaluated"}]
  contains:
    id:
      description: The finding id (ends in C(.not_assessed)).
      type: str
    subject:
      description: The host, object or C(cluster).
      type: str
    severity:
      description: C(block), C(warn) or C(info), from the row's C(when_not_assessed).
      type: str
    reason:
      description: Why it could not be assessed (the finding's message).
      type: str
verdict:
  description:
    - C(block) when any finding blocks, else C(warn) when any warns, else C(pass) (not-assessed findings count with
      their severity).
  returned: success
  type: str
  sample: warn
gate:
  description:
    - The gate decision of RV(verdict) at O(fail_on) (the one rule of every phase, C(gate.decide)); the task fails
      when C(failed) is true.
  returned: success
  type: dict
  sample: {"verdict": "block", "fail_on": "block", "failed": true,
           "reason": "verdict block: 1 block, 0 warn, 2 info, 0 not assessed; first blocking: driver.not_found [n1]:
                      no NVIDIA driver found on this node (fail_on block: fails)"}
  contains:
    verdict:
      description: The verdict judged.
      type: str
    fail_on:
      description: The level judged at.
      type: str
    failed:
      description: Whether the verdict reaches O(fail_on).
      type: bool
    reason:
      description: The verdict, the counts and the first blocking (else warning) finding.
      type: str
upgrade_path:
  description:
    - The operator upgrade hops from O(cluster.operator_version) to O(target.operator_version); each hop has
      C(from), C(to) and C(kind) (C(same_major) or C(next_major)).
    - An empty list when current and target are the same (or the target is older); null when the current
      version is unknown (an C(operator.upgrade_hops.not_assessed) finding says so).
  returned: success
  type: list
  elements: dict
  sample: [{"from": "26.3.1", "to": "26.6.x", "kind": "next_major"}, {"from": "26.6.x", "to": "26.7.0", "kind": "next_major"}]
target:
  description: The normalised target, with the component versions of the target release (null when unknown).
  returned: success
  type: dict
  sample:
    operator_version: "26.7.0"
    kubernetes_version: "1.37.0"
    allocation_mode: device_plugin
    passthrough: false
    accept_alpha_passthrough: false
    components: {"device_plugin": "v0.20.0", "dra_driver": "v0.5.0", "container_toolkit": "v1.20.0", "default_driver": "595.91.07"}
matrix:
  description: The matrix files read, the release the target matched, its file and publication date.
  returned: success
  type: dict
  sample: {"files": ["data/matrix/common.yml", "data/matrix/gpu-operator-26.7.0.yml"], "release": "26.7.0",
           "release_file": "gpu-operator-26.7.0.yml", "published": "2026-08-21"}
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.evaluate import (
    ARGUMENT_SPEC,
    CompatError,
    coverage_of,
    evaluate,
    gate_decision,
    summarize,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.matrix import (
    HAS_YAML,
    YAML_IMPORT_ERROR,
    MatrixError,
    load_matrix,
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"), exception=str(YAML_IMPORT_ERROR))
    params = module.params
    if not params["matrix"]:
        module.fail_json(msg="matrix: required when compat_check runs without its action plugin "
                             "(give the path of a matrix file or directory)")
    try:
        matrix = load_matrix(params["matrix"])
        result = evaluate(params["nodes"], cluster=params["cluster"], target=params["target"], matrix=matrix,
                          releases=params["releases"], coverage=coverage_of(params))
    except (CompatError, MatrixError) as exc:
        module.fail_json(msg=str(exc))
    message = summarize(result, params["fail_on"])
    result["gate"] = gate_decision(result, params["fail_on"])
    if result["gate"]["failed"]:
        module.fail_json(msg=message, changed=False, **result)
    module.exit_json(msg=message, changed=False, **result)


if __name__ == "__main__":
    main()
