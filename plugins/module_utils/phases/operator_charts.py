# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU Operator chart mapping (version -> pinned chart) and the hop plan that uses it.

Pure logic plus read-only file access, standard library only. The mapping is user data (an
inventory variable, ``dra_gate_operator_charts``)::

    "v26.6.2": {"path": "/srv/charts/gpu-operator-v26.6.2.tgz", "sha256": "<64 hex>",
                "images": {"devicePlugin": "nvcr.io/nvidia/k8s-device-plugin@sha256:<64 hex>"}}
    "26.7.0":  {"oci": "oci://registry.example.com/nvidia/gpu-operator", "sha256": "sha256:<64 hex>"}
    "26.7.1":  {"url": "https://charts.example.com/gpu-operator-v26.7.1.tgz", "sha256": "<64 hex>"}

:func:`parse_charts` validates the whole mapping (every error in one :class:`ChartsError`, each
naming the entry and the field); versions are normalised through :func:`versions.release_key`, so
``v26.3.1`` and ``26.3.1`` are the same release (both in one mapping is an error).

:func:`plan` takes compat_check's ``upgrade_path`` (or current + target + the known releases, planned
with the same rule as the ``upgrade_hops`` rule kind) and returns one entry per hop with its chart.
Fail closed, before anything changes: a hop without a chart (one error naming every such hop), a
path longer than ``max_hops`` (naming the hops it needs), a local chart whose digest differs (naming
expected and actual). OCI and HTTPS sources are not fetched here: they are returned with
``verified: false`` and the pinned digest, which the pull step checks.

Directory digest (:func:`directory_digest`): sha256 over the lines ``<sha256 of file>  <relative
path>\\n`` of every regular file under the directory, sorted by the relative path's bytes (``/``
separated, no ``./``) - exactly what ``find . -type f -printf '%P\\0' | LC_ALL=C sort -z | xargs -0
sha256sum | sha256sum`` prints. Modes, mtimes, owners and empty directories do not count; a symlink,
a device, a FIFO or a socket anywhere under it is refused, as is a name with a newline or a
backslash (sha256sum would escape it). ``python -m <this module> PATH`` prints the digest of a
directory or an archive.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.versions import release_key

CHARTS_NAME = "dra_gate_operator_charts"
HOP_KINDS = ("same_major", "next_major")
SOURCE_KEYS = ("path", "oci", "url")
ENTRY_KEYS = SOURCE_KEYS + ("sha256", "chart_version", "images")
ARCHIVE_SUFFIXES = (".tgz", ".tar.gz")
MAX_FILES = 20000
CHUNK = 1024 * 1024

_HEX_RE = re.compile(r"^(?:sha256:)?([0-9a-fA-F]{64})$")
_IMAGE_RE = re.compile(r"^[^\s@]+@sha256:[0-9a-f]{64}$")
_OCI_RE = re.compile(r"^oci://([^/\s]+)/(\S+)$")
_URL_RE = re.compile(r"^https://([^/\s?#]+)(/[^\s?#]*)(\?[^\s#]*)?$")


class ChartsError(ValueError):
    """The mapping, the path or a chart is not usable; the message names the field or the hop."""


# ---- versions -----------------------------------------------------------------------------------

def _major(version):
    return (version.major, version.minor)


def is_concrete(version):
    """True for a release (``26.6.2``), False for a major name (``26.6.x``, ``26.6``)."""
    return version is not None and len(version.parts) >= 3


def release_name(text):
    """The normalised name of an operator release or major, or None: ``v26.3.1`` -> ``26.3.1``,
    ``26.6``/``26.6.X``/``26.6.*`` -> ``26.6.x``."""
    version = release_key(text)
    if version is None:
        return None
    if not is_concrete(version):
        return "%d.%d.x" % _major(version)
    raw = version.raw.strip()
    return raw[1:] if raw[:1] in ("v", "V") else raw


def _path_text(names):
    return " -> ".join(names)


def _q(key):
    return json.dumps(key) if isinstance(key, str) else repr(key)


def _type_name(value):
    return type(value).__name__ if value is not None else "null"


# ---- the mapping --------------------------------------------------------------------------------

def _digest(value, where, oci):
    if not isinstance(value, str):
        raise ChartsError("%s.sha256: expected 64 hex characters%s, got %s %r"
                          % (where, " (sha256:<64 hex>, the manifest digest)" if oci else "", _type_name(value), value))
    match = _HEX_RE.match(value.strip())
    if not match:
        raise ChartsError("%s.sha256: expected 64 hex characters%s, got %r"
                          % (where, " (sha256:<64 hex>, the manifest digest)" if oci else "", value))
    hexdigest = match.group(1).lower()
    return "sha256:" + hexdigest if oci else hexdigest


def _source(entry, key, where):
    value = entry[key]
    if not isinstance(value, str) or not value.strip():
        raise ChartsError("%s.%s: expected a non-empty string, got %s %r" % (where, key, _type_name(value), value))
    if value != value.strip() or "\x00" in value:
        raise ChartsError("%s.%s: %r has leading or trailing white space or a NUL character" % (where, key, value))
    if key == "path":
        if not os.path.isabs(value):
            raise ChartsError("%s.path: expected an absolute path on the controller (a chart directory or a .tgz "
                              "archive), got %r" % (where, value))
        return os.path.normpath(value)
    if key == "oci":
        match = _OCI_RE.match(value)
        if not match:
            raise ChartsError("%s.oci: expected oci://<registry>/<repository>/<chart>, got %r" % (where, value))
        last = value.rstrip("/").rsplit("/", 1)[-1]
        if "@" in last or ":" in last:
            raise ChartsError("%s.oci: %r names a tag or digest; give the reference without it (the version is the "
                              "key or chart_version, the digest is sha256)" % (where, value))
        return value.rstrip("/")
    match = _URL_RE.match(value)
    if not match:
        raise ChartsError("%s.url: expected an https:// URL of a .tgz chart archive, got %r" % (where, value))
    if not match.group(2).endswith(ARCHIVE_SUFFIXES):
        raise ChartsError("%s.url: %r does not name a .tgz archive (its path must end in .tgz or .tar.gz)"
                          % (where, value))
    return value


def _images(value, where):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ChartsError("%s.images: expected a dict of operand name -> image@sha256:<64 hex>, got %s %r"
                          % (where, _type_name(value), value))
    out = {}
    for name in sorted(value, key=str):
        ref = value[name]
        if not isinstance(name, str) or not name.strip():
            raise ChartsError("%s.images: operand names must be non-empty strings, got %r" % (where, name))
        if not isinstance(ref, str) or not _IMAGE_RE.match(ref):
            raise ChartsError("%s.images[%s]: expected an image pinned by digest, <image>@sha256:<64 lower-case hex>, "
                              "got %r" % (where, _q(name), ref))
        out[name] = ref
    return out


def _entry(key, entry, where):
    if not isinstance(entry, dict):
        raise ChartsError("%s: expected a dict with one of %s and sha256, got %s %r"
                          % (where, "/".join(SOURCE_KEYS), _type_name(entry), entry))
    unknown = sorted(str(k) for k in entry if k not in ENTRY_KEYS)
    if unknown:
        raise ChartsError("%s: unknown key(s) %s; expected %s" % (where, ", ".join(unknown), ", ".join(ENTRY_KEYS)))
    sources = [k for k in SOURCE_KEYS if entry.get(k) is not None]
    if len(sources) != 1:
        raise ChartsError("%s: expected exactly one of path, oci, url, got %s"
                          % (where, ", ".join(sources) if sources else "none"))
    kind = sources[0]
    source = _source(entry, kind, where)
    if entry.get("sha256") is None:
        raise ChartsError("%s.sha256: required (%s)" % (where, {
            "path": "the archive's sha256, or the directory digest of docs/upgrade.md",
            "oci": "the chart's OCI manifest digest, sha256:<64 hex>",
            "url": "the archive's sha256"}[kind]))
    sha256 = _digest(entry["sha256"], where, kind == "oci")
    chart_version = entry.get("chart_version")
    if chart_version is None:
        chart_version = key
    elif not isinstance(chart_version, str) or release_key(chart_version) != release_key(key):
        raise ChartsError("%s.chart_version: expected the chart's version string for release %s (such as %r), got %s %r"
                          % (where, release_name(key), "v" + release_name(key), _type_name(chart_version), chart_version))
    return {"key": key, "version": release_name(key), "chart_version": chart_version, "source_key": kind,
            "source": source, "sha256": sha256, "images": _images(entry.get("images"), where)}


def parse_charts(charts, name=CHARTS_NAME):
    """Validate the mapping; returns normalised version -> entry. Raises :class:`ChartsError` listing
    every problem, each as ``<name>["<key>"].<field>: ...``."""
    if charts is None:
        charts = {}
    if not isinstance(charts, dict):
        raise ChartsError("%s: expected a dict of operator version -> chart, got %s" % (name, _type_name(charts)))
    out = {}
    errors = []
    seen = {}
    for key in sorted(charts, key=str):
        where = "%s[%s]" % (name, _q(key))
        version = release_key(key) if isinstance(key, str) else None
        if not isinstance(key, str):
            errors.append("%s: versions must be quoted strings such as \"26.6.2\", got %s %r"
                          % (where, _type_name(key), key))
            continue
        if version is None or not is_concrete(version) or len(version.parts) != 3:
            errors.append("%s: expected an operator release YY.MM.PP such as \"26.6.2\" or \"v26.6.2\", got %r"
                          % (where, key))
            continue
        normal = release_name(key)
        if normal in seen:
            errors.append("%s: the same release as %s[%s] (%s); keep one" % (where, name, _q(seen[normal]), normal))
            continue
        seen[normal] = key
        try:
            out[normal] = _entry(key, charts[key], where)
        except ChartsError as exc:
            errors.append(str(exc))
    if errors:
        raise ChartsError("; ".join(errors))
    return out


# ---- digests ------------------------------------------------------------------------------------

def _hash_fd(fd):
    digest = hashlib.sha256()
    while True:
        block = os.read(fd, CHUNK)
        if not block:
            return digest.hexdigest()
        digest.update(block)


def _open_regular(path):
    """An fd of the regular file at ``path``, never following a symlink at the last component."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ChartsError("%s: not a regular file" % path)
    return fd


def file_digest(path):
    """sha256 (hex) of a regular file's bytes, as ``sha256sum`` prints it."""
    try:
        fd = _open_regular(path)
    except (IOError, OSError) as exc:
        raise ChartsError("%s: cannot read: %s" % (path, exc.strerror or exc))
    try:
        return _hash_fd(fd)
    finally:
        os.close(fd)


def directory_files(path, max_files=MAX_FILES):
    """The sorted ``(relative path bytes, absolute path)`` of every regular file under ``path``.
    Raises :class:`ChartsError` on a symlink, a special file, a name sha256sum would escape, or more
    than ``max_files`` files."""
    root = os.fsencode(path)
    found = []
    stack = [b""]
    while stack:
        rel = stack.pop()
        here = os.path.join(root, rel) if rel else root
        try:
            names = os.listdir(here)
        except (IOError, OSError) as exc:
            raise ChartsError("%s: cannot list: %s" % (os.fsdecode(here), exc.strerror or exc))
        for entry in names:
            child = rel + b"/" + entry if rel else entry
            shown = os.fsdecode(child)
            if b"\n" in entry or b"\\" in entry:
                raise ChartsError("%s: %r has a newline or backslash in its name; not allowed in a chart directory"
                                  % (path, shown))
            full = os.path.join(root, child)
            try:
                mode = os.lstat(full).st_mode
            except (IOError, OSError) as exc:
                raise ChartsError("%s: cannot stat %s: %s" % (path, shown, exc.strerror or exc))
            if stat.S_ISLNK(mode):
                raise ChartsError("%s: %s is a symlink; symlinks are refused in a chart directory (copy the target "
                                  "in, or package the chart with helm package)" % (path, shown))
            if stat.S_ISDIR(mode):
                stack.append(child)
            elif stat.S_ISREG(mode):
                found.append((child, os.fsdecode(full)))
                if len(found) > max_files:
                    raise ChartsError("%s: more than %d files; not a chart directory" % (path, max_files))
            else:
                raise ChartsError("%s: %s is not a regular file or directory (device, FIFO or socket)" % (path, shown))
    found.sort(key=lambda item: item[0])
    return found


def directory_digest(path, max_files=MAX_FILES):
    """The canonical digest of a chart directory (the module docstring and docs/upgrade.md)."""
    try:
        top = os.lstat(path).st_mode
    except (IOError, OSError) as exc:
        raise ChartsError("%s: cannot read: %s" % (path, exc.strerror or exc))
    if not stat.S_ISDIR(top):
        raise ChartsError("%s: not a directory" % path)
    outer = hashlib.sha256()
    for rel, full in directory_files(path, max_files):
        outer.update(file_digest(full).encode("ascii") + b"  " + rel + b"\n")
    return outer.hexdigest()


def local_digest(path):
    """``(kind, sha256)`` of a chart on the controller: ``archive`` (a file's sha256) or ``directory``."""
    try:
        mode = os.lstat(path).st_mode
    except (IOError, OSError) as exc:
        raise ChartsError("%s: %s" % (path, exc.strerror or exc))
    if stat.S_ISLNK(mode):
        raise ChartsError("%s: is a symlink; give the path it points to" % path)
    if stat.S_ISDIR(mode):
        if not os.path.isfile(os.path.join(path, "Chart.yaml")) or os.path.islink(os.path.join(path, "Chart.yaml")):
            raise ChartsError("%s: not a chart directory (no Chart.yaml file)" % path)
        return "directory", directory_digest(path)
    if stat.S_ISREG(mode):
        if not path.endswith(ARCHIVE_SUFFIXES):
            raise ChartsError("%s: a chart archive must end in .tgz or .tar.gz" % path)
        return "archive", file_digest(path)
    raise ChartsError("%s: not a chart directory or archive" % path)


# ---- the chart at its point of use --------------------------------------------------------------

MAX_COPY_BYTES = 256 * 1024 * 1024


def expected_digest(value, name="chart_sha256"):
    """The 64 lower-case hex of ``value`` (``<64 hex>`` or ``sha256:<64 hex>``); ChartsError naming ``name``."""
    match = _HEX_RE.match(value) if isinstance(value, str) else None
    if not match:
        raise ChartsError("%s: expected 64 hex characters (or sha256:<64 hex>), got %s %r"
                          % (name, _type_name(value), value))
    return match.group(1).lower()


def _read_all(fd, budget, where):
    blocks, size = [], 0
    while True:
        block = os.read(fd, CHUNK)
        if not block:
            return b"".join(blocks)
        size += len(block)
        if size > budget:
            raise ChartsError("%s: larger than %d bytes; not a chart" % (where, MAX_COPY_BYTES))
        blocks.append(block)


def _write_new(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _copy_file(source, target, budget):
    """Copy one regular file; returns ``(sha256 hex of exactly the bytes written, size)``."""
    try:
        fd = _open_regular(source)
    except (IOError, OSError) as exc:
        raise ChartsError("%s: cannot read: %s" % (source, exc.strerror or exc))
    try:
        data = _read_all(fd, budget, source)
    finally:
        os.close(fd)
    _write_new(target, data)
    return hashlib.sha256(data).hexdigest(), len(data)


def verified_copy(source, sha256, dest):
    """Copy the local chart ``source`` (directory or archive) into ``dest`` - an existing private
    directory the caller owns and removes - hashing exactly the bytes it writes, and compare the
    copy's digest (the archive's sha256 or the directory digest above) with ``sha256``.

    Returns ``{"source", "path", "kind", "sha256", "verified": True}``: ``path`` is the copy, the only
    thing a later step may read, so what is applied is what was hashed even if ``source`` changes
    afterwards. Raises :class:`ChartsError` naming the source, the expected and the actual digest
    when they differ (the copy is then incomplete or unverified: the caller removes ``dest``).
    """
    expected = expected_digest(sha256)
    try:
        mode = os.lstat(source).st_mode
    except (IOError, OSError) as exc:
        raise ChartsError("chart %s: cannot read: %s" % (source, exc.strerror or exc))
    name = os.path.basename(os.path.normpath(source)) or "chart"
    target = os.path.join(dest, name)
    if stat.S_ISLNK(mode):
        raise ChartsError("chart %s: is a symlink; give the path it points to" % source)
    if stat.S_ISREG(mode):
        if not source.endswith(ARCHIVE_SUFFIXES):
            raise ChartsError("chart %s: a chart archive must end in .tgz or .tar.gz" % source)
        kind = "archive"
        actual, _size = _copy_file(source, target, MAX_COPY_BYTES)
    elif stat.S_ISDIR(mode):
        kind = "directory"
        files = directory_files(source)
        if not any(rel == b"Chart.yaml" for rel, _full in files):
            raise ChartsError("chart %s: not a chart directory (no Chart.yaml file)" % source)
        os.mkdir(target, 0o700)
        outer = hashlib.sha256()
        budget = MAX_COPY_BYTES
        for rel, full in files:
            parts = os.fsdecode(rel).split("/")
            here = target
            for part in parts[:-1]:
                here = os.path.join(here, part)
                if not os.path.isdir(here):
                    os.mkdir(here, 0o700)
            digest, size = _copy_file(full, os.path.join(here, parts[-1]), budget)
            budget -= size
            outer.update(digest.encode("ascii") + b"  " + rel + b"\n")
        actual = outer.hexdigest()
    else:
        raise ChartsError("chart %s: not a chart directory or archive" % source)
    if actual != expected:
        error = ChartsError("chart %s (%s): sha256 mismatch at its point of use: expected %s, actual %s; nothing "
                            "was applied from it" % (source, kind, expected, actual))
        error.actual = actual
        raise error
    return {"source": source, "path": target, "kind": kind, "sha256": actual, "verified": True}


def used_chart(used, error=None):
    """The result field ``chart`` of a module that used a chart: ``{source, kind, sha256, verified}``
    (the private copy's path is gone when the module returns), or, after a ChartsError, the source,
    the expected and the actual digest with ``verified: false``."""
    if error is not None:
        return {"source": used.get("source"), "kind": None, "sha256": getattr(error, "actual", None),
                "expected_sha256": used.get("sha256"), "verified": False}
    return dict((k, used.get(k)) for k in ("source", "kind", "sha256", "verified"))


class ChartAtUse:
    """``with ChartAtUse(chart, sha256) as used:`` the verified private copy of a local chart for one
    module run (``used["path"]`` is what the module reads; ``used`` is the result's ``chart`` field).
    Without ``sha256`` the chart is used as given and reported ``verified: false``. The copy lives in a
    new 0700 temporary directory, removed on exit."""

    def __init__(self, chart, sha256=None):
        self.chart = chart
        self.sha256 = sha256
        self.dir = None

    def __enter__(self):
        if not self.sha256:
            return {"source": self.chart, "path": self.chart, "kind": None, "sha256": None, "verified": False}
        if not isinstance(self.chart, str) or re.match(r"^[a-z][a-z0-9+.-]*://", self.chart):
            raise ChartsError("chart_sha256: only a chart on the controller (a directory or .tgz) can be verified "
                              "at its point of use, got %r; pull it and give its path" % (self.chart,))
        self.dir = tempfile.mkdtemp(prefix="dra-gate-chart-")
        try:
            return verified_copy(self.chart, self.sha256, self.dir)
        except (IOError, OSError) as exc:
            self.__exit__(None, None, None)
            raise ChartsError("chart %s: cannot copy it to verify it: %s" % (self.chart, exc))
        except Exception:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc_info):
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        return False


# ---- hops ---------------------------------------------------------------------------------------

def plan_hops(current, target, releases):
    """compat_check's hop rule: within a major one hop, else one hop per known major up to the target.

    ``current`` and ``target`` are release names, ``releases`` the known releases (``26.6.x`` names a
    major). Refuses a downgrade and a path whose ends are majors the list does not know (releases in
    between might be missing).
    """
    cur, tgt = release_key(current), release_key(target)
    if cur is None or not is_concrete(cur):
        raise ChartsError("current_version: expected an operator release such as \"26.3.1\", got %r" % (current,))
    if tgt is None or not is_concrete(tgt):
        raise ChartsError("target_version: expected an operator release such as \"26.7.0\", got %r" % (target,))
    if not isinstance(releases, (list, tuple)):
        raise ChartsError("releases: expected the list of known operator releases such as [\"26.3.x\", \"26.6.x\", "
                          "\"26.7.0\"] (compat_check's matrix releases), got %s" % _type_name(releases))
    known = {}
    for index, name in enumerate(releases):
        version = release_key(name) if isinstance(name, str) else None
        if version is None:
            raise ChartsError("releases[%d]: expected an operator version such as \"26.6.x\" or \"26.7.0\", got %s %r"
                              % (index, _type_name(name), name))
        known[_major(version)] = release_name(name)  # the last listed name of a major wins, as in compat_check
    if cur == tgt:
        return []
    if cur > tgt:
        raise ChartsError("target_version %s is older than current_version %s: this plans upgrades only (a rollback is "
                          "playbooks/rollback.yml)" % (release_name(target), release_name(current)))
    cur_major, tgt_major = _major(cur), _major(tgt)
    unknown = ["%d.%d" % m for m in (cur_major, tgt_major) if cur_major != tgt_major and m not in known]
    if unknown:
        raise ChartsError("releases: %s do(es) not include the %s major, so the releases in between are not known and "
                          "the path from %s to %s cannot be verified" % (
                              json.dumps([str(r) for r in releases]), " and ".join(unknown),
                              release_name(current), release_name(target)))
    current_name, target_name = release_name(current), release_name(target)
    if cur_major == tgt_major:
        return [{"from": current_name, "to": target_name, "kind": "same_major"}]
    hops = []
    previous = current_name
    for major in sorted(m for m in known if cur_major < m <= tgt_major):
        to = target_name if major == tgt_major else known[major]
        hops.append({"from": previous, "to": to, "kind": "next_major"})
        previous = to
    return hops


def check_path(upgrade_path, current=None, target=None, releases=None):
    """compat_check's ``upgrade_path`` validated and normalised; consistent with ``current``,
    ``target`` and (when given) ``releases`` - no hop may skip a known major."""
    if upgrade_path is None:
        raise ChartsError("upgrade_path is null: compat_check plans no path when the current operator version is "
                          "unknown (see its operator.upgrade_hops.not_assessed finding)")
    if not isinstance(upgrade_path, (list, tuple)):
        raise ChartsError("upgrade_path: expected a list of {from, to, kind} (compat_check's upgrade_path), got %s"
                          % _type_name(upgrade_path))
    majors = None
    if releases is not None:
        majors = {}
        for index, name in enumerate(releases):
            version = release_key(name) if isinstance(name, str) else None
            if version is None:
                raise ChartsError("releases[%d]: expected an operator version such as \"26.6.x\", got %s %r"
                                  % (index, _type_name(name), name))
            majors[_major(version)] = release_name(name)
    hops = []
    previous = None
    for index, hop in enumerate(upgrade_path):
        where = "upgrade_path[%d]" % index
        if not isinstance(hop, dict):
            raise ChartsError("%s: expected a dict with from, to and kind, got %s %r" % (where, _type_name(hop), hop))
        names = {}
        for key in ("from", "to"):
            value = hop.get(key)
            version = release_key(value) if isinstance(value, str) else None
            if version is None:
                raise ChartsError("%s.%s: expected an operator version such as \"26.6.2\" or \"26.6.x\", got %s %r"
                                  % (where, key, _type_name(value), value))
            names[key] = version
        kind = hop.get("kind")
        if kind not in HOP_KINDS:
            raise ChartsError("%s.kind: expected one of %s, got %r" % (where, ", ".join(HOP_KINDS), kind))
        src, dst = names["from"], names["to"]
        if index == 0 and not is_concrete(src):
            raise ChartsError("%s.from: the first hop starts at the current release, got the major %s"
                              % (where, release_name(hop["from"])))
        if previous is not None and release_name(hop["from"]) != previous:
            raise ChartsError("%s.from: %s does not continue the previous hop, which ends at %s"
                              % (where, release_name(hop["from"]), previous))
        same = _major(src) == _major(dst)
        if (kind == "same_major") != same:
            raise ChartsError("%s: %s -> %s is %s, not %s" % (where, release_name(hop["from"]), release_name(hop["to"]),
                                                              "same_major" if same else "next_major", kind))
        if (same and is_concrete(dst) and not dst > src) or (not same and _major(dst) < _major(src)):
            raise ChartsError("%s: %s -> %s is not an upgrade" % (where, release_name(hop["from"]), release_name(hop["to"])))
        if majors is not None and not same:
            skipped = sorted(m for m in majors if _major(src) < m < _major(dst))
            if skipped:
                raise ChartsError("%s: %s -> %s skips the %s major(s) of releases; the supported path goes through %s"
                                  % (where, release_name(hop["from"]), release_name(hop["to"]),
                                     ", ".join("%d.%d" % m for m in skipped),
                                     _path_text([majors[m] for m in skipped])))
        previous = release_name(hop["to"])
        hops.append({"from": release_name(hop["from"]), "to": previous, "kind": kind})
    if current is not None:
        cur = release_key(current) if isinstance(current, str) else None
        if cur is None or not is_concrete(cur):
            raise ChartsError("current_version: expected an operator release such as \"26.3.1\", got %r" % (current,))
        if hops and release_key(hops[0]["from"]) != cur:
            raise ChartsError("upgrade_path starts at %s, not at current_version %s" % (hops[0]["from"], release_name(current)))
    if target is not None:
        tgt = release_key(target) if isinstance(target, str) else None
        if tgt is None or not is_concrete(tgt):
            raise ChartsError("target_version: expected an operator release such as \"26.7.0\", got %r" % (target,))
        last = release_key(hops[-1]["to"]) if hops else None
        if hops and not (is_concrete(last) and last == tgt):
            raise ChartsError("upgrade_path ends at %s, not at target_version %s" % (hops[-1]["to"], release_name(target)))
        if not hops and current is not None and release_key(current) != tgt:
            raise ChartsError("upgrade_path is empty but current_version %s is not target_version %s (compat_check "
                              "returns no hop for a downgrade)" % (release_name(current), release_name(target)))
    return hops


def _pick(charts, name, after):
    """The mapped release for a hop's ``to``: that release, or for a major (``26.6.x``) the newest
    mapped release of it (no pre-release) newer than ``after``; None when there is none."""
    wanted = release_key(name)
    if is_concrete(wanted):
        entry = charts.get(release_name(name))
        if entry is None:
            for candidate in charts.values():
                if release_key(candidate["version"]) == wanted:
                    return candidate
        return entry
    best = None
    for entry in charts.values():
        version = release_key(entry["version"])
        if _major(version) != _major(wanted) or version.pre is not None:
            continue
        if after is not None and not version > after:
            continue
        if best is None or version > release_key(best["version"]):
            best = entry
    return best


def _verify(entry):
    chart = {"version": entry["version"], "chart_version": entry["chart_version"], "key": entry["key"],
             "source": entry["source"], "sha256": entry["sha256"], "images": dict(entry["images"])}
    if entry["source_key"] == "path":
        kind, actual = local_digest(entry["source"])
        chart["kind"] = kind
        if actual != entry["sha256"]:
            raise ChartsError("chart %s (%s %s): sha256 mismatch: expected %s, actual %s"
                              % (entry["key"], kind, entry["source"], entry["sha256"], actual))
        chart["verified"] = True
    else:
        chart["kind"] = entry["source_key"]
        chart["verified"] = False
    return chart


def plan(charts, upgrade_path=None, current=None, target=None, releases=None, max_hops=None, name=CHARTS_NAME):
    """The hop plan: ``{"hops": [...], "verified": bool, "current": ..., "target": ...}``.

    Each hop is ``{from, to, planned_to, kind, chart: {version, chart_version, key, source, kind,
    sha256, verified, images}}``; ``to`` is the mapped release (``planned_to`` is the path's name,
    ``26.6.x`` for an intermediate major). Raises :class:`ChartsError` before returning anything.
    """
    mapping = parse_charts(charts, name)
    if max_hops is not None and (isinstance(max_hops, bool) or not isinstance(max_hops, int) or max_hops < 1):
        raise ChartsError("max_hops: expected a whole number 1 or more, got %r" % (max_hops,))
    if upgrade_path is not None:
        planned = check_path(upgrade_path, current, target, releases)
    elif current is not None and target is not None:
        planned = plan_hops(current, target, releases)
    else:
        raise ChartsError("upgrade_path is missing or null (compat_check returns null when the current operator "
                          "version is unknown: see its operator.upgrade_hops.not_assessed finding); otherwise give "
                          "current_version, target_version and releases")
    start = planned[0]["from"] if planned else (release_name(current) if current is not None else None)
    end = planned[-1]["to"] if planned else (release_name(target) if target is not None else start)
    if max_hops is not None and len(planned) > max_hops:
        raise ChartsError("%s -> %s needs %d hops (%s), more than max_hops %d (fewer hops would skip a major "
                          "release); run the hops in this order, each as its own step"
                          % (start, end, len(planned), _path_text([start] + [h["to"] for h in planned]), max_hops))
    picked = []
    missing = []
    previous = release_key(start) if start is not None else None
    source = start
    for hop in planned:
        entry = _pick(mapping, hop["to"], previous)
        picked.append(entry)
        if entry is None:
            wanted = release_key(hop["to"])
            missing.append("%s -> %s (%s; needs %s)" % (
                source, hop["to"], hop["kind"], "a chart for %s" % hop["to"] if is_concrete(wanted)
                else "a chart of a %d.%d release" % _major(wanted)))
            source = hop["to"]
        else:
            previous = release_key(entry["version"])
            source = entry["version"]
    if missing:
        raise ChartsError("%s has no chart for %d hop(s) of the upgrade path: %s; mapped releases: %s. Add each "
                          "(path, oci or url, with sha256) before upgrading; nothing was changed"
                          % (name, len(missing), "; ".join(missing), ", ".join(sorted(mapping, key=release_key)) or "none"))
    hops = []
    errors = []
    source = start
    for hop, entry in zip(planned, picked):
        try:
            chart = _verify(entry)
        except ChartsError as exc:
            errors.append("hop %s -> %s: %s" % (source, entry["version"], exc))
            chart = None
        hops.append({"from": source, "to": entry["version"], "planned_to": hop["to"], "kind": hop["kind"],
                     "chart": chart})
        source = entry["version"]
    if errors:
        raise ChartsError("; ".join(errors) + "; nothing was changed")
    return {"hops": hops, "verified": all(h["chart"]["verified"] for h in hops), "current": start,
            "target": end}


def main(argv=None):
    """``python -m ...operator_charts PATH``: print the digest of a chart directory or archive."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases.operator_charts "
                         "CHART_DIR_OR_TGZ\n")
        return 2
    try:
        kind, digest = local_digest(os.path.abspath(args[0]))
    except ChartsError as exc:
        sys.stderr.write("%s\n" % exc)
        return 1
    sys.stdout.write("%s  %s (%s)\n" % (digest, args[0], kind))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
