# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade phase's input rules (roles/operator_upgrade), one per condition (module_utils/inputs.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils import inputs as i


def _production(values):
    return values.get("operator_upgrade_upgrade_scope") == "production"


RULES = [
    i.Rule("operator_upgrade_kubeconfig", "dra_gate_kubeconfig", "the path of a kubeconfig on the controller",
           i.non_empty_string),
    i.Rule("operator_upgrade_kube_context", "dra_gate_kube_context", "a context name or empty (the current one)",
           i.string),
    i.Rule("operator_upgrade_operator_release", "dra_gate_operator_release", "the operator's Helm release name",
           i.non_empty_string),
    i.Rule("operator_upgrade_operator_namespace", "dra_gate_operator_namespace", "the operator's namespace",
           i.non_empty_string),
    i.Rule("operator_upgrade_target_operator_version", "dra_gate_target_operator_version",
           "a full release such as 26.7.0", i.release),
    i.Rule("operator_upgrade_operator_charts", "dra_gate_operator_charts",
           "a mapping release -> chart {path|oci|url, sha256} (README, docs/upgrade.md)", i.non_empty_mapping),
    i.Rule("operator_upgrade_upgrade_max_hops", "dra_gate_upgrade_max_hops", "a whole number (0 = as many as needed)",
           i.whole_number),
    i.Rule("operator_upgrade_upgrade_scope", "dra_gate_upgrade_scope", "canary or production",
           i.choice("canary", "production")),
    i.Rule("operator_upgrade_canary_run_id", "dra_gate_canary_run_id",
           "for a production run, the run id of the canary run that cleared this target", i.run_id, when=_production),
    i.Rule("operator_upgrade_operator_values", "dra_gate_operator_values", "a mapping of Helm values", i.mapping),
    i.Rule("operator_upgrade_redact_values", "dra_gate_redact_values", "a list of value key names", i.string_list),
    i.Rule("operator_upgrade_helm_backend", "dra_gate_helm_backend", "auto, cli or library",
           i.choice("auto", "cli", "library")),
    i.Rule("operator_upgrade_helm_timeout", "dra_gate_helm_timeout", "whole seconds above 0",
           i.positive_whole_number),
    i.Rule("operator_upgrade_operator_wait_timeout", "dra_gate_operator_wait_timeout", "whole seconds above 0",
           i.positive_whole_number),
    i.Rule("operator_upgrade_cdi_enabled", "dra_gate_cdi_enabled", "true, false or null (not asserted)",
           i.boolean_or_null),
    i.Rule("operator_upgrade_control_suite_file", "dra_gate_control_suite_file", "a path or empty", i.string),
    i.Rule("operator_upgrade_control_suite", "dra_gate_control_suite", "a mapping (docs/control_suite.md)", i.mapping),
    i.Rule("operator_upgrade_rollback_on_failure", "dra_gate_rollback_on_failure", "true or false", i.boolean),
]
