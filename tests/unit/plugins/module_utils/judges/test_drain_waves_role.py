# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""judges/drain_waves_role.py on recorded rollouts: a node's wave and start, its record from the steps' results (done,
stopped at each step, check mode), the wave's record, the state read back, and the drain record's nodes and totals
(done, this attempt's, not started with why and what an earlier attempt left)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import drain_waves_role as dw
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.phase_role import JudgeError

PLAN = [{"wave": 1, "hosts": ["gpu-1"]}, {"wave": 2, "hosts": ["gpu-2", "gpu-3"]}]
DRAIN = {"changed": True, "cordoned": True, "snapshot": {"gpus": 8}, "timings": {"total": 3.5},
         "evictions": [{"namespace": "a", "name": "p1", "pdb_retries": 2}, {"namespace": "a", "name": "p2", "pdb_retries": 0}],
         "skipped": [{"name": "ds"}], "blocked": [], "claims_waited": ["c1"]}
RESTORE = {"changed": False, "snapshot": {"gpus": 8}, "device_health_restored": True, "gaps": [], "seconds": 12.0}
UNCORDON = {"changed": True}
RESCHED = {"changed": False, "failed_reschedules": [], "failed_reschedule_rate": {"numerator": 0, "denominator": 2},
           "not_counted": [], "seconds": 4.0}


def test_wave_of():
    assert dw.wave_of(PLAN, "gpu-1") == 1 and dw.wave_of(PLAN, "gpu-3") == 2
    with pytest.raises(JudgeError, match="host gpu-9: in no wave"):
        dw.wave_of(PLAN, "gpu-9")


def test_node_start_ladder():
    fresh = dw.node_start({}, [], "", False, False)
    assert fresh == {"finished_earlier": False, "stopped_earlier": False, "run_maintenance": False, "expect_new_boot": False}
    assert dw.node_start({"status": "done"}, [{"node": "gpu-1"}])["finished_earlier"] is True
    assert dw.node_start({"status": "done"}, [{"node": "gpu-1"}])["stopped_earlier"] is False  # finished wins
    assert dw.node_start({"status": "stopped"}, [{"node": "gpu-1", "wave": 1}])["stopped_earlier"] is True
    assert dw.node_start({"status": "stopped"}, [])["finished_earlier"] is False  # a stopped node is rolled out again
    maint = dw.node_start({}, [], "maint.yml", True, False)
    assert maint["run_maintenance"] and maint["expect_new_boot"]
    checked = dw.node_start({}, [], "maint.yml", True, True)  # check mode: no maintenance, no new boot expected
    assert not checked["run_maintenance"] and not checked["expect_new_boot"]
    assert not dw.node_start({}, [], "maint.yml", False, False)["expect_new_boot"]


def _record(**kwargs):
    base = dict(node="node-1", host="gpu-1", wave="1", stamp="T1", started_at="s", finished_at="f")
    base.update(kwargs)
    return dw.node_record(**base)


def test_node_record_done():
    rec = _record(outcome={"status": "done", "reason": None, "step": None}, drain=DRAIN, restore=RESTORE, uncordon=UNCORDON,
                  reschedule=RESCHED, maintenance_seconds=1.5)
    assert rec["status"] == "done" and rec["wave"] == 1 and rec["attempt_stamp"] == "T1"
    assert rec["cordoned"] is False and rec["pdb_retries"] == 2 and rec["device_health_restored"] is True
    assert rec["before"] == {"gpus": 8} and rec["skipped_pods"] == [{"name": "ds"}] and rec["claims_waited"] == ["c1"]
    assert rec["steps"] == {"drain_seconds": {"total": 3.5}, "maintenance_seconds": 1.5, "restore_seconds": 12.0,
                            "reschedule_seconds": 4.0}
    assert rec["failed_reschedule_rate"] == {"numerator": 0, "denominator": 2}
    assert dw.node_line(rec) == "wave 1 node node-1: DONE - 2 evicted (2 PDB retries), failed reschedules 0 of 2"


def test_node_record_failure_ladder():
    # the drain itself failed: nothing else ran, the node is cordoned as the drain left it
    drain_failed = {"failed": True, "msg": "PDB a/b refused to the deadline", "cordoned": True, "evictions": []}
    rec = _record(outcome={"status": "stopped", "step": "Drain the node", "reason": drain_failed["msg"]}, drain=drain_failed)
    assert rec["status"] == "stopped" and rec["cordoned"] is True and rec["after"] is None
    assert rec["stopped_step"] == "Drain the node" and rec["failed_reschedules"] == []
    assert "STOPPED at Drain the node: PDB a/b refused" in dw.node_line(rec) and "failed reschedules - of -" in dw.node_line(rec)
    # the restore failed: the node stays cordoned (the uncordon step is skipped by the rescue)
    rec = _record(outcome={"status": "stopped", "step": "Wait until the node is Ready", "reason": "timeout"}, drain=DRAIN,
                  restore={"failed": True, "msg": "timeout", "device_health_restored": False, "gaps": ["GPU-3"]})
    assert rec["cordoned"] is True and rec["device_health_restored"] is False and rec["device_health_gaps"] == ["GPU-3"]
    # the uncordon step failed: still cordoned
    assert _record(drain=DRAIN, uncordon={"failed": True, "msg": "403"})["cordoned"] is True
    assert _record(drain=DRAIN, uncordon={"skipped": True})["cordoned"] is True
    # a failed reschedule: healthy and uncordoned, the pods named
    failed = [{"namespace": "a", "name": "p1", "reason": "Pending"}]
    rec = _record(outcome={"status": "stopped", "step": "Wait until the evicted workloads run again", "reason": "1 failed"},
                  drain=DRAIN, restore=RESTORE, uncordon=UNCORDON,
                  reschedule={"failed": True, "failed_reschedules": failed, "failed_reschedule_rate": {"numerator": 1, "denominator": 2}})
    assert rec["cordoned"] is False and rec["failed_reschedules"] == failed
    # no outcome noted (the record step ran after an unexpected error): stopped
    assert _record()["status"] == "stopped" and _record()["cordoned"] is False


def test_node_record_check_mode():
    rec = _record(outcome={"status": "done"}, drain={"changed": True, "cordoned": False, "evictions": []},
                  restore={"changed": False}, uncordon={"changed": False}, reschedule={"changed": False}, check_mode=True)
    assert rec["check_mode"] is True and rec["status"] == "done" and rec["pdb_retries"] == 0
    with pytest.raises(JudgeError, match="drain: expected a mapping"):
        _record(drain="drained")


def test_wave_record():
    batch = [{"node": "n2", "started_at": "2026-01-01T00:00:02.000000Z", "status": "done"},
             {"node": "n3", "started_at": "2026-01-01T00:00:01.000000Z", "status": "stopped"},
             {"node": "n4", "started_at": None, "status": None}]  # ended by an earlier attempt's record: not in the wave
    rec = dw.wave_record("2", "T1", "f", batch)
    assert rec == {"wave": 2, "attempt_stamp": "T1", "started_at": "2026-01-01T00:00:01.000000Z", "finished_at": "f",
                   "nodes": ["n2", "n3"], "done": ["n2"], "stopped": ["n3"]}
    assert dw.wave_line(rec) == "wave 2: 1 of 2 node(s) done, STOPPED at n3: later waves stay untouched"
    assert dw.wave_line(dw.wave_record(1, "T1", "f", batch[:1])) == "wave 1: 1 of 1 node(s) done"
    assert dw.wave_record(1, "T1", "f", [])["started_at"] is None
    # times, not text: "...:01Z" sorts after "...:01.000001Z" as text
    mixed = [{"node": "a", "started_at": "2026-01-01T00:00:01.000001Z"}, {"node": "b", "started_at": "2026-01-01T00:00:01Z"}]
    assert dw.wave_record(1, "T1", "f", mixed)["started_at"] == "2026-01-01T00:00:01Z"
    with pytest.raises(dw.JudgeError, match="batch entry started_at"):
        dw.wave_record(1, "T1", "f", [{"node": "a", "started_at": "yesterday"}])


def _write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        json.dump(data, handle)


def test_read_state(tmp_path):
    state_dir = str(tmp_path / "drain")
    assert dw.read_state(state_dir, "T1") == {"stops": [], "nodes": [], "waves": []}  # check mode on a new run
    assert dw.read_state(state_dir, "T1", node="n1") == {"stops": [], "prior": {}}
    _write(state_dir + "/nodes/n2.json", {"node": "n2"})
    _write(state_dir + "/nodes/n1.json", {"node": "n1", "status": "done"})
    _write(state_dir + "/waves/T1-wave-001.json", {"wave": 1})
    _write(state_dir + "/stop-T1-n2.json", {"node": "n2", "wave": 2})
    _write(state_dir + "/stop-T0-n9.json", {"node": "n9", "wave": 1})  # an earlier attempt's stop: not this one's
    state = dw.read_state(state_dir, "T1")
    assert [n["node"] for n in state["nodes"]] == ["n1", "n2"] and state["waves"] == [{"wave": 1}]
    assert state["stops"] == [{"node": "n2", "wave": 2}]
    assert dw.read_state(state_dir, "T1", node="n1")["prior"] == {"node": "n1", "status": "done"}
    with open(state_dir + "/nodes/n3.json", "w") as handle:
        handle.write("{half")
    with pytest.raises(JudgeError, match="n3.json does not read as JSON"):
        dw.read_state(state_dir, "T1")
    with pytest.raises(JudgeError, match="node: expected a node name"):
        dw.read_state(state_dir, "T1", node="../x")


def test_finish():
    records = [
        {"node": "n1", "status": "done", "attempt_stamp": "T0", "pdb_retries": 1, "device_health_restored": True,
         "failed_reschedules": [], "failed_reschedule_rate": {"numerator": 0, "denominator": 1}},
        {"node": "n2", "status": "stopped", "attempt_stamp": "T1", "pdb_retries": 2, "device_health_restored": True,
         "failed_reschedules": [{"name": "p"}], "failed_reschedule_rate": {"numerator": 1, "denominator": 3}},
        {"node": "n3", "status": "stopped", "attempt_stamp": "T0", "pdb_retries": 5},  # an earlier attempt's stop
    ]
    stops = [{"node": "n2", "wave": 2}]
    out = dw.finish([["h1", "n1"], ["h2", "n2"], ["h3", "n3"], ["h4", "n4"]], records, stops, "T1")
    assert out["nodes"][:2] == records[:2]
    why = "the rollout stopped at n2 (wave 2): later waves untouched"
    assert out["nodes"][2] == {"node": "n3", "host": "h3", "status": "not_started", "why": why, "earlier": records[2]}
    assert out["nodes"][3] == {"node": "n4", "host": "h4", "status": "not_started", "why": why, "earlier": None}
    assert out["rates"] == [{"numerator": 0, "denominator": 1}, {"numerator": 1, "denominator": 3}]
    assert out["failed_reschedules"] == [{"name": "p"}]
    assert out["device_health_restored"] == {"n1": True, "n2": True, "n3": None, "n4": None}
    assert out["pdb_retries"] == 3  # not started nodes count none
    quiet = dw.finish([["h4", "n4"]], [], [], "T1")
    assert quiet["nodes"][0]["why"] == "not reached in this attempt" and quiet["rates"] == [] and quiet["pdb_retries"] == 0
    with pytest.raises(JudgeError, match=r"hosts_nodes entry 0: expected \[host, node\]"):
        dw.finish([["h1"]], [], [], "T1")
