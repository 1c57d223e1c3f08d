# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drain waves: what a wave size and a wave group may be, and the waves Ansible will run.

A wave is one batch of the drain play (``serial``). Ansible reads a serial entry of 0 or below as "no
batching" - every remaining host at once - and a percentage rounds down to at least 1, so ``0``, ``"0%"``,
``-1`` or an empty wave group must never reach ``serial``: the drain would cordon a whole pool at once.
The ``*_problem`` functions return None for a fine value, else the reason (naming the entry and its
index); ``serial`` returns the checked serial list or raises ``WaveError``; ``batches`` and ``plan``
replicate ``PlaybookExecutor._get_serialized_batches`` and ``pct_to_int`` exactly.

Pure logic, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

DEFAULT_WAVES = (1, "10%", "25%")
DEFAULT_HOSTS = "gpu_nodes"
SIZE_EXPECTED = ('a whole number above 0 (nodes in the wave) or a percentage above 0% and at most 100% of the play\'s '
                 'nodes such as "25%" (rounded down, at least 1)')
SIZES_EXPECTED = ('a non-empty list of wave sizes, each %s; the last one repeats, e.g. [1, "10%%", "25%%"]' % SIZE_EXPECTED)
GROUPS_EXPECTED = 'a list of inventory groups, one wave each in order, e.g. ["wave_1", "wave_2"] (empty = use the wave sizes)'
HOSTS_EXPECTED = "an inventory group or host pattern that matches the GPU nodes (default gpu_nodes)"
# Groups every inventory has; not worth listing as the groups that exist.
IMPLICIT_GROUPS = ("all", "ungrouped")
_COUNT_RE = re.compile(r"^[0-9]+$")
_PERCENT_RE = re.compile(r"^([0-9]+)%$")
_NEGATIVE_RE = re.compile(r"^-[0-9.]+%?$")
_DECIMAL_RE = re.compile(r"^([0-9]+[.][0-9]*|[.][0-9]+)%?$")
# A host pattern made of one name (no union, intersection, exclusion, wildcard, regex or range).
_PLAIN_PATTERN_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


class WaveError(ValueError):
    """A wave size, wave group or host pattern that must not reach the drain play (the reason as text)."""


def _show(value):
    if isinstance(value, str):
        return "'%s'" % value if len(value) <= 60 else "'%s...'" % value[:60]
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def _is_list(value):
    return isinstance(value, (list, tuple))


def _as_list(text):
    """How a string given for a list is written as one (``1,10%`` -> ``[1, '10%']``)."""
    parts = [part.strip() for part in text.split(",") if part.strip()] or [text]
    return "[%s]" % ", ".join(part if _COUNT_RE.match(part) else _show(part) for part in parts)


def size_problem(value):
    """None when ``value`` is a wave size (a count above 0, or a percentage in (0, 100]), else why not."""
    if isinstance(value, bool):
        return "a boolean is not a wave size"
    if isinstance(value, int):
        if value > 0:
            return None
        if value == 0:
            return "0 is not a wave size (Ansible's serial reads 0 as no batching: every node at once)"
        return "a negative size is not a wave size (Ansible's serial reads it as no batching: every node at once)"
    if isinstance(value, float):
        return "%s is not a whole number" % value
    if not isinstance(value, str):
        return "it is not a number or a percentage"
    text = value.strip()
    if _COUNT_RE.match(text):
        return size_problem(int(text))
    match = _PERCENT_RE.match(text)
    if match:
        percent = int(match.group(1))
        if percent == 0:
            return "0% is not a wave size (a wave of no nodes)"
        if percent > 100:
            return "%d%% is more than all the nodes" % percent
        return None
    if _NEGATIVE_RE.match(text):
        return "a negative size is not a wave size (Ansible's serial reads it as no batching: every node at once)"
    if _DECIMAL_RE.match(text):
        return "it is not a whole number (nor a whole percentage)"
    return "it is neither a whole number nor a percentage"


def normal_size(value):
    """A checked wave size as ``serial`` takes it: an int for a count, ``"N%"`` for a percentage."""
    text = str(value).strip()
    return int(text) if _COUNT_RE.match(text) else "%d%%" % int(text[:-1])


def sizes_problem(waves):
    """None when ``waves`` is a non-empty list of wave sizes, else why not (every bad entry with its index)."""
    if isinstance(waves, str):
        return "it is a string, not a list (write it as a list: %s)" % _as_list(waves)
    if not _is_list(waves):
        return "it is not a list"
    if not waves:
        return "it is empty (no wave to run)"
    bad = ["entry %d (%s): %s" % (index, _show(value), reason)
           for index, value in enumerate(waves) for reason in [size_problem(value)] if reason]
    return ", and ".join(bad) or None


def _known(groups):
    names = sorted(name for name in (groups or {}) if name not in IMPLICIT_GROUPS)
    return ", ".join(names) if names else "none besides all and ungrouped"


def groups_problem(wave_groups, groups):
    """None when ``wave_groups`` is a list of distinct inventory groups with hosts, else why not (naming each
    bad entry with its index, and the groups that exist)."""
    if isinstance(wave_groups, str):
        return "it is a string, not a list (write it as a list: %s)" % _as_list(wave_groups)
    if not _is_list(wave_groups):
        return "it is not a list"
    groups = groups or {}
    bad, unknown, seen = [], False, set()
    for index, name in enumerate(wave_groups):
        if not isinstance(name, str) or not name:
            bad.append("entry %d (%s) is not a group name" % (index, _show(name)))
        elif name not in groups:
            bad.append("entry %d (%s) is not an inventory group" % (index, _show(name)))
            unknown = True
        elif name in seen:
            bad.append("entry %d (%s) is listed twice" % (index, _show(name)))
        elif not groups[name]:
            bad.append("entry %d (%s) has no hosts (a wave of no nodes)" % (index, _show(name)))
        if isinstance(name, str):
            seen.add(name)
    if not bad:
        return None
    return ", and ".join(bad) + ("; the inventory's groups are: %s" % _known(groups) if unknown else "")


def overlap_problem(wave_groups, groups):
    """None unless a host is in more than one of ``wave_groups`` (its wave would be ambiguous); groups that
    are wrong in themselves are ``groups_problem``'s."""
    if groups_problem(wave_groups, groups):
        return None
    first, again = {}, {}  # linear in the hosts: only a host seen twice gets a list, and only those are sorted
    for name in wave_groups:
        for host in groups[name]:
            if host in first:
                again.setdefault(host, [first[host]]).append(name)
            else:
                first[host] = name
    twice = ["%s (%s)" % (host, ", ".join(names)) for host, names in sorted(again.items())]
    return "a host is in more than one wave group: %s" % "; ".join(twice) if twice else None


def hosts_problem(pattern, groups):
    """None when ``pattern`` can be the drain play's hosts: a non-empty string; a plain name must be a group or
    a host of the inventory (a pattern with ``:``, ``&``, ``!``, wildcards or ranges is left to Ansible)."""
    if not isinstance(pattern, str):
        return "it is not a string"
    if not pattern.strip():
        return "it is empty"
    groups = groups or {}
    if _PLAIN_PATTERN_RE.match(pattern) and pattern not in groups and pattern not in groups.get("all", ()):
        return "%s is neither an inventory group nor a host; the inventory's groups are: %s" % (_show(pattern), _known(groups))
    return None


def hosts_pattern(wave_groups, hosts, groups):
    """The drain play's hosts: the wave groups joined (``a:b``) when there are any (checked against ``groups``,
    the inventory's, first), else ``hosts`` (a non-empty string: whether it names an inventory group is
    ``hosts_problem``'s, for the input check - a syntax check templates the play's hosts without an inventory).
    A problem raises ``WaveError``."""
    reason = groups_problem(wave_groups, groups) or overlap_problem(wave_groups, groups)
    if reason:
        raise WaveError("dra_gate_drain_wave_groups: %s; expected %s" % (reason, GROUPS_EXPECTED))
    if wave_groups:
        return ":".join(wave_groups)
    reason = hosts_problem(hosts, {}) if not isinstance(hosts, str) or not hosts.strip() else None
    if reason:
        raise WaveError("dra_gate_drain_hosts: %s; expected %s" % (reason, HOSTS_EXPECTED))
    return hosts


def serial(waves, wave_groups, groups):
    """The drain play's checked ``serial``: one size per wave group (its hosts) when there are wave groups,
    else the wave sizes normalised (ints and ``"N%"``). A problem raises ``WaveError`` naming the setting,
    the entry and the expected form."""
    reason = sizes_problem(waves)
    if reason:
        raise WaveError("dra_gate_drain_waves: %s; expected %s" % (reason, SIZES_EXPECTED))
    reason = groups_problem(wave_groups, groups) or overlap_problem(wave_groups, groups)
    if reason:
        raise WaveError("dra_gate_drain_wave_groups: %s; expected %s" % (reason, GROUPS_EXPECTED))
    if wave_groups:
        return [len(groups[name]) for name in wave_groups]
    return [normal_size(value) for value in waves]


def _pct_to_int(value, num_items, min_value=1):
    # ansible.utils.helpers.pct_to_int
    if isinstance(value, str) and value.endswith("%"):
        value_pct = int(value.replace("%", ""))
        return int((value_pct / 100.0) * num_items) or min_value
    return int(value)


def batches(hosts, serial_list):
    """The hosts in the batches Ansible makes of them (``PlaybookExecutor._get_serialized_batches``): each
    entry of ``serial_list`` in turn, the last one repeating; a percentage is of all the hosts, rounded down,
    at least 1; an entry of 0 or below takes every host left (``serial`` checks that none is)."""
    hosts = list(hosts)
    total = len(hosts)
    serial_list = list(serial_list) or [-1]
    out, current, start = [], 0, 0
    sizes = [_pct_to_int(value, total) for value in serial_list]  # of all the hosts: the same for every batch
    # by index: slicing off what is left after each batch (as Ansible does) is quadratic in one-node waves
    while start < total:
        size = sizes[current]
        if size <= 0:
            out.append(hosts[start:])
            break
        out.append(hosts[start:start + size])
        start += size
        current = min(current + 1, len(serial_list) - 1)
    return out


def plan(hosts, serial_list):
    """The waves as ``[{"wave": 1, "hosts": [...]}, ...]`` (numbered from 1)."""
    return [{"wave": number, "hosts": batch} for number, batch in enumerate(batches(hosts, serial_list), 1)]
