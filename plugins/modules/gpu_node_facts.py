#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_node_facts
short_description: Gather the facts of a GPU node that the DRA gate decides on
version_added: 0.1.0
description:
  - Reads the node's OS, kernel, firmware, NVIDIA driver, GPUs (PCI address, NUMA node, IOMMU group,
    bound kernel driver, MIG mode, memory), IOMMU, CDI specs, containerd and kubelet, and returns
    them as C(ansible_facts.gpu_node).
  - Every file is read through O(root), so a recorded tree (a support bundle made by
    M(gpufleet.dra_gate.gpu_node_bundle), unpacked) gives the same facts as the node it came from.
  - Calls C(nvidia-smi) at most once (one CSV query) and falls back to sysfs and
    C(/proc/driver/nvidia/gpus/*/information) when it is missing or fails.
  - Never fails on bad node data; everything it could not read or understand is listed in
    C(gpu_node.problems) with its path and the reason.
  - Runs on the node with the Python standard library only. The containerd config (TOML) is parsed
    with C(tomllib) (Python 3.11+) or C(tomli); on older Pythons without C(tomli) that part degrades
    to a problem entry and C(cdi_enabled) is null.
author:
  - gpufleet maintainers (@gpufleet)
options:
  root:
    description:
      - Root prefix under which the node's files are read. C(/) reads the live node; a directory
        reads a recorded tree.
    type: path
    default: /
  commands:
    description:
      - Where command outputs (C(nvidia-smi), C(containerd --version), C(kubelet --version)) come from.
      - C(auto) runs the binaries when O(root=/) and replays the outputs recorded in the tree
        (C(.gpufleet/commands/*.json)) otherwise.
      - C(run) always runs the node's binaries; C(recorded) only replays; C(none) reads files only.
    type: str
    choices: [auto, run, recorded, none]
    default: auto
  containerd_config:
    description: Path of containerd's main config file on the node (drop-ins named by its C(imports) are followed).
    type: path
    default: /etc/containerd/config.toml
attributes:
  check_mode:
    support: full
    description: Read-only; check mode gathers the same facts.
  diff_mode:
    support: none
    description: Returns no diff; nothing is changed.
  facts:
    support: full
    description: Sets C(ansible_facts.gpu_node).
notes:
  - Read-only; always returns C(changed=false).
  - The schema is versioned (C(gpu_node.schema_version)) and documented in docs/node-facts.md.
seealso:
  - module: gpufleet.dra_gate.gpu_node_bundle
  - module: gpufleet.dra_gate.compat_check
"""

EXAMPLES = r"""
- name: Gather GPU node facts
  gpufleet.dra_gate.gpu_node_facts:

- name: Evaluate a support bundle unpacked on the controller
  gpufleet.dra_gate.gpu_node_facts:
    root: /tmp/bundles/gpu-node-07
  delegate_to: localhost

- name: Show the GPUs
  ansible.builtin.debug:
    msg: "{{ ansible_facts.gpu_node.gpus | map(attribute='pci_bus_id') | list }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    gpu_node:
      description: The GPU node facts (schema in docs/node-facts.md).
      returned: always
      type: dict
      contains:
        schema_version:
          description: Version of this schema.
          type: int
          sample: 1
        root:
          description: The root prefix the facts were read from.
          type: str
          sample: /
        commands:
          description: Where command outputs came from (run, recorded, none).
          type: str
          sample: run
        os:
          description: C(id), C(version_id) and C(pretty_name) from os-release.
          type: dict
          sample: {"id": "ubuntu", "version_id": "24.04", "pretty_name": "Ubuntu 24.04.3 LTS"}
        kernel:
          description: C(release) and the IOMMU-related kernel parameters in C(iommu_params).
          type: dict
          sample: {"release": "6.8.0-45-generic", "iommu_params": {"intel_iommu": "on"}}
        firmware:
          description: BIOS and system identifiers from DMI (null where absent).
          type: dict
        driver:
          description: >-
            The loaded NVIDIA kernel driver: C(loaded), C(version), C(flavor) (open or proprietary),
            the raw C(nvrm) and C(gcc) lines.
          type: dict
          sample: {"loaded": true, "version": "580.159.04", "flavor": "open"}
        gpus:
          description: One entry per NVIDIA GPU, joined by PCI address.
          type: list
          elements: dict
          contains:
            pci_bus_id:
              description: PCI address with a 4-digit domain (C(0000:17:00.0)).
              type: str
            device_id:
              description: PCI device ID (C(0x2335)).
              type: str
            name:
              description: Product name.
              type: str
            uuid:
              description: GPU UUID.
              type: str
            numa_node:
              description: NUMA node from sysfs; null when sysfs says -1 or is absent.
              type: int
            iommu_group:
              description: IOMMU group number; null when absent.
              type: int
            kernel_driver:
              description: Bound kernel driver (nvidia, vfio-pci, nvgrace_vfio_pci); null when none.
              type: str
            mig_mode:
              description: C(enabled), C(disabled), or null when unknown.
              type: str
            memory_mib:
              description: Total memory in MiB (nvidia-smi); null when unknown.
              type: int
            sources:
              description: Which of nvidia-smi, sysfs, procfs described this GPU.
              type: list
              elements: str
        gpu_count:
          description: Number of GPUs found.
          type: int
        nvidia_smi:
          description: Outcome of the single nvidia-smi call (C(status) ok, missing, failed, unparsed).
          type: dict
        iommu:
          description: C(enabled) (non-empty /sys/kernel/iommu_groups), C(group_count), C(iommufd) (/dev/iommu).
          type: dict
        cdi:
          description: >-
            C(spec_dirs) searched and C(specs), each with C(path), C(cdi_version), C(kind), C(devices),
            C(error) (set for an invalid file).
          type: dict
        containerd:
          description: >-
            C(present), C(version), C(config_path), C(config_version), C(cdi_enabled) (with the
            defaults of each version), C(cdi_enabled_source), C(cdi_spec_dirs), C(nvidia_runtime),
            C(imports).
          type: dict
        kubelet:
          description: C(present) and C(version) when a kubelet binary or its config is present.
          type: dict
        problems:
          description: Everything that could not be read or understood, each with C(path) and C(reason).
          type: list
          elements: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.gpu_node import BINARY_DIRS, gather
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node_tree import (
    LiveCommands,
    NoCommands,
    NodeTree,
    RecordedCommands,
)

ARGUMENT_SPEC = dict(
    root=dict(type="path", default="/"),
    commands=dict(type="str", default="auto", choices=["auto", "run", "recorded", "none"]),
    containerd_config=dict(type="path", default="/etc/containerd/config.toml"),
)


def command_source(module, tree, mode):
    """The command source for ``mode`` (see the ``commands`` option)."""
    if mode == "auto":
        mode = "run" if tree.root == "/" else "recorded"
    if mode == "recorded":
        return RecordedCommands(tree)
    if mode == "none":
        return NoCommands()

    def runner(argv):
        return module.run_command(argv, environ_update={"LC_ALL": "C"})

    def find(name):
        return module.get_bin_path(name, opt_dirs=BINARY_DIRS + ["/usr/local/nvidia/bin", "/run/nvidia/driver/usr/bin"])

    return LiveCommands(runner, find)


def validate_root(module, root):
    if not os.path.isdir(root):
        module.fail_json(msg="root: %r is not a directory; expected the node's root (/) or a recorded tree" % root)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    root = module.params["root"]
    validate_root(module, root)
    tree = NodeTree(root)
    commands = command_source(module, tree, module.params["commands"])
    facts = gather(tree, commands, module.params["containerd_config"])
    module.exit_json(changed=False, ansible_facts={"gpu_node": facts})


if __name__ == "__main__":
    main()
