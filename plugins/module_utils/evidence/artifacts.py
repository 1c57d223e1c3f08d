# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The artifact index of a gate run: every rollback artifact with its sha256, size, source and the
command that verifies it (``<run_dir>/artifacts/index.json``, documented in docs/artifacts.md).

Pure logic (no I/O): validating the entries that capture modules return, merging them into an
index by path, planning and judging the re-check of every entry, parsing ``etcdutl``/``etcdctl``
``snapshot status -w json`` and summarising. The module ``artifact_index`` does the reading, the
hashing and the writing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import etcd_cli

try:
    from shlex import quote as shell_quote
except ImportError:  # pragma: no cover - Python 2 only
    from pipes import quote as shell_quote

SCHEMA = "gpufleet.dra_gate/artifact-index"
SCHEMA_VERSION = 1
INDEX_DIR = "artifacts"
INDEX_FILE = "index.json"
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
KIND_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
ETCD_SNAPSHOT_KIND = "etcd-snapshot"
# Keys of an entry that the index owns; every other key of an incoming entry is kept as given
# (for example an etcd snapshot's revision and member ID).
CORE_KEYS = ("path", "kind", "sha256", "size", "source", "host", "recorded_at", "verify")
# Fields of etcd's ``snapshot status -w json`` and the entry keys they may be recorded under.
ETCD_STATUS_FIELDS = ("hash", "revision", "totalKey", "totalSize")
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


class ArtifactError(ValueError):
    """An entry or an index that cannot be used; the message names the field and the expected form."""


def default_verify(path, sha256):
    """The shell command that re-checks a file's content (printed for humans, never run by the module)."""
    return "printf '%%s  %%s\\n' %s %s | sha256sum --check --strict -" % (sha256 or "<sha256>", shell_quote(path))


def empty_index(run_id):
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "run_id": run_id, "updated_at": None,
            "artifacts": [], "skipped": []}


def load_index(text, run_id):
    """The index parsed from ``text`` (None or empty = a new index); raises ArtifactError on a bad one."""
    if not text:
        return empty_index(run_id)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ArtifactError("the index is not JSON: %s" % exc)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ArtifactError("the index is not a %s document (schema %r)" % (
            SCHEMA, data.get("schema") if isinstance(data, dict) else None))
    if not isinstance(data.get("artifacts"), list) or not isinstance(data.get("skipped", []), list):
        raise ArtifactError("the index has no 'artifacts' list")
    data.setdefault("skipped", [])
    return data


def dumps(index):
    return json.dumps(index, indent=2, sort_keys=True, default=str) + "\n"


def _where(position, key):
    return "artifacts[%d].%s" % (position, key)


def normalize_entry(entry, position, recorded_at, default_host="localhost"):
    """A validated copy of one incoming entry (``artifacts[position]``), with host and time filled in.

    Required: ``path`` (absolute), ``kind`` (lower-case token), ``source``. Optional: ``sha256``
    (64 hex digits), ``size`` (bytes, >= 0) - both are checked against the file by the module -,
    ``verify`` (command text; default a sha256sum check), ``host`` (where the file lives), and any
    further keys, kept as given.
    """
    if not isinstance(entry, dict):
        raise ArtifactError("artifacts[%d]: expected a dict with path, kind, source, got %s" % (
            position, type(entry).__name__))
    result = copy.deepcopy(entry)
    path = result.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        raise ArtifactError("%s: expected an absolute path, got %r" % (_where(position, "path"), path))
    kind = result.get("kind")
    if not isinstance(kind, str) or not KIND_RE.match(kind):
        raise ArtifactError("%s: expected a lower-case token (letters, digits, . _ -), got %r" % (
            _where(position, "kind"), kind))
    source = result.get("source")
    if not isinstance(source, str) or not source:
        raise ArtifactError("%s: expected a non-empty string saying where the artifact came from, got %r" % (
            _where(position, "source"), source))
    sha256 = result.get("sha256")
    if sha256 is not None:
        if not isinstance(sha256, str) or not SHA256_RE.match(sha256.lower()):
            raise ArtifactError("%s: expected 64 hex digits, got %r" % (_where(position, "sha256"), sha256))
        result["sha256"] = sha256.lower()
    size = result.get("size")
    if size is not None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ArtifactError("%s: expected a byte count >= 0, got %r" % (_where(position, "size"), size))
    host = result.get("host") or default_host
    if not isinstance(host, str):
        raise ArtifactError("%s: expected a host name, got %r" % (_where(position, "host"), host))
    result["host"] = host
    verify = result.get("verify")
    if verify is not None and not isinstance(verify, str):
        raise ArtifactError("%s: expected the command text as a string, got %r" % (_where(position, "verify"), verify))
    result["recorded_at"] = recorded_at
    return result


def normalize_skipped(item, position, recorded_at):
    """A validated copy of one skipped capture: ``kind``, ``source`` (what was not captured), ``reason``."""
    if not isinstance(item, dict):
        raise ArtifactError("skipped[%d]: expected a dict with kind, source, reason" % position)
    result = copy.deepcopy(item)
    for key in ("kind", "source", "reason"):
        if not isinstance(result.get(key), str) or not result[key]:
            raise ArtifactError("skipped[%d].%s: expected a non-empty string, got %r" % (position, key, result.get(key)))
    result["recorded_at"] = recorded_at
    return result


def complete_entry(entry, observed):
    """Fill ``sha256``/``size``/``verify`` from what was measured on the file (``observed``: the
    measurements ``exists``, ``is_file``, ``size``, ``sha256``), and list the problems:
    a missing file, or a sha256/size that differs from what the capture reported."""
    problems = []
    if not observed.get("exists"):
        problems.append("missing: %s does not exist" % entry["path"])
        return entry, problems
    if not observed.get("is_file", True):
        problems.append("not a regular file: %s" % entry["path"])
        return entry, problems
    for key in ("size", "sha256"):
        if entry.get(key) is not None and entry[key] != observed.get(key):
            problems.append("%s mismatch: the capture reported %s, the file has %s" % (key, entry[key], observed.get(key)))
        entry[key] = observed.get(key)
    if not entry.get("verify"):
        entry["verify"] = default_verify(entry["path"], entry["sha256"])
    return entry, problems


def _same_content(old, new):
    return old.get("sha256") == new.get("sha256") and old.get("size") == new.get("size") and old.get("kind") == new.get("kind")


def merge(index, run_id, entries, skipped, updated_at, on_conflict="fail"):
    """A new index with ``entries`` merged in by path and ``skipped`` merged by (kind, source).

    An entry whose path is indexed already with the same kind, sha256 and size is left as it was
    (with its first ``recorded_at``): re-adding is idempotent. A different sha256, size or kind for
    an indexed path is a conflict - artifacts are never rewritten in place - and raises
    ArtifactError naming the path, unless ``on_conflict='replace'``.

    Returns ``(new_index, added_paths, replaced_paths)``.
    """
    new = copy.deepcopy(index) if index else empty_index(run_id)
    new["schema"], new["schema_version"] = SCHEMA, SCHEMA_VERSION
    new["run_id"] = new.get("run_id") or run_id
    by_path = dict((e.get("path"), i) for i, e in enumerate(new["artifacts"]))
    added, replaced, conflicts = [], [], []
    for entry in entries:
        position = by_path.get(entry["path"])
        if position is None:
            by_path[entry["path"]] = len(new["artifacts"])
            new["artifacts"].append(entry)
            added.append(entry["path"])
        elif not _same_content(new["artifacts"][position], entry):
            if on_conflict == "replace":
                new["artifacts"][position] = entry
                replaced.append(entry["path"])
            else:
                old = new["artifacts"][position]
                conflicts.append("%s (indexed %s sha256 %s size %s; now %s sha256 %s size %s)" % (
                    entry["path"], old.get("kind"), old.get("sha256"), old.get("size"),
                    entry.get("kind"), entry.get("sha256"), entry.get("size")))
    if conflicts:
        raise ArtifactError("already indexed with other content (artifacts are never rewritten; capture into a "
                            "new path, or set on_conflict=replace): %s" % "; ".join(conflicts))
    seen = dict(((s.get("kind"), s.get("source")), i) for i, s in enumerate(new["skipped"]))
    for item in skipped:
        key = (item["kind"], item["source"])
        if key in seen:
            old = new["skipped"][seen[key]]
            if old.get("reason") != item["reason"]:
                new["skipped"][seen[key]] = item
        else:
            seen[key] = len(new["skipped"])
            new["skipped"].append(item)
    if added or replaced or new["skipped"] != (index or {}).get("skipped", []) or not index:
        new["updated_at"] = updated_at
    return new, added, replaced


def is_local(host, local_hosts):
    return host in LOCAL_HOSTS or host in (local_hosts or ())


def verification_plan(index, local_hosts=()):
    """What ``state=verified`` checks, per entry: ``[{path, kind, host, checks, problem}]``.

    ``checks`` lists ``exists``, ``size``, ``sha256``, ``private`` (mode 0600: no group or other
    bits) and, for ``etcd-snapshot`` entries, ``etcd-status``. An entry on a host that is not this
    machine cannot be checked from here: its ``problem`` says so, which fails the verification
    (an artifact that cannot be re-checked does not count as verified).
    """
    plan = []
    for position, entry in enumerate(index.get("artifacts") or []):
        item = {"path": entry.get("path"), "kind": entry.get("kind"), "host": entry.get("host") or "localhost",
                "checks": ["exists", "size", "sha256", "private"], "problem": None, "position": position}
        if entry.get("kind") == ETCD_SNAPSHOT_KIND:
            item["checks"].append("etcd-status")
        if not isinstance(entry.get("path"), str) or not entry.get("path", "").startswith("/"):
            item["problem"] = "the index entry has no absolute path"
        elif not SHA256_RE.match(str(entry.get("sha256") or "")) or not isinstance(entry.get("size"), int):
            item["problem"] = "the index entry has no sha256/size to check against"
        elif not is_local(item["host"], local_hosts):
            item["problem"] = "lives on host %s, not on this machine: cannot be re-checked here" % item["host"]
        plan.append(item)
    return plan


def judge(entry, observed):
    """The problems of one entry given what was measured (``exists``, ``is_file``, ``size``,
    ``sha256``, ``mode``); an empty list means the entry verifies."""
    problems = []
    if not observed.get("exists"):
        return ["missing: the file does not exist"]
    if not observed.get("is_file", True):
        return ["not a regular file"]
    if observed.get("size") != entry.get("size"):
        problems.append("size mismatch: indexed %s bytes, found %s" % (entry.get("size"), observed.get("size")))
    if observed.get("sha256") != entry.get("sha256"):
        problems.append("sha256 mismatch: indexed %s, found %s" % (entry.get("sha256"), observed.get("sha256")))
    mode = observed.get("mode")
    if mode is not None and mode & 0o077:
        problems.append("mode %04o: readable or writable by group or others (artifacts are 0600)" % (mode & 0o7777))
    return problems


def etcd_status_argv(binary, path):
    """argv of the structural check: the etcd wrapper's ``snapshot status PATH -w json``."""
    return etcd_cli.snapshot_status_argv(binary, path)


def parse_etcd_status(text):
    """``{hash, revision, totalKey, totalSize}`` from ``snapshot status -w json`` (the etcd wrapper's
    parser); None when the output is not that."""
    try:
        status = etcd_cli.parse_snapshot_status(text)
    except etcd_cli.EtcdCliError:
        return None
    return dict((k, status[k]) for k in ETCD_STATUS_FIELDS)


def recorded_etcd_status(entry):
    """The snapshot status the capture recorded with the entry, if any: ``hash``/``revision``/
    ``totalKey``/``totalSize`` from a ``status`` (or ``snapshot_status``) dict, overridden by the
    same keys at the entry's top level."""
    found = {}
    for holder in (entry.get("snapshot_status"), entry.get("status"), entry):
        if isinstance(holder, dict):
            for key in ETCD_STATUS_FIELDS:
                value = holder.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    found[key] = value
    return found


def judge_etcd_status(entry, rc, stdout, stderr):
    """Problems of the structural check: the tool refused the file, printed no status, or reports a
    hash/revision/key count other than the capture recorded."""
    if rc != 0:
        return ["etcd snapshot status failed (rc %s): %s" % (rc, (stderr or stdout or "").strip()[:300])]
    status = parse_etcd_status(stdout)
    if status is None:
        return ["etcd snapshot status printed no status: %r" % (stdout or "").strip()[:200]]
    problems = []
    for key, value in sorted(recorded_etcd_status(entry).items()):
        if status.get(key) != value:
            problems.append("etcd snapshot %s mismatch: recorded %s, the file has %s" % (key, value, status.get(key)))
    return problems


def summarize(index):
    """Counts per kind, total bytes, hosts and the skipped captures of an index."""
    by_kind, total = {}, 0
    for entry in index.get("artifacts") or []:
        by_kind[entry.get("kind")] = by_kind.get(entry.get("kind"), 0) + 1
        total += entry.get("size") or 0
    return {
        "artifact_count": len(index.get("artifacts") or []),
        "by_kind": by_kind,
        "total_bytes": total,
        "skipped": [dict((k, s.get(k)) for k in ("kind", "source", "reason")) for s in index.get("skipped") or []],
    }


def render_markdown(summary, verified=None, bad=None, index_path=None):
    """A short Markdown summary of the index (the snapshot phase's evidence summary)."""
    state = {True: "verified", False: "FAILED verification", None: "not verified"}[verified]
    lines = ["# Snapshot: %d artifact(s), %d bytes, %s" % (summary["artifact_count"], summary["total_bytes"], state), ""]
    if index_path:
        lines += ["Index: `%s`" % index_path, ""]
    lines += ["| kind | artifacts |", "|---|---|"]
    for kind in sorted(summary["by_kind"]):
        lines.append("| %s | %d |" % (kind, summary["by_kind"][kind]))
    lines.append("")
    if summary["skipped"]:
        lines += ["Skipped (not captured, not passed):", ""]
        for item in summary["skipped"]:
            lines.append("- %s `%s`: %s" % (item["kind"], item["source"], item["reason"]))
        lines.append("")
    for item in bad or []:
        lines.append("- BAD `%s`: %s" % (item["path"], "; ".join(item["problems"])))
    if bad:
        lines.append("")
    return "\n".join(lines)
