# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The typed field readers of the compatibility matrix and :class:`MatrixError`: pure logic, no I/O.

:mod:`compat_matrix` validates whole documents with these, and each rule kind
(:mod:`compat_rule_kind`) validates its row's ``values`` with them. A bad field raises
:class:`MatrixError` naming the file and the field: ``gpu-operator-26.7.0.yml: rows[3].values.min: ...``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.versions import parse_version

SEVERITIES = ("block", "warn", "info")
LIFECYCLE_STATUSES = ("supported", "deprecated", "eol", "not_listed")
VERSION_FIELDS = ("kubernetes_version", "containerd_version")
EXCLUSIVE_RESOURCES = ("cluster_policy", "gpu_cluster")
HOP_KINDS = ("same_major", "next_major")
ALLOCATION_MODES = ("device_plugin", "dra")

MINOR_RE = re.compile(r"^\d+\.\d+$")


class MatrixError(ValueError):
    """A matrix file or document is missing, unreadable or invalid. The message names file and field."""


_MISSING = object()


class _Where(object):
    """Where a value sits: ``file: rows[3].values.min``."""

    __slots__ = ("name", "path")

    def __init__(self, name, path=""):
        self.name = name
        self.path = path

    def child(self, key):
        if isinstance(key, int):
            return _Where(self.name, "%s[%d]" % (self.path, key))
        return _Where(self.name, "%s.%s" % (self.path, key) if self.path else key)

    def fail(self, text):
        raise MatrixError("%s: %s: %s" % (self.name, self.path or "(document)", text))


def _type_name(value):
    return type(value).__name__ if value is not None else "null"


def _get(mapping, key, where, required=True):
    value = mapping.get(key, _MISSING)
    if value is _MISSING or (required and value is None):
        if required:
            where.child(key).fail("required field missing")
        return None
    return value


def _str(mapping, key, where, required=True):
    value = _get(mapping, key, where, required)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        where.child(key).fail("expected a non-empty string, got %s %r" % (_type_name(value), value))
    return value


def _bool(mapping, key, where, required=True, default=None):
    value = _get(mapping, key, where, required)
    if value is None:
        return default
    if not isinstance(value, bool):
        where.child(key).fail("expected true or false, got %s %r" % (_type_name(value), value))
    return value


def _int(mapping, key, where, required=True, minimum=0):
    value = _get(mapping, key, where, required)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        where.child(key).fail("expected an integer >= %d, got %s %r" % (minimum, _type_name(value), value))
    return value


def _version(mapping, key, where, required=True):
    value = _get(mapping, key, where, required)
    if value is None:
        return None
    if not isinstance(value, str):
        where.child(key).fail(
            "expected a version as a quoted string (YAML reads 1.30 as the number 1.3), got %s %r"
            % (_type_name(value), value))
    if parse_version(value) is None:
        where.child(key).fail("not a version string: %r" % (value,))
    return value


def _dict(mapping, key, where, required=True):
    value = _get(mapping, key, where, required)
    if value is None:
        return None
    if not isinstance(value, dict):
        where.child(key).fail("expected a mapping, got %s" % _type_name(value))
    return value


def _list(mapping, key, where, required=True, non_empty=True):
    value = _get(mapping, key, where, required)
    if value is None:
        return None
    if not isinstance(value, list):
        where.child(key).fail("expected a list, got %s" % _type_name(value))
    if non_empty and not value:
        where.child(key).fail("expected a non-empty list")
    return value


def _choice(mapping, key, where, choices, required=True):
    value = _str(mapping, key, where, required)
    if value is not None and value not in choices:
        where.child(key).fail("expected one of %s, got %r" % (", ".join(choices), value))
    return value


def _no_unknown(mapping, allowed, where):
    for key in mapping:
        if key not in allowed:
            where.child(str(key)).fail("unknown field (expected one of %s)" % ", ".join(allowed))


def _source(mapping, key, where):
    value = _get(mapping, key, where)
    if isinstance(value, str) and value.strip():
        return [value]
    if isinstance(value, list) and value:
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                where.child(key).child(index).fail("expected a non-empty string, got %s" % _type_name(item))
        return list(value)
    where.child(key).fail("expected a source string or a non-empty list of them, got %s %r" % (_type_name(value), value))
    return None
