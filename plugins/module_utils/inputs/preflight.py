# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight's input rules (roles/preflight), one per condition (module_utils/inputs/rules.py).

The target operator version follows the one version rule of every phase: a full release (``26.7.0``;
``v26.7.0`` is the same release), never a major.minor alone - ``26.7`` names no chart, so the preflight
refuses it exactly as the upgrade does, instead of planning hops the upgrade will then refuse."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as i

KUBERNETES_RE = re.compile(r"^v?\d+\.\d+(\.\d+)?$")


def run_id_or_empty(value, values=None):
    """Empty (the preflight chooses a UTC timestamp once per play) or a run id."""
    return None if value == "" else i.run_id(value)


def kubernetes_version(value, values=None):
    if not isinstance(value, str):
        return "it is not a string (quote it: YAML reads 1.30 as 1.3)"
    if value.strip() == "":
        return None
    return None if KUBERNETES_RE.match(value.strip()) else "it is not a Kubernetes version"


RULES = [
    i.Rule("preflight_evidence_root", "dra_gate_evidence_root",
           "the absolute path of a private directory (install -d -m 0700)", i.absolute_path),
    i.Rule("preflight_run_id", "dra_gate_run_id",
           "empty (a UTC timestamp is chosen) or letters, digits and ._- (at most 128)", run_id_or_empty),
    i.Rule("preflight_target_operator_version", "dra_gate_target_operator_version",
           "a full release such as 26.7.0 (v26.7.0 is the same release)", i.release),
    i.Rule("preflight_target_kubernetes_version", "dra_gate_target_kubernetes_version",
           "a Kubernetes version such as 1.37.0, quoted", kubernetes_version),
    i.Rule("preflight_target_allocation_mode", "dra_gate_target_allocation_mode", "device_plugin or dra",
           i.choice("device_plugin", "dra")),
    i.Rule("preflight_target_passthrough", "dra_gate_target_passthrough", "true or false", i.boolean),
    i.Rule("preflight_accept_alpha_passthrough", "dra_gate_accept_alpha_passthrough", "true or false", i.boolean),
    i.Rule("preflight_cluster", "dra_gate_cluster",
           "a mapping of cluster facts (kubernetes_version, operator_version, ...), {} when none", i.mapping),
    i.Rule("preflight_kubeconfig", "dra_gate_kubeconfig", "the path of a kubeconfig on the controller, or empty",
           i.string),
    i.Rule("preflight_kube_context", "dra_gate_kube_context", "a context name or empty (the current one)", i.string),
    i.Rule("preflight_releases", "dra_gate_releases", "a list of operator releases, [] for the bundled list",
           i.string_list),
    i.Rule("preflight_matrix", "dra_gate_matrix", "a matrix file or directory, or empty (the bundled matrix)",
           i.string),
    i.Rule("preflight_fail_on", "dra_gate_fail_on", "block, warn or never", i.choice("block", "warn", "never")),
    i.Rule("preflight_node_root", "dra_gate_node_root", "an absolute path (/ = the live node)", i.absolute_path),
    i.Rule("preflight_node_commands", "dra_gate_node_commands", "auto, run, recorded or none",
           i.choice("auto", "run", "recorded", "none")),
    i.Rule("preflight_containerd_config", "dra_gate_containerd_config", "an absolute path", i.absolute_path),
    i.Rule("preflight_node_timeout", "dra_gate_node_timeout", "seconds above 0", i.positive_number),
]
