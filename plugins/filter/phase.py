# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The phase roles' shared judges (module_utils/judges/phase_role.py): node names, answered hosts, step records,
the gate's message.

Documentation: the sidecar files node_names.yml, phase_host_failure.yml, phase_answered.yml,
phase_finished_hosts.yml, phase_gate_message.yml, step_record.yml and seconds_between.yml.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import phase_role
from ansible_collections.gpufleet.dra_gate.plugins.plugin_utils.judged import judged

PREFIX = "phase: "


def _call(function, *args, **kwargs):
    return judged(PREFIX, function, *args, **kwargs)


def node_names(hosts, hostvars, by_host=False):
    """The hosts' Kubernetes node names (dra_gate_node_name, else the inventory name)."""
    return _call(phase_role.node_names, hosts, hostvars, by_host=by_host)


def phase_host_failure(result):
    """'' when the host answered its read, else why not."""
    return _call(phase_role.host_failure, result)


def phase_answered(hosts, hostvars, result_name, play_hosts):
    """{answered_hosts, failed_hosts} from each host's registered read ``result_name``, once on the controller."""
    return _call(phase_role.answered_reads, hosts, hostvars, result_name, play_hosts)


def phase_finished_hosts(answered_hosts, play_hosts):
    """The hosts that answered and are still in the play."""
    return _call(phase_role.finished_hosts, answered_hosts, play_hosts)


def phase_gate_message(evidence, phase, fail_on, check_mode=False):
    """The gate's message from gate_evidence's result."""
    return _call(phase_role.gate_message, evidence, phase, fail_on, check_mode)


def step_record(result, name, phase=None, detail=None, started_at=None, finished_at=None):
    """One step's record from its task result."""
    return _call(phase_role.step_record, result, name, phase=phase, detail=detail, started_at=started_at,
                 finished_at=finished_at)


def seconds_between(start, end):
    """``end - start`` in seconds of two recorded stamps (the one clock's rule)."""
    return _call(phase_role.seconds_between, start, end)


class FilterModule(object):
    """gpufleet.dra_gate phase filters."""

    def filters(self):
        return {
            "node_names": node_names,
            "phase_host_failure": phase_host_failure,
            "phase_answered": phase_answered,
            "phase_finished_hosts": phase_finished_hosts,
            "phase_gate_message": phase_gate_message,
            "step_record": step_record,
            "seconds_between": seconds_between,
        }
