# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (issue 28): the README's setting reaches the upgrade. A user sets the target as the README says - the
inventory variable ``dra_gate_target_operator_version`` in ``group_vars/all.yml`` - to a release other than the
roles' default 26.7.0, against the lab's ``prod-26.3-device-plugin`` cluster (its GPU Operator 26.3.1 Helm
release): the preflight plans the hop to it, the snapshot is taken, then ``playbooks/upgrade_operator.yml --check
--diff`` plans and dry-runs that one hop, not the two to 26.7.0. The record the check run would write
(gate_evidence's diff) is what is asserted. Nothing in the cluster changes.

The target is 26.3.2, a patch release of the running major: a target must be covered by a compatibility matrix
release file (data/matrix: 26.3 and 26.7.0; 26.6.x is only a hop on the way), so 26.6.2 cannot be a target with
the bundled matrix. Its chart is the 26.3.1 test chart with the version 26.3.2, pinned by its own sha256."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

import operator_charts  # tests/ is on pytest's pythonpath (pytest.ini)
from kubelab.testing import start_lab, stop_lab
from upgrade_lab import REPO, env

TARGET = "26.3.2"


def patch_chart(directory):
    """The lab's 26.3.1 chart as the chart of 26.3.2 (Chart.yaml version and appVersion): (path, sha256)."""
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases.operator_charts import local_digest  # pylint: disable=import-outside-toplevel
    path = operator_charts.write_chart(os.path.join(directory, "v" + TARGET), "26.3.1")
    chart_yaml = os.path.join(path, "Chart.yaml")
    with open(chart_yaml) as handle:
        text = handle.read()
    assert "v26.3.1" in text
    with open(chart_yaml, "w") as handle:
        handle.write(text.replace("v26.3.1", "v" + TARGET))
    return {"path": path, "sha256": local_digest(path)[1]}


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """The user's working directory as the README has it: an inventory (hosts.yml, group_vars/all.yml with the
    target), inventories/charts.yml with the pinned charts, a private evidence root; the lab as their cluster."""
    root = str(tmp_path_factory.mktemp("target-setting"))
    lab = start_lab(os.path.join(root, "lab"), "prod-26.3-device-plugin")
    try:
        evidence = os.path.join(root, "evidence")
        os.mkdir(evidence, 0o700)
        inventory = os.path.join(root, "inventories", "mine")
        os.makedirs(os.path.join(inventory, "group_vars"))
        shutil.copy(os.path.join(root, "lab", "inventory.yml"), os.path.join(inventory, "hosts.yml"))
        with open(os.path.join(inventory, "group_vars", "all.yml"), "w") as handle:
            yaml.safe_dump({"dra_gate_target_operator_version": TARGET, "dra_gate_evidence_root": evidence,
                            "dra_gate_kubeconfig": lab.kubeconfig, "dra_gate_fail_on": "block",
                            # the lab: the Helm library (no helm binary here), waits sized for it
                            "dra_gate_helm_backend": "library", "dra_gate_operator_wait_timeout": 60,
                            "dra_gate_helm_timeout": 120}, handle)
        charts = os.path.join(root, "inventories", "charts.yml")
        mapping = operator_charts.write_mapping(os.path.join(root, "charts"))
        mapping[TARGET] = patch_chart(os.path.join(root, "charts"))
        with open(charts, "w") as handle:
            yaml.safe_dump({"dra_gate_operator_charts": mapping}, handle)
        yield {"root": root, "inventory": inventory, "charts": charts, "evidence": evidence, "lab": lab}
    finally:
        stop_lab(lab)
        errors = list(lab.server.controller_errors)
        shutil.rmtree(root, ignore_errors=True)
        assert not errors, "controller errors: %s" % errors[:5]


def play(user, playbook, *extra):
    argv = [os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", user["inventory"],
            os.path.join(REPO, "playbooks", playbook), "-e", "dra_gate_run_id=target-2612"] + list(extra)
    return subprocess.run(argv, cwd=user["root"], env=env(), capture_output=True, text=True, timeout=600, check=False)


def would_write(stdout, phase):
    """The record a check run would write: gate_evidence's --diff output for <run>/<phase>-<n>.json."""
    match = re.search(r"^\+\+\+ after: \S+/%s-\d+\.json\n(?:@@[^\n]*\n)?((?:\+[^\n]*\n)+)" % phase, stdout, re.M)
    assert match, "no %s record in the check run's diff:\n%s" % (phase, stdout[-4000:])
    return json.loads("".join(line[1:] + "\n" for line in match.group(1).splitlines()))


def test_the_group_vars_target_reaches_the_upgrade_plan(user):
    # The preflight judges this lab against 26.3 (its API server reports 1.37, beyond 26.3's validated range: a
    # block); only its plan matters here.
    preflight = play(user, "preflight.yml", "-e", "dra_gate_fail_on=never")
    assert preflight.returncode == 0, preflight.stdout[-6000:]
    with open(os.path.join(user["evidence"], "target-2612", "index.json")) as handle:
        entry = [e for e in json.load(handle)["records"] if e["phase"] == "preflight"][-1]
    with open(os.path.join(user["evidence"], "target-2612", entry["file"])) as handle:
        planned = json.load(handle)["results"]
    assert planned["target"]["operator_version"] == TARGET and [h["to"] for h in planned["upgrade_path"]] == [TARGET], planned

    snapshot = play(user, "snapshot.yml")
    assert snapshot.returncode == 0, snapshot.stdout[-6000:]
    check = play(user, "upgrade_operator.yml", "-e", "@" + user["charts"], "--check", "--diff")
    assert check.returncode == 0 or "verdict WARN" in check.stdout, check.stdout[-6000:]
    results = would_write(check.stdout, "upgrade")["results"]
    assert results["refused"] is None, results["refused"]
    assert results["target_version"] == TARGET, results["target_version"]
    assert str(results["current_version"]).lstrip("v") == "26.3.1", results["current_version"]
    assert results["planned_hops"] == 1 and [(str(h["from"]).lstrip("v"), h["to"]) for h in results["hops"]] == [
        ("26.3.1", TARGET)], results["hops"]
    assert results["check_mode"] is True and results["completed"] is False
