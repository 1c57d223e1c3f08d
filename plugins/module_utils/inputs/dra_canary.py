# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DRA canary build's input rules (roles/dra_canary), one per condition (module_utils/inputs/rules.py).

The target operator version follows the one version rule (a full release, ``v26.7.0`` = ``26.7.0``) and, for
the canary, is a 26.7 release: the GPUCluster path the canary builds exists from 26.7 on."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as i

TAINT_RE = re.compile(r"^[^=:]+(=[^:]*)?:(NoSchedule|PreferNoSchedule|NoExecute)$")


def strict_boolean(value, values=None):
    """A YAML boolean (true/false), not a string: the value is recorded as given."""
    return None if isinstance(value, bool) else "it is not true or false (a YAML boolean, unquoted)"


def release_26_7(value, values=None):
    reason = i.release(value)
    if reason:
        return reason
    return None if i.normalise_release(value).startswith("26.7.") else "it is not a 26.7 release"


def taints(value, values=None):
    """A list of key[=value]:Effect (NoSchedule, PreferNoSchedule, NoExecute)."""
    reason = i.string_list(value)
    if reason:
        return reason
    bad = [taint for taint in value if not TAINT_RE.match(taint)]
    return "'%s' in it is not key[=value]:Effect" % bad[0] if bad else None


def gates(value, values=None):
    """A mapping feature gate -> true/false."""
    if not isinstance(value, dict):
        return "it is not a mapping"
    bad = [name for name, on in value.items() if not isinstance(on, bool)]
    return "the gate %s is not true or false" % bad[0] if bad else None


RULES = [
    i.Rule("dra_canary_evidence_root", "dra_gate_evidence_root", "the absolute path of a private directory", i.absolute_path),
    i.Rule("dra_canary_run_id", "dra_gate_run_id", "the canary's own gate run id (letters, digits and ._-)", i.run_id),
    i.Rule("dra_canary_kubeconfig", "dra_gate_kubeconfig", "the path of the canary cluster's kubeconfig on the controller",
           i.non_empty_string),
    i.Rule("dra_canary_kube_context", "dra_gate_kube_context", "a context name or empty (the current one)", i.string),
    i.Rule("dra_canary_operator_release", "dra_gate_operator_release", "the operator's Helm release name", i.non_empty_string),
    i.Rule("dra_canary_operator_namespace", "dra_gate_operator_namespace", "the operator's namespace", i.non_empty_string),
    i.Rule("dra_canary_target_operator_version", "dra_gate_target_operator_version",
           "a full 26.7 release such as 26.7.0 (v26.7.0 is the same release)", release_26_7),
    i.Rule("dra_canary_operator_charts", "dra_gate_operator_charts",
           "a mapping release -> chart {path, sha256} with the target in it (docs/upgrade.md)", i.non_empty_mapping),
    i.Rule("dra_canary_operator_values", "dra_gate_operator_values", "a mapping of Helm values", i.mapping),
    i.Rule("dra_canary_helm_backend", "dra_gate_helm_backend", "auto, cli or library", i.choice("auto", "cli", "library")),
    i.Rule("dra_canary_helm_binary", "dra_gate_helm_binary", "a path or empty (helm on PATH)", i.string),
    i.Rule("dra_canary_helm_timeout", "dra_gate_helm_timeout", "whole seconds above 0", i.positive_whole_number),
    i.Rule("dra_canary_operator_wait_timeout", "dra_gate_operator_wait_timeout", "whole seconds above 0",
           i.positive_whole_number),
    i.Rule("dra_canary_isolation", "dra_gate_canary_isolation", "cluster or group", i.choice("cluster", "group")),
    i.Rule("dra_canary_labels", "dra_gate_canary_labels", "a mapping of node labels", i.mapping),
    i.Rule("dra_canary_taints", "dra_gate_canary_taints", "a list of key[=value]:Effect", taints),
    i.Rule("dra_canary_gpu_cluster", "dra_gate_canary_gpu_cluster", "a mapping of GPUCluster spec fields", i.mapping),
    i.Rule("dra_canary_feature_gates", "dra_gate_canary_feature_gates", "a mapping gate -> true/false", gates),
    i.Rule("dra_canary_extended_resource", "dra_gate_canary_extended_resource", "true or false", strict_boolean),
    i.Rule("dra_canary_device_class", "dra_gate_canary_device_class", "a DeviceClass name", i.non_empty_string),
    i.Rule("dra_canary_smoke", "dra_gate_canary_smoke", "true or false", strict_boolean),
    i.Rule("dra_canary_workload_timeout", "dra_gate_canary_workload_timeout", "whole seconds above 0",
           i.positive_whole_number),
    i.Rule("dra_canary_passthrough_nodes", "dra_gate_canary_passthrough_nodes", "a list of node names, [] for none",
           i.string_list),
    i.Rule("dra_canary_accept_alpha_passthrough", "dra_gate_accept_alpha_passthrough", "true or false", strict_boolean),
    i.Rule("dra_canary_passthrough_guard", "dra_gate_canary_passthrough_guard", "serialize or refuse",
           i.choice("serialize", "refuse")),
    i.Rule("dra_canary_require_artifacts", "dra_gate_canary_require_artifacts", "true or false", strict_boolean),
    i.Rule("dra_canary_containerd_cdi", "dra_gate_canary_containerd_cdi", "true or false", i.boolean),
    i.Rule("dra_canary_feature_check", "dra_gate_canary_feature_check", "true or false", i.boolean),
    i.Rule("dra_canary_features", "dra_gate_canary_features", "a list of feature names", i.string_list),
    i.Rule("dra_canary_feature_acceptances", "dra_gate_feature_acceptances",
           "a mapping feature -> {accepted_by, expires, reason} (docs/feature-gates.md)", i.mapping),
    i.Rule("dra_canary_feature_owners", "dra_gate_feature_owners", "a mapping feature -> owner", i.mapping),
    i.Rule("dra_canary_control_plane_group", "dra_gate_control_plane_group", "an inventory group name", i.non_empty_string),
    i.Rule("dra_canary_control_plane_components", "dra_gate_control_plane_components",
           "a mapping of components (docs/feature-gates.md), {} for none", i.mapping),
]
