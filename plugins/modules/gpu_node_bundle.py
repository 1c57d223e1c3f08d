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
    bundle is written mode 0600; review it before sharing it.
author:
  - gpufleet maintainers (@gpufleet)
options:
  dest:
    description: Path of the tarball to write on the node.
    type: path
    required: true
  force:
    description: Write a new bundle even when O(dest) exists.
    type: bool
    default: false
  root:
    description: Root prefix to read from (C(/) for the live node).
    type: path
    default: /
  containerd_config:
    description: Path of containerd's main config file on the node.
    type: path
    default: /etc/containerd/config.toml
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
"""

import datetime
import os
import platform

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.gpu_node import BINARY_DIRS, gather
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node_bundle import write_bundle
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node_tree import LiveCommands, NodeTree, RecordedCommands

COLLECTION_VERSION = "0.1.0"


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type="path", required=True),
            force=dict(type="bool", default=False),
            root=dict(type="path", default="/"),
            containerd_config=dict(type="path", default="/etc/containerd/config.toml"),
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

    tree = NodeTree(root, record=True)
    commands = LiveCommands(
        lambda argv: module.run_command(argv, environ_update={"LC_ALL": "C"}),
        lambda name: module.get_bin_path(name, opt_dirs=BINARY_DIRS + ["/usr/local/nvidia/bin"]),
    )
    if root != "/":
        commands = RecordedCommands(tree)
    facts = gather(tree, commands, module.params["containerd_config"])
    exists = os.path.exists(dest)
    result = dict(changed=False, dest=dest, gpu_node=facts)
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
        "recorded_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "root": root,
        "collection_version": COLLECTION_VERSION,
    }
    try:
        write_bundle(dest, tree, recorded, facts, meta)
    except (IOError, OSError) as exc:
        module.fail_json(msg="dest: cannot write %s: %s" % (dest, exc))
    result.update(files=len(set(p for _k, p in tree.reads)), commands=sorted(recorded),
                  sha256=module.sha256(dest))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
