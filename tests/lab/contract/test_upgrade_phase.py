# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: playbooks/upgrade_operator.yml and playbooks/rollback.yml run for real (ansible-playbook)
against the lab (scenario ``operator-upgrade``: 2 device-plugin GPU nodes) with the operator-shaped test
charts of tests/operator_charts.py, installed at 26.3.1 with the Helm library and captured by
playbooks/snapshot.yml first.

In order, on one lab and one gate run (``canary``): refusals before any change (a request that would
skip a major, a chart whose sha256 does not match, production without canary evidence), a check run that
changes nothing (resourceVersions unchanged), an operator that never gets ready after the hop -> the
automatic rollback -> control suite passing -> duration recorded, the success path through both hops
with API 500 bursts injected, a rerun in production scope (cleared by the canary's evidence; nothing left
to change), and playbooks/rollback.yml putting the 26.3.1 state back (CRDs included).
"""

from __future__ import annotations

import os
import shutil
import threading

import pytest

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

import operator_charts  # tests/ is on pytest's pythonpath (pytest.ini)
from kubelab.testing import start_lab, stop_lab, wait_for
from upgrade_lab import (  # tests/upgrade_lab.py
    GPU_NODES, NAMESPACE, RELEASE, RUN, add_fault, allocatable, crd, faults, kube_clients, playbook, policy, records,
    revision, settled, tail, versions)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("upgrade-phase"))
    cluster = start_lab(work, "operator-upgrade")
    cluster.workdir = work
    yield cluster
    stop_lab(cluster)
    errors = list(cluster.server.controller_errors)
    shutil.rmtree(work, ignore_errors=True)
    assert not errors, "controller errors: %s" % errors[:5]


@pytest.fixture(scope="module")
def kube(lab):
    return kube_clients(lab)


@pytest.fixture(scope="module")
def charts(tmp_path_factory):
    return operator_charts.write_mapping(str(tmp_path_factory.mktemp("charts")))


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    root = tmp_path_factory.mktemp("evidence")
    os.chmod(str(root), 0o700)
    return root


@pytest.fixture(scope="module")
def installed(lab, kube, charts, evidence):
    """26.3.1 installed with the Helm library, ready, and the gate run's snapshot taken."""
    helm = helm_python.Config(kubeconfig_path=lab.kubeconfig, namespace=NAMESPACE, storage_driver="secret")
    helm.install(charts["26.3.1"]["path"], RELEASE, namespace=NAMESPACE, wait="watcher", timeout=120)
    wait_for(lambda: settled(kube, "v0.19.0"), 60, "the 26.3.1 operator ready")
    proc = playbook(lab, evidence, charts, path="playbooks/snapshot.yml")
    assert proc.returncode == 0, tail(proc)
    return {"helm": helm, "allocatable": allocatable(kube)}


def test_refused_before_any_change(lab, kube, charts, evidence, installed):
    before = versions(kube)
    # A request that would skip a major release: one hop where the supported path needs two.
    proc = playbook(lab, evidence, charts, dra_gate_upgrade_max_hops=1)
    assert proc.returncode != 0, tail(proc)
    refused = records(evidence, "upgrade")[-1]["results"]
    assert "needs 2 hops" in refused["refused"] and "26.3.1 -> 26.6.x -> 26.7.0" in refused["refused"], refused["refused"]
    assert refused["verdict"] == "block" and refused["hops"] == []
    # A chart whose sha256 does not match its pin.
    bad = dict(charts)
    bad["26.7.0"] = dict(charts["26.7.0"], sha256="0" * 64)
    proc = playbook(lab, evidence, bad)
    assert proc.returncode != 0, tail(proc)
    refused = records(evidence, "upgrade")[-1]["results"]
    assert "sha256 mismatch" in refused["refused"] and refused["hops"] == [], refused["refused"]
    # Production without the canary's evidence.
    proc = playbook(lab, evidence, charts, dra_gate_upgrade_scope="production", dra_gate_canary_run_id="no-such-canary")
    assert proc.returncode != 0, tail(proc)
    refused = records(evidence, "upgrade")[-1]["results"]
    assert refused["refused"].startswith("production refused") and refused["canary"]["cleared"] is False, refused
    assert versions(kube) == before and revision(lab) == 1


def test_check_mode_changes_nothing(lab, kube, charts, evidence, installed):
    before, count = versions(kube), len(records(evidence, "upgrade"))
    proc = playbook(lab, evidence, charts, "--check", "--diff")
    assert proc.returncode == 0 or "verdict WARN" in proc.stdout, tail(proc)
    assert versions(kube) == before and revision(lab) == 1
    assert len(records(evidence, "upgrade")) == count  # check mode writes no record


def test_operator_never_ready_rolls_back_automatically(lab, kube, charts, evidence, installed):
    cleared = threading.Event()

    def fault_during_the_hop():
        # From the hop's helm upgrade (revision 2) the operator never gets ready; from the rollback
        # (revision 3) it may again.
        try:
            wait_for(lambda: revision(lab) >= 2, 300, "the hop's release revision", interval=0.05)
            add_fault(lab, {"operator_never_ready": {}})
            wait_for(lambda: revision(lab) >= 3, 300, "the rollback's release revision")
        finally:
            faults(lab, "DELETE")
            cleared.set()

    watcher = threading.Thread(target=fault_during_the_hop, daemon=True)
    watcher.start()
    # The first hop (26.3.1 -> 26.6.2) never gets ready: Helm's watcher wait (kstatus reads the
    # ClusterPolicy's Ready condition) times out, the upgrade stops there and rolls back.
    proc = playbook(lab, evidence, charts, dra_gate_rollback_on_failure=True, dra_gate_operator_wait_timeout=6,
                    dra_gate_helm_timeout=8, dra_gate_rollback_helm_timeout=120)
    faults(lab, "DELETE")
    watcher.join(5)
    assert proc.returncode != 0, tail(proc)
    upgrade = records(evidence, "upgrade")[-1]["results"]
    assert upgrade["verdict"] == "block" and len(upgrade["hops"]) == 1, upgrade
    hop = upgrade["hops"][0]
    assert hop["ok"] is False and hop["failure"].startswith("helm_upgrade") and "not ready" in hop["failure"], hop
    assert [s["name"] for s in hop["steps"]] == ["crd_prepare", "helm_upgrade"]
    assert hop["helm"]["revision"] is None or hop["helm"]["revision"] == 2
    assert upgrade["rollback"]["triggered"] and upgrade["rollback"]["automatic"], upgrade["rollback"]
    assert upgrade["rollback"]["verdict"] == "pass", upgrade["rollback"]
    rollback = records(evidence, "rollback")[-1]["results"]
    assert rollback["trigger"] == "automatic" and rollback["verdict"] == "pass", rollback
    assert [s["name"] for s in rollback["steps"]] == ["helm_rollback", "restore_cluster_state", "verify", "control_suite"]
    assert all(s["ok"] for s in rollback["steps"]), rollback["steps"]
    assert rollback["control_suite"]["passed"] and rollback["helm"]["target_revision"] == 1
    assert rollback["decision_at"] == upgrade["failure"]["decided_at"]
    assert rollback["completed_at"] == rollback["control_suite"]["finished_at"]
    assert 0 < rollback["duration_seconds"] == upgrade["rollback"]["duration_seconds"]
    assert revision(lab) == 3 and settled(kube, "v0.19.0")
    assert allocatable(kube) == installed["allocatable"]


def test_upgrade_both_hops_through_api_500_bursts(lab, kube, charts, evidence, installed):
    # Bursts of 500s on reads and writes of the operator's objects while the phase runs.
    add_fault(lab, [{"api_error": {"code": 500, "count": 3, "path": "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"}},
                    {"api_error": {"code": 500, "count": 3, "path": "/api/v1/nodes"}},
                    {"api_error": {"code": 500, "count": 2, "path": "/clusterpolicies"}}])
    proc = playbook(lab, evidence, charts)
    left = faults(lab)
    faults(lab, "DELETE")
    assert proc.returncode == 0, tail(proc)
    # every burst hit (and was survived: the phase passed)
    assert [f["hits"] for f in left["faults"]] == [3, 3, 2], left
    upgrade = records(evidence, "upgrade")[-1]["results"]
    assert upgrade["verdict"] == "pass" and upgrade["completed"] is True, upgrade
    assert [(h["from"], h["to"]) for h in upgrade["hops"]] == [("26.3.1", "26.6.2"), ("26.6.2", "26.7.0")]
    for hop, version in zip(upgrade["hops"], ("26.6.2", "26.7.0")):
        assert hop["ok"] and hop["chart"]["sha256"] == charts[version]["sha256"] and hop["chart"]["verified"]
        assert hop["allocatable_before"] == hop["allocatable_after"] == {n: int(v) for n, v in installed["allocatable"].items()}
        assert hop["control_suite"]["passed"] and all(w["node"] in GPU_NODES for w in hop["control_suite"]["workloads"]
                                                      if w["kind"] == "Pod")
        assert isinstance(hop["crds"]["applied"], list) and isinstance(hop["values_diff"], list)
        # 26.6.2's CRDs equal the (restored) 26.3.1 ones; 26.7.0's add fields and CRDs
        assert bool(hop["crds"]["applied"]) is (version == "26.7.0"), hop["crds"]
        assert [s["name"] for s in hop["steps"]] == ["crd_prepare", "helm_upgrade", "verify", "control_suite"]
        assert all(s["ok"] and s["started_at"] <= s["finished_at"] for s in hop["steps"])
    assert upgrade["baseline"]["control_suite"]["passed"]
    assert settled(kube, operator_charts.RELEASES["26.7.0"]["devicePlugin"])
    assert policy(kube)["spec"]["devicePlugin"]["enabled"] is True
    for name, fields in operator_charts.NEW_CRD_FIELDS.items():
        for field in fields:
            assert operator_charts.schema_has(crd(kube, name), field), (name, field)
    assert allocatable(kube) == installed["allocatable"]


def test_rerun_in_production_is_cleared_and_changes_nothing(lab, kube, charts, evidence, installed):
    before, rev = versions(kube), revision(lab)
    proc = playbook(lab, evidence, charts, dra_gate_upgrade_scope="production", dra_gate_canary_run_id=RUN)
    assert proc.returncode == 0, tail(proc)
    upgrade = records(evidence, "upgrade")[-1]["results"]
    assert upgrade["scope"] == "production" and upgrade["canary"]["cleared"] is True, upgrade["canary"]
    assert upgrade["hops"] == [] and upgrade["current_version"] in ("26.7.0", "v26.7.0")
    assert revision(lab) == rev and versions(kube) == before


def test_rollback_playbook_restores_the_recorded_state(lab, kube, charts, evidence, installed):
    proc = playbook(lab, evidence, charts, path="playbooks/rollback.yml")
    assert proc.returncode == 0, tail(proc)
    rollback = records(evidence, "rollback")[-1]["results"]
    # The CRDs new in 26.7.0 stay (deleting a CRD deletes its objects): named, a warning each.
    assert rollback["trigger"] == "manual" and rollback["verdict"] == "warn", rollback
    assert sorted(f["subject"] for f in rollback["findings"] if f["severity"] != "info") == sorted(operator_charts.DRA_CRDS)
    assert {f["id"] for f in rollback["findings"] if f["severity"] != "info"} == {"rollback.extra_crds"}
    assert rollback["duration_seconds"] > 0 and rollback["completed_at"] >= rollback["decision_at"]
    assert all(s["ok"] and s["started_at"] and s["finished_at"] for s in rollback["steps"]), rollback["steps"]
    assert settled(kube, "v0.19.0") and allocatable(kube) == installed["allocatable"]
    # Helm rolls back no CRD: the rollback did - the 26.7.0-only fields are gone, the new CRDs named, kept.
    for name, fields in operator_charts.NEW_CRD_FIELDS.items():
        for field in fields:
            assert not operator_charts.schema_has(crd(kube, name), field), (name, field)
    assert set(operator_charts.DRA_CRDS) <= set(rollback["extra"].get("crds") or [])
    assert policy(kube)["spec"]["devicePlugin"]["enabled"] is True
