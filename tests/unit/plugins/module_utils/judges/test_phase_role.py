# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""judges/phase_role.py: node names, answered hosts, finished hosts, step records and the gate's message, on
recorded task results (the shapes Ansible registers)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import phase_role as pr

HOSTVARS = {"gpu-1": {"dra_gate_node_name": "node-a"}, "gpu-2": {}, "gpu-3": {"dra_gate_node_name": ""}}


def test_node_names_one_rule():
    assert pr.node_names(["gpu-1", "gpu-2", "gpu-3"], HOSTVARS) == ["node-a", "gpu-2", "gpu-3"]
    assert pr.node_names(["gpu-1", "gpu-2"], HOSTVARS, by_host=True) == {"gpu-1": "node-a", "gpu-2": "gpu-2"}
    assert pr.node_names(["gpu-9"], HOSTVARS) == ["gpu-9"]  # a host without variables: its inventory name
    assert pr.node_name("gpu-1", None) == "gpu-1"
    with pytest.raises(pr.JudgeError, match="dra_gate_node_name of gpu-1: expected a node name"):
        pr.node_names(["gpu-1"], {"gpu-1": {"dra_gate_node_name": 7}})
    with pytest.raises(pr.JudgeError, match="hosts: expected a list"):
        pr.node_names("gpu-1", HOSTVARS)
    with pytest.raises(pr.JudgeError, match="hosts: entry 1"):
        pr.node_names(["gpu-1", ""], HOSTVARS)


def test_host_failure_ladder():
    assert pr.host_failure({"changed": False, "ansible_facts": {}}) == ""
    assert pr.host_failure({"unreachable": True, "msg": "ssh: timed out"}) == "unreachable: ssh: timed out"
    assert pr.host_failure({"unreachable": True}) == "unreachable: no answer"
    assert pr.host_failure({"failed": True, "msg": "sysfs read hung"}) == "failed: sysfs read hung"
    assert pr.host_failure({"failed": True}) == "failed: the read failed"
    assert pr.host_failure({"unreachable": True, "failed": True, "msg": "x"}) == "unreachable: x"
    with pytest.raises(pr.JudgeError, match="result: expected a task result"):
        pr.host_failure("failed")


def test_answered():
    out = pr.answered(["a", "b", "c"], {"a": "", "b": "failed: x"})
    assert out == {"answered_hosts": ["a"], "failed_hosts": {"b": "failed: x", "c": pr.LEFT_THE_PLAY}}
    assert pr.answered([], {}) == {"answered_hosts": [], "failed_hosts": {}}


def test_finished_hosts():
    assert pr.finished_hosts(None, ["a", "b"]) == ["a", "b"]  # the phase read nothing per host
    assert pr.finished_hosts(["a", "b", "c"], ["c", "a"]) == ["a", "c"]  # b answered, then left the play
    assert pr.finished_hosts([], ["a"]) == []


def test_step_record():
    ok = {"changed": True, "started_at": "2026-01-01T00:00:00.000000Z", "finished_at": "2026-01-01T00:00:01.000000Z",
          "duration_seconds": 1.0}
    assert pr.step_record(ok, "configure", detail="written") == {
        "name": "configure", "ok": True, "detail": "written", "started_at": ok["started_at"],
        "finished_at": ok["finished_at"], "duration_seconds": 1.0}
    failed = pr.step_record({"failed": True, "msg": "refused: 1.6"}, "restart", phase="revert", started_at="s", finished_at="f")
    assert failed == {"name": "restart", "phase": "revert", "ok": False, "detail": "refused: 1.6", "started_at": "s",
                      "finished_at": "f", "duration_seconds": None}
    assert pr.step_record(None, "x")["ok"] is True
    with pytest.raises(pr.JudgeError, match="name: expected"):
        pr.step_record({}, "")


def test_step_fields():
    assert pr.step_fields({"skipped": True, "changed": False, "false_condition": "x"}) == {"skipped": True}
    assert pr.step_fields(None) == {}
    fields = pr.step_fields({"failed": True, "msg": "m", "started_at": "s", "other": 1})
    assert fields == {"failed": True, "msg": "m", "started_at": "s"}


EVIDENCE = {"verdict": "block", "gate": {"failed": True, "reason": "verdict block reaches fail_on block"},
            "findings": [{"severity": "block", "subject": "node gpu-2"}, {"severity": "warn", "subject": "node gpu-1"},
                         {"severity": "block", "subject": "node gpu-2"}, {"severity": "block", "subject": "pod a/b"}],
            "path": "/e/run/drain-1.json", "attempt": 1, "summary_path": "/e/run/summary.md"}


def test_gate_message_ladder():
    assert pr.gate_message(EVIDENCE, "drain", "block") == (
        "Drain verdict BLOCK (fail_on block): verdict block reaches fail_on block. Blocking finding(s) on: node gpu-2, pod a/b. "
        "Evidence /e/run/drain-1.json (attempt 1); summary /e/run/summary.md.")
    passed = dict(EVIDENCE, verdict="pass", gate={"failed": False, "reason": "pass"}, findings=[])
    assert pr.gate_message(passed, "preflight", "block", check_mode=True) == (
        "Preflight verdict PASS. Evidence /e/run/drain-1.json (attempt 1); summary /e/run/summary.md (check mode: not written).")
    warned = dict(passed, verdict="not_needed", gate={"failed": False, "reason": "rollback not needed"})
    assert pr.gate_message(warned, "rollback", "block").startswith("Rollback verdict NOT_NEEDED: rollback not needed. Evidence")
    no_blocks = dict(EVIDENCE, findings=[])
    assert "Blocking finding(s) on: none." in pr.gate_message(no_blocks, "drain", "warn")


def test_checked_mapping_and_list():
    assert pr.checked_mapping(None, "f") == {} and pr.checked_mapping({"a": 1}, "f") == {"a": 1}
    assert pr.checked_list(None, "f") == [] and pr.checked_list(("a",), "f") == ["a"]
    with pytest.raises(pr.JudgeError, match="^f: expected a mapping, got list"):
        pr.checked_mapping([], "f")
    for bad in ("abc", {"a": 1}, 3):
        with pytest.raises(pr.JudgeError, match="^g: expected a list"):
            pr.checked_list(bad, "g")
