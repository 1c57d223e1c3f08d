# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the NVIDIA kernel driver's procfs files and PCI addresses (pure, standard library).

``/proc/driver/nvidia/version`` is printed by nv-procfs.c as ``NVRM version: %s`` then
``GCC version:  %s``; the NVRM text differs between the open and proprietary modules and across
releases (an inserted ``for x86_64`` broke column-based parsers), so the version is the first
``N.N[.N]`` token after the word ``Module``, never a fixed column.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.values import quote

#: Characters kept of the ``NVRM version:`` and ``GCC version:`` lines (real ones have about 120).
MAX_LINE = 512
_NVRM_RE = re.compile(r"^NVRM version:\s*(?P<text>.*)$", re.MULTILINE)
_GCC_RE = re.compile(r"^GCC version:\s*(?P<text>.*)$", re.MULTILINE)
# ASCII digits only: in a str pattern \d also matches '٣' and '¹'.
_VERSION_TOKEN_RE = re.compile(r"(?<![\w.])([0-9]{1,6}\.[0-9]{1,6}(?:\.[0-9]{1,6})?)(?![\w.])")
_BDF_RE = re.compile(
    r"^(?:(?P<domain>[0-9a-fA-F]{1,8}):)?(?P<bus>[0-9a-fA-F]{1,2}):(?P<dev>[0-9a-fA-F]{1,2})\.(?P<fn>[0-7])$"
)


class DriverVersionError(ValueError):
    """The version file exists but does not look like one the NVIDIA driver writes."""


def parse_driver_version_file(text):
    """Parse ``/proc/driver/nvidia/version``.

    Returns ``{"version", "flavor", "nvrm", "gcc"}``; ``flavor`` is ``open`` for the open GPU kernel
    modules and ``proprietary`` otherwise. Raises :class:`DriverVersionError` for text without an
    ``NVRM version:`` line or without a version token after ``Module``.
    """
    if not text or not text.strip():
        raise DriverVersionError("empty file")
    match = _NVRM_RE.search(text)
    if not match:
        raise DriverVersionError("no 'NVRM version:' line")
    nvrm = match.group("text").strip()[:MAX_LINE]
    index = nvrm.find("Module")
    search_from = nvrm[index + len("Module"):] if index >= 0 else nvrm
    token = _VERSION_TOKEN_RE.search(search_from)
    if not token:
        raise DriverVersionError("no version token in %s" % quote(nvrm))
    flavor = "open" if "Open Kernel Module" in nvrm else "proprietary"
    gcc = _GCC_RE.search(text)
    return {
        "version": token.group(1),
        "flavor": flavor,
        "nvrm": nvrm,
        "gcc": gcc.group("text").strip()[:MAX_LINE] if gcc else None,
    }


def parse_gpu_information(text):
    """Parse ``/proc/driver/nvidia/gpus/<bdf>/information`` (``Key:  value`` lines) into a dict.

    Keys of interest: ``Model``, ``GPU UUID``, ``Bus Location``, ``Device Minor``, ``Bus Type``.
    """
    result = {}
    for line in (text or "").splitlines():
        if ":" not in line:
            continue
        key, _sep, value = line.partition(":")
        key = key.strip()
        if key and key not in result:
            result[key] = value.strip()
    return result


def normalize_bdf(text):
    """Return a PCI address in the 4-hex-digit domain form sysfs uses (``0000:17:00.0``).

    nvidia-smi prints an 8-digit domain (``00000000:17:00.0``); a missing domain means 0.
    Returns None when ``text`` is not a PCI address or the domain does not fit 16 bits.
    """
    if text is None:
        return None
    match = _BDF_RE.match(text.strip())
    if not match:
        return None
    domain = int(match.group("domain") or "0", 16)
    if domain > 0xFFFF:
        return None
    return "%04x:%02x:%02x.%s" % (
        domain, int(match.group("bus"), 16), int(match.group("dev"), 16), match.group("fn"))
