# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: the README's fleet flow ("Using it against your fleet", the block between
``<!-- fleet-flow:begin -->`` and ``<!-- fleet-flow:end -->``) runs as written, command by command, against
three lab clusters standing in for the user's: the upgrade's canary and production (scenario
``operator-upgrade``, the GPU Operator 26.3.1 installed as a user's cluster has it, the lab's etcd as the
``etcd`` group's member) and the DRA canary (scenario ``dra-canary-build``). The test writes only what the
README tells the user to write - the three inventories (``inventories/{canary,mine,dra-canary}``: hosts,
``group_vars/all.yml``) and ``inventories/charts.yml`` - in a scratch directory whose ``playbooks`` is the
collection's; every command of the block is then run by bash, verbatim, and must exit 0. What each step
left is checked against the clusters: production at the target after the canary cleared it, every node
drained and back, the DRA canary built and accepted, production rolled back to 26.3.1."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess

import pytest
import yaml

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

import operator_charts  # tests/ is on pytest's pythonpath (pytest.ini)
from kubelab.testing import start_lab, stop_lab, wait_for
from upgrade_lab import REPO, env, etcd_bin_dir, kube_clients, settled

README = os.path.join(REPO, "README.md")
# inventory directory named in the README -> the lab scenario that stands in for that cluster
CLUSTERS = {"canary": "operator-upgrade", "mine": "operator-upgrade", "dra-canary": "dra-canary-build"}
DRA_CANARY_NODES = ("canary-1", "vfio-1")


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


def group_vars(name: str, lab, evidence: str, scratch: str) -> dict:
    """What a user writes into the inventory's group_vars/all.yml (the example's settings, this lab's API and
    etcd), plus the lab's shorter waits."""
    settings = {
        "dra_gate_target_operator_version": "26.7.0", "dra_gate_target_kubernetes_version": "1.37.0",
        "dra_gate_target_allocation_mode": "dra" if name == "dra-canary" else "device_plugin",
        "dra_gate_target_passthrough": False, "dra_gate_accept_alpha_passthrough": False,
        "dra_gate_evidence_root": evidence, "dra_gate_fail_on": "block", "dra_gate_kubeconfig": lab.kubeconfig,
        # the lab: the Helm library (no helm binary here), waits sized for it
        "dra_gate_helm_backend": "library", "dra_gate_operator_wait_timeout": 60, "dra_gate_helm_timeout": 120,
    }
    bins = etcd_bin_dir()
    if bins:
        settings.update(dra_gate_etcd_endpoint=lab.etcd.client_url, dra_gate_etcdctl=os.path.join(bins, "etcdctl"),
                        dra_gate_etcdutl=os.path.join(bins, "etcdutl"),
                        dra_gate_etcd_snapshot_dir=os.path.join(scratch, "etcd-backups", name))
    if name == "dra-canary":
        # the lab's nodes run no containerd (the containerd_cdi role has its own real-process tests); a small
        # acceptance run
        settings.update(dra_gate_canary_containerd_cdi=False, dra_gate_canary_workload_timeout=30,
                        dra_gate_acceptance_count=12, dra_gate_acceptance_concurrency=3,
                        dra_gate_acceptance_kinds=["template", "extended"], dra_gate_acceptance_delete_grace_seconds=0)
    return settings


def write_inventory(name: str, lab, evidence: str, scratch: str) -> None:
    with open(os.path.join(lab.workdir, "inventory.yml")) as handle:
        data = yaml.safe_load(handle)
    children = data["all"]["children"]
    if name == "dra-canary":
        hosts = children["gpu_nodes"]["hosts"]
        children["gpu_nodes"]["hosts"] = {h: v for h, v in hosts.items() if h in DRA_CANARY_NODES}
    if etcd_bin_dir():
        children["etcd"] = {"hosts": {"localhost": {"ansible_connection": "local",
                                                    "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}
    directory = os.path.join(scratch, "inventories", name)
    os.makedirs(os.path.join(directory, "group_vars"))
    with open(os.path.join(directory, "hosts.yml"), "w") as handle:
        yaml.safe_dump(data, handle)
    with open(os.path.join(directory, "group_vars", "all.yml"), "w") as handle:
        yaml.safe_dump(group_vars(name, lab, evidence, scratch), handle)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """The user's working directory: the collection's playbooks, their inventories, a private evidence root."""
    root = str(tmp_path_factory.mktemp("readme-flow"))
    os.symlink(os.path.join(REPO, "playbooks"), os.path.join(root, "playbooks"))
    evidence = os.path.join(root, "evidence")
    os.mkdir(evidence, 0o700)
    charts = operator_charts.write_mapping(os.path.join(root, "charts"))
    os.makedirs(os.path.join(root, "inventories"))
    with open(os.path.join(root, "inventories", "charts.yml"), "w") as handle:
        yaml.safe_dump({"dra_gate_operator_charts": charts}, handle)
    return {"root": root, "evidence": evidence, "charts": charts}


@pytest.fixture(scope="module")
def clusters(scratch):
    """The three labs, each as the user's cluster is before the flow: the upgrade's canary and production
    run the GPU Operator 26.3.1 (installed with the Helm library, ready); the DRA canary has no operator."""
    labs = {}
    try:
        for name, scenario in CLUSTERS.items():
            work = os.path.join(scratch["root"], "lab-" + name)
            os.makedirs(work)
            lab = start_lab(work, scenario)
            lab.workdir = work
            labs[name] = lab
            if scenario == "operator-upgrade":
                operator_charts.install(lab.kubeconfig, scratch["charts"]["26.3.1"]["path"])
                kube = kube_clients(lab)
                wait_for(lambda k=kube: settled(k, "v0.19.0"), 60, "the 26.3.1 operator ready on %s" % name)
            write_inventory(name, lab, scratch["evidence"], scratch["root"])
        yield labs
    finally:
        errors = []
        for lab in labs.values():
            stop_lab(lab)
            errors += list(lab.server.controller_errors)
        assert not errors, "controller errors: %s" % errors[:5]


def test_the_readme_fleet_flow_runs_as_written(scratch, clusters):
    commands = flow_commands()
    assert [c.split()[3] for c in commands] == [
        "playbooks/preflight.yml", "playbooks/snapshot.yml", "playbooks/upgrade_operator.yml",
        "playbooks/preflight.yml", "playbooks/snapshot.yml", "playbooks/upgrade_operator.yml", "playbooks/drain_waves.yml",
        "playbooks/preflight.yml", "playbooks/snapshot.yml", "playbooks/dra_canary.yml", "playbooks/rollback.yml"]
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
    # nothing the flow wrote is readable by others
    for base, dirs, files in os.walk(evidence):
        for name in dirs + files:
            assert not os.stat(os.path.join(base, name)).st_mode & 0o077, os.path.join(base, name)
    shutil.rmtree(os.path.join(scratch["root"], "etcd-backups"), ignore_errors=True)
