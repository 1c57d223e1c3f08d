# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: the README's fleet flow ("Using it against your fleet", the block between
``<!-- fleet-flow:begin -->`` and ``<!-- fleet-flow:end -->``) runs as written, command by command, against
three lab clusters standing in for the user's: the upgrade's canary and production (scenario
``operator-upgrade``, the GPU Operator 26.3.1 installed as a user's cluster has it, the lab's etcd as the
``etcd`` group's member) and the DRA canary (scenario ``gate-dra-canary``). The test writes only what the
README tells the user to write - the three inventories (``inventories/{canary,mine,dra-canary}``: hosts,
``group_vars/all.yml``) and ``inventories/charts.yml`` - in a scratch directory whose ``playbooks`` is the
collection's; every command of the block is then run by bash, verbatim, and must exit 0. What each step
left is checked against the clusters: production at the target after the canary cleared it, every node
drained and back, the DRA canary built and accepted, production rolled back to 26.3.1, and the decision over the
three runs: decision 1 accept, decision 2 promote, every gate passing, the record valid and recomputed byte for byte,
the reports written (the one slow test of the whole gate;
``./dra-gate rehearse`` runs the same clusters through playbooks/site.yml, tests/lab/contract/test_rehearsal.py)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess

import jsonschema
import pytest
import yaml

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

import gate_lab  # tests/ is on pytest's pythonpath (pytest.ini)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import decision_schema
from gate_lab import CLUSTERS
from upgrade_lab import REPO, env, kube_clients, settled

README = os.path.join(REPO, "README.md")


def flow_commands() -> list:
    """The README's fleet flow: one command per entry (continuation lines joined), comments dropped."""
    with open(README, encoding="utf-8") as handle:
        text = handle.read()
    match = re.search(r"<!-- fleet-flow:begin -->\s*```sh\n(.*?)```\s*<!-- fleet-flow:end -->", text, re.S)
    assert match, "README.md has no fleet-flow block"
    commands, current = [], ""
    for line in match.group(1).splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line[:-1] + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            commands.append(current.strip())
            current = ""
    return commands


def inventory_of(command: str) -> str:
    argv = shlex.split(command)
    return os.path.basename(argv[argv.index("-i") + 1])


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """The user's working directory: the collection's playbooks, their inventories, a private evidence root."""
    return gate_lab.prepare(str(tmp_path_factory.mktemp("readme-flow")))


@pytest.fixture(scope="module")
def clusters(scratch):
    """The three labs (tests/gate_lab.py), each as the user's cluster is before the flow."""
    errors = []
    with gate_lab.clusters(scratch, errors) as labs:
        yield labs
    assert not errors, "controller errors: %s" % errors[:5]


def test_the_readme_fleet_flow_runs_as_written(scratch, clusters):
    commands = flow_commands()
    assert [c.split()[3] for c in commands] == [
        "playbooks/preflight.yml", "playbooks/snapshot.yml", "playbooks/upgrade_operator.yml",
        "playbooks/preflight.yml", "playbooks/snapshot.yml", "playbooks/upgrade_operator.yml", "playbooks/drain_waves.yml",
        "playbooks/preflight.yml", "playbooks/snapshot.yml", "playbooks/dra_canary.yml", "playbooks/rollback.yml",
        "playbooks/decide.yml", "playbooks/decide.yml"]
    log = os.path.join(os.environ.get("TMPDIR", "/tmp"), "readme-flow-last.txt")
    with open(log, "w") as out:
        for command in commands:
            assert inventory_of(command) in CLUSTERS, command
            proc = subprocess.run(["bash", "-c", command], cwd=scratch["root"], env=env(), capture_output=True,
                                  text=True, timeout=600, check=False)
            out.write("$ %s\n%s%s\n" % (command, proc.stdout, proc.stderr))
            assert proc.returncode == 0, "%s\n%s\n%s" % (command, proc.stdout[-6000:], proc.stderr[-2000:])
    evidence = scratch["evidence"]

    def latest(run, phase):
        with open(os.path.join(evidence, run, "index.json")) as handle:
            entries = [e for e in json.load(handle)["records"] if e["phase"] == phase]
        assert entries, (run, phase)
        with open(os.path.join(evidence, run, entries[-1]["file"])) as handle:
            return json.load(handle)

    canary = latest("canary-2612", "upgrade")["results"]
    assert canary["scope"] == "canary" and [h["to"] for h in canary["hops"]] == ["26.6.2", "26.7.0"], canary["hops"]
    production = latest("prod-2612", "upgrade")["results"]
    assert production["scope"] == "production" and production["canary"]["cleared"] is True, production["canary"]
    assert [h["to"] for h in production["hops"]] == ["26.6.2", "26.7.0"] and production["verdict"] == "pass"
    assert settled(kube_clients(clusters["canary"]), "v0.20.0")  # the canary stays at 26.7.0
    drain = latest("prod-2612", "drain")["results"]
    assert drain["verdict"] == "pass", drain.get("findings")
    assert latest("dra-2612", "dra_canary")["results"]["verdict"] != "block"
    assert latest("dra-2612", "dra_acceptance")["results"]["verdict"] != "block"
    rollback = latest("prod-2612", "rollback")["results"]
    assert rollback["verdict"] != "block", rollback.get("findings")
    prod = kube_clients(clusters["mine"])
    assert settled(prod, "v0.19.0")  # rolled back to 26.3.1
    assert not any(n.spec.unschedulable for n in prod["core"].list_node().items)
    # the decision over the three runs: the operator upgrade accepted, DRA promoted, the reports beside the record
    decided = os.path.join(evidence, "decisions", "gate-2612")
    with open(os.path.join(decided, "decision.json")) as handle:
        decision = json.load(handle)
    outcomes = {key: value["outcome"] for key, value in decision["decisions"].items()}
    assert outcomes == {"operator_upgrade": "accept", "dra_promotion": "promote"}, decision["decisions"]
    assert [g["id"] for g in decision["gates"] if g["status"] != "pass"] == [], decision["gates"]
    jsonschema.Draft202012Validator(decision_schema.SCHEMA).validate(decision)
    used = {(p["run_id"], p["file"]) for p in decision["phases"].values()}
    assert ("prod-2612", "rollback-1.json") in used and ("dra-2612", "dra_acceptance-1.json") in used, used
    for name in ("report.html", "summary.md", "junit.xml"):
        assert os.path.getsize(os.path.join(decided, name)) > 0, name
    # nothing the flow wrote is readable by others
    for base, dirs, files in os.walk(evidence):
        for name in dirs + files:
            assert not os.stat(os.path.join(base, name)).st_mode & 0o077, os.path.join(base, name)
    shutil.rmtree(os.path.join(scratch["root"], "etcd-backups"), ignore_errors=True)


def test_the_phases_run_as_awx_jobs(scratch, clusters, tmp_path):
    """The phases as AWX runs them (issue 32): each through ansible-runner from an AWX-shaped private data directory
    (tests/runner_lab.py), no prompt anywhere. Production, rolled back to 26.3.1 by the flow, is taken through a new
    run as jobs - preflight, snapshot, the production upgrade (cleared by the flow's canary run) - and the decision
    over the flow's three runs is a job whose set_stats data reaches the runner's artifacts; a preflight with a GPU
    host that does not answer is a failed job whose record names the host; and the decision is recomputed through
    ansible-navigator (--ee false --mode stdout)."""
    import runner_lab  # tests/ is on pytest's pythonpath  pylint: disable=import-outside-toplevel
    root, evidence = scratch["root"], scratch["evidence"]
    mine = os.path.join(root, "inventories", "mine")
    charts = os.path.join(root, "inventories", "charts.yml")

    def job(name, playbook, inventory=mine, **extravars):
        pdd = runner_lab.private_data_dir(str(tmp_path / name), root, inventory, extravars)
        return runner_lab.run_job(pdd, playbook)

    for name, playbook, extra in (
            ("preflight", "playbooks/preflight.yml", {}),
            ("snapshot", "playbooks/snapshot.yml", {}),
            ("upgrade", "playbooks/upgrade_operator.yml", runner_lab.extravars_of(
                charts, dra_gate_upgrade_scope="production", dra_gate_canary_run_id="canary-2612"))):
        done = job(name, playbook, dra_gate_run_id="awx-2612", **extra)
        assert (done.status, done.rc) == ("successful", 0), done.tail()
    with open(os.path.join(evidence, "awx-2612", "index.json")) as handle:
        index = json.load(handle)
    assert [(e["phase"], e["verdict"]) for e in index["records"]] == [
        ("preflight", "pass"), ("snapshot", "pass"), ("upgrade", "pass")], index["records"]
    assert settled(kube_clients(clusters["mine"]), "v0.20.0")  # production at 26.7.0, through the jobs

    runs = [{"evidence_root": evidence, "run_id": run} for run in ("canary-2612", "prod-2612", "dra-2612")]
    decided = job("decide", "playbooks/decide.yml", dra_gate_decision_id="gate-awx",
                  dra_gate_decision_policy=scratch["policy"], dra_gate_decision_runs=runs)
    assert (decided.status, decided.rc) == ("successful", 0), decided.tail()
    with open(os.path.join(evidence, "decisions", "gate-awx", "decision.json")) as handle:
        decision = json.load(handle)
    stats = decided.artifact_data
    # the set_stats data, as AWX hands it to the workflow's next node: both outcomes, every gate, the record's path
    assert stats.get("operator_upgrade") == "accept" and stats.get("dra_promotion") == "promote", stats
    assert stats["gates"] == {g["id"]: g["status"] for g in decision["gates"]}, stats
    assert stats["decision_record"] == os.path.join(evidence, "decisions", "gate-awx", "decision.json"), stats

    # a GPU host that does not answer (ssh to a closed port): a failed job, a blocking record naming it
    gone = str(tmp_path / "inventory-gone")
    shutil.copytree(mine, gone)
    with open(os.path.join(gone, "hosts.yml")) as handle:
        hosts = yaml.safe_load(handle)
    hosts["all"]["children"]["gpu_nodes"]["hosts"]["gpu-gone"] = {
        "ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
        "ansible_ssh_common_args": "-o ConnectTimeout=5 -o BatchMode=yes"}
    with open(os.path.join(gone, "hosts.yml"), "w") as handle:
        yaml.safe_dump(hosts, handle)
    failed = job("preflight-gone", "playbooks/preflight.yml", inventory=gone, dra_gate_run_id="awx-gone")
    assert failed.status == "failed" and failed.rc != 0, failed.tail()
    with open(os.path.join(evidence, "awx-gone", "index.json")) as handle:
        (entry,) = json.load(handle)["records"]
    with open(os.path.join(evidence, "awx-gone", entry["file"])) as handle:
        record = json.load(handle)
    assert record["results"]["verdict"] == "block"
    named = [f for f in record["results"]["findings"] if f.get("severity") == "block" and "gpu-gone" in str(f)]
    assert named, record["results"]["findings"]

    # ansible-navigator, as AAP users run content locally: the decision recomputed, identical
    logs = tmp_path / "navigator"
    logs.mkdir()
    proc = runner_lab.navigator(root, ["playbooks/decide.yml", "-i", mine, "-e", "dra_gate_decision_recompute=%s"
                                       % os.path.join(evidence, "decisions", "gate-2612", "decision.json")], str(logs))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "recomputed, identical" in proc.stdout, proc.stdout[-4000:]
