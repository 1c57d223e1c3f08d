# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""judges/containerd_cdi_role.py on recorded containerd changes: the configure outcome ladder (refused, unchanged,
would change in check mode, pending a restart), a restart by command or systemd (and its failures), the restore and
the revert's outcome (reverted or failed)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import containerd_cdi_role as cc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.phase_role import JudgeError

START = {"host": "gpu-1", "check_mode": False, "started_at": "s0", "outcome": "pending", "steps": []}
WRITTEN = {"changed": True, "containerd_version": "2.0.4", "method": "drop-in", "target": "/etc/containerd/conf.d/cdi.toml",
           "reason": "enable_cdi off", "backup": {"path": "/b", "source": "/etc/containerd/config.toml"},
           "restore": {"target": "/etc/containerd/conf.d/cdi.toml", "backup": None},
           "started_at": "s1", "finished_at": "f1", "duration_seconds": 0.2}


def test_configured_ladder():
    refused = cc.configured(START, {"failed": True, "msg": "containerd 1.6 has no CDI drop-in", "containerd_version": "1.6.9"})
    assert refused["result"]["outcome"] == "refused" and not refused["apply"] and refused["finish"]
    assert refused["failure"] == "containerd_cdi: refused: containerd 1.6 has no CDI drop-in"
    assert refused["result"]["steps"][0]["ok"] is False and refused["result"]["containerd_version"] == "1.6.9"
    unchanged = cc.configured(START, {"changed": False, "reason": "already on", "containerd_version": "2.0.4"})
    assert unchanged["result"]["outcome"] == "unchanged" and unchanged["finish"] and unchanged["failure"] == ""
    assert unchanged["result"]["steps"][0]["detail"] == "already on"
    check = cc.configured(dict(START, check_mode=True), dict(WRITTEN, restore=None))  # check mode: nothing written
    assert check["result"]["outcome"] == "would change" and not check["apply"] and check["finish"]
    pending = cc.configured(START, WRITTEN)
    assert pending["result"]["outcome"] == "pending" and pending["apply"] and not pending["finish"]
    assert pending["result"]["steps"] == [{"name": "configure", "ok": True, "detail": "enable_cdi off", "started_at": "s1",
                                           "finished_at": "f1", "duration_seconds": 0.2}]
    assert START["steps"] == []  # the record given is not changed
    with pytest.raises(JudgeError, match="config: expected a mapping"):
        cc.configured(START, "changed")


RUNTIME_OK = {"changed": True, "steps": [{"name": "restart", "ok": True}, {"name": "verify", "ok": True}],
              "verify": {"enable_cdi": True}, "server_version": "2.0.4"}


def test_restarted_by_command():
    out = cc.restarted(START, "restart", command_run=RUNTIME_OK, restart_command=["systemctl", "restart", "containerd"])
    assert not out["failed"] and out["result"]["verify"] == {"enable_cdi": True}
    assert [s["phase"] for s in out["result"]["steps"]] == ["restart", "restart"]
    failed = cc.restarted(START, "revert", command_run={"failed": True, "msg": "socket not up in 30 s", "steps": []},
                          systemd={"failed": True, "msg": "stale from an earlier phase"}, restart_command=["x"])
    assert failed["failed"] and failed["msg"] == "socket not up in 30 s" and "revert_verify" in failed["result"]
    assert cc.restarted(START, "restart", command_run={"failed": True}, restart_command=["x"])["msg"] == (
        "containerd restart or verification failed")


def test_restarted_by_systemd():
    out = cc.restarted(START, "restart", systemd={"changed": True}, systemd_verify=RUNTIME_OK, restart_command=[],
                       service="containerd", started_at="a", finished_at="b")
    assert not out["failed"]
    assert out["result"]["steps"][0] == {"name": "restart", "phase": "restart", "ok": True, "detail": "systemd restarted containerd",
                                         "started_at": "a", "finished_at": "b"}
    failed = cc.restarted(START, "restart", systemd={"failed": True, "msg": "Unit not found"}, systemd_verify={"skipped": True},
                          restart_command="")
    assert failed["failed"] and failed["msg"] == "Unit not found" and failed["result"]["steps"][0]["ok"] is False
    assert cc.restarted(START, "restart", systemd={"failed": True}, restart_command="")["msg"] == "systemd restart failed"
    with pytest.raises(JudgeError, match="phase: expected restart or revert"):
        cc.restarted(START, "verify")


def test_restore_and_revert_ladder():
    record = dict(START, steps=[{"name": "configure"}])
    restored = cc.restore_outcome(record, {"changed": True, "steps": [{"name": "restore", "ok": True}]}, WRITTEN)
    assert restored["restored"] and restored["result"]["steps"][-1] == {"name": "restore", "ok": True, "phase": "revert"}
    assert restored["outcome"] == ("backup (none: the new drop-in removed) restored to /etc/containerd/conf.d/cdi.toml, "
                                   "containerd restarted and verified")
    with_backup = cc.restore_outcome(record, {"changed": True}, {"restore": {"target": "/etc/c.toml", "backup": "/b/c.toml"}})
    assert with_backup["outcome"].startswith("backup /b/c.toml restored to /etc/c.toml")
    lost = cc.restore_outcome(record, {"failed": True, "msg": "backup gone"}, WRITTEN)
    assert not lost["restored"] and lost["outcome"] == "restore failed: backup gone"
    back = cc.reverted(record, "verify: enable_cdi still off", restored["outcome"])
    assert back["result"]["outcome"] == "reverted" and back["result"]["change_outcome"] == "verify: enable_cdi still off"
    assert back["failure"] == "containerd_cdi: the change failed: verify: enable_cdi still off | revert: " + restored["outcome"]
    assert cc.reverted(record, "x", "revert failed too: timeout")["result"]["outcome"] == "failed"
    assert cc.reverted(record, "x", lost["outcome"])["result"]["outcome"] == "failed"
