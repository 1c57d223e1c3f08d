# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""etcd_cli: parsers on outputs recorded from the real etcd 3.4.23 and 3.5.1 binaries
(tests/fixtures/etcd/README.md), the argv it builds, flag detection, and file checks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import hashlib
import os
import time

import pytest

import processes

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import etcd_cli

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                        "fixtures", "etcd")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


# -- flag detection -----------------------------------------------------------------------------


@pytest.mark.parametrize("name, supported", [
    ("3.4.23-etcdctl-snapshot-restore-help.txt", False),
    ("3.5.1-etcdctl-snapshot-restore-help.txt", False),
    ("3.5.1-etcdutl-snapshot-restore-help.txt", False),
    ("3.6-constructed-etcdutl-snapshot-restore-help.txt", True),
])
def test_revision_bump_detected_from_help(name, supported):
    text = fixture(name)
    assert etcd_cli.supports_revision_bump(text) is supported
    assert etcd_cli.restore_flags(text) == {"bump_revision": supported, "mark_compacted": supported}
    assert "--initial-cluster-token" in text  # a real restore help, not an error


def test_one_flag_alone_is_not_support():
    text = fixture("3.5.1-etcdutl-snapshot-restore-help.txt") + "\n      --bump-revision uint   How much\n"
    assert etcd_cli.restore_flags(text) == {"bump_revision": True, "mark_compacted": False}
    assert not etcd_cli.supports_revision_bump(text)
    # A longer flag that merely starts with the name does not count.
    assert not etcd_cli.restore_flags("--bump-revision-extra --mark-compacted-x")["bump_revision"]


# -- parsers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("version, member, cluster", [
    ("3.4.23", 8822122131420432550, 9949561601757807150),
    ("3.5.1", 6470547672890169057, 5640665802031003262),
])
def test_endpoint_status(version, member, cluster):
    status = etcd_cli.parse_endpoint_status(fixture("%s-endpoint-status.json" % version))
    assert status["member_id"] == "%x" % member and status["cluster_id"] == "%x" % cluster
    assert status["revision"] == 6 and status["raft_term"] == 2 and status["version"] == version
    assert status["is_leader"] is True and status["db_size"] > 0


@pytest.mark.parametrize("version", ["3.4.23", "3.5.1"])
def test_endpoint_status_unreachable_is_an_error(version):
    with pytest.raises(etcd_cli.EtcdCliError, match="0 entries"):
        etcd_cli.parse_endpoint_status(fixture("%s-endpoint-status-unreachable.txt" % version))


def test_endpoint_status_wants_exactly_one():
    one = fixture("3.5.1-endpoint-status.json").strip()
    with pytest.raises(etcd_cli.EtcdCliError, match="2 entries"):
        etcd_cli.parse_endpoint_status("[%s,%s]" % (one[1:-1], one[1:-1]))
    with pytest.raises(etcd_cli.EtcdCliError):
        etcd_cli.parse_endpoint_status("Error: context deadline exceeded")


@pytest.mark.parametrize("name, expected", [
    ("3.4.23-etcdctl-snapshot-status.json", {"hash": 440993973, "revision": 6, "totalKey": 9, "totalSize": 20480}),
    ("3.5.1-etcdctl-snapshot-status.json", {"hash": 2340733423, "revision": 6, "totalKey": 11, "totalSize": 28672}),
    ("3.5.1-etcdutl-snapshot-status.json", {"hash": 2340733423, "revision": 6, "totalKey": 11, "totalSize": 28672}),
])
def test_snapshot_status(name, expected):
    assert etcd_cli.parse_snapshot_status(fixture(name)) == expected


def test_snapshot_status_36_version_field_and_bad_values():
    text = '{"hash":3474280699,"revision":3,"totalKey":3,"totalSize":24576,"version":""}'  # etcdutl README form
    assert etcd_cli.parse_snapshot_status(text)["version"] == ""
    with pytest.raises(etcd_cli.EtcdCliError):
        etcd_cli.parse_snapshot_status('{"hash":"x","revision":3,"totalKey":3,"totalSize":1}')
    with pytest.raises(etcd_cli.EtcdCliError):
        etcd_cli.parse_snapshot_status(fixture("3.5.1-etcdutl-snapshot-status-trunc.txt"))


def test_status_alone_misses_damage():
    """Why the trailer check exists: recorded outputs of status on damaged files that look fine."""
    etcd_cli.parse_snapshot_status(fixture("3.4.23-etcdctl-snapshot-status-trunc.txt"))
    etcd_cli.parse_snapshot_status(fixture("3.5.1-etcdutl-snapshot-status-corrupt.txt"))


@pytest.mark.parametrize("name, version", [("3.4.23-etcdctl-version.txt", "3.4.23"),
                                           ("3.5.1-etcdutl-version.txt", "3.5.1"),
                                           ("3.5.1-etcdctl-version.txt", "3.5.1")])
def test_tool_version(name, version):
    assert etcd_cli.parse_tool_version(fixture(name)) == version


def test_error_summary_keeps_error_lines_only():
    assert etcd_cli.error_summary(fixture("3.5.1-etcdutl-snapshot-restore-exists.txt")).startswith("Error: data-dir")
    crash = etcd_cli.error_summary(fixture("3.5.1-etcdutl-snapshot-status-trunc.txt"))
    assert "fatal error: fault" in crash and "goroutine" not in crash
    assert etcd_cli.error_summary("") == "(no error output)"


# -- argv ---------------------------------------------------------------------------------------


def test_argv():
    assert etcd_cli.endpoint_status_argv("etcdctl", "https://10.0.0.1:2379", "/ca", "/c", "/k", 5) == [
        "etcdctl", "--endpoints=https://10.0.0.1:2379", "--cacert=/ca", "--cert=/c", "--key=/k",
        "--dial-timeout=5s", "--command-timeout=5s", "endpoint", "status", "-w", "json"]
    assert etcd_cli.snapshot_save_argv("etcdctl", "http://127.0.0.1:2379", "/b/s.db") == [
        "etcdctl", "--endpoints=http://127.0.0.1:2379", "--dial-timeout=10s", "snapshot", "save", "/b/s.db"]
    assert etcd_cli.snapshot_save_argv("etcdctl", "http://127.0.0.1:2379", "/b/s.db", command_timeout=600) == [
        "etcdctl", "--endpoints=http://127.0.0.1:2379", "--dial-timeout=10s", "--command-timeout=600s",
        "snapshot", "save", "/b/s.db"]
    assert etcd_cli.endpoint_status_argv("etcdctl", "http://a:2379", timeout=3, cluster=True)[-5:] == [
        "endpoint", "status", "--cluster", "-w", "json"]
    assert etcd_cli.member_list_argv("etcdctl", "http://a:2379", timeout=3)[-4:] == ["member", "list", "-w", "json"]
    assert etcd_cli.snapshot_status_argv("etcdutl", "/b/s.db") == ["etcdutl", "snapshot", "status", "/b/s.db", "-w", "json"]


@pytest.mark.parametrize("endpoint", [["a", "b"], "http://a:2379,http://b:2379", "", "http://a:2379 http://b", []])
def test_one_endpoint_only(endpoint):
    with pytest.raises(ValueError):
        etcd_cli.check_single_endpoint(endpoint)
    assert etcd_cli.check_single_endpoint(["http://a:2379"]) == "http://a:2379"


def test_restore_argv_with_and_without_bump():
    cluster = etcd_cli.initial_cluster([{"name": "m1", "peer_url": "https://10.0.0.1:2380"},
                                        ("m2", "https://10.0.0.2:2380")])
    assert cluster == "m1=https://10.0.0.1:2380,m2=https://10.0.0.2:2380"
    base = ["etcdutl", "snapshot", "restore", "/s.db", "--data-dir=/new", "--name=m1",
            "--initial-cluster=" + cluster, "--initial-cluster-token=tok",
            "--initial-advertise-peer-urls=https://10.0.0.1:2380"]
    args = ("etcdutl", "/s.db", "/new", "m1", cluster, "tok", ["https://10.0.0.1:2380"])
    assert etcd_cli.snapshot_restore_argv(*args) == base
    assert etcd_cli.snapshot_restore_argv(*args, bump_revision=1000000000, supports_bump=True) == base + [
        "--bump-revision=1000000000", "--mark-compacted"]
    with pytest.raises(ValueError, match="does not support"):
        etcd_cli.snapshot_restore_argv(*args, bump_revision=1000000000, supports_bump=False)
    with pytest.raises(ValueError):
        etcd_cli.initial_cluster([("bad name", "http://a:2380")])
    with pytest.raises(ValueError):
        etcd_cli.parse_initial_cluster("m1=http://a:2380,oops")


def test_argv_string_quotes_for_humans():
    assert etcd_cli.argv_string(["etcdutl", "snapshot", "status", "/a b/s.db"]) == "etcdutl snapshot status '/a b/s.db'"


# -- files --------------------------------------------------------------------------------------


def snapshot_like(body):
    """Bytes shaped as ``snapshot save`` writes them: 512-byte pages, then sha256 of the pages."""
    return body + hashlib.sha256(body).digest()


def test_file_digest_trailer(tmp_path):
    good = snapshot_like(os.urandom(4096 * 3))
    cases = {"ok": good, "missing": good[:len(good) // 2],
             "mismatch": good[:100] + bytes([good[100] ^ 1]) + good[101:]}
    for expected, data in cases.items():
        path = tmp_path / expected
        path.write_bytes(data)
        digest = etcd_cli.file_digest(str(path))
        assert digest["trailer"] == expected
        assert digest["sha256"] == hashlib.sha256(data).hexdigest() and digest["size"] == len(data)
        assert (etcd_cli.trailer_problem(digest) is None) is (expected == "ok")


def test_file_digest_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(etcd_cli, "_CHUNK", 7)  # the trailer straddles reads
    data = snapshot_like(os.urandom(1024))
    (tmp_path / "s").write_bytes(data)
    assert etcd_cli.file_digest(str(tmp_path / "s"))["trailer"] == "ok"


def test_names_retention_and_durations():
    when = datetime.datetime(2026, 11, 30, 8, 58, 0, tzinfo=datetime.timezone.utc)
    name = etcd_cli.snapshot_filename("etcd-snapshot", when, 4711)
    assert name == "etcd-snapshot-20261130T085800Z-rev4711.db"
    assert etcd_cli.parse_snapshot_filename(name, "etcd-snapshot") == ("20261130T085800Z", 4711)
    assert etcd_cli.parse_snapshot_filename(name + ".corrupt", "etcd-snapshot") is None
    assert etcd_cli.snapshot_timestamp("/x/" + name + ".corrupt") == "20261130T085800Z"
    names = ["etcd-snapshot-2026010%dT000000Z-rev%d.db" % (i, i) for i in range(1, 6)] + ["other.db", name + ".corrupt"]
    assert etcd_cli.prune_candidates(names, "etcd-snapshot", 2, protect=[names[4]]) == [names[2], names[1], names[0]]
    assert etcd_cli.prune_candidates(names, "etcd-snapshot", 0) == []
    assert [etcd_cli.parse_duration(v) for v in (3600, "90s", "30m", "2h", "7d", "", None, "0")] == [
        3600, 90, 1800, 7200, 604800, 0, 0, 0]
    with pytest.raises(ValueError):
        etcd_cli.parse_duration("1w")


class FakeRun:
    def __init__(self, outputs):
        self.outputs = outputs
        self.calls = []

    def __call__(self, argv, env, timeout=None):
        self.calls.append((argv, env, timeout))
        return self.outputs.pop(0)


def test_runner_uses_etcdutl_and_api3():
    run = FakeRun([(0, fixture("3.5.1-etcdutl-snapshot-status.json"), ""),
                   (0, fixture("3.6-constructed-etcdutl-snapshot-restore-help.txt"), "")])
    cli = etcd_cli.EtcdCli(run, etcdctl="/bin/etcdctl", etcdutl="/bin/etcdutl")
    status, argv = cli.snapshot_status("/s.db")
    assert status["revision"] == 6 and argv[0] == "/bin/etcdutl"
    assert etcd_cli.supports_revision_bump(cli.restore_help())
    assert all(call[1]["ETCDCTL_API"] == "3" and call[1]["LC_ALL"] == "C" for call in run.calls)


def test_runner_falls_back_to_etcdctl_and_reports_errors():
    run = FakeRun([(2, "", fixture("3.4.23-etcdctl-snapshot-status-corrupt.txt"))])
    cli = etcd_cli.EtcdCli(run, etcdctl="/usr/bin/etcdctl")
    assert cli.offline_tool == ("etcdctl", "/usr/bin/etcdctl")
    with pytest.raises(etcd_cli.EtcdCliError, match="panic: freepages"):
        cli.snapshot_status("/s.db")
    with pytest.raises(etcd_cli.EtcdCliError, match="etcdctl was not found"):
        etcd_cli.EtcdCli(run, etcdutl="/x").endpoint_status("http://a:2379")


# -- member selection (recorded 3-member outputs of the real 3.4.23 and 3.5.1) -------------------------


def cluster(version, stopped=False):
    suffix = "-stopped" if stopped else ""
    text = fixture("%s-endpoint-status-cluster%s.txt" % (version, suffix))
    return (etcd_cli.parse_member_list(fixture("%s-member-list%s.json" % (version, suffix))),
            etcd_cli.parse_endpoint_statuses(text), etcd_cli.parse_status_failures(text))


def by_name(selection, name):
    return [m for m in selection["members"] if m["name"] == name][0]


@pytest.mark.parametrize("version", ["3.4.23", "3.5.1"])
def test_healthy_cluster_prefers_the_configured_member(version):
    members, statuses, failures = cluster(version)
    assert failures == {} and len(statuses) == 3
    leader = statuses[0]["leader"]
    follower = [m for m in members if m["member_id"] != leader][0]
    chosen = etcd_cli.select_member(members, statuses, failures, preferred_member_id=follower["member_id"])
    assert chosen["chosen"]["member_id"] == follower["member_id"] and chosen["leader"] == leader
    assert chosen["reason"] == "the configured endpoint's member: healthy, lag 0 <= 1000"
    assert all(m["healthy"] and m["lag"] == 0 for m in chosen["members"])
    as_leader = etcd_cli.select_member(members, statuses, failures, preferred_member_id=leader)
    assert as_leader["chosen"]["is_leader"]  # the configured member is used even when it leads


def lag(statuses, member_id, entries):
    result = []
    for status in statuses:
        status = dict(status)
        if status["member_id"] == member_id:
            status["raft_index"] -= entries
            status["raft_applied_index"] -= entries
        result.append(status)
    return result


@pytest.mark.parametrize("version", ["3.4.23", "3.5.1"])
def test_a_lagging_member_is_refused(version):
    members, statuses, failures = cluster(version)
    leader = statuses[0]["leader"]
    first, second = [m["member_id"] for m in members if m["member_id"] != leader]
    lagged = lag(statuses, first, 10)
    selection = etcd_cli.select_member(members, lagged, failures, preferred_member_id=first, max_lag=5)
    row = [m for m in selection["members"] if m["member_id"] == first][0]
    assert row["lag"] == 10 and not row["healthy"] and "more than max_raft_lag 5" in row["problems"][0]
    assert selection["chosen"]["member_id"] == second and not selection["chosen"]["is_leader"]
    assert "is refused (lags the leader by 10 raft entries" in selection["reason"]
    # Within the bound it is fine.
    assert etcd_cli.select_member(members, lagged, failures, preferred_member_id=first,
                                  max_lag=10)["chosen"]["member_id"] == first
    # Both followers lag: the leader alone is no quorum of healthy members.
    with pytest.raises(etcd_cli.EtcdCliError, match="only 1 of 3 voting members are healthy") as info:
        etcd_cli.select_member(members, lag(lagged, second, 10), failures, preferred_member_id=first, max_lag=5)
    assert info.value.selection["chosen"] is None and len(info.value.selection["members"]) == 3


def test_a_stopped_follower_is_recorded_and_skipped():
    members, statuses, failures = cluster("3.5.1", stopped=True)  # m3 (a follower) was SIGSTOPped
    assert list(failures.values()) == ["context deadline exceeded"] and len(statuses) == 2
    m3 = [m for m in members if m["name"] == "m3"][0]
    selection = etcd_cli.select_member(members, statuses, failures, preferred_member_id=m3["member_id"])
    assert by_name(selection, "m3")["problems"] == ["did not answer endpoint status: context deadline exceeded"]
    assert selection["chosen"]["name"] == "m1" and not selection["chosen"]["is_leader"]


def test_a_stopped_leader_means_no_snapshot():
    members, statuses, failures = cluster("3.4.23", stopped=True)  # m3, the leader, was SIGSTOPped
    with pytest.raises(etcd_cli.EtcdCliError, match="the leader .* does not answer"):
        etcd_cli.select_member(members, statuses, failures, preferred_member_id=members[0]["member_id"])


def test_alarms_learners_other_leaders_and_terms_are_refused():
    members, statuses, failures = cluster("3.5.1")
    leader = statuses[0]["leader"]
    first, second = [m["member_id"] for m in members if m["member_id"] != leader]

    def changed(member_id, **fields):
        return [dict(s, **fields) if s["member_id"] == member_id else s for s in statuses]

    cases = [(changed(first, errors=["memberID:1 alarm:NOSPACE "]), "reports errors: memberID:1 alarm:NOSPACE"),
             (changed(first, is_learner=True), "is a learner"),
             (changed(first, leader=None), "knows no leader"),
             (changed(first, leader=second), "sees leader %s" % second),
             (changed(first, raft_term=9), "raft term 9, the leader's 2")]
    for view, problem in cases:
        selection = etcd_cli.select_member(members, view, failures, preferred_member_id=first)
        row = [m for m in selection["members"] if m["member_id"] == first][0]
        assert not row["healthy"] and row["problems"][0].startswith(problem), (problem, row)
        assert selection["chosen"]["member_id"] == second


def test_status_failures_and_bad_member_lists():
    assert etcd_cli.parse_status_failures(fixture("3.4.23-endpoint-status-cluster-stopped.txt")) == {
        "http://127.0.0.1:48979": "context deadline exceeded"}
    with pytest.raises(etcd_cli.EtcdCliError, match="no members JSON"):
        etcd_cli.parse_member_list("Error: context deadline exceeded")
    with pytest.raises(etcd_cli.EtcdCliError, match="the member list is empty"):
        etcd_cli.select_member([], [], {})


def test_major_minor():
    assert [etcd_cli.major_minor(v) for v in ("3.5.1", "v3.4.23", "3.6.0-rc.1", "", None, "x")] == [
        "3.5", "3.4", "3.6", None, None, None]


# -- deadlines, through the real command runner and fake etcdctl scripts -----------------------------


def script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_a_hanging_etcdctl_and_its_child_are_killed_at_the_deadline(tmp_path):
    pidfile = tmp_path / "child.pid"
    hang = script(tmp_path, "etcdctl", "sleep 300 &\necho $! > %s\nwait\n" % pidfile)
    cli = etcd_cli.EtcdCli.with_deadline(1.5, etcdctl=hang)
    started = time.monotonic()
    with pytest.raises(etcd_cli.EtcdTimeout) as info:
        cli.endpoint_status("http://127.0.0.1:2379")
    assert time.monotonic() - started < 10
    message = str(info.value)
    assert message.startswith("etcdctl endpoint status on http://127.0.0.1:2379 did not finish within its deadline "
                              "of 1.5 s") and hang in message and "process group killed" in message
    child = int(pidfile.read_text())
    assert processes.gone(child, 5), "child %d survived" % child


def test_a_slow_etcdctl_within_the_deadline_is_fine(tmp_path):
    slow = script(tmp_path, "etcdctl", "sleep 1\ncat %s\n" % os.path.join(FIXTURES, "3.5.1-endpoint-status-cluster.txt"))
    statuses, failures = etcd_cli.EtcdCli.with_deadline(5, etcdctl=slow).cluster_status("http://127.0.0.1:2379")
    assert len(statuses) == 3 and failures == {}


def test_garbage_output_is_bounded_and_named(tmp_path):
    garbage = script(tmp_path, "etcdctl", "head -c 3000000 /dev/zero | tr '\\0' 'x'\n")
    cli = etcd_cli.EtcdCli.with_deadline(20, etcdctl=garbage, max_output=65536)
    with pytest.raises(etcd_cli.EtcdCliError) as info:
        cli.member_list("http://127.0.0.1:2379")
    assert str(info.value).startswith("member list printed no members JSON") and len(str(info.value)) < 400
    assert cli._run.results[-1].truncated and len(cli._run.results[-1].stdout) == 65536


def test_a_member_down_is_not_an_error_of_the_cluster_status(tmp_path):
    text = os.path.join(FIXTURES, "3.5.1-endpoint-status-cluster-stopped.txt")
    partial = script(tmp_path, "etcdctl", "head -n1 %s\ntail -n +2 %s >&2\nexit 1\n" % (text, text))
    statuses, failures = etcd_cli.EtcdCli.with_deadline(5, etcdctl=partial).cluster_status("http://127.0.0.1:2379")
    assert len(statuses) == 2 and list(failures) == ["http://127.0.0.1:53933"]
    broken = script(tmp_path, "etcdctl2", "echo 'Error: context deadline exceeded' >&2\nexit 1\n")
    with pytest.raises(etcd_cli.EtcdCliError, match="rc=1.*Error: context deadline exceeded"):
        etcd_cli.EtcdCli.with_deadline(5, etcdctl=broken).cluster_status("http://127.0.0.1:2379")


# -- the manifest: retention prunes only what this collection recorded -------------------------------


def test_record_and_prune_only_recorded_files(tmp_path):
    names = ["etcd-snapshot-2026010%dT000000Z-rev%d.db" % (i, i) for i in range(1, 5)]
    for name in names:
        (tmp_path / name).write_bytes(b"x" * 10)
        (tmp_path / (name + ".meta.json")).write_text("{}")
    digest = {"sha256": "0" * 64, "size": 10}
    for name in names[:3]:  # names[3] was never recorded
        etcd_cli.record_and_prune(str(tmp_path), etcd_cli.manifest_entry(str(tmp_path / name), digest, "t", 1, "m"),
                                  "etcd-snapshot", 0)
    manifest_path = tmp_path / etcd_cli.MANIFEST_NAME
    assert os.stat(str(manifest_path)).st_mode & 0o777 == 0o600
    new = "etcd-snapshot-20260201T000000Z-rev9.db"
    (tmp_path / new).write_bytes(b"y" * 10)
    entry = etcd_cli.manifest_entry(str(tmp_path / new), digest, "t", 9, "m")
    dry = etcd_cli.record_and_prune(str(tmp_path), entry, "etcd-snapshot", 2, dry_run=True)
    assert dry == ([str(tmp_path / names[1]), str(tmp_path / names[0])], [])
    assert all((tmp_path / n).exists() for n in names)
    pruned, skipped = etcd_cli.record_and_prune(str(tmp_path), entry, "etcd-snapshot", 2)
    assert pruned == [str(tmp_path / names[1]), str(tmp_path / names[0])] and skipped == []
    assert sorted(os.listdir(str(tmp_path))) == sorted(
        [names[2], names[2] + ".meta.json", names[3], names[3] + ".meta.json", new, etcd_cli.MANIFEST_NAME,
         etcd_cli.MANIFEST_LOCK])
    assert [e["name"] for e in etcd_cli.read_manifest(str(tmp_path))["snapshots"]] == [names[2], new]
    manifest_path.write_text('{"kind": "something else", "snapshots": []}')
    with pytest.raises(etcd_cli.EtcdCliError, match="is not a gpufleet.dra_gate/etcd-snapshot-manifest"):
        etcd_cli.record_and_prune(str(tmp_path), None, "etcd-snapshot", 1)
    assert (tmp_path / names[2]).exists()
