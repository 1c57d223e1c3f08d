# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade phase's input rules (roles/operator_upgrade), one per condition (module_utils/inputs/rules.py).

They cover every condition of the role's argument spec (types, choices), so that the spec - validated once per
host when the role starts - never has to refuse a value, and what the spec cannot say: non-empty names, a full
target release, positive timeouts, the kubeconfig a file on the controller, and for a production run the canary's
run id. A rule that depends on another input (the canary run id on the scope) applies only when that input is
right, so that one mistake is named once: ``dra_gate_upgrade_scope=prod`` names the scope, not the canary run id.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as i

_SECONDS = "whole seconds above 0, such as 600"


def _production(values):
    return values.get("operator_upgrade_scope") == "production"


def _not_production(values):
    return not _production(values)


def canary_run_id(value, values=None):
    """For a production run: the canary run's id (its upgrade record for the same target must have passed)."""
    if value == "":
        return "a production run (dra_gate_upgrade_scope=production) needs the canary run that cleared this target"
    return i.run_id(value)


RULES = [
    i.Rule("operator_upgrade_evidence_root", "dra_gate_evidence_root",
           "the absolute path of the private evidence root (install -d -m 0700)", i.absolute_path),
    i.Rule("operator_upgrade_run_id", "dra_gate_run_id",
           "the gate run id whose snapshot (playbooks/snapshot.yml) took the rollback artifacts (letters, digits, ._-)",
           i.run_id),
    i.Rule("operator_upgrade_kubeconfig", "dra_gate_kubeconfig", "the path of the cluster's kubeconfig on the controller",
           i.non_empty_string),
    i.Rule("operator_upgrade_kubeconfig", "dra_gate_kubeconfig", "an existing kubeconfig file on the controller",
           i.file_on_controller),
    i.Rule("operator_upgrade_kube_context", "dra_gate_kube_context", "a context name or empty (the current one)",
           i.string),
    i.Rule("operator_upgrade_release", "dra_gate_operator_release", "the operator's Helm release name",
           i.non_empty_string),
    i.Rule("operator_upgrade_namespace", "dra_gate_operator_namespace", "the operator's namespace",
           i.non_empty_string),
    i.Rule("operator_upgrade_deployment", "dra_gate_operator_deployment", "the operator's own Deployment name",
           i.non_empty_string),
    i.Rule("operator_upgrade_target_operator_version", "dra_gate_target_operator_version",
           "a full release such as 26.7.0", i.release),
    i.Rule("operator_upgrade_charts", "dra_gate_operator_charts",
           "a mapping release -> chart {path|oci|url, sha256} (README, docs/upgrade.md)", i.non_empty_mapping),
    i.Rule("operator_upgrade_max_hops", "dra_gate_upgrade_max_hops", "a whole number (0 = as many as needed)",
           i.whole_number),
    i.Rule("operator_upgrade_scope", "dra_gate_upgrade_scope", "canary or production",
           i.choice("canary", "production")),
    i.Rule("operator_upgrade_canary_evidence_root", "dra_gate_canary_evidence_root",
           "the absolute path of the canary run's evidence root (default: this run's)", i.absolute_path),
    i.Rule("operator_upgrade_canary_run_id", "dra_gate_canary_run_id",
           "the run id of the canary run whose upgrade to the same target passed (-e dra_gate_canary_run_id=...)",
           canary_run_id, when=_production),
    i.Rule("operator_upgrade_canary_run_id", "dra_gate_canary_run_id", "empty or a run id (read for production only)",
           i.string, when=_not_production),
    i.Rule("operator_upgrade_etcdutl", "dra_gate_etcdutl", "the path of etcdutl on the controller or empty (PATH)",
           i.string),
    i.Rule("operator_upgrade_etcdctl", "dra_gate_etcdctl", "the path of etcdctl on the controller or empty (PATH)",
           i.string),
    i.Rule("operator_upgrade_values", "dra_gate_operator_values", "a mapping of Helm values", i.mapping),
    i.Rule("operator_upgrade_redact_values", "dra_gate_redact_values", "a list of value key names", i.string_list),
    i.Rule("operator_upgrade_helm_backend", "dra_gate_helm_backend", "auto, cli or library",
           i.choice("auto", "cli", "library")),
    i.Rule("operator_upgrade_helm_binary", "dra_gate_helm_binary", "the helm binary's path or empty (found on PATH)",
           i.string),
    i.Rule("operator_upgrade_helm_timeout", "dra_gate_helm_timeout", _SECONDS, i.positive_whole_number),
    i.Rule("operator_upgrade_wait_timeout", "dra_gate_operator_wait_timeout", _SECONDS,
           i.positive_whole_number),
    i.Rule("operator_upgrade_cdi_enabled", "dra_gate_cdi_enabled", "true, false or null (not asserted)",
           i.boolean_or_null),
    i.Rule("operator_upgrade_control_suite_file", "dra_gate_control_suite_file", "a path or empty", i.string),
    i.Rule("operator_upgrade_control_suite", "dra_gate_control_suite", "a mapping (docs/control_suite.md)", i.mapping),
    i.Rule("operator_upgrade_control_suite_timeout", "dra_gate_control_suite_timeout", _SECONDS,
           i.positive_whole_number),
    i.Rule("operator_upgrade_rollback_on_failure", "dra_gate_rollback_on_failure", "true or false", i.boolean),
    i.Rule("operator_upgrade_crd_timeout", "dra_gate_crd_timeout", _SECONDS, i.positive_whole_number),
]
