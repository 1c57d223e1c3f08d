# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one wrapper around ``etcdctl`` and ``etcdutl``: argv lists, parsers, and a runner.

Standard library only, Python 3.8+ (it runs on etcd members). The parsing and argv functions
are pure; :class:`EtcdCli` runs them through an injected ``run(argv, environ_update, timeout)`` callable,
in the modules a ``command_runner.Runner`` (:meth:`EtcdCli.with_deadline`): every command has a
deadline, its whole process group is killed on expiry and its output is bounded; a timed-out command
raises :class:`EtcdTimeout` naming the command and the deadline. ``ETCDCTL_API=3`` and ``LC_ALL=C``.

Facts used (DOMAIN.md §5; outputs recorded from the real 3.4.23 and 3.5.1 binaries in
tests/fixtures/etcd/):

* ``etcdctl snapshot save`` must be given exactly one endpoint.
* ``endpoint status -w json`` prints a JSON list, one entry per endpoint:
  ``{"Endpoint": ..., "Status": {"header": {"cluster_id", "member_id", "revision", "raft_term"},
  "version", "dbSize", "leader", ...}}``; IDs are uint64 and are returned here as hex strings, the
  form ``etcdctl member list`` prints.
* ``endpoint status --cluster -w json`` asks the seed endpoint for the member list and prints one
  entry per member that answered; a member that does not answer is left out of the JSON and named on
  stderr (``Failed to get the status of endpoint URL (reason)``) and the exit code is 1 (recorded for
  3.4.23 and 3.5.1 with a stopped member). ``member list -w json`` names every member.
  :func:`select_member` decides from both which member a snapshot may come from.
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
from collections import Counter

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import command_runner
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import private_files

ENVIRON = {"ETCDCTL_API": "3", "LC_ALL": "C", "LANG": "C"}

BUMP_REVISION_FLAG = "--bump-revision"
MARK_COMPACTED_FLAG = "--mark-compacted"
DEFAULT_BUMP_REVISION = 1000000000

TRAILER_SIZE = 32  # sha256 digest size; etcd: hasHash := (size % 512) == sha256.Size
_CHUNK = 1024 * 1024

_MEMBER_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_URL_RE = re.compile(r"^(https?|unix|unixs)://[^\s,=]+$")
_VERSION_RE = re.compile(r"(?:etcdctl|etcdutl) version:\s*v?(\d+\.\d+\.\d+\S*)")
_TIMESTAMP_FORMAT = clock.NAME_FORMAT
_SNAPSHOT_NAME_RE = r"^%s-(?P<ts>\d{8}T\d{6}Z)-rev(?P<rev>\d+)\.db$"


DEFAULT_MAX_RAFT_LAG = 1000
DEFAULT_MAX_OUTPUT = 1024 * 1024
MANIFEST_NAME = "dra_gate-etcd-snapshots.json"
MANIFEST_LOCK = ".dra_gate-etcd-snapshots.lock"
MANIFEST_KIND = "gpufleet.dra_gate/etcd-snapshot-manifest"
METADATA_SUFFIX = ".meta.json"
RESTORE_MARKER = ".dra_gate-restore.json"


class EtcdCliError(Exception):
    """A command failed or printed something this wrapper does not understand."""

    def __init__(self, message, argv=None, rc=None, stderr=None):
        super(EtcdCliError, self).__init__(message)
        self.argv = argv
        self.rc = rc
        self.stderr = stderr


class EtcdTimeout(EtcdCliError):
    """A command ran past its deadline; its process group was killed. The message names both."""

    timed_out = True


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


def endpoint_status_argv(etcdctl, endpoint, cacert=None, cert=None, key=None, timeout=10, cluster=False):
    """``endpoint status -w json`` of one endpoint, or with ``cluster`` of every member it lists."""
    return ([etcdctl] + connection_args(endpoint, cacert, cert, key, dial_timeout=timeout, command_timeout=timeout)
            + ["endpoint", "status"] + (["--cluster"] if cluster else []) + ["-w", "json"])


def member_list_argv(etcdctl, endpoint, cacert=None, cert=None, key=None, timeout=10):
    return ([etcdctl] + connection_args(endpoint, cacert, cert, key, dial_timeout=timeout, command_timeout=timeout)
            + ["member", "list", "-w", "json"])


def snapshot_save_argv(etcdctl, endpoint, path, cacert=None, cert=None, key=None, dial_timeout=10,
                       command_timeout=None):
    """``snapshot save``; ``command_timeout`` bounds the whole transfer inside etcdctl (the runner's
    deadline, a little longer, bounds the process)."""
    return ([etcdctl] + connection_args(endpoint, cacert, cert, key, dial_timeout=dial_timeout,
                                        command_timeout=command_timeout) + ["snapshot", "save", path])


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


def _status_entry(entry):
    """One parsed ``endpoint status`` entry (see :func:`parse_endpoint_status`)."""
    if not isinstance(entry, dict):
        raise EtcdCliError("endpoint status entry is not an object: %r" % (entry,))
    status = entry.get("Status") or {}
    header = status.get("header") or {} if isinstance(status, dict) else {}
    if not isinstance(header, dict) or "member_id" not in header or "revision" not in header:
        raise EtcdCliError("endpoint status has no member_id/revision: %s" % json.dumps(entry)[:300])
    member = _hex_id(header.get("member_id"))
    leader = _hex_id(status.get("leader")) if status.get("leader") else None
    errors = status.get("errors") or []

    def number(value):
        try:
            return int(value) if value is not None and not isinstance(value, bool) else None
        except (TypeError, ValueError):
            return None

    return {
        "endpoint": entry.get("Endpoint"),
        "member_id": member,
        "cluster_id": _hex_id(header.get("cluster_id")),
        "leader": leader,
        "is_leader": leader is not None and leader == member,
        "is_learner": bool(status.get("isLearner")),
        "revision": number(header["revision"]),
        "raft_term": number(status.get("raftTerm", header.get("raft_term"))) or 0,
        "raft_index": number(status.get("raftIndex")),
        "raft_applied_index": number(status.get("raftAppliedIndex")),
        "version": status.get("version"),
        "db_size": status.get("dbSize"),
        "db_size_in_use": status.get("dbSizeInUse"),
        "errors": [str(e) for e in errors] if isinstance(errors, list) else [str(errors)],
    }


def parse_endpoint_statuses(text):
    """Every entry of ``endpoint status [--cluster] -w json`` output (a list, possibly empty)."""
    for value in _json_lines(text, "["):
        if isinstance(value, list):
            return [_status_entry(entry) for entry in value]
    raise EtcdCliError("endpoint status printed no JSON list: %r" % (text or "")[:300])


def parse_endpoint_status(text):
    """The single endpoint's status from ``endpoint status -w json`` output.

    Returns ``{endpoint, member_id, cluster_id, leader, is_leader, is_learner, revision, raft_term,
    raft_index, raft_applied_index, version, db_size, db_size_in_use, errors}``; IDs as hex strings.
    Raises EtcdCliError when there is not exactly one entry or the fields are missing.
    """
    entries = parse_endpoint_statuses(text)
    if len(entries) != 1:
        raise EtcdCliError("endpoint status returned %d entries, expected exactly one" % len(entries))
    return entries[0]


_FAILED_STATUS_RE = re.compile(r"Failed to get the status of endpoint (\S+) \((.*)\)\s*$")


def parse_status_failures(text):
    """``{endpoint: reason}`` of the members ``endpoint status`` could not reach (its stderr)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    failures = {}
    for line in (text or "").splitlines():
        match = _FAILED_STATUS_RE.search(line.strip())
        if match:
            failures[match.group(1)] = match.group(2)[:200]
    return failures


def parse_member_list(text):
    """``[{member_id, name, peer_urls, client_urls, is_learner}]`` from ``member list -w json``."""
    for value in _json_lines(text, "{"):
        if not isinstance(value, dict) or not isinstance(value.get("members"), list):
            continue
        members = []
        for item in value["members"]:
            if not isinstance(item, dict) or "ID" not in item:
                raise EtcdCliError("member list entry without ID: %s" % json.dumps(item)[:300])
            members.append({"member_id": _hex_id(item.get("ID")), "name": str(item.get("name") or ""),
                            "peer_urls": [str(u) for u in item.get("peerURLs") or []],
                            "client_urls": [str(u) for u in item.get("clientURLs") or []],
                            "is_learner": bool(item.get("isLearner"))})
        return members
    raise EtcdCliError("member list printed no members JSON: %r" % (text or "")[:300])


def major_minor(version):
    """``"3.5"`` from ``"3.5.1"``/``"v3.5.17"``; None when there is no ``N.N``."""
    match = re.match(r"^\s*v?(\d+)\.(\d+)", str(version or ""))
    return "%s.%s" % (match.group(1), match.group(2)) if match else None


def select_member(members, statuses, failures=None, preferred_member_id=None, max_lag=DEFAULT_MAX_RAFT_LAG):
    """Which member a snapshot may be taken from, and why; raises EtcdCliError when none may.

    ``members`` from :func:`parse_member_list`, ``statuses`` from :func:`parse_endpoint_statuses`
    of ``endpoint status --cluster``, ``failures`` from :func:`parse_status_failures`.

    A member is refused when it did not answer, reports errors (alarms), is a learner, knows no
    leader or another leader than the others, is in another cluster or raft term than the leader,
    or when its lag, the leader's raft index minus the member's applied index (``raftAppliedIndex``,
    ``raftIndex`` where not printed), exceeds ``max_lag``. The leader must answer (else lag cannot be
    judged) and the healthy members must be a majority of the voting members.

    Choice: the preferred member (the configured endpoint's) when it passes; else the passing
    follower with the least lag (then by name); else the leader.

    Returns ``{chosen: <member row>, reason, leader, max_lag, members: [rows]}``; a row is
    ``{member_id, name, endpoint, client_urls, answered, is_leader, lag, raft_index, raft_applied_index,
    raft_term, revision, version, healthy, problems}``.
    """
    failures = dict(failures or {})
    max_lag = int(max_lag)
    by_id = dict((s["member_id"], s) for s in statuses)
    by_endpoint = dict((s["endpoint"], s) for s in statuses)
    rows = []
    known = set()
    for member in members:
        status = by_id.get(member["member_id"])
        if status is None:
            for url in member["client_urls"]:
                if url in by_endpoint:
                    status = by_endpoint[url]
        known.add(member["member_id"])
        rows.append((member, status))
    for status in statuses:  # answered but not in the member list (should not happen)
        if status["member_id"] not in known:
            rows.append(({"member_id": status["member_id"], "name": "", "client_urls": [status["endpoint"]],
                          "is_learner": status.get("is_learner", False)}, status))
    views = Counter(s["leader"] for _member, s in rows if s is not None and s["leader"])
    leader_id = views.most_common(1)[0][0] if views else None
    leader = by_id.get(leader_id)
    table = []
    for member, status in rows:
        row = {"member_id": member["member_id"], "name": member.get("name") or "",
               "client_urls": list(member.get("client_urls") or []),
               "endpoint": status["endpoint"] if status else (member.get("client_urls") or [None])[0],
               "answered": status is not None, "is_leader": bool(leader_id and member["member_id"] == leader_id),
               "lag": None, "problems": []}
        for key in ("raft_index", "raft_applied_index", "raft_term", "revision", "version", "errors"):
            row[key] = status.get(key) if status else None
        problems = row["problems"]
        if status is None:
            reasons = [failures[u] for u in row["client_urls"] if u in failures]
            problems.append("did not answer endpoint status%s" % (": " + reasons[0] if reasons else ""))
        else:
            if status.get("errors"):
                problems.append("reports errors: %s" % "; ".join(status["errors"])[:300])
            if member.get("is_learner") or status.get("is_learner"):
                problems.append("is a learner, not a voting member")
            if not status["leader"]:
                problems.append("knows no leader")
            elif status["leader"] != leader_id:
                problems.append("sees leader %s, the others %s" % (status["leader"], leader_id))
            if leader is not None:
                if status["cluster_id"] != leader["cluster_id"]:
                    problems.append("is in cluster %s, the leader in %s" % (status["cluster_id"], leader["cluster_id"]))
                if status["raft_term"] != leader["raft_term"]:
                    problems.append("raft term %s, the leader's %s" % (status["raft_term"], leader["raft_term"]))
                applied = status["raft_applied_index"] if status["raft_applied_index"] is not None \
                    else status["raft_index"]
                if leader["raft_index"] is None or applied is None:
                    problems.append("prints no raft index: the lag cannot be judged")
                else:
                    row["lag"] = max(leader["raft_index"] - applied, 0)
                    if row["lag"] > max_lag:
                        problems.append("lags the leader by %s raft entries (applied index %s, leader's raft "
                                        "index %s), more than max_raft_lag %s"
                                        % (row["lag"], applied, leader["raft_index"], max_lag))
        row["healthy"] = not problems
        table.append(row)
    table.sort(key=lambda r: (r["name"], r["member_id"]))
    selection = {"chosen": None, "reason": None, "leader": leader_id, "max_lag": max_lag, "members": table}

    def refuse(why):
        detail = "; ".join("%s (%s): %s" % (r["name"] or "?", r["member_id"], ", ".join(r["problems"]) or "healthy")
                           for r in table)
        error = EtcdCliError("no etcd member may be snapshotted: %s. Members: %s" % (why, detail or "none listed"))
        error.selection = dict(selection, reason=why)
        raise error

    if not table:
        refuse("the member list is empty")
    if leader_id is None:
        refuse("no member that answered knows a leader")
    if leader is None:
        refuse("the leader %s does not answer, so no member's lag can be judged" % leader_id)
    voting = [r for r in table if "is a learner, not a voting member" not in r["problems"]]
    healthy = [r for r in table if r["healthy"]]
    if len(healthy) * 2 <= len(voting):
        refuse("only %d of %d voting members are healthy (no quorum of healthy members)" % (len(healthy), len(voting)))
    preferred = [r for r in table if r["member_id"] == preferred_member_id]
    if preferred and preferred[0]["healthy"]:
        chosen, reason = preferred[0], "the configured endpoint's member: healthy, lag %d <= %d" % (
            preferred[0]["lag"], max_lag)
    else:
        followers = sorted((r for r in healthy if not r["is_leader"]), key=lambda r: (r["lag"], r["name"]))
        chosen = followers[0] if followers else [r for r in healthy if r["is_leader"]][0]
        why = ("the configured endpoint's member %s is refused (%s)" % (
            preferred[0]["name"] or preferred[0]["member_id"], ", ".join(preferred[0]["problems"]))
            if preferred else "the configured endpoint's member is not in the member list")
        reason = "%s; chose the healthy %s with the least lag (%d <= %d)" % (
            why, "leader" if chosen["is_leader"] else "follower", chosen["lag"], max_lag)
    selection["chosen"] = chosen
    selection["reason"] = reason
    return selection


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
    return "%s-%s-rev%d.db" % (prefix, clock.name_stamp(when), int(revision))


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


# -- this collection's own records: the snapshot manifest, the metadata, the restore marker ----------


def metadata_path(snapshot_path):
    """The metadata file written beside a snapshot: ``<snapshot>.meta.json``."""
    return snapshot_path + METADATA_SUFFIX


def _load_json(path, what):
    text = private_files.read_text(path)
    if text is None:
        if os.path.lexists(path):
            raise EtcdCliError("%s %s cannot be read" % (what, path))
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise EtcdCliError("%s %s is not valid JSON (%s); fix or move it (nothing was changed)" % (what, path, exc))


def read_metadata(snapshot_path):
    """The metadata dict recorded beside a snapshot, or None when there is none."""
    data = _load_json(metadata_path(snapshot_path), "snapshot metadata")
    if data is not None and not isinstance(data, dict):
        raise EtcdCliError("snapshot metadata %s is not a JSON object" % metadata_path(snapshot_path))
    return data


def read_manifest(directory):
    """The manifest of snapshots this collection took into ``directory``: ``{kind, snapshots: [...]}``
    (empty when there is none yet); raises EtcdCliError when it exists but is not one."""
    path = os.path.join(directory, MANIFEST_NAME)
    data = _load_json(path, "snapshot manifest")
    if data is None:
        return {"kind": MANIFEST_KIND, "snapshots": []}
    if not isinstance(data, dict) or data.get("kind") != MANIFEST_KIND or not isinstance(data.get("snapshots"), list):
        raise EtcdCliError("snapshot manifest %s is not a %s; fix or move it (nothing was changed)" % (path, MANIFEST_KIND))
    return data


def _write_manifest(directory, manifest):
    private_files.write_private(os.path.join(directory, MANIFEST_NAME),
                                json.dumps(manifest, indent=2, sort_keys=True) + "\n", replace=True)


def manifest_entry(path, digest, taken_at, revision, member_id):
    """The manifest's record of one snapshot: name, sha256, size, inode (to tell it from a file put
    there later under the same name), time, revision, member."""
    info = os.stat(path)
    return {"name": os.path.basename(path), "sha256": digest["sha256"], "size": digest["size"],
            "inode": info.st_ino, "taken_at": taken_at, "revision": revision, "member_id": member_id}


def record_and_prune(directory, entry, prefix, keep, dry_run=False):
    """Add ``entry`` to the manifest (unless ``dry_run``) and remove the oldest *recorded* snapshots
    of ``prefix`` so that ``keep`` remain, all under the directory's lock.

    Only files the manifest records are candidates, and only when their size and inode are still the
    recorded ones; a file that merely matches the name pattern is never touched. Returns
    ``(pruned paths, skipped [{path, reason}])``. ``dry_run`` (check mode) writes nothing, not even
    the lock file.
    """
    if dry_run:
        return _plan_prune(directory, entry, prefix, keep)[:2]
    with private_files.locked(directory, name=MANIFEST_LOCK):
        pruned, skipped, manifest, kept = _plan_prune(directory, entry, prefix, keep)
        for path in pruned:
            os.unlink(path)
            if os.path.isfile(metadata_path(path)):
                os.unlink(metadata_path(path))
        manifest["snapshots"] = kept
        _write_manifest(directory, manifest)
        private_files.fsync_dir(directory)
        return pruned, skipped


def _plan_prune(directory, entry, prefix, keep):
    """(pruned, skipped, manifest, kept entries) without changing anything."""
    manifest = read_manifest(directory)
    recorded = [e for e in manifest["snapshots"] if isinstance(e, dict) and e.get("name")]
    if entry is not None and entry["name"] not in [e["name"] for e in recorded]:
        recorded.append(entry)
    names = [e["name"] for e in recorded]
    protect = [entry["name"]] if entry is not None else []
    order = prune_candidates(names, prefix, keep, protect=protect)  # newest first
    doomed = set(order)
    pruned, skipped, kept = [], [], []
    for item in recorded:
        path = os.path.join(directory, item["name"])
        if item["name"] not in doomed:
            if os.path.lexists(path) or item["name"] in protect:
                kept.append(item)
            continue
        try:
            info = os.lstat(path)
        except OSError:
            continue  # recorded but gone: dropped from the manifest
        if not os.path.isfile(path) or os.path.islink(path) or info.st_size != item.get("size") \
                or ("inode" in item and info.st_ino != item["inode"]):
            skipped.append({"path": path, "reason": "not the recorded file (size, inode or type differ); left alone"})
            kept.append(item)
            continue
        pruned.append(path)
    pruned.sort(key=lambda path: order.index(os.path.basename(path)))
    return pruned, skipped, manifest, kept


def read_restore_marker(data_dir):
    """The marker a completed restore left in ``data_dir``, or None."""
    data = _load_json(os.path.join(data_dir, RESTORE_MARKER), "restore marker")
    if data is not None and not isinstance(data, dict):
        raise EtcdCliError("restore marker in %s is not a JSON object" % data_dir)
    return data


# -- running ------------------------------------------------------------------------------------


class EtcdCli:
    """Runs the argv above through ``run(argv, environ_update, timeout) -> (rc, stdout, stderr)``
    (a ``command_runner.Runner``; :meth:`with_deadline` makes one).

    ``etcdutl`` (optional) is used for ``snapshot status`` and ``restore`` when given; ``etcdctl``
    otherwise, and always for talking to a member. ``timeout`` given to a method is that command's
    deadline (seconds); without one the runner's default applies.
    """

    def __init__(self, run, etcdctl=None, etcdutl=None):
        self._run = run
        self.etcdctl = etcdctl
        self.etcdutl = etcdutl

    @classmethod
    def with_deadline(cls, timeout, etcdctl=None, etcdutl=None, max_output=DEFAULT_MAX_OUTPUT):
        """An EtcdCli on a ``command_runner.Runner`` with ``timeout`` as the default deadline."""
        return cls(command_runner.Runner(timeout, max_output=max_output, environ_update=ENVIRON), etcdctl, etcdutl)

    @property
    def offline_tool(self):
        """``(name, path)`` of the tool for file operations: etcdutl where it exists."""
        if self.etcdutl:
            return "etcdutl", self.etcdutl
        if self.etcdctl:
            return "etcdctl", self.etcdctl
        raise EtcdCliError("neither etcdutl nor etcdctl was found")

    def _call(self, argv, what, timeout=None):
        try:
            if timeout is None:
                return self._run(argv, dict(ENVIRON))
            return self._run(argv, dict(ENVIRON), timeout)
        except command_runner.CommandTimedOut as exc:
            raise EtcdTimeout("%s did not finish within its deadline of %g s: %s"
                              % (what, exc.result.timeout, exc), argv=argv)
        except command_runner.CommandError as exc:
            raise EtcdCliError("%s could not be run: %s" % (what, exc), argv=argv)

    def run(self, argv, what, timeout=None):
        rc, out, err = self._call(argv, what, timeout)
        if rc != 0:
            raise EtcdCliError("%s failed (rc=%s): %s" % (what, rc, error_summary(err or out)),
                               argv=argv, rc=rc, stderr=err)
        return out, err

    def _need_etcdctl(self):
        if not self.etcdctl:
            raise EtcdCliError("etcdctl was not found (set the etcdctl option or put it on PATH)")
        return self.etcdctl

    def endpoint_status(self, endpoint, cacert=None, cert=None, key=None, timeout=10, deadline=None):
        argv = endpoint_status_argv(self._need_etcdctl(), endpoint, cacert, cert, key, timeout)
        out = self.run(argv, "etcdctl endpoint status on %s" % endpoint, deadline)[0]
        return parse_endpoint_status(out)

    def member_list(self, endpoint, cacert=None, cert=None, key=None, timeout=10, deadline=None):
        argv = member_list_argv(self._need_etcdctl(), endpoint, cacert, cert, key, timeout)
        out = self.run(argv, "etcdctl member list on %s" % endpoint, deadline)[0]
        return parse_member_list(out)

    def cluster_status(self, endpoint, cacert=None, cert=None, key=None, timeout=10, deadline=None):
        """``(statuses, failures)`` of ``endpoint status --cluster``: a member that does not answer
        makes etcdctl exit 1 but the others' JSON is still printed; only output without a JSON list
        is an error."""
        argv = endpoint_status_argv(self._need_etcdctl(), endpoint, cacert, cert, key, timeout, cluster=True)
        what = "etcdctl endpoint status --cluster on %s" % endpoint
        rc, out, err = self._call(argv, what, deadline)
        try:
            statuses = parse_endpoint_statuses(out)
        except EtcdCliError:
            raise EtcdCliError("%s failed (rc=%s): %s" % (what, rc, error_summary(err or out)), argv=argv, rc=rc,
                               stderr=err)
        return statuses, parse_status_failures(err)

    def snapshot_save(self, endpoint, path, cacert=None, cert=None, key=None, dial_timeout=10, command_timeout=None,
                      deadline=None):
        argv = snapshot_save_argv(self._need_etcdctl(), endpoint, path, cacert, cert, key, dial_timeout,
                                  command_timeout)
        self.run(argv, "etcdctl snapshot save from %s" % endpoint, deadline)
        return argv

    def snapshot_status(self, path, timeout=None):
        """``(status dict, argv)`` for a snapshot file."""
        name, tool = self.offline_tool
        argv = snapshot_status_argv(tool, path)
        out = self.run(argv, "%s snapshot status %s" % (name, path), timeout)[0]
        return parse_snapshot_status(out), argv

    def restore_help(self, timeout=None):
        name, tool = self.offline_tool
        rc, out, err = self._call(restore_help_argv(tool), "%s snapshot restore --help" % name, timeout)
        text = (out or "") + (err or "")
        if "restore" not in text:
            raise EtcdCliError("%s snapshot restore --help printed no help (rc=%s)" % (name, rc))
        return text

    def tool_version(self, timeout=None, tool=None):
        """``(name, version or None)`` of the tool used for file operations (or of ``tool``:
        ``"etcdctl"``/``"etcdutl"``)."""
        if tool == "etcdctl":
            name, path = "etcdctl", self._need_etcdctl()
        else:
            name, path = self.offline_tool
        rc, out = self._call([path, "version"], "%s version" % name, timeout)[:2]
        return name, parse_tool_version(out) if rc == 0 else None

    def restore(self, argv, timeout=None):
        self.run(argv, "%s snapshot restore" % self.offline_tool[0], timeout)
