#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_node_bundle
short_description: Record a GPU node's facts sources into a support bundle (tarball)
version_added: 0.1.0
description:
  - Gathers the same facts as M(gpufleet.dra_gate.gpu_node_facts) and writes every file, directory
    and link it read, plus the command outputs (C(nvidia-smi), C(containerd --version),
    C(kubelet --version)), into a gzip tarball on the node.
  - Unpacked, the bundle is a root prefix for M(gpufleet.dra_gate.gpu_node_facts) (with
    O(gpufleet.dra_gate.gpu_node_facts#module:commands=recorded)) that yields the same facts.
    Attach it to a support ticket, or keep it as a test fixture.
  - The bundle holds os-release, the GPU files of procfs and sysfs, DMI identifiers (never serial
    numbers), CDI specs and the containerd config. That config may hold registry credentials, so the
    bundle is written mode 0600 (from its first byte, through a temporary file in the destination
    directory, fsynced, renamed); review it before sharing it. An existing bundle is replaced only
    with O(force=true).
  - Commands run with the deadline O(timeout) each; a command that timed out is recorded as such
    (C(timed_out), the message naming the command and the deadline) and replays as a problem entry.
  - The returned C(gpu_node) facts are completed on the controller by the action plugin (containerd
    and CDI parsed as by M(gpufleet.dra_gate.gpu_node_facts)); C(.gpufleet/bundle.json) in the bundle
    holds the node's part of them.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.dra_gate.node_root
  - gpufleet.dra_gate.attributes.node
options:
  dest:
    description: Path of the tarball to write on the node.
    type: path
    required: true
  force:
    description: Write a new bundle even when O(dest) exists.
    type: bool
    default: false
  containerd_config:
    description: Path of containerd's main config file on the node.
    type: path
    default: /etc/containerd/config.toml
  timeout:
    description: Deadline in seconds for each command run while recording (see M(gpufleet.dra_gate.gpu_node_facts)).
    type: float
    default: 30
attributes:
  check_mode:
    support: full
    description: Writes nothing in check mode; reports the path it would write.
  diff_mode:
    support: full
    description: Reports what the written file would change.
notes:
  - In check mode nothing is written; the result says which path would be written.
seealso:
  - module: gpufleet.dra_gate.gpu_node_facts
"""

EXAMPLES = r"""
- name: Record a support bundle on each GPU node
  gpufleet.dra_gate.gpu_node_bundle:
    dest: /var/tmp/gpu-node-{{ inventory_hostname }}.tar.gz
    force: true
  register: bundle

- name: Bring it to the controller
  ansible.builtin.fetch:
    src: "{{ bundle.dest }}"
    dest: bundles/
    flat: false
"""

RETURN = r"""
dest:
  description: Path of the bundle.
  returned: always
  type: str
  sample: /var/tmp/gpu-node-gpu07.tar.gz
files:
  description: Number of tree entries (files, directories, links) recorded.
  returned: when written
  type: int
commands:
  description: Names of the command results recorded.
  returned: when written
  type: list
  elements: str
sha256:
  description: SHA-256 of the bundle written.
  returned: when written
  type: str
gpu_node:
  description: The facts gathered while recording (same schema as gpu_node_facts).
  returned: always
  type: dict
gpu_node_raw:
  description: Internal. Raw containerd and CDI texts for the action plugin, which removes it.
  returned: only without the action plugin
  type: dict
"""

import os
import platform

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.command_runner import Runner
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.gpu_node import BINARY_DIRS, collect
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.bundle import write_bundle
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import LiveCommands, NodeTree, RecordedCommands
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence.private_files import PrivateFileError

COLLECTION_VERSION = "0.1.0"
MAX_COMMAND_OUTPUT = 1024 * 1024


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type="path", required=True),
            force=dict(type="bool", default=False),
            root=dict(type="path", default="/"),
            containerd_config=dict(type="path", default="/etc/containerd/config.toml"),
            timeout=dict(type="float", default=30),
        ),
        supports_check_mode=True,
    )
    dest = module.params["dest"]
    root = module.params["root"]
    if not os.path.isdir(root):
        module.fail_json(msg="root: %r is not a directory; expected / or a recorded tree" % root)
    parent = os.path.dirname(os.path.abspath(dest))
    if not os.path.isdir(parent):
        module.fail_json(msg="dest: directory %r does not exist; expected a path in an existing directory" % parent)
    if os.path.isdir(dest):
        module.fail_json(msg="dest: %r is a directory; expected a file path such as %s/bundle.tar.gz" % (dest, dest))
    if not module.params["timeout"] > 0:
        module.fail_json(msg="timeout: %r is not a positive number of seconds" % (module.params["timeout"],))

    tree = NodeTree(root, record=True)
    if root != "/":
        commands = RecordedCommands(tree)
    else:
        commands = LiveCommands(
            Runner(module.params["timeout"], max_output=MAX_COMMAND_OUTPUT),
            lambda name: module.get_bin_path(name, opt_dirs=BINARY_DIRS + ["/usr/local/nvidia/bin", "/run/nvidia/driver/usr/bin"]),
        )
    facts, raw = collect(tree, commands, module.params["containerd_config"])
    exists = os.path.lexists(dest)
    # The action plugin completes gpu_node from gpu_node_raw on the controller and removes the latter.
    result = dict(changed=False, dest=dest, gpu_node=facts, gpu_node_raw=raw)
    if exists and not module.params["force"]:
        module.exit_json(**result)
    result["changed"] = True
    result["diff"] = dict(before={"path": dest, "state": "file" if exists else "absent"},
                          after={"path": dest, "state": "file", "mode": "0600", "entries": len(set(p for _k, p in tree.reads))})
    if module.check_mode:
        result["msg"] = "would write a support bundle to %s" % dest
        module.exit_json(**result)
    recorded = getattr(commands, "results", {})
    meta = {
        "host": platform.node(),
        "recorded_at": clock.utc_now(),
        "root": root,
        "collection_version": COLLECTION_VERSION,
    }
    try:
        write_bundle(dest, tree, recorded, facts, meta, replace=module.params["force"])
    except (IOError, OSError, PrivateFileError) as exc:
        module.fail_json(msg="dest: cannot write %s: %s" % (dest, exc))
    result.update(files=len(set(p for _k, p in tree.reads)), commands=sorted(recorded),
                  sha256=module.sha256(dest))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
