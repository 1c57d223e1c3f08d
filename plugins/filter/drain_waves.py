# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain_waves role's judges (module_utils/judges/drain_waves_role.py).

Documentation: the sidecar files drain_wave_of.yml, drain_node_start.yml, drain_node_record.yml,
drain_wave_record.yml, drain_waves_line.yml, drain_waves_state.yml and drain_waves_finish.yml.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import drain_waves_role as judge
from ansible_collections.gpufleet.dra_gate.plugins.plugin_utils.judged import judged
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import phase_role

PREFIX = "drain_waves: "


def _call(function, *args, **kwargs):
    return judged(PREFIX, function, *args, **kwargs)


def drain_wave_of(plan, host):
    """The host's wave number in the wave plan."""
    return _call(judge.wave_of, plan, host)


def drain_node_start(prior, stops, maintenance_tasks="", expect_reboot=False, check_mode=False):
    """What the node's rollout does first."""
    return _call(judge.node_start, prior, stops, maintenance_tasks, expect_reboot, check_mode)


def drain_node_record(steps):
    """The node's record from its steps' results (a mapping of node_record's arguments)."""
    if not isinstance(steps, dict):
        raise AnsibleFilterError(PREFIX + "drain_node_record: expected a mapping of the node's step results")
    return _call(judge.node_record, **steps)


def drain_wave_record(batch, hostvars, wave, stamp, finished_at):
    """The wave's record from the batch's hosts' outcomes."""
    def entries():
        out = []
        for host in phase_role.host_list(batch, "batch"):
            outcome = phase_role.host_value(hostvars, host, "drain_waves_outcome") or {}
            out.append({"node": phase_role.host_value(hostvars, host, "drain_waves_node"),
                        "started_at": phase_role.host_value(hostvars, host, "drain_waves_node_started"),
                        "status": outcome.get("status") if isinstance(outcome, dict) else None})
        return out
    return _call(lambda: judge.wave_record(wave, stamp, finished_at, entries()))


def drain_waves_line(record, kind="node"):
    """The node's or the wave's outcome line."""
    if kind not in ("node", "wave"):
        raise AnsibleFilterError(PREFIX + "drain_waves_line: kind: expected node or wave, got %r" % (kind,))
    return _call(judge.node_line if kind == "node" else judge.wave_line, record)


def drain_waves_state(state_dir, stamp, node=None):
    """The rollout's node, wave and stop records read from its state directory."""
    return _call(judge.read_state, state_dir, stamp, node)


def drain_waves_finish(hosts, hostvars, state, stamp):
    """The drain record's nodes and totals."""
    def pairs():
        names = phase_role.node_names(hosts, hostvars)
        return [[host, node] for host, node in zip(hosts, names)]
    if not isinstance(state, dict):
        raise AnsibleFilterError(PREFIX + "drain_waves_finish: state: expected drain_waves_state's result")
    return _call(lambda: judge.finish(pairs(), state.get("nodes"), state.get("stops"), stamp))


class FilterModule(object):
    """gpufleet.dra_gate drain_waves judges."""

    def filters(self):
        return {
            "drain_wave_of": drain_wave_of,
            "drain_node_start": drain_node_start,
            "drain_node_record": drain_node_record,
            "drain_wave_record": drain_wave_record,
            "drain_waves_line": drain_waves_line,
            "drain_waves_state": drain_waves_state,
            "drain_waves_finish": drain_waves_finish,
        }
