# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The containerd CDI role's input rules (roles/containerd_cdi), one per condition (module_utils/inputs/rules.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as i


def absolute_dirs(value, values=None):
    reason = i.string_list(value)
    if reason:
        return reason
    if not value:
        return "it is empty"
    bad = [path for path in value if not os.path.isabs(path)]
    return "'%s' in it is not an absolute path" % bad[0] if bad else None


RULES = [
    i.Rule("containerd_cdi_node_root", "dra_gate_node_root", "an absolute path (/ = the live node)", i.absolute_path),
    i.Rule("containerd_cdi_config", "dra_gate_containerd_config", "an absolute path", i.absolute_path),
    i.Rule("containerd_cdi_spec_dirs", "dra_gate_cdi_spec_dirs", "a non-empty list of absolute directories",
           absolute_dirs),
    i.Rule("containerd_cdi_version", "dra_gate_containerd_version",
           "a containerd version or empty (containerd --version)", i.string),
    i.Rule("containerd_cdi_containerd", "dra_gate_containerd", "the containerd binary", i.non_empty_string),
    i.Rule("containerd_cdi_ctr", "dra_gate_ctr", "the ctr binary", i.non_empty_string),
    i.Rule("containerd_cdi_address", "dra_gate_containerd_address", "the absolute path of containerd's socket",
           i.absolute_path),
    i.Rule("containerd_cdi_restart_command", "dra_gate_containerd_restart_command",
           "an argv list, [] for the systemd unit", i.string_list),
    i.Rule("containerd_cdi_service", "dra_gate_containerd_service", "a systemd unit name", i.non_empty_string),
    i.Rule("containerd_cdi_restart_timeout", "dra_gate_containerd_restart_timeout", "seconds above 0",
           i.positive_number),
    i.Rule("containerd_cdi_command_timeout", "dra_gate_command_timeout", "seconds above 0", i.positive_number),
    i.Rule("containerd_cdi_backup_dir", "dra_gate_containerd_backup_dir", "an absolute path", i.absolute_path),
    i.Rule("containerd_cdi_expect_nvidia_runtime", "dra_gate_expect_nvidia_runtime", "true or false", i.boolean),
    i.Rule("containerd_cdi_evidence_dir", "dra_gate_containerd_evidence_dir", "an absolute path or empty",
           i.absolute_path_or_empty),
    i.Rule("containerd_cdi_run_dir", "dra_gate_run_dir", "an absolute path or empty (nothing indexed)",
           i.absolute_path_or_empty),
]
