# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: AWX job slicing (issue 32, docs/awx.md "Sliced runs"). A sliced job template runs its playbook once per
slice, each slice a job of its own with the slice's part of the inventory (AWX: every slice_count-th host) and the same
extra variables, here three ansible-runner jobs from AWX-shaped private data directories (tests/runner_lab.py),
started together against one lab cluster (scenario prod-26.3-device-plugin, 6 GPU nodes):

- the preflight, sliced in 3 with one slice's host not answering: that slice is a failed job whose record names the
  host, the others succeed, and the decision over the run merges the three slices' records - the failing slice fails
  the compatibility gate (decision 1 reject), never a pass over the hosts that answered; the same job with one slice
  that never ran (2 of 3 records) makes the decision incomplete;
- the drain waves sliced in 3, and the snapshot (done once per gate) sliced in 2 started together: every slice refuses
  with an error naming dra_gate_job_slice_count before anything is read, written or cordoned - no slice repeats or
  races another - so the decision's phase is missing."""

from __future__ import annotations

import concurrent.futures
import json
import os

import pytest
import yaml

import runner_lab  # tests/ is on pytest's pythonpath (pytest.ini)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.modules import gate_decision
from kubelab.testing import start_lab, stop_lab
from upgrade_lab import REPO, kube_clients

POLICY = os.path.join(REPO, "inventories", "gate_policy.example.yml")
SLICES = 3
GONE = "gpu-gone"  # a GPU host that does not answer (ssh to a closed port)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("sliced-lab"))
    cluster = start_lab(work, "prod-26.3-device-plugin")
    cluster.workdir = work
    try:
        yield cluster
    finally:
        stop_lab(cluster)
    assert not cluster.server.controller_errors, cluster.server.controller_errors[:5]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The AWX project: a checkout whose playbooks are the collection's."""
    root = str(tmp_path_factory.mktemp("project"))
    os.symlink(os.path.join(REPO, "playbooks"), os.path.join(root, "playbooks"))
    return root


def awx_slices(inventory: dict, count: int) -> list:
    """The inventories of a sliced job's slices, as AWX cuts them: the hosts in name order, slice N (1-based) with
    every count-th host from the N-th; each slice keeps the groups (and their variables) its hosts belong to."""
    children = inventory["all"]["children"]
    names = sorted({h for group in children.values() for h in (group.get("hosts") or {})})
    out = []
    for number in range(count):
        mine = set(names[number::count])
        sliced = {}
        for group, body in children.items():
            hosts = {h: v for h, v in (body.get("hosts") or {}).items() if h in mine}
            if hosts:
                sliced[group] = dict(body, hosts=hosts)
        out.append({"all": {"children": sliced}})
    return out


def run_slices(project, base, inventories, playbook, extravars, job_ids, workflow_id) -> list:
    """One runner job per slice, started together (AWX runs a sliced job's slices in parallel): slice i gets
    ``awx_job_id`` job_ids[i] and every slice the same ``awx_workflow_job_id``, as AWX gives them."""
    pdds = []
    for number, (inventory, job_id) in enumerate(zip(inventories, job_ids)):
        directory = os.path.join(base, "inventory-%d" % (number + 1))
        os.makedirs(directory)
        with open(os.path.join(directory, "hosts.yml"), "w") as handle:
            yaml.safe_dump(inventory, handle)
        pdds.append(runner_lab.private_data_dir(
            os.path.join(base, "slice-%d" % (number + 1)), project, directory,
            dict(extravars, awx_job_id=job_id, awx_workflow_job_id=workflow_id)))
    with concurrent.futures.ThreadPoolExecutor(len(pdds)) as pool:
        return list(pool.map(lambda pdd: runner_lab.run_job(pdd, playbook, timeout=600), pdds))


def records(evidence, run):
    with open(os.path.join(evidence, run, "index.json")) as handle:
        entries = json.load(handle)["records"]
    out = []
    for entry in entries:
        with open(os.path.join(evidence, run, entry["file"])) as handle:
            out.append(json.load(handle))
    return out


def decide(evidence, run):
    return gate_decision.compute(POLICY, [{"evidence_root": evidence, "run_id": run}], clock.utc_now())


def test_a_sliced_preflight_with_a_failing_slice_is_merged_by_the_decision(lab, project, tmp_path):
    evidence = str(tmp_path / "evidence")
    os.mkdir(evidence, 0o700)
    with open(os.path.join(lab.workdir, "inventory.yml")) as handle:
        inventory = yaml.safe_load(handle)
    inventory["all"]["children"]["gpu_nodes"]["hosts"][GONE] = {
        "ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
        "ansible_ssh_common_args": "-o ConnectTimeout=5 -o BatchMode=yes"}
    slices = awx_slices(inventory, SLICES)
    extravars = {"dra_gate_evidence_root": evidence, "dra_gate_run_id": "sliced", "dra_gate_job_slice_count": SLICES}
    jobs = run_slices(project, str(tmp_path / "launch-1"), slices, "playbooks/preflight.yml", extravars,
                      [101, 102, 103], 100)
    with_gone = [GONE in s["all"]["children"]["gpu_nodes"]["hosts"] for s in slices]
    assert with_gone.count(True) == 1
    for job, gone in zip(jobs, with_gone):
        assert (job.status, job.rc != 0) == (("failed", True) if gone else ("successful", False)), job.tail()
    recorded = records(evidence, "sliced")
    assert sorted(r["slice"]["id"] for r in recorded) == ["101", "102", "103"], [r.get("slice") for r in recorded]
    assert {r["slice"]["group"] for r in recorded} == {"100"} and {r["slice"]["count"] for r in recorded} == {SLICES}
    covered = sorted(h for r in recorded for h in r["inputs"]["hosts"])
    assert covered == sorted(inventory["all"]["children"]["gpu_nodes"]["hosts"])  # each host once, in one slice
    failing = [r for r in recorded if GONE in r["inputs"]["hosts"]][0]
    assert failing["results"]["verdict"] == "block"
    assert [f for f in failing["results"]["findings"] if f["severity"] == "block" and f["subject"] == GONE], \
        failing["results"]["findings"]

    decision = decide(evidence, "sliced")
    assert decision["phases"]["preflight"]["status"] == "present" and decision["phases"]["preflight"]["verdict"] == "block"
    compatibility = [g for g in decision["gates"] if g["id"] == "compatibility"][0]
    assert compatibility["status"] == "fail" and GONE in "; ".join(compatibility["reasons"]), compatibility
    assert "in 3 preflight records" in compatibility["measured"]["text"], compatibility
    assert decision["decisions"]["operator_upgrade"]["outcome"] == "reject", decision["decisions"]

    # a later launch of the job (workflow 200) of which one slice never ran: incomplete, never a pass over 2 slices
    good = [s for s, gone in zip(slices, with_gone) if not gone]
    jobs = run_slices(project, str(tmp_path / "launch-2"), good, "playbooks/preflight.yml",
                      dict(extravars, dra_gate_run_id="sliced-2"), [201, 202], 200)
    assert [job.status for job in jobs] == ["successful", "successful"], [job.tail() for job in jobs]
    decision = decide(evidence, "sliced-2")
    phase = decision["phases"]["preflight"]
    assert phase["status"] == "incomplete" and "sliced job 200: 2 of 3 slices recorded" in phase["reason"], phase
    assert decision["decisions"]["operator_upgrade"]["outcome"] == "incomplete"


@pytest.mark.parametrize("playbook, phase, count", [
    # waves sized over the whole pool cannot be kept across slices
    ("playbooks/drain_waves.yml", "drain", 3),
    # done once per gate (the etcd snapshot, the Helm state): two slices started together neither repeat nor race it
    ("playbooks/snapshot.yml", "snapshot", 2),
])
def test_a_sliced_phase_done_once_per_gate_is_refused_by_every_slice_before_anything(lab, project, tmp_path, playbook,
                                                                                     phase, count):
    evidence = str(tmp_path / "evidence")
    os.mkdir(evidence, 0o700)
    with open(os.path.join(lab.workdir, "inventory.yml")) as handle:
        inventory = yaml.safe_load(handle)
    extravars = {"dra_gate_evidence_root": evidence, "dra_gate_run_id": "sliced-" + phase,
                 "dra_gate_job_slice_count": count, "dra_gate_drain_waves": [1, "50%"]}
    jobs = run_slices(project, str(tmp_path / "launch"), awx_slices(inventory, count), playbook, extravars,
                      list(range(301, 301 + count)), 300)
    for job in jobs:
        assert job.status == "failed" and job.rc != 0, job.tail()
        assert "dra_gate_job_slice_count" in job.stdout and "runs once per gate over the whole inventory" in job.stdout, \
            job.tail()
    kube = kube_clients(lab)
    assert not [n.metadata.name for n in kube["core"].list_node().items if n.spec.unschedulable]
    run_dir = os.path.join(evidence, "sliced-" + phase)
    assert not os.path.exists(run_dir) or sorted(os.listdir(run_dir)) == [], sorted(os.listdir(run_dir))
    decision = decide(evidence, "sliced-" + phase)
    assert decision["phases"][phase]["status"] == "missing"
