# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollback phase's input rules (roles/operator_rollback), one per condition (module_utils/inputs/rules.py).

They cover every condition of the role's argument spec (types, the helm backend's choices) and what the
spec cannot say: non-empty names, positive timeouts, the restore sections, the decision time's form, and
that the kubeconfig and every hook exist on the controller (the check runs there).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as i

RESTORE_SECTIONS = ("crds", "custom_resources", "gpu_nodes")
DECISION_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,6})?Z$")


def file_on_controller(value, values=None):
    """A path that is a file here; an empty or non-string value is the non-empty rule's to report."""
    if not isinstance(value, str) or not value.strip():
        return None
    return None if os.path.isfile(value) else "there is no such file on the controller"


def restore_sections(value, values=None):
    """Each item one of RESTORE_SECTIONS; a value that is not a list is the list rule's to report."""
    if not isinstance(value, (list, tuple)):
        return None
    bad = [item for item in value if item not in RESTORE_SECTIONS]
    return "%s in it is not a restore section" % ", ".join(repr(b) for b in bad) if bad else None


def hooks_exist(value, values=None):
    """Every hook a task file on the controller (the missing ones named)."""
    if not isinstance(value, (list, tuple)):
        return None
    missing = [item for item in value if isinstance(item, str) and not os.path.isfile(item)]
    return "no such task file on the controller: %s" % ", ".join(missing) if missing else None


def decision_time(value, values=None):
    """Empty (when the play starts) or RFC 3339 UTC with an optional fraction of up to 6 digits."""
    if value in ("", None):
        return None
    if not isinstance(value, str):
        return "it is not a string"
    return None if DECISION_RE.match(value) else "it is not an RFC 3339 UTC time"


RULES = [
    i.Rule("operator_rollback_evidence_root", "dra_gate_evidence_root",
           "an absolute path to the private evidence root", i.absolute_path),
    i.Rule("operator_rollback_run_id", "dra_gate_run_id",
           "the gate run id whose snapshot drives the rollback (letters, digits, ._-)", i.run_id),
    i.Rule("operator_rollback_kubeconfig", "dra_gate_kubeconfig", "the path of a kubeconfig on the controller",
           i.non_empty_string),
    i.Rule("operator_rollback_kubeconfig", "dra_gate_kubeconfig", "an existing kubeconfig file on the controller",
           file_on_controller),
    i.Rule("operator_rollback_kube_context", "dra_gate_kube_context", "a context name or empty (the current one)",
           i.string),
    i.Rule("operator_rollback_release", "dra_gate_operator_release", "the operator's Helm release name",
           i.non_empty_string),
    i.Rule("operator_rollback_namespace", "dra_gate_operator_namespace", "the operator's namespace",
           i.non_empty_string),
    i.Rule("operator_rollback_deployment", "dra_gate_operator_deployment",
           "the operator's own Deployment name", i.non_empty_string),
    i.Rule("operator_rollback_charts", "dra_gate_operator_charts",
           "a mapping release -> chart {path|oci|url, sha256} (README, docs/upgrade.md)", i.mapping),
    i.Rule("operator_rollback_helm_backend", "dra_gate_helm_backend", "auto, cli or library",
           i.choice("auto", "cli", "library")),
    i.Rule("operator_rollback_helm_binary", "dra_gate_helm_binary", "a path or empty (helm on PATH)", i.string),
    i.Rule("operator_rollback_helm_timeout", "dra_gate_rollback_helm_timeout", "whole seconds above 0",
           i.positive_whole_number),
    i.Rule("operator_rollback_wait_timeout", "dra_gate_operator_wait_timeout", "whole seconds above 0",
           i.positive_whole_number),
    i.Rule("operator_rollback_restore", "dra_gate_rollback_restore",
           "a list of what to restore: %s" % ", ".join(RESTORE_SECTIONS), i.string_list),
    i.Rule("operator_rollback_restore", "dra_gate_rollback_restore",
           "only %s" % ", ".join(RESTORE_SECTIONS), restore_sections),
    i.Rule("operator_rollback_hooks", "dra_gate_rollback_hooks", "a list of task file paths",
           i.string_list),
    i.Rule("operator_rollback_hooks", "dra_gate_rollback_hooks", "each an existing task file on the controller",
           hooks_exist),
    i.Rule("operator_rollback_control_suite_file", "dra_gate_control_suite_file", "a path or empty (the shipped suite)",
           i.string),
    i.Rule("operator_rollback_control_suite", "dra_gate_control_suite", "a mapping (docs/control_suite.md)", i.mapping),
    i.Rule("operator_rollback_control_suite_timeout", "dra_gate_control_suite_timeout", "whole seconds above 0",
           i.positive_whole_number),
    i.Rule("operator_rollback_reason", "dra_gate_rollback_reason", "a string (recorded)", i.string),
    i.Rule("operator_rollback_decision_at", "dra_gate_rollback_decision_at",
           "empty (when the play starts) or RFC 3339 UTC like 2026-12-02T10:00:00Z", decision_time),
]
