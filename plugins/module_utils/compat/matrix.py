# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load and validate the compatibility matrix (``data/matrix/*.yml``).

The matrix is data: one file per GPU Operator release (``kind: release``) plus facts that are not
per release (``kind: common``). Every row names the rule that evaluates it, the values, the
severity when violated, the severity when it cannot be assessed (``when_not_assessed``) and its
source. The rule kinds and their ``values`` are documented in docs/compat-matrix.md;
:data:`compat_rules.RULE_KINDS` (``RULES`` here) is the machine-readable half of that page: each
kind validates its rows' ``values`` itself.

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

# The field readers live in compat_fields; the names other files import from here are re-exported.
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.fields import (  # pylint: disable=unused-import
    ALLOCATION_MODES,
    EXCLUSIVE_RESOURCES,
    HOP_KINDS,
    LIFECYCLE_STATUSES,
    SEVERITIES,
    VERSION_FIELDS,
    MatrixError,
    _choice,
    _dict,
    _get,
    _list,
    _no_unknown,
    _source,
    _str,
    _type_name,
    _Where,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.rules import RULE_KINDS
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.versions import compare_prefix, parse_version, release_key

#: rule name -> its rule kind (validate, compile, check): see compat_rules.
RULES = RULE_KINDS

SCHEMA = "gpufleet.dra_gate/compat-matrix/v1"
MATRIX_SUFFIXES = (".yml", ".yaml")

_ID_RE = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)*$")
_RELEASE_RE = re.compile(r"^v?\d+\.\d+(\.(\d+|x))?$")
_ROW_KEYS = ("id", "rule", "constrains", "values", "severity", "when_not_assessed", "source", "note", "superseded")
_DOC_KEYS = {
    "release": ("schema", "kind", "operator", "release", "published", "source", "rows", "releases"),
    "common": ("schema", "kind", "defaults", "rows", "releases"),
}
_DEFAULT_KEYS = ("target_operator_version",)


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
    severity = _choice(row, "severity", where, SEVERITIES)
    when_not_assessed = _choice(row, "when_not_assessed", where, SEVERITIES, required=False)
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
    RULES[rule].validate_row(row, values, values_where)
    normalized = dict(row)
    normalized["source"] = sources
    normalized.setdefault("note", None)
    # A check that cannot be assessed is as severe as its violation unless the row says otherwise.
    normalized["when_not_assessed"] = when_not_assessed or severity
    return normalized


def _validate_defaults(defaults, where):
    if defaults is None:
        return {}
    if not isinstance(defaults, dict):
        where.fail("expected a mapping, got %s" % _type_name(defaults))
    _no_unknown(defaults, _DEFAULT_KEYS, where)
    version = _str(defaults, "target_operator_version", where, required=False)
    if version is not None and (not _RELEASE_RE.match(version) or version.endswith(".x")):
        where.child("target_operator_version").fail(
            "expected a quoted operator release YY.MM.PP such as \"26.7.0\", got %r" % version)
    return dict(defaults)


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
    out["defaults"] = _validate_defaults(doc.get("defaults"), where.child("defaults"))
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


def matrix_defaults(matrix_set):
    """The ``defaults`` of the matrix set's common files (e.g. ``target_operator_version``), merged.

    The one place the default target release lives (``data/matrix/common.yml``). Two common files
    that set one key differently are a :class:`MatrixError`.
    """
    if not isinstance(matrix_set, dict) or "documents" not in matrix_set:
        raise MatrixError("matrix: expected a matrix set from load_matrix() or build_matrix_set()")
    out, origin = {}, {}
    for doc in matrix_set["documents"]:
        for key, value in (doc.get("defaults") or {}).items():
            if key in out and out[key] != value:
                raise MatrixError("%s: defaults.%s %r differs from %r in %s" % (doc["name"], key, value, out[key], origin[key]))
            out[key], origin[key] = value, doc["name"]
    return out


def default_target_operator_version(matrix_set):
    """The target release when none is given: ``defaults.target_operator_version`` of the common
    files, else the release of the only release file (a release file loaded alone), else None."""
    default = matrix_defaults(matrix_set).get("target_operator_version")
    if default is None:
        releases = [doc["release"] for doc in matrix_set["documents"] if doc["kind"] == "release"]
        if len(releases) == 1:
            default = releases[0]
    return default


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
    ordered = sorted(by_version.values(), key=lambda e: release_key(e["version"]))
    return {
        "release": best["release"],
        "file": best["name"],
        "published": best["published"],
        "source": best["source"],
        "rows": rows,
        "releases": ordered,
        "files": list(matrix_set.get("files") or []),
    }
