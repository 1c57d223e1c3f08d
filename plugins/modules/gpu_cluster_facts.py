#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_cluster_facts
short_description: Gather the cluster-side facts of a GPU Kubernetes cluster that the DRA gate decides on
version_added: 0.2.0
description:
  - Reads, through the Kubernetes API, what the gate needs to know about the cluster and returns it as
    C(ansible_facts.gpu_cluster) (schema in docs/cluster-facts.md).
  - The API server version and the served API groups; per node the kubelet version, labels, taints,
    readiness, allocatable C(nvidia.com/gpu), the DRA devices that driver C(gpu.nvidia.com) publishes
    for it in ResourceSlices, and the GPU backend that results (C(device_plugin), C(dra), C(both) or
    C(none); C(both) is a resource-ownership fault).
  - The GPU Operator - its Helm release decoded from Helm's storage Secrets, its DaemonSets and
    Deployments with the images and the image digests their pods run, ClusterPolicy and GPUCluster
    objects, its CRDs with served and stored versions - plus DeviceClasses, RuntimeClasses,
    PodDisruptionBudgets and ResourceClaim counts (with claims stuck in deletion).
  - One paged list per kind and no request per node. Groups and kinds the server does not serve
    (no C(resource.k8s.io/v1), no NVIDIA CRDs) are not errors; the section is empty and
    C(gpu_cluster.problems) says what is not served.
  - Forbidden is not absent - a 403 on any read of an included section (nodes, ResourceSlices,
    DeviceClasses, ResourceClaims, PDBs, RuntimeClasses, the Helm storage Secrets, the operator's
    workloads, CRDs, ClusterPolicy/GPUCluster) fails the module naming the verb and the resource.
    Leave out with O(include) what the credentials may not read.
  - Transient API failures are retried within O(api_deadline) (see the option).
  - Runs on the controller (or a delegate) with the C(kubernetes) Python client.
author:
  - gpufleet maintainers (@gpufleet)
options:
  include:
    description:
      - Sections to gather; the others are returned as null and cost no request.
      - C(nodes) (nodes; with C(dra) their DRA devices and GPU backend), C(operator) (Helm release,
        workloads, ClusterPolicy, GPUCluster, CRDs, RuntimeClasses), C(dra) (ResourceSlices and
        DeviceClasses), C(pdbs), C(claims) (ResourceClaims).
      - Without C(dra), C(nodes.*.gpu_backend) and C(nodes.*.dra_devices) are null (not assessed).
    type: list
    elements: str
    choices: [nodes, operator, dra, pdbs, claims]
    default: [nodes, operator, dra, pdbs, claims]
  operator_namespace:
    description: Namespace of the GPU Operator and of its Helm release's storage Secrets.
    type: str
    default: gpu-operator
  operator_release:
    description: Name of the GPU Operator's Helm release.
    type: str
    default: gpu-operator
  namespaces:
    description:
      - Namespaces whose DaemonSets and Deployments are reported in C(operator.workloads).
      - Defaults to O(operator_namespace) alone.
    type: list
    elements: str
  page_size:
    description: Items per list request (C(limit)); the rest is fetched with C(continue). C(0) disables paging.
    type: int
    default: 500
extends_documentation_fragment:
  - gpufleet.dra_gate.k8s_auth
  - gpufleet.dra_gate.attributes.k8s
attributes:
  check_mode:
    support: full
    description: Read-only; check mode gathers the same facts.
  diff_mode:
    support: none
    description: Returns no diff; nothing is changed.
  facts:
    support: full
    description: Sets C(ansible_facts.gpu_cluster).
notes:
  - Read-only; always returns C(changed=false). Needs get/list on the kinds of the included sections.
  - The schema is versioned (C(gpu_cluster.schema_version)) and documented in docs/cluster-facts.md.
seealso:
  - module: gpufleet.dra_gate.gpu_node_facts
  - module: gpufleet.dra_gate.compat_check
"""

EXAMPLES = r"""
- name: Gather the cluster facts with the kubeconfig set for every cluster-side module
  module_defaults:
    group/gpufleet.dra_gate.k8s:
      kubeconfig: /etc/gpufleet/kubeconfig
      context: prod-gpu
  block:
    - name: Cluster facts
      gpufleet.dra_gate.gpu_cluster_facts:

- name: Only nodes and DRA, from a token
  gpufleet.dra_gate.gpu_cluster_facts:
    host: https://api.gpu.example.internal:6443
    api_key: "{{ vault_gpu_cluster_token }}"
    ca_cert: /etc/gpufleet/ca.crt
    include: [nodes, dra]

- name: Nodes that have both backends for the same GPUs
  ansible.builtin.debug:
    msg: "{{ ansible_facts.gpu_cluster.nodes | dict2items | selectattr('value.gpu_backend', 'eq', 'both')
             | map(attribute='key') | list }}"
"""

RETURN = r"""
api_calls:
  description: Number of HTTP requests the module made (discovery and retries included).
  returned: always
  type: int
  sample: 17
api_retries:
  description: How many of those requests were retries of a failed attempt (429, 5xx, transport failures).
  returned: always
  type: int
  sample: 0
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    gpu_cluster:
      description: The GPU cluster facts (schema in docs/cluster-facts.md).
      returned: always
      type: dict
      contains:
        schema_version:
          description: Version of this schema.
          type: int
          sample: 1
        included:
          description: The sections gathered (the others are null).
          type: list
          elements: str
        api_server:
          description: C(version) (plain, C(1.37.0)), C(git_version), C(platform), C(major), C(minor) from C(/version).
          type: dict
          sample: {"version": "1.37.0", "git_version": "v1.37.0", "platform": "linux/amd64"}
        apis:
          description: C(resource_k8s_io_v1) (bool) and C(groups) (group -> served versions) from C(/apis).
          type: dict
        nodes:
          description: >-
            Node name -> C(kubelet_version), C(labels), C(taints), C(unschedulable), C(ready),
            C(allocatable_gpu), C(gpu_backend), C(dra_devices), C(kernel_version), C(os_image),
            C(container_runtime_version).
          type: dict
        operator:
          description: C(helm_release), C(workloads), C(cluster_policies), C(gpu_clusters), C(crds).
          type: dict
        device_classes:
          description: C(name), C(extended_resource_name) (null when unset), C(selectors) (CEL expressions).
          type: list
          elements: dict
        runtime_classes:
          description: C(name) and C(handler) of every RuntimeClass.
          type: list
          elements: dict
        pdbs:
          description: >-
            C(namespace), C(name), C(min_available), C(max_unavailable), C(disruptions_allowed),
            C(current_healthy), C(desired_healthy), C(expected_pods) of every PodDisruptionBudget.
          type: list
          elements: dict
        resource_claims:
          description: >-
            C(total), C(allocated), C(reserved), C(deleting_allocated), C(by_namespace) (the same counts)
            and C(stuck) (deleted while still allocated, with their kubectl-style C(state)).
          type: dict
        problems:
          description: What is not served, not allowed or not understood, each with C(what) and C(reason).
          type: list
          elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.gpu_cluster_gather import SECTIONS, gather
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import (
    K8sApiError,
    argspec,
    check_params,
    module_api_client,
    reader_from_params,
)

MODULE_ARG_SPEC = dict(
    include=dict(type="list", elements="str", choices=list(SECTIONS), default=list(SECTIONS)),
    operator_namespace=dict(type="str", default="gpu-operator"),
    operator_release=dict(type="str", default="gpu-operator"),
    namespaces=dict(type="list", elements="str"),
    page_size=dict(type="int", default=500),
)


def main():
    module = AnsibleModule(argument_spec=argspec(MODULE_ARG_SPEC), supports_check_mode=True)
    params = module.params
    if params["page_size"] < 0:
        module.fail_json(msg="page_size: must be 0 (no paging) or more, got %d" % params["page_size"])
    bad = check_params(params)
    if bad:
        module.fail_json(msg=bad)
    api_client = module_api_client(module)
    reader = reader_from_params(api_client, params, page_size=params["page_size"])
    try:
        facts = gather(reader, include=params["include"], operator_namespace=params["operator_namespace"],
                       operator_release=params["operator_release"], namespaces=params["namespaces"])
    except K8sApiError as exc:
        module.fail_json(msg="reading the cluster failed: %s" % exc, call=exc.call, status=exc.status,
                         forbidden=exc.forbidden, attempts=exc.attempts, api_calls=reader.calls,
                         api_retries=reader.retries)
    finally:
        api_client.close()
    module.exit_json(changed=False, ansible_facts={"gpu_cluster": facts}, api_calls=reader.calls,
                     api_retries=reader.retries)


if __name__ == "__main__":
    main()
