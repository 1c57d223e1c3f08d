# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one version rule as a user meets it (issue 28): ``playbooks/preflight.yml`` refuses a target ``26.7`` -
once, naming dra_gate_target_operator_version, what was given and the expected form, before anything is read or
written - as the upgrade does, instead of passing it ("Target: GPU Operator 26.7", verdict pass) to an upgrade
that then refuses it; ``v26.7.0`` is the release 26.7.0 everywhere."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")


def playbook(*args):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".cache", "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_LOCALHOST_WARNING="false", PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run([os.path.join(VENV_BIN, "ansible-playbook")] + list(args), cwd=REPO, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=300, check=False)


def private_root(tmp_path):
    root = tmp_path / "evidence"
    root.mkdir(mode=0o700)
    return root


def test_the_preflight_refuses_a_major_minor_target_once_naming_the_setting(tmp_path):
    evidence = private_root(tmp_path)
    proc = playbook("-i", "inventories/local", "playbooks/preflight.yml", "-e", "dra_gate_evidence_root=%s" % evidence,
                    "-e", "dra_gate_run_id=short-target", "-e", "dra_gate_target_operator_version=26.7")
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert ("preflight: 1 input wrong, nothing was changed:\n- dra_gate_target_operator_version (role variable "
            "preflight_target_operator_version): it names no single release (major.minor.patch is needed); got '26.7'; "
            "expected a full release such as 26.7.0") in proc.stdout.replace("\\n", "\n"), proc.stdout[-3000:]
    assert proc.stdout.count("TASK [gpufleet.dra_gate.preflight : Check the preflight's inputs]") == 1
    assert "Gather GPU node facts" not in proc.stdout and "Traceback" not in proc.stdout
    assert "Target: GPU Operator 26.7" not in proc.stdout
    assert os.listdir(str(evidence)) == []  # not even the run directory


def test_a_v_release_is_the_release(tmp_path):
    evidence = private_root(tmp_path)
    proc = playbook("-i", "inventories/local", "playbooks/preflight.yml", "-e", "dra_gate_evidence_root=%s" % evidence,
                    "-e", "dra_gate_run_id=v-target", "-e", "dra_gate_target_operator_version=v26.7.0",
                    "-e", "dra_gate_fail_on=never")
    assert proc.returncode == 0, proc.stdout[-3000:]
    with open(str(evidence / "v-target" / "index.json")) as handle:
        entry = [e for e in json.load(handle)["records"] if e["phase"] == "preflight"][-1]
    with open(str(evidence / "v-target" / entry["file"])) as handle:
        record = json.load(handle)
    assert record["results"]["target"]["operator_version"] == "26.7.0"
