# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers of the NVIDIA driver's procfs files and of nvidia-smi's CSV, on recorded real outputs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import nvidia_smi
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.nvidia_driver import (
    DriverVersionError,
    normalize_bdf,
    parse_driver_version_file,
    parse_gpu_information,
)

import node_trees

RAW = os.path.join(node_trees.FIXTURES, "nodes", "h200-vm-raw")


def raw(name):
    with open(os.path.join(RAW, name)) as handle:
        return handle.read()


def test_real_open_module_version_file():
    parsed = parse_driver_version_file(raw("proc-version.txt"))
    assert parsed["version"] == "580.159.04"
    assert parsed["flavor"] == "open"
    assert parsed["gcc"] == "gcc version 15.3.0 (GCC)"


@pytest.mark.parametrize("text,version,flavor", [
    # Proprietary module, classic layout.
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC 2023\n"
     "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n", "535.129.03", "proprietary"),
    # Open module with "for x86_64" inserted (the change that broke column-based parsers).
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
     "(dvs-builder@U22)  Wed Apr 29 17:15:53 UTC 2026\n", "580.159.04", "open"),
    # aarch64 proprietary module; two-part version of old branches.
    ("NVRM version: NVIDIA UNIX aarch64 Kernel Module  470.82  Thu Oct 14 2021\n", "470.82", "proprietary"),
])
def test_version_token_not_columns(text, version, flavor):
    parsed = parse_driver_version_file(text)
    assert (parsed["version"], parsed["flavor"]) == (version, flavor)


@pytest.mark.parametrize("text", ["", "   \n", "hello world\n", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64\n",
                                  "\x00\x01\x02"])
def test_garbage_or_truncated_version_file(text):
    with pytest.raises(DriverVersionError):
        parse_driver_version_file(text)


def test_real_gpu_information_file():
    text = raw("proc-information.txt").split("\n", 1)[1]
    info = parse_gpu_information(text)
    assert info["Model"] == "NVIDIA H200"
    assert info["Bus Location"] == "0000:00:06.0"
    assert info["GPU UUID"] == "GPU-f06f0ae7-4822-3c65-0972-1d839772e142"


@pytest.mark.parametrize("text,expected", [
    ("00000000:00:06.0", "0000:00:06.0"),   # nvidia-smi's 8-digit domain
    ("0000:17:00.0", "0000:17:00.0"),
    ("00000000:AB:00.0", "0000:ab:00.0"),
    ("17:00.0", "0000:17:00.0"),
    ("00000001:17:00.1", "0001:17:00.1"),
    ("100000000:17:00.0", None),
    ("0000:17:00.9", None),
    ("not-a-bdf", None),
    (None, None),
])
def test_normalize_bdf(text, expected):
    assert normalize_bdf(text) == expected


def test_real_nvidia_smi_csv():
    gpus = nvidia_smi.parse_query_csv(raw("smi-query.csv"))
    assert gpus == [{
        "index": 0, "pci_bus_id": "0000:00:06.0", "pci_bus_id_raw": "00000000:00:06.0", "device_id": "0x2335",
        "name": "NVIDIA H200", "uuid": "GPU-f06f0ae7-4822-3c65-0972-1d839772e142", "mig_mode": "disabled",
        "memory_mib": 143771, "driver_version": "580.159.04",
        "vbios_version": None,  # recorded before vbios_version was queried: still parsed, vbios unknown
    }]


def test_argv_is_the_one_recorded_on_the_machine_plus_vbios():
    header = raw("smi-query.csv").splitlines()[0]
    recorded = [h.split(" [")[0].strip() for h in header.split(",")]
    assert nvidia_smi.ARGV[1] == "--query-gpu=" + ",".join(recorded + ["vbios_version"])
    assert nvidia_smi.ARGV[2] == "--format=csv,nounits"
    assert tuple(recorded) == nvidia_smi.LEGACY_QUERY_FIELDS


def test_vbios_version_column():
    # The recorded row with the VBIOS nvidia-smi -q printed on the same machine (smi-q.txt).
    lines = raw("smi-query.csv").splitlines()
    gpus = nvidia_smi.parse_query_csv(lines[0] + ", vbios_version\n" + lines[1] + ", 96.00.A5.00.1A\n")
    assert gpus[0]["vbios_version"] == "96.00.A5.00.1A"
    assert gpus[0]["memory_mib"] == 143771


@pytest.mark.parametrize("stdout", [
    "\x00\x01\x02garbage\xff\n\x00",
    "index, pci.bus_id\n" + "x" * 200000 + "\n",  # a field over csv's size limit
    "\ufffd" * 1000,
])
def test_garbage_output_is_an_error_not_a_crash(stdout):
    with pytest.raises(nvidia_smi.NvidiaSmiError):
        nvidia_smi.parse_query_csv(stdout)


def test_units_in_values_are_not_mistaken_for_numbers():
    gpus = nvidia_smi.parse_query_csv(raw("smi-query-units.csv"))
    assert gpus[0]["memory_mib"] is None  # "143771 MiB" is not silently misread


@pytest.mark.parametrize("stdout,message", [
    ("", "no output"),
    ("index, name\n0, NVIDIA H200\n", "unexpected columns"),
    (raw("smi-query.csv").splitlines()[0] + "\n0, 00000000:00:06.0, 0x233510DE\n", "has 3 columns"),
])
def test_bad_nvidia_smi_output(stdout, message):
    with pytest.raises(nvidia_smi.NvidiaSmiError, match=message):
        nvidia_smi.parse_query_csv(stdout)


def test_not_available_values_become_none():
    header = raw("smi-query.csv").splitlines()[0]
    gpus = nvidia_smi.parse_query_csv(header + "\n0, 00000000:3B:00.0, 0x233010DE, NVIDIA H100, GPU-x, [N/A], [N/A], 580.173.02\n")
    assert gpus[0]["mig_mode"] is None and gpus[0]["memory_mib"] is None
    assert gpus[0]["device_id"] == "0x2330"
