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

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils import etcd_cli

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

    def __call__(self, argv, env):
        self.calls.append((argv, env))
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
