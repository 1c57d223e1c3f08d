# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/filter/waves.py: the drain play's hosts and serial come out checked, a bad value raises
AnsibleFilterError with module_utils/phases/waves.py's message (never a raw Jinja error)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.dra_gate.plugins.filter import waves as wf

GROUPS = {"all": ["gpu-1", "gpu-2", "gpu-3"], "ungrouped": [], "gpu_nodes": ["gpu-1", "gpu-2", "gpu-3"],
          "wave_a": ["gpu-1"], "wave_b": ["gpu-2", "gpu-3"]}


def test_registered():
    assert sorted(wf.FilterModule().filters()) == ["drain_wave_hosts", "drain_wave_plan", "drain_wave_serial"]


def test_hosts():
    assert wf.drain_wave_hosts([], "gpu_nodes", GROUPS) == "gpu_nodes"
    assert wf.drain_wave_hosts(["wave_b", "wave_a"], "gpu_nodes", GROUPS) == "wave_b:wave_a"
    with pytest.raises(AnsibleFilterError) as info:
        wf.drain_wave_hosts(["nosuch_pool"], "gpu_nodes", GROUPS)
    assert str(info.value).startswith("drain_waves: nothing was changed: dra_gate_drain_wave_groups: entry 0 ('nosuch_pool') "
                                      "is not an inventory group; the inventory's groups are: gpu_nodes, wave_a, wave_b")
    with pytest.raises(AnsibleFilterError, match="it is a string, not a list"):
        wf.drain_wave_hosts("wave_a", "gpu_nodes", GROUPS)


def test_serial():
    assert wf.drain_wave_serial([1, "10%", "25%"], [], GROUPS) == [1, "10%", "25%"]
    assert wf.drain_wave_serial([1, "10%", "25%"], ["wave_a", "wave_b"], GROUPS) == [1, 2]
    for bad in ([0], ["0%"], [-1], [1.5], ["abc"], ["150%"], [], "1"):
        with pytest.raises(AnsibleFilterError, match="dra_gate_drain_waves: .*expected a non-empty list of wave sizes"):
            wf.drain_wave_serial(bad, [], GROUPS)


def test_plan():
    assert wf.drain_wave_plan(["gpu-1", "gpu-2", "gpu-3"], [1, 2]) == [{"wave": 1, "hosts": ["gpu-1"]},
                                                                       {"wave": 2, "hosts": ["gpu-2", "gpu-3"]}]
    for hosts, serial in ((["gpu-1"], [0]), (["gpu-1"], "1"), ("gpu-1", [1])):
        with pytest.raises(AnsibleFilterError):
            wf.drain_wave_plan(hosts, serial)
