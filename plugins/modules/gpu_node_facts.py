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
  - The result always serialises; names that are not UTF-8 (a NIC, a CDI spec file, a driver link
    target) are returned with each undecodable byte as a backslash escape and listed in C(gpu_node.problems).
  - Runs on the node with the Python standard library only, on Python 3.8 and later. The node sends
    the raw, size-bounded text of the containerd config (and its imports) and of the CDI spec files
    to the controller, where the action plugin parses them (containerd TOML with C(tomllib), CDI
    YAML/JSON with PyYAML C(safe_load)), so every node is assessed the same whatever its Python.
    The raw text and any registry credentials never reach the returned facts.
  - Every command (C(nvidia-smi), C(containerd --version), C(kubelet --version)) runs with the
    deadline O(timeout), its whole process group killed on expiry and its output bounded; a command
    that timed out is a C(problems) entry naming the command and the deadline.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.dra_gate.node_root
  - gpufleet.dra_gate.attributes.node
options:
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
    description:
      - Path of containerd's main config file on the node (drop-ins named by its C(imports) are followed).
      - An absolute node path, read below O(root); a relative path is refused.
    type: path
    default: /etc/containerd/config.toml
  timeout:
    description:
      - Deadline in seconds for each command the module runs (C(nvidia-smi), C(containerd --version),
        C(kubelet --version)). On expiry the command's process group is killed and the command is a
        C(problems) entry; C(nvidia_smi.status) is then C(timed_out).
    type: float
    default: 30
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
            vbios_version:
              description: VBIOS version (nvidia-smi C(vbios_version), else procfs C(Video BIOS)), upper case; null when unknown.
              type: str
              sample: 96.00.A5.00.1A
            sources:
              description: Which of nvidia-smi, sysfs, procfs described this GPU.
              type: list
              elements: str
        gpu_count:
          description: Number of GPUs found.
          type: int
        nvidia_smi:
          description: Outcome of the single nvidia-smi call (C(status) ok, missing, failed, unparsed, timed_out).
          type: dict
        iommu:
          description: C(enabled) (non-empty /sys/kernel/iommu_groups), C(group_count), C(iommufd) (/dev/iommu).
          type: dict
        network:
          description: >-
            C(nics) (from /sys/class/net) and C(rdma_devices) (from /sys/class/infiniband) that sit on a
            PCI function, each with C(name), C(pci_bus_id), C(numa_node), C(driver), C(vendor_id),
            C(device_id); an RDMA device also lists its C(net_devices). Virtual interfaces are left out.
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
gpu_node_raw:
  description:
    - Internal. The raw, size-bounded texts of the containerd config files and CDI specs that the action
      plugin parses; the action plugin removes it from the result. Returned only when the module is
      run without its action plugin.
  returned: only without the action plugin
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.command_runner import Runner
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.gpu_node import BINARY_DIRS, collect
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.values import quote, sanitize
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import (
    LiveCommands,
    NoCommands,
    NodeTree,
    RecordedCommands,
)

ARGUMENT_SPEC = dict(
    root=dict(type="path", default="/"),
    commands=dict(type="str", default="auto", choices=["auto", "run", "recorded", "none"]),
    containerd_config=dict(type="path", default="/etc/containerd/config.toml"),
    timeout=dict(type="float", default=30),
)
#: Output kept per stream of one command (nvidia-smi prints about 200 bytes per GPU).
MAX_COMMAND_OUTPUT = 1024 * 1024
EXTRA_BINARY_DIRS = ["/usr/local/nvidia/bin", "/run/nvidia/driver/usr/bin"]


def live_commands(module, timeout):
    """Commands run on this node: one deadline per command, bounded output, LC_ALL=C."""
    def find(name):
        return module.get_bin_path(name, opt_dirs=BINARY_DIRS + EXTRA_BINARY_DIRS)

    return LiveCommands(Runner(timeout, max_output=MAX_COMMAND_OUTPUT), find)


def validate_timeout(module, timeout):
    if not timeout > 0:
        module.fail_json(msg="timeout: %r is not a positive number of seconds" % (timeout,))


def command_source(module, tree, mode):
    """The command source for ``mode`` (see the ``commands`` option)."""
    if mode == "auto":
        mode = "run" if tree.root == "/" else "recorded"
    if mode == "recorded":
        return RecordedCommands(tree)
    if mode == "none":
        return NoCommands()
    return live_commands(module, module.params["timeout"])


def validate_root(module, root):
    if not os.path.isdir(root):
        module.fail_json(msg="root: %r is not a directory; expected the node's root (/) or a recorded tree" % root)


def validate_containerd_config(module, path):
    """``containerd_config`` names a file on the node, read below ``root``: an absolute node path."""
    if not isinstance(path, str) or not path.startswith("/"):
        module.fail_json(msg="containerd_config: %s is not an absolute path; expected the absolute node path of "
                             "containerd's config (such as /etc/containerd/config.toml), which is read below root"
                             % quote(path))
    if "\x00" in path:
        module.fail_json(msg="containerd_config: %s holds a NUL byte; expected an absolute node path such as "
                             "/etc/containerd/config.toml" % quote(path))


def serialisable_result(facts, raw):
    """``(facts, raw)`` made JSON- and UTF-8-safe (node_values.sanitize): what was escaped, cut or
    replaced is appended to the facts' ``problems``."""
    facts, notes = sanitize(facts, "gpu_node")
    raw, raw_notes = sanitize(raw, "gpu_node_raw")
    if not isinstance(facts.get("problems"), list):
        facts["problems"] = []
    facts["problems"].extend(notes + raw_notes)
    return facts, raw


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    root = module.params["root"]
    validate_root(module, root)
    validate_timeout(module, module.params["timeout"])
    validate_containerd_config(module, module.params["containerd_config"])
    tree = NodeTree(root)
    commands = command_source(module, tree, module.params["commands"])
    facts, raw = serialisable_result(*collect(tree, commands, module.params["containerd_config"]))
    # The action plugin parses gpu_node_raw on the controller and removes it from the result.
    module.exit_json(changed=False, ansible_facts={"gpu_node": facts}, gpu_node_raw=raw)


if __name__ == "__main__":
    main()
