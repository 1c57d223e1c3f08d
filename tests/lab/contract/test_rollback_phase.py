# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: playbooks/rollback.yml for real (ansible-playbook) against the lab (scenario ``operator-upgrade``)
with nothing to roll back, and with bad inputs (issue 28).

The operator is installed at 26.3.1 with the Helm library and the gate run's snapshot taken; nothing is
upgraded. The rollback then finds the release at the recorded revision and every captured object as
captured: it changes nothing and says so - verdict WARN with the finding ``rollback.not_needed`` on the
play's verdict line, in the record and in ``rollback-<attempt>.md`` - never a bare PASS. Bad inputs are
named once (the Python input check in the playbook's pre_tasks), before anything is read or written.
"""

from __future__ import annotations

import os
import shutil

import pytest

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

import operator_charts  # tests/ is on pytest's pythonpath (pytest.ini)
from kubelab.testing import start_lab, stop_lab, wait_for
from upgrade_lab import (  # tests/upgrade_lab.py
    NAMESPACE, RELEASE, RUN, allocatable, kube_clients, playbook, records, revision, settled, tail, versions)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("rollback-phase"))
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
def snapshot(lab, kube, charts, evidence):
    """26.3.1 installed with the Helm library, ready, and the gate run's snapshot taken; no upgrade."""
    helm = helm_python.Config(kubeconfig_path=lab.kubeconfig, namespace=NAMESPACE, storage_driver="secret")
    helm.install(charts["26.3.1"]["path"], RELEASE, namespace=NAMESPACE, wait="watcher", timeout=120)
    wait_for(lambda: settled(kube, "v0.19.0"), 60, "the 26.3.1 operator ready")
    proc = playbook(lab, evidence, charts, path="playbooks/snapshot.yml")
    assert proc.returncode == 0, tail(proc)
    return {"allocatable": allocatable(kube)}


def test_bad_inputs_are_named_once_before_anything(lab, charts, evidence, snapshot):
    before = len(os.listdir(str(evidence / RUN)))
    proc = playbook(lab, evidence, charts, path="playbooks/rollback.yml", dra_gate_kubeconfig="/nonexistent/kubeconfig",
                    dra_gate_helm_backend="kubectl", dra_gate_rollback_restore=["crds", "etcd"],
                    dra_gate_rollback_decision_at="yesterday", dra_gate_rollback_helm_timeout=0)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, tail(proc)
    # one failure for the play (2 hosts, not one per host), naming each wrong setting and nothing else
    assert out.count("fatal: [") == 1 and "operator_rollback: 5 inputs wrong, nothing was changed" in out, tail(proc)
    assert "TASK [gpufleet.dra_gate.operator_rollback : Validating arguments" not in out, tail(proc)
    for setting in ("dra_gate_kubeconfig", "dra_gate_helm_backend", "dra_gate_rollback_restore",
                    "dra_gate_rollback_decision_at", "dra_gate_rollback_helm_timeout"):
        assert "- %s (role variable" % setting in out, (setting, tail(proc))
    assert "dra_gate_operator_release" not in out and "'etcd' in it is not a restore section" in out, tail(proc)
    # nothing written: no record, no new file in the run directory
    assert len(os.listdir(str(evidence / RUN))) == before
    assert records(evidence, "rollback") == []


def test_a_rollback_with_nothing_to_roll_back_says_not_needed(lab, kube, charts, evidence, snapshot):
    before, rev = versions(kube), revision(lab)
    proc = playbook(lab, evidence, charts, path="playbooks/rollback.yml")
    assert proc.returncode == 0, tail(proc)
    # the play's verdict line says why, not a bare PASS
    assert "Rollback verdict WARN: verdict warn" in proc.stdout and "rollback not needed" in proc.stdout, tail(proc)
    assert "Rollback verdict PASS" not in proc.stdout
    record = records(evidence, "rollback")[-1]
    results = record["results"]
    assert results["verdict"] == "warn" and [f["id"] for f in results["findings"]] == ["rollback.not_needed"], results
    finding = results["findings"][0]
    assert finding["severity"] == "warn" and "already at the recorded revision 1" in finding["message"], finding
    assert results["helm"]["action"] == "unchanged" and results["helm"]["revision"] == results["helm"]["revision_before"] == 1
    assert all(not names for names in results["restored"].values()), results["restored"]
    assert sum(len(names) for names in results["unchanged"].values()) > 0, results["unchanged"]
    assert all(s["ok"] for s in results["steps"]) and results["control_suite"]["passed"], results["steps"]
    assert results["duration_seconds"] > 0 and results["completed_at"] == results["control_suite"]["finished_at"]
    # nothing changed in the cluster
    assert revision(lab) == rev and versions(kube) == before and allocatable(kube) == snapshot["allocatable"]
    # the Markdown summary shows it too: the heading, the Helm action, the steps and the findings
    run_dir = evidence / RUN
    text = (run_dir / ("rollback-%d.md" % record["attempt"])).read_text()
    assert text.startswith("# Rollback (attempt %d): not needed (verdict WARN)" % record["attempt"]), text[:300]
    assert "Helm release gpu-operator/gpu-operator: unchanged, revision 1 → 1" in text, text
    assert "**Rollback time " in text and "| helm_rollback | ok |" in text and "| control_suite | ok |" in text, text
    assert "| warn | rollback.not_needed | rollback |" in text, text
    assert "# Rollback (attempt %d): not needed" % record["attempt"] in (run_dir / "summary.md").read_text()
