#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: k8s_component_facts
short_description: Read the feature gates, runtime config and versions of the control plane and the kubelet
version_added: 0.1.0
description:
  - On a control-plane host, reads the static pod manifests of C(kube-apiserver), C(kube-scheduler) and
    C(kube-controller-manager) (C(<manifests_dir>/<component>.yaml)); on any node, the kubelet configuration file.
    Returns them as C(ansible_facts.k8s_components), per component C(present), C(path), C(sha256), C(image),
    C(version) (from the image tag), C(feature_gates) (from every C(--feature-gates) flag, the last one winning
    per gate; for the kubelet from C(featureGates)), C(runtime_config) (kube-apiserver C(--runtime-config)) and,
    for the kubelet, the DRA-relevant C(settings).
  - Every file is read through O(root), so a recorded tree gives the same facts as the node it came from.
  - Runs on the node with the Python standard library only (Python 3.8 and later) and sends the raw,
    size-bounded texts to the controller, where the action plugin parses them with PyYAML C(safe_load), and the raw
    texts never reach the returned facts.
  - Never fails on bad node data; a malformed file is a C(problems) entry with its path and the component's
    C(error). The schema is documented in docs/feature-gates.md.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.dra_gate.node_root
  - gpufleet.dra_gate.attributes.node
options:
  manifests_dir:
    description:
      - Directory of the static pod manifests on the node (the kubelet's C(staticPodPath)).
    type: path
    default: /etc/kubernetes/manifests
  kubelet_config:
    description:
      - Path of the kubelet configuration file (C(KubeletConfiguration)) on the node.
    type: path
    default: /var/lib/kubelet/config.yaml
attributes:
  check_mode:
    support: full
    description: Read-only; check mode gathers the same facts.
  diff_mode:
    support: none
    description: Returns no diff; nothing is changed.
  facts:
    support: full
    description: Sets C(ansible_facts.k8s_components).
notes:
  - Read-only; always returns C(changed=false).
  - Flags given to the kubelet on its command line (for example C(KUBELET_EXTRA_ARGS)) are not read; only its
    configuration file is.
seealso:
  - module: gpufleet.dra_gate.dra_feature_check
  - module: gpufleet.dra_gate.gpu_node_facts
"""

EXAMPLES = r"""
- name: Read the control plane's and the kubelet's feature gates
  gpufleet.dra_gate.k8s_component_facts:

- name: Evaluate a recorded tree on the controller
  gpufleet.dra_gate.k8s_component_facts:
    root: /tmp/bundles/cp-01
  delegate_to: localhost

- name: Show the apiserver's gates
  ansible.builtin.debug:
    msg: "{{ ansible_facts.k8s_components.components['kube-apiserver'].feature_gates }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    k8s_components:
      description: The component facts (schema in docs/feature-gates.md).
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
        source:
          description: C(node) (read from files); C(inventory) for facts given as inventory data.
          type: str
          sample: node
        components:
          description:
            - One entry per component, C(kube-apiserver), C(kube-scheduler), C(kube-controller-manager) and C(kubelet),
              each with C(present), C(path), C(sha256), C(image), C(version), C(feature_gates), C(runtime_config),
              C(source), C(error) and, for the kubelet, C(settings).
          type: dict
          sample: {"kube-apiserver": {"present": true, "path": "/etc/kubernetes/manifests/kube-apiserver.yaml",
                   "sha256": "9f2c...", "image": "registry.k8s.io/kube-apiserver:v1.37.0", "version": "1.37.0",
                   "feature_gates": {"DRADeviceTaintRules": true}, "runtime_config": {"resource.k8s.io/v1beta2": "true"},
                   "source": "node", "error": null}}
        problems:
          description: Everything that could not be read or understood, each with C(path) and C(reason).
          type: list
          elements: dict
started_at:
  description: When the read started (RFC 3339, UTC).
  returned: always
  type: str
  sample: "2026-12-02T06:30:00.123456Z"
finished_at:
  description: When the read finished (RFC 3339, UTC).
  returned: always
  type: str
  sample: "2026-12-02T06:30:00.145678Z"
duration_seconds:
  description: Seconds the read took.
  returned: always
  type: float
  sample: 0.022
k8s_components_raw:
  description:
    - Internal. The raw, size-bounded texts the action plugin parses; the action plugin removes it from the result.
      Returned only when the module is run without its action plugin.
  returned: only without the action plugin
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.module_run import ModuleRun
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.components import (
    DEFAULT_KUBELET_CONFIG,
    DEFAULT_MANIFESTS_DIR,
    collect,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import NodeTree

ARGUMENT_SPEC = dict(
    root=dict(type="path", default="/"),
    manifests_dir=dict(type="path", default=DEFAULT_MANIFESTS_DIR),
    kubelet_config=dict(type="path", default=DEFAULT_KUBELET_CONFIG),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    run = ModuleRun(module, digits=6)
    root = module.params["root"]
    if not os.path.isdir(root):
        module.fail_json(msg="root: %r is not a directory; expected the node's root (/) or a recorded tree" % root)
    for key in ("manifests_dir", "kubelet_config"):
        if not module.params[key].startswith("/"):
            module.fail_json(msg="%s: %r is not an absolute node path" % (key, module.params[key]))
    facts, raw = collect(NodeTree(root), module.params["manifests_dir"], module.params["kubelet_config"])
    # The action plugin parses k8s_components_raw on the controller and removes it from the result.
    run.exit(changed=False, ansible_facts={"k8s_components": facts}, k8s_components_raw=raw)


if __name__ == "__main__":
    main()
