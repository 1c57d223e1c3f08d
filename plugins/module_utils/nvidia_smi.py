# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one wrapper around ``nvidia-smi``: the argv of its single query and the parser of its CSV.

One call per node: ``nvidia-smi --query-gpu=<fields> --format=csv,nounits``. The header line is
kept (no ``noheader``) so that a driver printing other columns is detected instead of misread:
"The output of NVSMI is not guaranteed to be backwards compatible" (nvidia-smi(1)).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.nvidia_driver import normalize_bdf

QUERY_FIELDS = (
    "index",
    "pci.bus_id",
    "pci.device_id",
    "name",
    "uuid",
    "mig.mode.current",
    "memory.total",
    "driver_version",
    "vbios_version",
)
# The header printed for the query before vbios_version was added (the H200 recording of
# 2026-11-30): still understood, with ``vbios_version`` null.
LEGACY_QUERY_FIELDS = QUERY_FIELDS[:-1]
ARGV = ["nvidia-smi", "--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv,nounits"]
SEARCH_DIRS = ["/usr/bin", "/usr/local/bin", "/usr/local/nvidia/bin", "/run/nvidia/driver/usr/bin"]
_NOT_AVAILABLE = ("[N/A]", "N/A", "[Not Supported]", "Not Supported", "")


class NvidiaSmiError(ValueError):
    """nvidia-smi printed something this parser does not accept."""


def _value(text):
    text = (text or "").strip()
    return None if text in _NOT_AVAILABLE else text


def _header_field(text):
    # "memory.total [MiB]" -> "memory.total"
    return text.strip().split(" [", 1)[0]


def parse_query_csv(stdout):
    """Parse the CSV of :data:`ARGV` into one dict per GPU.

    Raises :class:`NvidiaSmiError` when the header does not name exactly :data:`QUERY_FIELDS`
    (or the older :data:`LEGACY_QUERY_FIELDS`, without ``vbios_version``) or a row has a different
    number of columns.
    """
    lines = [line for line in (stdout or "").splitlines() if line.strip()]
    if not lines:
        raise NvidiaSmiError("no output")
    try:
        rows = list(csv.reader(lines, skipinitialspace=True))
    except csv.Error as exc:  # NUL bytes (Python < 3.11), a field over csv's size limit
        raise NvidiaSmiError("not CSV: %s" % exc)
    header = tuple(_header_field(h) for h in rows[0])
    if header not in (QUERY_FIELDS, LEGACY_QUERY_FIELDS):
        raise NvidiaSmiError("unexpected columns %s (expected %s)" % (", ".join(header), ", ".join(QUERY_FIELDS)))
    fields = header
    gpus = []
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(fields):
            raise NvidiaSmiError("line %d has %d columns, expected %d" % (number, len(row), len(fields)))
        raw = dict(zip(fields, (_value(v) for v in row)))
        vbios = raw.get("vbios_version")
        memory = raw["memory.total"]
        mig = (raw["mig.mode.current"] or "").lower() or None
        device_id = raw["pci.device_id"]
        gpus.append({
            "index": int(raw["index"]) if raw["index"] and raw["index"].isdigit() else None,
            "pci_bus_id": normalize_bdf(raw["pci.bus_id"]),
            "pci_bus_id_raw": raw["pci.bus_id"],
            # "0x233510DE": device id in the high 16 bits, vendor (10DE) in the low 16 bits.
            "device_id": ("0x%s" % device_id[2:6].lower()) if device_id and len(device_id) == 10 else device_id,
            "name": raw["name"],
            "uuid": raw["uuid"],
            "mig_mode": mig if mig in ("enabled", "disabled") else None,
            "memory_mib": int(memory) if memory and memory.isdigit() else None,
            "driver_version": raw["driver_version"],
            "vbios_version": vbios.upper() if vbios else None,
        })
    return gpus
