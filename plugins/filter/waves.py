# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain play's hosts, serial and wave plan from Python-checked values (module_utils/phases/waves.py).

Documentation: the sidecar files drain_wave_hosts.yml, drain_wave_serial.yml and drain_wave_plan.yml.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import waves

PREFIX = "drain_waves: nothing was changed: "


def drain_wave_hosts(wave_groups, hosts, groups):
    """The drain play's hosts pattern (the wave groups joined, else ``hosts``), checked against ``groups``."""
    try:
        return waves.hosts_pattern(wave_groups, hosts, groups)
    except waves.WaveError as exc:
        raise AnsibleFilterError(PREFIX + str(exc)) from exc


def drain_wave_serial(wave_sizes, wave_groups, groups):
    """The drain play's checked ``serial``: the group sizes for wave groups, else the wave sizes."""
    try:
        return waves.serial(wave_sizes, wave_groups, groups)
    except waves.WaveError as exc:
        raise AnsibleFilterError(PREFIX + str(exc)) from exc


def drain_wave_plan(hosts, serial):
    """The waves the play's hosts go in, as Ansible batches them: ``[{wave: 1, hosts: [...]}, ...]``."""
    if isinstance(hosts, str) or not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError(PREFIX + "drain_wave_plan: the hosts are not a list")
    if isinstance(serial, str) or not isinstance(serial, (list, tuple)):
        raise AnsibleFilterError(PREFIX + "drain_wave_plan: the serial list is not a list")
    reason = waves.sizes_problem(list(serial))
    if reason:
        raise AnsibleFilterError(PREFIX + "drain_wave_plan: %s; expected %s" % (reason, waves.SIZES_EXPECTED))
    return waves.plan(list(hosts), [waves.normal_size(value) for value in serial])


class FilterModule(object):
    """gpufleet.dra_gate drain wave filters."""

    def filters(self):
        return {
            "drain_wave_hosts": drain_wave_hosts,
            "drain_wave_serial": drain_wave_serial,
            "drain_wave_plan": drain_wave_plan,
        }
