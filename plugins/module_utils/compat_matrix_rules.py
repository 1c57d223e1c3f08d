# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of the compatibility matrix: the typed field readers and one validator per row rule.

:data:`RULES` maps each ``rule`` name of a matrix row to the validator of its ``values``;
docs/compat-matrix.md describes each. :mod:`compat_matrix` validates whole documents with these.
Pure logic, no I/O. A bad field raises :class:`MatrixError` naming the file and the field.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.versions import parse_version

SEVERITIES = ("block", "warn", "info")
LIFECYCLE_STATUSES = ("supported", "deprecated", "eol", "not_listed")
VERSION_FIELDS = ("kubernetes_version", "containerd_version")
EXCLUSIVE_RESOURCES = ("cluster_policy", "gpu_cluster")
HOP_KINDS = ("same_major", "next_major")
ALLOCATION_MODES = ("device_plugin", "dra")

_MINOR_RE = re.compile(r"^\d+\.\d+$")


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


# ---- rule-specific ``values`` validators ---------------------------------------------------------

def _v_version_range(row, values, where):
    if row["constrains"] not in VERSION_FIELDS:
        where.parent_row.child("constrains").fail(
            "rule version_range constrains one of %s, got %r" % (", ".join(VERSION_FIELDS), row["constrains"]))
    low = _version(values, "min", where, required=False)
    high = _version(values, "max", where, required=False)
    if low is None and high is None:
        where.fail("version_range needs min, max or both")
    if low is not None and high is not None and parse_version(low) > parse_version(high):
        where.fail("min %s is above max %s" % (low, high))
    _no_unknown(values, ("min", "max"), where)


def _v_branches(row, values, where):
    branches = _list(values, "branches", where)
    seen = set()
    for index, item in enumerate(branches):
        item_where = where.child("branches").child(index)
        if not isinstance(item, dict):
            item_where.fail("expected a mapping, got %s" % _type_name(item))
        branch = _int(item, "branch", item_where, minimum=1)
        validated = _version(item, "validated", item_where)
        if parse_version(validated).major != branch:
            item_where.child("validated").fail("%s is not in branch %d" % (validated, branch))
        if branch in seen:
            item_where.child("branch").fail("duplicate branch %d" % branch)
        seen.add(branch)
        _bool(item, "recommended", item_where, required=False)
        _bool(item, "default", item_where, required=False)
        _no_unknown(item, ("branch", "validated", "recommended", "default"), item_where)
    _no_unknown(values, ("branches",), where)


def _v_containerd_cri(row, values, where):
    table = _dict(values, "table", where)
    if not table:
        where.child("table").fail("expected a non-empty mapping of Kubernetes minor -> containerd versions")
    for minor, minimums in table.items():
        row_where = where.child("table").child(str(minor))
        if not isinstance(minor, str) or not _MINOR_RE.match(minor):
            row_where.fail("key must be a quoted Kubernetes minor such as \"1.37\", got %s %r" % (_type_name(minor), minor))
        if not isinstance(minimums, list) or not minimums:
            row_where.fail("expected a non-empty list of containerd versions")
        for index, text in enumerate(minimums):
            if not isinstance(text, str) or parse_version(text) is None:
                row_where.child(index).fail("not a version string: %r" % (text,))
    _no_unknown(values, ("table",), where)


def _v_kubelet_skew(row, values, where):
    _int(values, "max_newer_minors", where)
    _int(values, "max_older_minors", where)
    old = _dict(values, "old_kubelet", where, required=False)
    if old is not None:
        old_where = where.child("old_kubelet")
        _version(old, "below", old_where)
        _int(old, "max_older_minors", old_where)
        _no_unknown(old, ("below", "max_older_minors"), old_where)
    _no_unknown(values, ("max_newer_minors", "max_older_minors", "old_kubelet"), where)


def _v_upgrade_hops(row, values, where):
    allowed = _list(values, "allowed", where)
    for index, item in enumerate(allowed):
        if item not in HOP_KINDS:
            where.child("allowed").child(index).fail("expected one of %s, got %r" % (", ".join(HOP_KINDS), item))
    parts = _int(values, "major_parts", where, minimum=1)
    if parts != 2:
        where.child("major_parts").fail("only 2 (YY.MM) is implemented, got %d" % parts)
    _no_unknown(values, ("allowed", "major_parts"), where)


def _v_distribution_status(row, values, where):
    _str(values, "distribution", where)
    _str(values, "as_of", where)
    _version(values, "newest_kubernetes", where, required=False)
    _str(values, "status", where)
    _str(values, "dra", where, required=False)
    _no_unknown(values, ("distribution", "as_of", "newest_kubernetes", "status", "dra"), where)


def _v_components(row, values, where):
    if not values:
        where.fail("expected at least one component")
    for key in values:
        _str(values, key, where)


def _v_dra_floor(row, values, where):
    available = _bool(values, "available", where)
    if available:
        _version(values, "kubernetes_min", where)
        _int(values, "driver_min_branch", where, minimum=1)
        _bool(values, "cdi_required", where)
        _bool(values, "cluster_policy_allowed", where)
    _no_unknown(values, ("available", "kubernetes_min", "driver_min_branch", "cdi_required",
                         "cluster_policy_allowed"), where)


def _v_exclusive(row, values, where):
    resources = _list(values, "resources", where)
    if sorted(resources) != sorted(EXCLUSIVE_RESOURCES):
        where.child("resources").fail("expected [%s], got %r" % (", ".join(EXCLUSIVE_RESOURCES), resources))
    _no_unknown(values, ("resources",), where)


def _v_passthrough(row, values, where):
    _str(values, "stage", where)
    _str(values, "feature_gate", where)
    _bool(values, "default_enabled", where)
    _bool(values, "requires_acceptance", where)
    _bool(values, "requires_iommu", where)
    _choice(values, "requires_allocation_mode", where, ALLOCATION_MODES, required=False)
    _no_unknown(values, ("stage", "feature_gate", "default_enabled", "requires_acceptance", "requires_iommu",
                         "requires_allocation_mode"), where)


def _v_lifecycle(row, values, where):
    _choice(values, "status", where, LIFECYCLE_STATUSES)
    _no_unknown(values, ("status",), where)


def _v_no_data(row, values, where):
    _str(values, "about", where)
    _no_unknown(values, ("about",), where)


def _v_single_backend(row, values, where):
    """single_backend, dra_pool_backend, extended_resource_bridge: the resource name they are about."""
    _str(values, "resource_name", where)
    _no_unknown(values, ("resource_name",), where)


def _v_api_served(row, values, where):
    group_version = _str(values, "group_version", where)
    if "/" not in group_version:
        where.child("group_version").fail("expected group/version such as resource.k8s.io/v1, got %r" % group_version)
    _choice(values, "requires_allocation_mode", where, ALLOCATION_MODES, required=False)
    _no_unknown(values, ("group_version", "requires_allocation_mode"), where)


def _v_cr_state(row, values, where):
    _str(values, "ready_state", where)
    _no_unknown(values, ("ready_state",), where)


def _v_stuck_claims(row, values, where):
    _int(values, "max_deleting_allocated", where)
    _no_unknown(values, ("max_deleting_allocated",), where)


#: rule name -> validator of its ``values``. docs/compat-matrix.md describes each.
RULES = {
    "version_range": _v_version_range,
    "driver_branch": _v_branches,
    "driver_point_release": _v_branches,
    "containerd_cri": _v_containerd_cri,
    "kubelet_skew": _v_kubelet_skew,
    "upgrade_hops": _v_upgrade_hops,
    "distribution_status": _v_distribution_status,
    "components": _v_components,
    "dra_floor": _v_dra_floor,
    "exclusive_resources": _v_exclusive,
    "passthrough": _v_passthrough,
    "lifecycle": _v_lifecycle,
    "no_data": _v_no_data,
    "single_backend": _v_single_backend,
    "dra_pool_backend": _v_single_backend,
    "extended_resource_bridge": _v_single_backend,
    "api_served": _v_api_served,
    "cr_state": _v_cr_state,
    "stuck_claims": _v_stuck_claims,
}
