# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/phases/waves.py: what a wave size, a wave group and the drain play's hosts may be (0, "0%", negatives,
floats, "150%", unknown, empty, repeated or overlapping groups refused, each naming the entry and its index), and
the wave plan, compared with Ansible's own PlaybookExecutor._get_serialized_batches."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools

import pytest

from ansible.executor.playbook_executor import PlaybookExecutor

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import waves

GROUPS = {"all": ["gpu-%d" % n for n in range(1, 7)], "ungrouped": [], "gpu_nodes": ["gpu-%d" % n for n in range(1, 7)],
          "wave_1": ["gpu-1"], "wave_2": ["gpu-2", "gpu-3"], "wave_3": ["gpu-4", "gpu-5", "gpu-6"], "empty_pool": []}


@pytest.mark.parametrize("value", [1, 7, 100, "1", "12", "1%", "10%", "100%", " 25% "])
def test_good_sizes(value):
    assert waves.size_problem(value) is None


@pytest.mark.parametrize("value, reason", [
    (0, "0 is not a wave size (Ansible's serial reads 0 as no batching"),
    ("0", "0 is not a wave size"),
    ("0%", "0% is not a wave size"),
    (-1, "a negative size"),
    ("-1", "a negative size"),
    ("-10%", "a negative size"),
    (1.5, "1.5 is not a whole number"),
    (2.0, "2.0 is not a whole number"),
    ("1.5", "not a whole number"),
    ("12.5%", "not a whole number"),
    ("abc", "neither a whole number nor a percentage"),
    ("", "neither a whole number nor a percentage"),
    ("10 %", "neither a whole number nor a percentage"),
    ("150%", "150% is more than all the nodes"),
    ("101%", "101% is more than all the nodes"),
    (True, "a boolean is not a wave size"),
    (None, "not a number or a percentage"),
    ([1], "not a number or a percentage"),
])
def test_bad_sizes(value, reason):
    assert reason in waves.size_problem(value)


def test_sizes_name_each_bad_entry_with_its_index():
    reason = waves.sizes_problem([1, 0, "10%", "0%", -1])
    assert reason.startswith("entry 1 (0): 0 is not a wave size")
    assert "entry 3 ('0%'): 0% is not a wave size" in reason and "entry 4 (-1): a negative size" in reason
    assert "entry 0" not in reason and "entry 2" not in reason
    assert waves.sizes_problem([1, "10%", "25%"]) is None and waves.sizes_problem((2,)) is None


@pytest.mark.parametrize("value, reason", [
    ([], "it is empty (no wave to run)"), ("1", "it is a string, not a list (write it as a list: [1])"),
    ("1, 10%,25%", "it is a string, not a list (write it as a list: [1, '10%', '25%'])"), (3, "it is not a list"),
    (None, "it is not a list"), ({"a": 1}, "it is not a list")])
def test_sizes_must_be_a_non_empty_list(value, reason):
    assert waves.sizes_problem(value) == reason


def test_groups():
    assert waves.groups_problem([], GROUPS) is None
    assert waves.groups_problem(["wave_1", "wave_2"], GROUPS) is None
    unknown = waves.groups_problem(["wave_1", "nosuch_pool"], GROUPS)
    assert unknown == ("entry 1 ('nosuch_pool') is not an inventory group; the inventory's groups are: "
                       "empty_pool, gpu_nodes, wave_1, wave_2, wave_3")
    assert waves.groups_problem("wave_1", GROUPS) == "it is a string, not a list (write it as a list: ['wave_1'])"
    assert waves.groups_problem("wave_1,wave_2", GROUPS) == "it is a string, not a list (write it as a list: ['wave_1', 'wave_2'])"
    assert waves.groups_problem(None, GROUPS) == "it is not a list"
    assert waves.groups_problem(["wave_1", 3], GROUPS) == "entry 1 (3) is not a group name"
    assert waves.groups_problem(["wave_1", "wave_1"], GROUPS) == "entry 1 ('wave_1') is listed twice"
    assert waves.groups_problem(["empty_pool"], GROUPS) == "entry 0 ('empty_pool') has no hosts (a wave of no nodes)"
    assert "none besides all and ungrouped" in waves.groups_problem(["x"], {"all": [], "ungrouped": []})


def test_overlapping_groups():
    assert waves.overlap_problem(["wave_1", "wave_2"], GROUPS) is None
    assert waves.overlap_problem(["wave_2", "gpu_nodes"], GROUPS) == (
        "a host is in more than one wave group: gpu-2 (wave_2, gpu_nodes); gpu-3 (wave_2, gpu_nodes)")
    assert waves.overlap_problem(["nosuch"], GROUPS) is None  # groups_problem's to report


def test_hosts():
    assert waves.hosts_problem("gpu_nodes", GROUPS) is None and waves.hosts_problem("gpu-3", GROUPS) is None
    assert waves.hosts_problem("gpu_nodes:&wave_2", GROUPS) is None and waves.hosts_problem("gpu-*", GROUPS) is None
    assert waves.hosts_problem("gpu_nodez", GROUPS).startswith("'gpu_nodez' is neither an inventory group nor a host")
    assert waves.hosts_problem("", GROUPS) == "it is empty" and waves.hosts_problem(["gpu_nodes"], GROUPS) == "it is not a string"
    assert waves.hosts_pattern(["wave_1", "wave_3"], "gpu_nodes", GROUPS) == "wave_1:wave_3"
    assert waves.hosts_pattern([], "gpu_nodes", GROUPS) == "gpu_nodes"
    with pytest.raises(waves.WaveError, match="dra_gate_drain_wave_groups: entry 0 .'nosuch_pool'. is not an inventory group"):
        waves.hosts_pattern(["nosuch_pool"], "gpu_nodes", GROUPS)
    # a pattern is not checked against the inventory here (a syntax check templates hosts without one)
    assert waves.hosts_pattern([], "gpu_nodes", {"all": [], "ungrouped": []}) == "gpu_nodes"
    for bad, reason in (("", "it is empty"), (" ", "it is empty"), (None, "it is not a string")):
        with pytest.raises(waves.WaveError, match="dra_gate_drain_hosts: %s; expected an inventory group" % reason):
            waves.hosts_pattern([], bad, GROUPS)


def test_serial():
    assert waves.serial([1, "10%", " 25%", "3"], [], GROUPS) == [1, "10%", "25%", 3]
    assert waves.serial([1, "10%"], ["wave_1", "wave_3"], GROUPS) == [1, 3]
    for bad, match in (([0], r"dra_gate_drain_waves: entry 0 \(0\): 0 is not a wave size"),
                       (["0%"], r"dra_gate_drain_waves: entry 0 \('0%'\): 0% is not a wave size"),
                       ([1, -1], r"entry 1 \(-1\): a negative size"), ("1", "it is a string")):
        with pytest.raises(waves.WaveError, match=match) as info:
            waves.serial(bad, [], GROUPS)
        assert "expected a non-empty list of wave sizes, each a whole number above 0" in str(info.value)
    with pytest.raises(waves.WaveError, match="has no hosts"):
        waves.serial([1], ["wave_1", "empty_pool"], GROUPS)
    with pytest.raises(waves.WaveError, match="more than one wave group"):
        waves.serial([1], ["wave_1", "gpu_nodes"], GROUPS)


class _Inventory(object):
    def __init__(self, hosts):
        self.hosts = hosts

    def get_hosts(self, pattern, order=None):
        return list(self.hosts)


class _Play(object):
    def __init__(self, serial):
        self.hosts, self.order, self.serial = "drain", None, serial


def ansible_batches(hosts, serial):
    executor = PlaybookExecutor.__new__(PlaybookExecutor)
    executor._inventory = _Inventory(hosts)
    return PlaybookExecutor._get_serialized_batches(executor, _Play(serial))


SIZES = [1, 2, 3, 7, "1%", "10%", "17%", "25%", "33%", "50%", "99%", "100%"]


@pytest.mark.parametrize("count", [1, 2, 3, 6, 10, 23])
def test_batches_are_ansibles(count):
    hosts = ["h%02d" % n for n in range(count)]
    for length in (1, 2, 3):
        for serial in itertools.product(SIZES, repeat=length):
            assert waves.batches(hosts, list(serial)) == ansible_batches(hosts, list(serial)), serial
    # what the checks keep from serial: Ansible's reading of 0 and below (every host left at once)
    for serial in ([0], [1, 0], [2, -1], []):
        assert waves.batches(hosts, serial) == ansible_batches(hosts, serial), serial


def test_plan():
    hosts = ["gpu-%d" % n for n in range(1, 7)]
    assert waves.plan(hosts, [1, "10%", "25%"]) == [
        {"wave": 1, "hosts": ["gpu-1"]}, {"wave": 2, "hosts": ["gpu-2"]}, {"wave": 3, "hosts": ["gpu-3"]},
        {"wave": 4, "hosts": ["gpu-4"]}, {"wave": 5, "hosts": ["gpu-5"]}, {"wave": 6, "hosts": ["gpu-6"]}]
    assert [w["hosts"] for w in waves.plan(hosts, [1, 2, 3])] == [["gpu-1"], ["gpu-2", "gpu-3"], ["gpu-4", "gpu-5", "gpu-6"]]
    assert [w["hosts"] for w in waves.plan(hosts, ["50%"])] == [hosts[:3], hosts[3:]]
    assert waves.plan([], [1]) == []
    assert waves.plan(hosts, waves.serial([1], ["wave_1", "wave_2", "wave_3"], GROUPS))[2] == {"wave": 3, "hosts": hosts[3:]}
