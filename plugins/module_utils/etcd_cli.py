# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one wrapper around ``etcdctl`` and ``etcdutl``: argv lists, parsers, and a runner.

Standard library only, Python 3.8+ (it runs on etcd members). The parsing and argv functions
are pure; :class:`EtcdCli` runs them through an injected ``run(argv, environ_update)`` callable
(``AnsibleModule.run_command`` in the modules), with ``ETCDCTL_API=3`` and ``LC_ALL=C``.

Facts used (DOMAIN.md §5; outputs recorded from the real 3.4.23 and 3.5.1 binaries in
tests/fixtures/etcd/):

* ``etcdctl snapshot save`` must be given exactly one endpoint.
* ``endpoint status -w json`` prints a JSON list, one entry per endpoint:
  ``{"Endpoint": ..., "Status": {"header": {"cluster_id", "member_id", "revision", "raft_term"},
  "version", "dbSize", "leader", ...}}``; IDs are uint64 and are returned here as hex strings, the
  form ``etcdctl member list`` prints.
* ``snapshot status -w json`` prints ``{"hash", "revision", "totalKey", "totalSize"}`` (3.6+ adds
  ``version``). etcdctl 3.5 prints a deprecation notice on stderr; etcdctl 3.6 has no ``snapshot
  status``/``restore`` any more, so etcdutl is preferred wherever it exists.
* ``snapshot status`` alone does not detect damage: etcdctl 3.4.23 reports a snapshot cut in half
  as valid, and 3.5.1 one with inverted pages (both recorded). A file written by ``snapshot save``
  ends with the sha256 of everything before it (its size modulo 512 is 32); ``snapshot restore``
  refuses a file whose trailer does not match ("expected sha256 ...") or is missing ("snapshot
  missing hash but --skip-hash-check=false", both recorded). :func:`file_digest` checks the same
  trailer, so damage is found before anything is restored.
* ``--bump-revision N`` / ``--mark-compacted`` exist in etcdutl/etcdctl 3.5.10+, etcdctl 3.4.27+
  and etcdutl 3.6.0+; absent from 3.4.23 and 3.5.1. They are detected from ``snapshot restore
  --help``, never from the version. ``--mark-compacted`` is required when the bump is > 0 and
  disallowed otherwise.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import re

ENVIRON = {"ETCDCTL_API": "3", "LC_ALL": "C", "LANG": "C"}

BUMP_REVISION_FLAG = "--bump-revision"
MARK_COMPACTED_FLAG = "--mark-compacted"
DEFAULT_BUMP_REVISION = 1000000000

TRAILER_SIZE = 32  # sha256 digest size; etcd: hasHash := (size % 512) == sha256.Size
_CHUNK = 1024 * 1024

_MEMBER_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_URL_RE = re.compile(r"^(https?|unix|unixs)://[^\s,=]+$")
_VERSION_RE = re.compile(r"(?:etcdctl|etcdutl) version:\s*v?(\d+\.\d+\.\d+\S*)")
_TIMESTAMP_FORMAT = "%Y%m%dT%H%M%SZ"
_SNAPSHOT_NAME_RE = r"^%s-(?P<ts>\d{8}T\d{6}Z)-rev(?P<rev>\d+)\.db$"


class EtcdCliError(Exception):
    """A command failed or printed something this wrapper does not understand."""

    def __init__(self, message, argv=None, rc=None, stderr=None):
        super(EtcdCliError, self).__init__(message)
        self.argv = argv
        self.rc = rc
        self.stderr = stderr


# -- inputs -------------------------------------------------------------------------------------


def check_single_endpoint(endpoint):
    """Return the endpoint string when it names exactly one endpoint, else raise ValueError.

    ``snapshot save`` talks to one member ("snapshot must be requested to one selected node").
    """
    if isinstance(endpoint, (list, tuple)):
        if len(endpoint) != 1:
            raise ValueError("exactly one etcd endpoint is needed for a snapshot, got %d: %s"
                             % (len(endpoint), ", ".join(str(e) for e in endpoint)))
        endpoint = endpoint[0]
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise ValueError("the etcd endpoint must be a non-empty string, got %r" % (endpoint,))
    endpoint = endpoint.strip()
    if "," in endpoint or any(c.isspace() for c in endpoint):
        raise ValueError("exactly one etcd endpoint is needed for a snapshot, got a list: %s" % endpoint)
    return endpoint


def check_member_name(name):
    if not isinstance(name, str) or not _MEMBER_NAME_RE.match(name):
        raise ValueError("bad etcd member name %r (letters, digits, '.', '_', '-')" % (name,))
    return name


def check_peer_url(url):
    if not isinstance(url, str) or not _URL_RE.match(url):
        raise ValueError("bad etcd peer URL %r (http:// or https://, no spaces, commas or '=')" % (url,))
    return url


def initial_cluster(members):
    """``name1=url1,name2=url2`` from ``[{"name": ..., "peer_url": ...}]`` (or (name, url) pairs).

    A member with several peer URLs repeats its name, as etcd expects. Names must be unique
    per URL; the order is kept (every member must be given the same string).
    """
    parts, seen = [], set()
    for member in members:
        if isinstance(member, dict):
            name, urls = member.get("name"), member.get("peer_url", member.get("peer_urls"))
        else:
            name, urls = member
        check_member_name(name)
        for url in urls if isinstance(urls, (list, tuple)) else [urls]:
            check_peer_url(url)
            if (name, url) in seen:
                raise ValueError("member %s=%s given twice" % (name, url))
            seen.add((name, url))
            parts.append("%s=%s" % (name, url))
    if not parts:
        raise ValueError("the initial cluster has no members")
    return ",".join(parts)


def parse_initial_cluster(text):
    """``[(name, url), ...]`` from an ``--initial-cluster`` string."""
    result = []
    for item in text.split(","):
        name, sep, url = item.partition("=")
        if not sep:
            raise ValueError("bad --initial-cluster entry %r (want name=url)" % item)
        result.append((check_member_name(name.strip()), check_peer_url(url.strip())))
    return result


# -- argv ---------------------------------------------------------------------------------------


def connection_args(endpoint, cacert=None, cert=None, key=None, dial_timeout=None, command_timeout=None):
    """Global etcdctl flags for one endpoint and optional TLS files (flags as ``--flag=value``)."""
    argv = ["--endpoints=%s" % check_single_endpoint(endpoint)]
    for flag, value in (("--cacert", cacert), ("--cert", cert), ("--key", key)):
        if value:
            argv.append("%s=%s" % (flag, value))
    if dial_timeout:
        argv.append("--dial-timeout=%ss" % int(dial_timeout))
    if command_timeout:
        argv.append("--command-timeout=%ss" % int(command_timeout))
    return argv


def endpoint_status_argv(etcdctl, endpoint, cacert=None, cert=None, key=None, timeout=10):
    return ([etcdctl] + connection_args(endpoint, cacert, cert, key, dial_timeout=timeout, command_timeout=timeout)
            + ["endpoint", "status", "-w", "json"])


def snapshot_save_argv(etcdctl, endpoint, path, cacert=None, cert=None, key=None, dial_timeout=10):
    return [etcdctl] + connection_args(endpoint, cacert, cert, key, dial_timeout=dial_timeout) + ["snapshot", "save", path]


def snapshot_status_argv(tool, path):
    """``snapshot status <path> -w json`` for etcdutl or etcdctl (same syntax in both)."""
    return [tool, "snapshot", "status", path, "-w", "json"]


def restore_help_argv(tool):
    return [tool, "snapshot", "restore", "--help"]


def snapshot_restore_argv(tool, path, data_dir, name, initial_cluster_text, initial_cluster_token,
                          initial_advertise_peer_urls, bump_revision=0, supports_bump=False):
    """``snapshot restore`` argv. A bump > 0 needs ``supports_bump`` (raises ValueError otherwise)
    and brings ``--mark-compacted`` with it (etcd refuses one without the other)."""
    check_member_name(name)
    parse_initial_cluster(initial_cluster_text)
    if isinstance(initial_advertise_peer_urls, (list, tuple)):
        urls = [check_peer_url(u) for u in initial_advertise_peer_urls]
    else:
        urls = [check_peer_url(u.strip()) for u in str(initial_advertise_peer_urls).split(",")]
    if not initial_cluster_token or not isinstance(initial_cluster_token, str):
        raise ValueError("an initial cluster token is required")
    if not data_dir:
        raise ValueError("a data directory is required")
    argv = [tool, "snapshot", "restore", path,
            "--data-dir=%s" % data_dir,
            "--name=%s" % name,
            "--initial-cluster=%s" % initial_cluster_text,
            "--initial-cluster-token=%s" % initial_cluster_token,
            "--initial-advertise-peer-urls=%s" % ",".join(urls)]
    bump = int(bump_revision or 0)
    if bump < 0:
        raise ValueError("bump_revision must be >= 0, got %d" % bump)
    if bump > 0:
        if not supports_bump:
            raise ValueError("%s does not support %s/%s" % (tool, BUMP_REVISION_FLAG, MARK_COMPACTED_FLAG))
        argv += ["%s=%d" % (BUMP_REVISION_FLAG, bump), MARK_COMPACTED_FLAG]
    return argv


def argv_string(argv):
    """An argv as one line for humans (quoted where needed); never run through a shell."""
    out = []
    for arg in argv:
        if arg and re.match(r"^[A-Za-z0-9_./:=,@%+-]+$", arg):
            out.append(arg)
        else:
            out.append("'%s'" % arg.replace("'", "'\"'\"'"))
    return " ".join(out)


# -- parsers ------------------------------------------------------------------------------------


def _json_lines(text, opener):
    """JSON values in ``text``: the whole text, else each line that starts with ``opener``."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = text or ""
    try:
        yield json.loads(text)
        return
    except ValueError:
        pass
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(opener):
            try:
                yield json.loads(line)
            except ValueError:
                continue


def _hex_id(value):
    if value is None:
        return None
    try:
        return "%x" % int(value)
    except (TypeError, ValueError):
        return str(value)


def parse_endpoint_status(text):
    """The single endpoint's status from ``endpoint status -w json`` output.

    Returns ``{endpoint, member_id, cluster_id, leader, is_leader, revision, raft_term, version,
    db_size, db_size_in_use, raft_index}``; IDs as hex strings. Raises EtcdCliError when there is
    not exactly one entry or the fields are missing.
    """
    for value in _json_lines(text, "["):
        if not isinstance(value, list):
            continue
        if len(value) != 1:
            raise EtcdCliError("endpoint status returned %d entries, expected exactly one" % len(value))
        entry = value[0]
        status = entry.get("Status") or {}
        header = status.get("header") or {}
        if "member_id" not in header or "revision" not in header:
            raise EtcdCliError("endpoint status has no member_id/revision: %s" % json.dumps(entry)[:300])
        member = _hex_id(header.get("member_id"))
        leader = _hex_id(status.get("leader"))
        return {
            "endpoint": entry.get("Endpoint"),
            "member_id": member,
            "cluster_id": _hex_id(header.get("cluster_id")),
            "leader": leader,
            "is_leader": leader is not None and leader == member,
            "revision": int(header["revision"]),
            "raft_term": int(header.get("raft_term", status.get("raftTerm", 0)) or 0),
            "raft_index": status.get("raftIndex"),
            "version": status.get("version"),
            "db_size": status.get("dbSize"),
            "db_size_in_use": status.get("dbSizeInUse"),
        }
    raise EtcdCliError("endpoint status printed no JSON list: %r" % (text or "")[:300])


STATUS_FIELDS = ("hash", "revision", "totalKey", "totalSize")


def parse_snapshot_status(text):
    """``{hash, revision, totalKey, totalSize}`` (and ``version`` when printed) from ``snapshot
    status -w json``; raises EtcdCliError when absent or not integers."""
    for value in _json_lines(text, "{"):
        if not isinstance(value, dict) or not all(k in value for k in STATUS_FIELDS):
            continue
        result = {}
        for field in STATUS_FIELDS:
            if isinstance(value[field], bool) or not isinstance(value[field], int):
                raise EtcdCliError("snapshot status field %s is not an integer: %r" % (field, value[field]))
            result[field] = value[field]
        if "version" in value:
            result["version"] = value["version"]
        return result
    raise EtcdCliError("snapshot status printed no status JSON: %r" % (text or "")[:300])


def parse_tool_version(text):
    """``3.5.1`` from ``etcdctl version`` / ``etcdutl version`` output, or None."""
    match = _VERSION_RE.search(text or "")
    return match.group(1) if match else None


def _has_flag(help_text, flag):
    return re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(flag), help_text or "") is not None


def restore_flags(help_text):
    """Which optional restore flags ``snapshot restore --help`` lists."""
    return {"bump_revision": _has_flag(help_text, BUMP_REVISION_FLAG),
            "mark_compacted": _has_flag(help_text, MARK_COMPACTED_FLAG)}


def supports_revision_bump(help_text):
    """True only when both ``--bump-revision`` and ``--mark-compacted`` are listed."""
    flags = restore_flags(help_text)
    return flags["bump_revision"] and flags["mark_compacted"]


def error_summary(stderr, limit=600):
    """The informative part of a failed command's stderr: ``Error:`` lines, else the last lines
    without Go stack frames or zap info logs. Never contains file contents (etcd prints none)."""
    if isinstance(stderr, bytes):
        stderr = stderr.decode("utf-8", "replace")
    lines = [line.rstrip() for line in (stderr or "").splitlines() if line.strip()]
    picked = [line for line in lines if line.startswith(("Error:", "Error ", "panic:", "fatal error:", "[signal"))]
    if not picked:
        picked = [line for line in lines if not line.startswith(("\t", "goroutine ", '{"level":"info"'))][-5:]
    text = " | ".join(picked)
    return text[:limit] if text else "(no error output)"


# -- files --------------------------------------------------------------------------------------


def file_digest(path):
    """sha256 and size of a file, and whether etcd's sha256 integrity trailer matches.

    ``trailer`` is ``"ok"`` (the last 32 bytes are the sha256 of the rest), ``"mismatch"``, or
    ``"missing"`` (size modulo 512 is not 32: truncated or not written by ``snapshot save``).
    One pass over the file.
    """
    whole = hashlib.sha256()
    body = hashlib.sha256()
    tail = b""
    size = 0
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(_CHUNK)
            if not chunk:
                break
            size += len(chunk)
            whole.update(chunk)
            data = tail + chunk
            body.update(data[:-TRAILER_SIZE] if len(data) > TRAILER_SIZE else b"")
            tail = data[-TRAILER_SIZE:]
    if size % 512 != TRAILER_SIZE:
        trailer = "missing"
    else:
        trailer = "ok" if body.digest() == tail else "mismatch"
    return {"sha256": whole.hexdigest(), "size": size, "trailer": trailer}


def trailer_problem(digest):
    """A sentence for a digest whose trailer is not ok, else None."""
    if digest["trailer"] == "ok":
        return None
    if digest["trailer"] == "missing":
        return ("it has no sha256 integrity trailer (size %d is not 32 more than a multiple of 512): "
                "truncated, or not written by 'etcdctl snapshot save'" % digest["size"])
    return "its sha256 integrity trailer does not match its contents: the file is corrupted"


def snapshot_filename(prefix, when, revision):
    """``<prefix>-<YYYYmmddTHHMMSSZ>-rev<revision>.db`` for a UTC ``datetime``."""
    return "%s-%s-rev%d.db" % (prefix, when.strftime(_TIMESTAMP_FORMAT), int(revision))


def parse_snapshot_filename(name, prefix):
    """``(timestamp string, revision)`` when ``name`` is one of this prefix's snapshots, else None."""
    match = re.match(_SNAPSHOT_NAME_RE % re.escape(prefix), name)
    return (match.group("ts"), int(match.group("rev"))) if match else None


def timestamp_format():
    return _TIMESTAMP_FORMAT


def check_prefix(prefix):
    if not isinstance(prefix, str) or not _MEMBER_NAME_RE.match(prefix):
        raise ValueError("bad snapshot prefix %r (letters, digits, '.', '_', '-')" % (prefix,))
    return prefix


def snapshot_timestamp(name):
    """The UTC timestamp string in any ``...-<YYYYmmddTHHMMSSZ>-rev<N>.db[...]`` name, or None."""
    match = re.search(r"-(\d{8}T\d{6}Z)-rev\d+\.db", os.path.basename(name))
    return match.group(1) if match else None


def prune_candidates(names, prefix, keep, protect=()):
    """The names to remove so that the ``keep`` newest snapshots of ``prefix`` remain.

    Newest by the name's timestamp, then revision; ``keep`` <= 0 keeps all; names in
    ``protect`` (the snapshot just taken) are never returned and count as kept.
    """
    if keep is None or int(keep) <= 0:
        return []
    ours = []
    for name in names:
        parsed = parse_snapshot_filename(os.path.basename(name), prefix)
        if parsed:
            ours.append((parsed, name))
    ours.sort(key=lambda item: item[0], reverse=True)
    protected = [item for item in ours if item[1] in protect]
    others = [item for item in ours if item[1] not in protect]
    room = max(int(keep) - len(protected), 0)
    return [item[1] for item in others[room:]]


def parse_duration(value):
    """Seconds from ``3600``, ``"90s"``, ``"30m"``, ``"2h"``, ``"7d"`` (0 or empty = no limit)."""
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        raise ValueError("not a duration: %r" % (value,))
    if isinstance(value, (int, float)):
        seconds = int(value)
    else:
        match = re.match(r"^\s*(\d+)\s*([smhd]?)\s*$", str(value))
        if not match:
            raise ValueError("not a duration: %r (use seconds or a number with s, m, h or d)" % (value,))
        seconds = int(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
    if seconds < 0:
        raise ValueError("a duration must not be negative: %r" % (value,))
    return seconds


# -- running ------------------------------------------------------------------------------------


class EtcdCli:
    """Runs the argv above through ``run(argv, environ_update) -> (rc, stdout, stderr)``.

    ``etcdutl`` (optional) is used for ``snapshot status`` and ``restore`` when given; ``etcdctl``
    otherwise, and always for talking to a member.
    """

    def __init__(self, run, etcdctl=None, etcdutl=None):
        self._run = run
        self.etcdctl = etcdctl
        self.etcdutl = etcdutl

    @property
    def offline_tool(self):
        """``(name, path)`` of the tool for file operations: etcdutl where it exists."""
        if self.etcdutl:
            return "etcdutl", self.etcdutl
        if self.etcdctl:
            return "etcdctl", self.etcdctl
        raise EtcdCliError("neither etcdutl nor etcdctl was found")

    def run(self, argv, what):
        rc, out, err = self._run(argv, dict(ENVIRON))
        if rc != 0:
            raise EtcdCliError("%s failed (rc=%s): %s" % (what, rc, error_summary(err or out)),
                               argv=argv, rc=rc, stderr=err)
        return out, err

    def _need_etcdctl(self):
        if not self.etcdctl:
            raise EtcdCliError("etcdctl was not found (set the etcdctl option or put it on PATH)")
        return self.etcdctl

    def endpoint_status(self, endpoint, cacert=None, cert=None, key=None, timeout=10):
        argv = endpoint_status_argv(self._need_etcdctl(), endpoint, cacert, cert, key, timeout)
        out = self.run(argv, "etcdctl endpoint status on %s" % endpoint)[0]
        return parse_endpoint_status(out)

    def snapshot_save(self, endpoint, path, cacert=None, cert=None, key=None, dial_timeout=10):
        argv = snapshot_save_argv(self._need_etcdctl(), endpoint, path, cacert, cert, key, dial_timeout)
        self.run(argv, "etcdctl snapshot save from %s" % endpoint)
        return argv

    def snapshot_status(self, path):
        """``(status dict, argv)`` for a snapshot file."""
        name, tool = self.offline_tool
        argv = snapshot_status_argv(tool, path)
        out = self.run(argv, "%s snapshot status %s" % (name, path))[0]
        return parse_snapshot_status(out), argv

    def restore_help(self):
        name, tool = self.offline_tool
        rc, out, err = self._run(restore_help_argv(tool), dict(ENVIRON))
        text = (out or "") + (err or "")
        if "restore" not in text:
            raise EtcdCliError("%s snapshot restore --help printed no help (rc=%s)" % (name, rc))
        return text

    def tool_version(self):
        """``(name, version or None)`` of the tool used for file operations."""
        name, tool = self.offline_tool
        rc, out = self._run([tool, "version"], dict(ENVIRON))[:2]
        return name, parse_tool_version(out) if rc == 0 else None

    def restore(self, argv):
        self.run(argv, "%s snapshot restore" % self.offline_tool[0])
