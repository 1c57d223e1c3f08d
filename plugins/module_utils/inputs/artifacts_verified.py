# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The input rules of roles/artifacts_verified (the check every phase that changes the cluster runs first), one
per condition (module_utils/inputs/rules.py); they cover every condition of the role's argument spec."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as i

RULES = [
    i.Rule("artifacts_verified_evidence_root", "dra_gate_evidence_root",
           "the absolute path of the private evidence root (install -d -m 0700)", i.absolute_path),
    i.Rule("artifacts_verified_run_id", "dra_gate_run_id",
           "the gate run id whose snapshot took the rollback artifacts (letters, digits, ._-)", i.run_id),
    i.Rule("artifacts_verified_etcdutl", "dra_gate_etcdutl", "the path of etcdutl on the controller or empty (PATH)",
           i.string),
    i.Rule("artifacts_verified_etcdctl", "dra_gate_etcdctl", "the path of etcdctl on the controller or empty (PATH)",
           i.string),
]
