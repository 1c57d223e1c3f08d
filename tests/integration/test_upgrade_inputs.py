# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/upgrade_operator.yml's refusals as a user meets them (issue 28), on six local GPU "nodes", no cluster:

- a bad choice (``dra_gate_upgrade_scope=prod``) is printed once - one failed task, not one per host, not the role's
  argument spec - naming that setting alone, and nothing is written (no run directory, no new directory under the
  run's ``upgrade/``);
- a run without a snapshot is refused with one consistent instruction: take the snapshot of this run first;
- a run refused after it started (a snapshot without the operator's Helm state) writes its record and no empty
  timestamped directory under ``<run>/upgrade/``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
HOSTS = ["gpu-%d" % n for n in range(1, 7)]
HEADER = "operator_upgrade: 1 input wrong, nothing was changed:"


def env():
    return dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".cache", "collections"), ANSIBLE_NOCOLOR="1",
                ANSIBLE_FORCE_COLOR="0", ANSIBLE_LOCALHOST_WARNING="false", PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""))


def setup(tmp_path):
    """The private evidence root, a kubeconfig file and the six-node inventory (made once per test)."""
    evidence, kubeconfig, inventory = tmp_path / "evidence", tmp_path / "kubeconfig", tmp_path / "hosts.json"
    if not inventory.exists():
        evidence.mkdir(mode=0o700)
        kubeconfig.write_text("{}")
        inventory.write_text(json.dumps({"all": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": os.path.join(VENV_BIN, "python")},
            "children": {"gpu_nodes": {"hosts": {host: {} for host in HOSTS}}}}}))
    return evidence, kubeconfig, inventory


def upgrade(tmp_path, run_id, **variables):
    evidence, kubeconfig, inventory = setup(tmp_path)
    extra = {"dra_gate_evidence_root": str(evidence), "dra_gate_run_id": run_id, "dra_gate_kubeconfig": str(kubeconfig),
             "dra_gate_operator_charts": {"v26.7.0": {"path": "/srv/charts/gpu-operator-v26.7.0.tgz", "sha256": "0" * 64}}}
    extra.update(variables)
    return subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", str(inventory), "playbooks/upgrade_operator.yml",
                           "-e", json.dumps(extra)], cwd=REPO, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)


def tree(root):
    return sorted(os.path.relpath(os.path.join(d, n), str(root)) for d, dirs, files in os.walk(str(root)) for n in dirs + files)


def test_a_bad_choice_is_printed_once_naming_only_that_setting_and_nothing_is_written(tmp_path):
    evidence, _kubeconfig, _inventory = setup(tmp_path)
    (evidence / "prod-2612" / "upgrade").mkdir(parents=True, mode=0o700)  # an earlier attempt's directory
    before = tree(evidence)
    proc = upgrade(tmp_path, "prod-2612", dra_gate_upgrade_scope="prod")
    out = proc.stdout
    assert proc.returncode != 0, out[-3000:]
    error = "[ERROR]: Task failed: Module failed: " + HEADER
    assert out.count(error) == 1 and out.count("fatal: [") == 1 and out.count(HEADER) == 2, out[-4000:]
    shown = out[out.index(error):].split("\nOrigin:")[0]
    assert shown == error + ("\n- dra_gate_upgrade_scope (role variable operator_upgrade_scope): it is not one of "
                             "canary|production; got 'prod'; expected canary or production."), shown
    assert "dra_gate_canary_run_id" not in out  # only the failed condition, not the ones that depend on it
    assert "argument_spec" not in out and "Validating arguments" not in out and "Start the phase" not in out
    assert tree(evidence) == before  # nothing written: no run files, no new directory under upgrade/


def test_a_run_without_a_snapshot_is_told_to_take_it_first(tmp_path):
    proc = upgrade(tmp_path, "no-snapshot")
    out = proc.stdout
    assert proc.returncode != 0, out[-3000:]
    error = out[out.index("[ERROR]: Task failed: Action failed: Refusing to change anything"):].split("\nOrigin:")[0]
    assert "gate run no-snapshot has no rollback artifacts yet" in error, error
    assert "Take them first: run playbooks/snapshot.yml for this gate run (-e dra_gate_run_id=no-snapshot), then run this phase again." in error
    assert "do not repair" not in error and "new gate run" not in error, error  # one instruction, not two that contradict
    assert out.count("Refusing to change anything") == 2  # the error and its result, once
    assert not os.path.exists(str(tmp_path / "evidence" / "no-snapshot" / "upgrade"))


def test_a_run_refused_after_it_started_writes_its_record_and_no_empty_attempt_directory(tmp_path):
    evidence, _kubeconfig, _inventory = setup(tmp_path)
    run_dir = evidence / "no-helm"
    (run_dir / "artifacts" / "cluster-state").mkdir(parents=True, mode=0o700)
    os.chmod(str(run_dir), 0o700)
    os.chmod(str(run_dir / "artifacts"), 0o700)
    capture = run_dir / "artifacts" / "cluster-state" / "clusterpolicy.json"
    capture.write_text('{"kind": "ClusterPolicy"}')
    os.chmod(str(capture), 0o600)
    # a snapshot that verifies but holds no Helm state of the operator's release (helm skipped)
    args = {"run_dir": str(run_dir), "artifacts": [{"path": str(capture), "kind": "custom-resource", "source": "test"}]}
    index = subprocess.run([os.path.join(VENV_BIN, "ansible"), "localhost", "-e", "ansible_python_interpreter=" + os.path.join(VENV_BIN, "python"),
                            "-m", "gpufleet.dra_gate.artifact_index", "-a", json.dumps(args)], cwd=REPO, env=env(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120, check=False)
    assert index.returncode == 0, index.stdout[-3000:]
    proc = upgrade(tmp_path, "no-helm")
    assert proc.returncode != 0 and "Upgrade verdict BLOCK" in proc.stdout, proc.stdout[-3000:]
    with open(str(run_dir / "upgrade-1.json")) as handle:
        record = json.load(handle)
    assert "has no Helm state of release gpu-operator/gpu-operator" in record["results"]["refused"], record["results"]
    assert record["dir"] is None and record["results"]["hops"] == []
    assert not os.path.exists(str(run_dir / "upgrade")), tree(run_dir)  # no empty <run>/upgrade/<stamp>/
