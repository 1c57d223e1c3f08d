# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: ``./dra-gate rehearse`` (tests/tools/devtool/rehearsal.py) is the README's fleet flow through
playbooks/site.yml. The flow itself runs end to end, decision included, once, in test_readme_flow.py (the one
slow test of the whole gate, on the same three labs: tests/gate_lab.py); here, quickly: the rehearsal's steps
select, cluster by cluster and in the same order, exactly the phase playbooks the README's commands name, and a
``--tags`` selection of site.yml runs that phase only (the other phases' `always`-tagged input checks and starts
stay out), so that the rehearsal runs what the README flow's test proves."""

from __future__ import annotations

import os
import subprocess
import sys

import yaml

from upgrade_lab import REPO, VENV_BIN, env

sys.path.insert(0, os.path.join(REPO, "tests", "tools"))
from devtool import rehearsal  # noqa: E402  pylint: disable=wrong-import-position

import test_readme_flow  # noqa: E402  pylint: disable=wrong-import-position


def site_imports() -> dict:
    """tag -> the phase playbook site.yml imports under it."""
    with open(os.path.join(REPO, "playbooks", "site.yml")) as handle:
        entries = yaml.safe_load(handle)
    out = {}
    for entry in entries:
        (tag,) = entry["tags"]
        assert "always" not in entry["tags"]
        out[tag] = "playbooks/" + entry["ansible.builtin.import_playbook"]
    return out


def test_the_rehearsal_runs_the_readme_flow_through_site_yml(tmp_path):
    imports = site_imports()
    assert list(imports) == ["preflight", "snapshot", "upgrade", "dra_canary", "drain", "rollback", "decide"]
    readme = [(test_readme_flow.inventory_of(c), c.split()[3]) for c in test_readme_flow.flow_commands()]
    rehearsed = [(step.cluster, imports[tag]) for step in rehearsal.STEPS for tag in step.tags]
    assert rehearsed == readme


def test_a_tag_selects_one_phase_of_site_yml(tmp_path):
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(yaml.safe_dump({"all": {"children": {"gpu_nodes": {"hosts": {"gpu-1": {
        "ansible_connection": "local", "ansible_python_interpreter": os.path.join(VENV_BIN, "python")}}}}}}))
    evidence = tmp_path / "evidence"
    evidence.mkdir(mode=0o700)
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", str(hosts), "playbooks/site.yml",
                           "--tags", "decide", "-e", "dra_gate_evidence_root=%s" % evidence, "-e", "dra_gate_run_id=r1"],
                          cwd=REPO, env=env(), capture_output=True, text=True, timeout=300, check=False)
    # decide's own input check refuses (no policy); nothing of another phase ran on the GPU node before it
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert "decide refuses" in proc.stdout and "dra_gate_decision_policy" in proc.stdout
    recap = proc.stdout[proc.stdout.index("PLAY RECAP"):]
    gpu = [line for line in recap.splitlines() if line.startswith("gpu-1")][0]
    assert "ok=0 " in gpu and "changed=0 " in gpu and "failed=0 " in gpu, gpu
