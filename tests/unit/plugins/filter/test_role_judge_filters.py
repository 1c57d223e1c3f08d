# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The phase roles' judge filters (plugins/filter/phase.py, drain_waves.py, dra_canary.py, containerd_cdi.py,
dra_acceptance.py): thin wrappers - each registered, documented by its sidecar .yml, a bad value raised as
AnsibleFilterError with the role's prefix (never a traceback), hostvars read as Ansible hands them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.dra_gate.plugins.filter import containerd_cdi as cf
from ansible_collections.gpufleet.dra_gate.plugins.filter import dra_acceptance as af
from ansible_collections.gpufleet.dra_gate.plugins.filter import dra_canary as kf
from ansible_collections.gpufleet.dra_gate.plugins.filter import drain_waves as df
from ansible_collections.gpufleet.dra_gate.plugins.filter import phase as pf
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import phase_role

FILTER_DIR = os.path.dirname(pf.__file__)
MODULES = (pf, df, kf, cf, af)


def test_every_filter_documented():
    for module in MODULES:
        for name, function in module.FilterModule().filters().items():
            path = os.path.join(FILTER_DIR, name + ".yml")
            assert os.path.isfile(path), path
            with open(path) as handle:
                doc = yaml.safe_load(handle)
            assert doc["DOCUMENTATION"]["name"] == name and callable(function)
            assert name in doc["EXAMPLES"] and "_value" in doc["RETURN"]


def test_phase_filters():
    hostvars = {"h1": {"dra_gate_node_name": "n1", "read": {"changed": False}}, "h2": {"read": {"failed": True, "msg": "x"}},
                "h3": {}, "h4": {"read": {"unreachable": True, "msg": "gone"}}, "h5": {"read": {"changed": False}}}
    assert pf.node_names(["h1", "h2"], hostvars) == ["n1", "h2"]
    assert pf.node_names(["h1"], hostvars, by_host=True) == {"h1": "n1"}
    hosts = ["h1", "h2", "h3", "h4", "h5"]
    # h5 answered an earlier read but is no longer in the play; h3 never ran the read
    answered = pf.phase_answered(hosts, hostvars, "read", ["h1", "h2", "h3", "h4"])
    assert answered["answered_hosts"] == ["h1"]
    assert answered["failed_hosts"] == {"h2": "failed: x", "h3": phase_role.LEFT_THE_PLAY,
                                        "h4": "unreachable: gone", "h5": phase_role.LEFT_THE_PLAY}
    assert pf.phase_host_failure({"unreachable": True, "msg": "m"}) == "unreachable: m"
    assert pf.phase_finished_hosts(None, ["h1"]) == ["h1"]
    assert pf.step_record({"failed": True, "msg": "m"}, "s")["ok"] is False
    with pytest.raises(AnsibleFilterError, match="^phase: hosts: expected a list"):
        pf.phase_answered("h1", hostvars, "read", [])
    with pytest.raises(AnsibleFilterError, match="^phase: result_name: expected the name"):
        pf.phase_answered(["h1"], hostvars, "", ["h1"])
    with pytest.raises(AnsibleFilterError, match="^phase: read of h1: expected a task result"):
        pf.phase_answered(["h1"], {"h1": {"read": "text"}}, "read", ["h1"])
    with pytest.raises(AnsibleFilterError, match="^phase: evidence: expected"):
        pf.phase_gate_message("x", "drain", "block")
    assert pf.seconds_between("2026-12-02T01:00:00Z", "2026-12-02T01:00:01.250001Z") == 1.250001
    with pytest.raises(AnsibleFilterError, match="^phase: start: "):
        pf.seconds_between(None, "2026-12-02T01:00:00Z")


def test_drain_filters(tmp_path):
    assert df.drain_wave_of([{"wave": 1, "hosts": ["h1"]}], "h1") == 1
    with pytest.raises(AnsibleFilterError, match="^drain_waves: host h2: in no wave"):
        df.drain_wave_of([{"wave": 1, "hosts": ["h1"]}], "h2")
    assert df.drain_node_start({"status": "done"}, [])["finished_earlier"] is True
    rec = df.drain_node_record({"node": "n1", "host": "h1", "wave": 1, "stamp": "T"})
    assert rec["status"] == "stopped" and df.drain_waves_line(rec).startswith("wave 1 node n1: STOPPED")
    with pytest.raises(AnsibleFilterError, match="^drain_waves: drain_waves_line: kind"):
        df.drain_waves_line(rec, "batch")
    with pytest.raises(AnsibleFilterError, match="^drain_waves: drain_node_record: expected a mapping"):
        df.drain_node_record(["n1"])
    hostvars = {"h1": {"drain_waves_node": "n1", "drain_waves_node_started": "2026-01-01T00:00:01Z", "drain_waves_outcome": {"status": "done"}},
                "h2": {"drain_waves_node": "n2"}}
    wave = df.drain_wave_record(["h1", "h2"], hostvars, 1, "T", "f")
    assert wave["nodes"] == ["n1"] and wave["done"] == ["n1"] and df.drain_waves_line(wave, "wave") == "wave 1: 1 of 1 node(s) done"
    state = df.drain_waves_state(str(tmp_path / "none"), "T")
    out = df.drain_waves_finish(["h1"], {"h1": {"dra_gate_node_name": "n1"}}, state, "T")
    assert out["nodes"][0]["status"] == "not_started" and out["nodes"][0]["node"] == "n1"
    with pytest.raises(AnsibleFilterError, match="^drain_waves: drain_waves_finish: state"):
        df.drain_waves_finish(["h1"], {}, [], "T")


def test_canary_filters():
    assert kf.canary_tolerations(["k=v:NoSchedule"])[0]["value"] == "v"
    with pytest.raises(AnsibleFilterError, match="^dra_canary: taints entry 0"):
        kf.canary_tolerations(["k=v"])
    assert kf.dra_canary_spec({}, {"G": True}, [])["draDriver"]["featureGates"] == {"G": True}
    assert kf.dra_canary_refusal({"chart": {"failed": True, "msg": "bad"}}) == "bad"
    assert kf.dra_canary_refusal({"findings": [{"severity": "block", "message": "m"}]}, "features") == "feature gates: m"
    with pytest.raises(AnsibleFilterError, match="^dra_canary: dra_canary_refusal: stage"):
        kf.dra_canary_refusal({}, "build")
    assert kf.dra_canary_failure({"cluster": {"failed": True, "msg": "m"}}, "build") == "reading the cluster failed: m"
    assert kf.dra_canary_failure([None], "containerd", host="h1", msg="m") == "containerd_cdi failed on h1: m"
    assert kf.dra_canary_failure({"ok": False, "msg": "m"}, "cdi") == "CDI discovery failed: m"
    assert kf.dra_canary_smoke_workloads({}, False, []) == []
    assert kf.dra_canary_results({}, check_mode=True)["completed"] is False


def test_containerd_and_acceptance_filters():
    start = {"host": "h1", "steps": []}
    assert cf.containerd_cdi_configured(start, {"changed": False})["result"]["outcome"] == "unchanged"
    assert cf.containerd_cdi_restarted(start, "restart", command_run={"failed": True, "msg": "m"}, restart_command="x")["failed"]
    assert cf.containerd_cdi_restore_outcome(start, {"failed": True, "msg": "m"}, {})["restored"] is False
    assert cf.containerd_cdi_reverted(start, "a", "b")["result"]["outcome"] == "failed"
    with pytest.raises(AnsibleFilterError, match="^containerd_cdi: phase"):
        cf.containerd_cdi_restarted(start, "again", {})
    assert af.dra_acceptance_lifecycle_id("R", "T") == "r-t"
    assert af.dra_acceptance_results(None, None, None)["metrics"]["skipped"].startswith("no Prometheus")
    assert af.artifacts_verified_refusal({"verified": True}) == {"verified": True, "refusal": None}
    with pytest.raises(AnsibleFilterError, match="^artifacts_verified: result"):
        af.artifacts_verified_refusal("verified")
