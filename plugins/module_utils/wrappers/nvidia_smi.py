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
import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import values as node_values
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.nvidia_driver import normalize_bdf

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
#: Ranges of the numeric columns: GPU index (nvidia-smi numbers at most a few dozen GPUs) and
#: total memory in MiB (16 TiB; an H200 has 143771).
INDEX_RANGE = (0, 1023)
MEMORY_MIB_RANGE = (0, 1 << 24)
MAX_TEXT = 256
_DRIVER_VERSION_RE = re.compile(r"\A[0-9]{1,6}(?:\.[0-9]{1,6}){1,3}\Z")
_VBIOS_RE = re.compile(r"\A[0-9A-Za-z._-]{1,64}\Z")


class NvidiaSmiError(ValueError):
    """nvidia-smi printed something this parser does not accept."""


def _value(text):
    text = (text or "").strip()
    return None if text in _NOT_AVAILABLE else text


def _header_field(text):
    # "memory.total [MiB]" -> "memory.total"
    return text.strip().split(" [", 1)[0]


def parse_query_csv(stdout, problems=None):
    """Parse the CSV of :data:`ARGV` into one dict per GPU.

    Raises :class:`NvidiaSmiError` when the header does not name exactly :data:`QUERY_FIELDS`
    (or the older :data:`LEGACY_QUERY_FIELDS`, without ``vbios_version``) or a row has a different
    number of columns. A value that its column cannot hold (an index in other than ASCII digits, a
    5,000-digit memory size, "143771 MiB", an overlong name) is None, and a message naming the line
    and the column (quoting at most a bounded prefix) is appended to ``problems`` when given.
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
        raise NvidiaSmiError("unexpected columns %s (expected %s)" % (
            node_values.quote(", ".join(header), 300), ", ".join(QUERY_FIELDS)))
    fields = header
    gpus = []
    problems = [] if problems is None else problems
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(fields):
            raise NvidiaSmiError("line %d has %d columns, expected %d" % (number, len(row), len(fields)))
        raw = dict(zip(fields, (_value(v) for v in row)))
        gpus.append(_gpu(raw, "line %d: " % number, problems))
    return gpus


def _checked(problems, value_error):
    value, error = value_error
    if error:
        problems.append(error)
    return value


def _gpu(raw, where, problems):
    """One GPU of the CSV, every value checked: a bad value is None and a message in ``problems``."""
    def number(field, low_high):
        if raw[field] is None:
            return None
        return _checked(problems, node_values.parse_int(raw[field], where + field, low_high[0], low_high[1]))

    def text(field, pattern=None):
        value = _checked(problems, node_values.text_value(raw.get(field), where + field, MAX_TEXT))
        if value is not None and pattern is not None and not pattern.match(value):
            problems.append("%s%s: %s is not a %s" % (where, field, node_values.quote(value), field))
            return None
        return value

    vbios = text("vbios_version", _VBIOS_RE)
    mig = (text("mig.mode.current") or "").lower() or None
    bus_id = text("pci.bus_id")
    return {
        "index": number("index", INDEX_RANGE),
        "pci_bus_id": normalize_bdf(bus_id),
        "pci_bus_id_raw": bus_id,
        "device_id": _device_id(raw["pci.device_id"], where, problems),
        "name": text("name"),
        "uuid": text("uuid"),
        "mig_mode": mig if mig in ("enabled", "disabled") else None,
        "memory_mib": number("memory.total", MEMORY_MIB_RANGE),
        "driver_version": text("driver_version", _DRIVER_VERSION_RE),
        "vbios_version": vbios.upper() if vbios else None,
    }


def _device_id(text, where, problems):
    """``pci.device_id`` ``0x233510DE`` (device id in the high 16 bits, vendor in the low 16) -> ``0x2335``;
    a 4-digit ``0x2335`` is taken as it is."""
    if text is None:
        return None
    for digits in (8, 4):
        number, error = node_values.parse_hex(text, where + "pci.device_id", digits=digits)
        if error is None:
            return "0x%04x" % (number >> 16 if digits == 8 else number)
    problems.append("%spci.device_id: %s is not 0x and 8 (or 4) hex digits" % (where, node_values.quote(text)))
    return None
