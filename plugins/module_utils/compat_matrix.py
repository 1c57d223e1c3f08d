# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load and validate the compatibility matrix (``data/matrix/*.yml``).

The matrix is data: one file per GPU Operator release (``kind: release``) plus facts that are not
per release (``kind: common``). Every row names the rule that evaluates it, the values, the
severity when violated and its source. The row rules and their ``values`` are documented in
docs/compat-matrix.md; :data:`RULES` below is the machine-readable half of that page.

A file with a missing or mistyped field raises :class:`MatrixError` naming the file and the field,
e.g. ``gpu-operator-26.7.0.yml: rows[3].source: required field missing``.

:func:`validate_document` and :func:`select_release` are pure; only :func:`load_matrix` reads files.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

try:
    import yaml

    HAS_YAML = True
    YAML_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - PyYAML ships with ansible-core
    HAS_YAML = False
    YAML_IMPORT_ERROR = exc

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.versions import compare_prefix, parse_version

SCHEMA = "gpufleet.dra_gate/compat-matrix/v1"
SEVERITIES = ("block", "warn", "info")
LIFECYCLE_STATUSES = ("supported", "deprecated", "eol", "not_listed")
VERSION_FIELDS = ("kubernetes_version", "containerd_version")
EXCLUSIVE_RESOURCES = ("cluster_policy", "gpu_cluster")
HOP_KINDS = ("same_major", "next_major")
ALLOCATION_MODES = ("device_plugin", "dra")
MATRIX_SUFFIXES = (".yml", ".yaml")

_ID_RE = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)*$")
_MINOR_RE = re.compile(r"^\d+\.\d+$")
_RELEASE_RE = re.compile(r"^v?\d+\.\d+(\.(\d+|x))?$")
_ROW_KEYS = ("id", "rule", "constrains", "values", "severity", "source", "note", "superseded")
_DOC_KEYS = {
    "release": ("schema", "kind", "operator", "release", "published", "source", "rows", "releases"),
    "common": ("schema", "kind", "rows", "releases"),
}


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
}


class _ValuesWhere(_Where):
    __slots__ = ("parent_row",)


def _validate_row(row, where):
    if not isinstance(row, dict):
        where.fail("expected a mapping, got %s" % _type_name(row))
    _no_unknown(row, _ROW_KEYS, where)
    row_id = _str(row, "id", where)
    if not _ID_RE.match(row_id):
        where.child("id").fail("expected dotted lower-case words such as driver.branch, got %r" % row_id)
    rule = _str(row, "rule", where)
    if rule not in RULES:
        where.child("rule").fail("unknown rule %r (expected one of %s)" % (rule, ", ".join(sorted(RULES))))
    _str(row, "constrains", where)
    values = _dict(row, "values", where)
    _choice(row, "severity", where, SEVERITIES)
    sources = _source(row, "source", where)
    _str(row, "note", where, required=False)
    superseded = _list(row, "superseded", where, required=False)
    for index, item in enumerate(superseded or ()):
        item_where = where.child("superseded").child(index)
        if not isinstance(item, dict):
            item_where.fail("expected a mapping, got %s" % _type_name(item))
        _dict(item, "values", item_where)
        _source(item, "source", item_where)
        _str(item, "note", item_where, required=False)
        _no_unknown(item, ("values", "source", "note"), item_where)
    values_where = _ValuesWhere(where.name, where.child("values").path)
    values_where.parent_row = where
    RULES[rule](row, values, values_where)
    normalized = dict(row)
    normalized["source"] = sources
    normalized.setdefault("note", None)
    return normalized


def _validate_releases(releases, where):
    out = []
    for index, item in enumerate(releases):
        item_where = where.child(index)
        if not isinstance(item, dict):
            item_where.fail("expected a mapping, got %s" % _type_name(item))
        version = _str(item, "version", item_where)
        if not _RELEASE_RE.match(version):
            item_where.child("version").fail("expected YY.MM, YY.MM.PP or YY.MM.x, got %r" % version)
        _str(item, "status", item_where)
        sources = _source(item, "source", item_where)
        _str(item, "note", item_where, required=False)
        _no_unknown(item, ("version", "status", "source", "note"), item_where)
        entry = dict(item)
        entry["source"] = sources
        out.append(entry)
    return out


def validate_document(doc, name):
    """Validate one parsed matrix document; return it normalised (sources as lists).

    ``name`` is used in error messages (the file's base name). Raises :class:`MatrixError`.
    """
    where = _Where(name)
    if not isinstance(doc, dict):
        where.fail("expected a mapping at the top level, got %s" % _type_name(doc))
    schema = _str(doc, "schema", where)
    if schema != SCHEMA:
        where.child("schema").fail("expected %r, got %r" % (SCHEMA, schema))
    kind = _choice(doc, "kind", where, tuple(_DOC_KEYS))
    _no_unknown(doc, _DOC_KEYS[kind], where)
    out = {"name": name, "kind": kind, "release": None, "operator": None, "published": None, "source": None}
    if kind == "release":
        out["operator"] = _str(doc, "operator", where)
        release = _str(doc, "release", where)
        if not _RELEASE_RE.match(release) or release.endswith(".x"):
            where.child("release").fail("expected YY.MM or YY.MM.PP such as \"26.7.0\", got %r" % release)
        out["release"] = release
        published = _get(doc, "published", where, required=False)
        if published is not None and not isinstance(published, str):
            where.child("published").fail(
                "expected a quoted date string such as \"2026-08-21\" or null, got %s" % _type_name(published))
        out["published"] = published
        out["source"] = _source(doc, "source", where)
    rows = _list(doc, "rows", where, non_empty=(kind == "release"))
    seen = {}
    out_rows = []
    for index, row in enumerate(rows):
        normalized = _validate_row(row, where.child("rows").child(index))
        if normalized["id"] in seen:
            where.child("rows").child(index).child("id").fail(
                "duplicate id %r (also rows[%d])" % (normalized["id"], seen[normalized["id"]]))
        seen[normalized["id"]] = index
        out_rows.append(normalized)
    out["rows"] = out_rows
    releases = _list(doc, "releases", where, required=False)
    out["releases"] = _validate_releases(releases or [], where.child("releases"))
    return out


def build_matrix_set(documents, files=None):
    """A matrix set from already validated documents (pure; for tests and callers that parse themselves)."""
    return {"files": list(files or [doc["name"] for doc in documents]), "documents": list(documents)}


def _matrix_files(path):
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if n.endswith(MATRIX_SUFFIXES) and not n.startswith("."))
        if not names:
            raise MatrixError("%s: no matrix files (*.yml, *.yaml) in this directory" % path)
        return [os.path.join(path, n) for n in names]
    if os.path.isfile(path):
        return [path]
    raise MatrixError("%s: matrix path does not exist (expected a matrix file or a directory of them)" % path)


def load_matrix(path):
    """Read, parse and validate the matrix file or every ``*.yml``/``*.yaml`` in a directory.

    Returns a matrix set ``{"files": [paths], "documents": [validated documents]}``.
    """
    if not HAS_YAML:
        raise MatrixError("PyYAML is required to read the compatibility matrix: %s" % YAML_IMPORT_ERROR)
    documents = []
    files = _matrix_files(path)
    for file_path in files:
        name = os.path.basename(file_path)
        try:
            with open(file_path, "rb") as handle:
                doc = yaml.safe_load(handle)
        except (IOError, OSError) as exc:
            raise MatrixError("%s: cannot read: %s" % (name, exc))
        except yaml.YAMLError as exc:
            raise MatrixError("%s: not valid YAML: %s" % (name, exc))
        documents.append(validate_document(doc, name))
    return build_matrix_set(documents, files)


def _release_key(text):
    return parse_version(text[:-2] if text.endswith(".x") else text)


def select_release(matrix_set, operator_version):
    """The rows that apply to ``operator_version``: its release file's rows plus every common row.

    A release file applies when its ``release`` matches on the parts it names (``26.3`` covers
    26.3.x, ``26.7.0`` only 26.7.0); the most specific match wins. Returns a dict with ``release``,
    ``file``, ``published``, ``rows``, ``releases`` (known operator releases, in version order) and
    ``files``. Raises :class:`MatrixError` when no file matches or two rows share an id.
    """
    if not isinstance(matrix_set, dict) or "documents" not in matrix_set:
        raise MatrixError("matrix: expected a matrix set from load_matrix() or build_matrix_set()")
    wanted = operator_version if hasattr(operator_version, "parts") else parse_version(operator_version)
    if wanted is None:
        raise MatrixError("operator_version: not a version string: %r" % (operator_version,))
    best = None
    known = []
    for doc in matrix_set["documents"]:
        if doc["kind"] != "release":
            continue
        known.append(doc["release"])
        release = parse_version(doc["release"])
        if len(wanted.parts) >= 2 and compare_prefix(wanted, release) == 0:
            if best is None or len(release.parts) > len(parse_version(best["release"]).parts):
                best = doc
    if best is None:
        raise MatrixError(
            "no matrix release file covers GPU Operator %s (files cover: %s); add data/matrix/gpu-operator-<release>.yml"
            % (wanted.raw, ", ".join(sorted(known)) or "none"))
    rows = []
    seen = {}
    releases = []
    for doc in [best] + [d for d in matrix_set["documents"] if d["kind"] == "common"]:
        for row in doc["rows"]:
            if row["id"] in seen:
                raise MatrixError("%s: rows id %r is also defined in %s" % (doc["name"], row["id"], seen[row["id"]]))
            seen[row["id"]] = doc["name"]
            rows.append(row)
        releases.extend(doc["releases"])
    by_version = {}
    for entry in releases:
        by_version.setdefault(entry["version"], entry)
    ordered = sorted(by_version.values(), key=lambda e: _release_key(e["version"]))
    return {
        "release": best["release"],
        "file": best["name"],
        "published": best["published"],
        "source": best["source"],
        "rows": rows,
        "releases": ordered,
        "files": list(matrix_set.get("files") or []),
    }
