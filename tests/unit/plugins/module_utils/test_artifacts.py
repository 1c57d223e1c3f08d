# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the artifact index logic: entry validation, merge by path, the verification plan and
its judgement, and the etcd snapshot status check on etcd's real outputs (tests/fixtures/etcd)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import artifacts as art

ETCD_FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "etcd")
SHA = "a" * 64
NOW = "2026-11-30T08:00:00Z"


def fixture(name):
    with open(os.path.join(ETCD_FIXTURES, name)) as handle:
        return handle.read()


def entry(path="/r/artifacts/a.json", kind="crd", **extra):
    result = {"path": path, "kind": kind, "source": "GET /apis/x", "sha256": SHA, "size": 3}
    result.update(extra)
    return result


def test_normalize_fills_host_and_time_and_keeps_extra_keys():
    got = art.normalize_entry(entry(sha256=SHA.upper(), member_id="c3af"), 0, NOW)
    assert got["host"] == "localhost" and got["recorded_at"] == NOW and got["sha256"] == SHA
    assert got["member_id"] == "c3af"


@pytest.mark.parametrize("bad, field", [
    ({"path": "relative/a.json"}, "artifacts[0].path"),
    ({"kind": "Has Spaces"}, "artifacts[0].kind"),
    ({"source": ""}, "artifacts[0].source"),
    ({"sha256": "abc"}, "artifacts[0].sha256"),
    ({"size": -1}, "artifacts[0].size"),
    ({"size": True}, "artifacts[0].size"),
    ({"verify": ["sha256sum"]}, "artifacts[0].verify"),
])
def test_normalize_names_the_bad_field(bad, field):
    with pytest.raises(art.ArtifactError, match=field.replace("[", r"\[").replace("]", r"\]")):
        art.normalize_entry(entry(**bad), 0, NOW)


def test_normalize_rejects_non_dicts_and_bad_skipped_items():
    with pytest.raises(art.ArtifactError, match=r"artifacts\[2\]"):
        art.normalize_entry("x", 2, NOW)
    with pytest.raises(art.ArtifactError, match=r"skipped\[0\].reason"):
        art.normalize_skipped({"kind": "helm-release", "source": "ns/r"}, 0, NOW)


def test_complete_entry_fills_measured_values_and_reports_mismatches():
    got, problems = art.complete_entry({"path": "/a", "kind": "crd", "source": "s"},
                                       {"exists": True, "is_file": True, "size": 3, "sha256": SHA})
    assert problems == [] and got["sha256"] == SHA and got["size"] == 3 and SHA in got["verify"]
    _got, problems = art.complete_entry(entry(path="/a"), {"exists": True, "is_file": True, "size": 4, "sha256": "b" * 64})
    assert [p.split(" ", maxsplit=1)[0] for p in problems] == ["size", "sha256"]
    assert art.complete_entry(entry(path="/a"), {"exists": False})[1] == ["missing: /a does not exist"]


def test_default_verify_is_a_working_shell_check(tmp_path):
    path = tmp_path / "it's here.json"
    path.write_bytes(b"{}\n")
    import hashlib
    sha = hashlib.sha256(b"{}\n").hexdigest()
    assert subprocess.run(art.default_verify(str(path), sha), shell=True, check=False).returncode == 0
    path.write_bytes(b"{} \n")
    assert subprocess.run(art.default_verify(str(path), sha), shell=True, check=False,
                          capture_output=True).returncode != 0


def test_merge_adds_by_path_and_is_idempotent():
    first, added, replaced = art.merge(None, "run", [art.normalize_entry(entry(), 0, NOW)], [], NOW)
    assert added == ["/r/artifacts/a.json"] and replaced == [] and first["updated_at"] == NOW
    later = "2026-11-30T09:00:00Z"
    again, added, _replaced = art.merge(first, "run", [art.normalize_entry(entry(), 0, later)], [], later)
    assert added == [] and again == first  # same content: the first recorded_at stays
    more, added, _replaced = art.merge(first, "run", [art.normalize_entry(entry(path="/r/b.json"), 0, later)], [], later)
    assert added == ["/r/b.json"] and [e["path"] for e in more["artifacts"]] == ["/r/artifacts/a.json", "/r/b.json"]


def test_merge_refuses_other_content_under_an_indexed_path_unless_replace():
    first, _added, _replaced = art.merge(None, "run", [art.normalize_entry(entry(), 0, NOW)], [], NOW)
    changed = art.normalize_entry(entry(sha256="b" * 64), 0, NOW)
    with pytest.raises(art.ArtifactError, match="/r/artifacts/a.json .*never rewritten|never rewritten.*a.json"):
        art.merge(first, "run", [changed], [], NOW)
    new, _added, replaced = art.merge(first, "run", [changed], [], NOW, on_conflict="replace")
    assert replaced == ["/r/artifacts/a.json"] and new["artifacts"][0]["sha256"] == "b" * 64


def test_merge_skipped_by_kind_and_source():
    item = art.normalize_skipped({"kind": "helm-release", "source": "ns/r", "reason": "absent"}, 0, NOW)
    index, _added, _replaced = art.merge(None, "run", [], [item, dict(item)], NOW)
    assert len(index["skipped"]) == 1
    other = dict(item, reason="skipped by configuration")
    index, _added, _replaced = art.merge(index, "run", [], [other], NOW)
    assert [s["reason"] for s in index["skipped"]] == ["skipped by configuration"]


def test_load_index_refuses_other_documents():
    assert art.load_index(None, "run")["artifacts"] == []
    with pytest.raises(art.ArtifactError, match="not JSON"):
        art.load_index("{", "run")
    with pytest.raises(art.ArtifactError, match="schema"):
        art.load_index(json.dumps({"schema": "gpufleet.dra_gate/evidence-index"}), "run")


def test_verification_plan_checks_every_entry_and_flags_what_cannot_be_checked_here():
    index = {"artifacts": [entry(host="localhost"), entry(path="/r/s.db", kind="etcd-snapshot"),
                           entry(path="/r/remote", host="etcd-1"), entry(path="/r/no-hash", sha256=None)]}
    plan = art.verification_plan(index)
    assert [p["checks"][-1] for p in plan[:2]] == ["private", "etcd-status"]
    assert plan[0]["problem"] is None and plan[1]["problem"] is None
    assert "etcd-1" in plan[2]["problem"] and "sha256" in plan[3]["problem"]
    assert art.verification_plan(index, local_hosts=["etcd-1"])[2]["problem"] is None


def test_judge():
    good = {"exists": True, "is_file": True, "size": 3, "sha256": SHA, "mode": 0o600}
    assert art.judge(entry(), good) == []
    assert art.judge(entry(), {"exists": False}) == ["missing: the file does not exist"]
    problems = art.judge(entry(), dict(good, size=4, sha256="b" * 64, mode=0o644))
    assert [p.split(" ", maxsplit=1)[0] for p in problems] == ["size", "sha256", "mode"]


@pytest.mark.parametrize("name, revision", [
    ("3.5.1-etcdutl-snapshot-status.json", 6),
    ("3.4.23-etcdctl-snapshot-status.json", 6),
])
def test_etcd_status_on_real_outputs(name, revision):
    status = art.parse_etcd_status(fixture(name))
    assert status["revision"] == revision and set(status) == set(art.ETCD_STATUS_FIELDS)
    snapshot = entry(kind="etcd-snapshot", revision=revision, status={"hash": status["hash"]})
    assert art.judge_etcd_status(snapshot, 0, fixture(name), "") == []
    assert "revision mismatch" in art.judge_etcd_status(dict(snapshot, revision=7), 0, fixture(name), "")[0]


def test_etcd_status_refusals():
    assert art.etcd_status_argv("/usr/bin/etcdutl", "/r/s.db") == ["/usr/bin/etcdutl", "snapshot", "status", "/r/s.db", "-w", "json"]
    assert "failed (rc 1)" in art.judge_etcd_status(entry(), 1, "", "Error: snapshot file integrity check failed")[0]
    assert "no status" in art.judge_etcd_status(entry(), 0, "not json", "")[0]
    assert art.recorded_etcd_status(entry()) == {}


def test_summarize_and_render():
    index = {"artifacts": [entry(), entry(path="/b", kind="cdi-spec", size=10)],
             "skipped": [{"kind": "etcd-snapshot", "source": "inventory group etcd", "reason": "no hosts", "recorded_at": NOW}]}
    summary = art.summarize(index)
    assert summary == {"artifact_count": 2, "by_kind": {"crd": 1, "cdi-spec": 1}, "total_bytes": 13,
                       "skipped": [{"kind": "etcd-snapshot", "source": "inventory group etcd", "reason": "no hosts"}]}
    text = art.render_markdown(summary, False, [{"path": "/b", "problems": ["sha256 mismatch"]}], "/r/index.json")
    assert "FAILED verification" in text and "not passed" in text and "BAD `/b`: sha256 mismatch" in text
