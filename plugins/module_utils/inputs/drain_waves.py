# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain phase's input rules (roles/drain_waves), one per condition (module_utils/inputs/rules.py).

The rules of the inputs the drain play's keywords read (``hosts``, ``serial``, ``max_fail_percentage``) always
apply; the others only unless ``values["__context__"]["scope"]`` is ``play``: the playbook's first play checks
the keywords' inputs alone, before any keyword is templated (it runs on whatever host comes first, which may
not see the GPU nodes' group variables). The start play then checks all of them once on the controller, before
the role's argument spec validation (which would print the whole spec once per host); they cover every
condition the argument spec checks. The wave rules are module_utils/phases/waves.py's; the inventory's groups come in
``values["__context__"]["groups"]``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as i
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import waves


def _context(values):
    return values.get("__context__") or {}


def _groups(values):
    return _context(values).get("groups") or {}


def _all(values):
    return _context(values).get("scope", "all") != "play"


def _wave_sizes(value, values=None):
    return waves.sizes_problem(value)


def _wave_groups(value, values):
    return waves.groups_problem(value, _groups(values))


def _wave_groups_disjoint(value, values):
    return waves.overlap_problem(value, _groups(values))


def _no_wave_groups(values):
    groups = values.get("drain_waves_wave_groups")
    return isinstance(groups, (list, tuple)) and not groups


def _hosts(value, values):
    return waves.hosts_problem(value, _groups(values))


def _percentage(value, values=None):
    reason = i.whole_number(value)
    if reason:
        return reason
    return None if int(value) <= 100 else "it is more than 100"


def _task_file(value, values=None):
    if not isinstance(value, str):
        return "it is not a string"
    if value == "":
        return None
    if not os.path.isabs(value):
        return "it is a relative path"
    return None if os.path.isfile(value) else "there is no such file on the controller"


_SECONDS = "seconds above 0, such as 600 or 0.5"

PLAY_RULES = [
    i.Rule("drain_waves_sizes", "dra_gate_drain_waves", waves.SIZES_EXPECTED, _wave_sizes),
    i.Rule("drain_waves_wave_groups", "dra_gate_drain_wave_groups", waves.GROUPS_EXPECTED, _wave_groups),
    i.Rule("drain_waves_wave_groups", "dra_gate_drain_wave_groups", "groups that share no host (each host in one wave)",
           _wave_groups_disjoint),
    i.Rule("drain_waves_hosts", "dra_gate_drain_hosts", waves.HOSTS_EXPECTED, _hosts, when=_no_wave_groups),
    i.Rule("drain_waves_max_fail_percentage", "dra_gate_drain_max_fail_percentage",
           "a whole percentage from 0 to 100 (the drain play's max_fail_percentage)", _percentage),
]

RULES = [
    i.Rule("drain_waves_evidence_root", "dra_gate_evidence_root", "the absolute path of the private evidence root",
           i.absolute_path, when=_all),
    i.Rule("drain_waves_run_id", "dra_gate_run_id",
           "the gate run id (letters, digits, ._-; a rerun with the same id resumes)", i.run_id, when=_all),
    i.Rule("drain_waves_kubeconfig", "dra_gate_kubeconfig", "the path of a kubeconfig on the controller",
           i.non_empty_string, when=_all),
    i.Rule("drain_waves_kube_context", "dra_gate_kube_context", "a context name or empty (the current one)", i.string, when=_all),
] + PLAY_RULES + [
    i.Rule("drain_waves_timeout", "dra_gate_drain_timeout", _SECONDS, i.positive_number, when=_all),
    i.Rule("drain_waves_retry_interval", "dra_gate_drain_retry_interval", _SECONDS, i.positive_number, when=_all),
    i.Rule("drain_waves_poll_interval", "dra_gate_drain_poll_interval", _SECONDS, i.positive_number, when=_all),
    i.Rule("drain_waves_grace_period", "dra_gate_drain_grace_period",
           "whole seconds, or empty (each pod's own grace period)", i.whole_number_or_empty, when=_all),
    i.Rule("drain_waves_delete_emptydir_data", "dra_gate_drain_delete_emptydir_data", "true or false", i.boolean, when=_all),
    i.Rule("drain_waves_delete_unmanaged", "dra_gate_drain_delete_unmanaged", "true or false", i.boolean, when=_all),
    i.Rule("drain_waves_eviction_fallback", "dra_gate_drain_eviction_fallback", "none or delete",
           i.choice("none", "delete"), when=_all),
    i.Rule("drain_waves_fallback_after", "dra_gate_drain_fallback_after", "seconds, 0 or more, such as 60",
           i.non_negative_number, when=_all),
    i.Rule("drain_waves_maintenance_tasks", "dra_gate_drain_maintenance_tasks",
           "empty (no maintenance) or the absolute path of your task file on the controller", _task_file, when=_all),
    i.Rule("drain_waves_expect_reboot", "dra_gate_drain_expect_reboot", "true or false", i.boolean, when=_all),
    i.Rule("drain_waves_restore_timeout", "dra_gate_drain_restore_timeout", _SECONDS, i.positive_number, when=_all),
    i.Rule("drain_waves_reschedule_timeout", "dra_gate_drain_reschedule_timeout", _SECONDS, i.positive_number, when=_all),
    i.Rule("drain_waves_max_failed_reschedules", "dra_gate_drain_max_failed_reschedules",
           "a whole number (0 = stop at the first failed reschedule)", i.whole_number, when=_all),
]
