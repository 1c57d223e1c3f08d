# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The three lab clusters of a whole gate, as a user's are before it, and what the user writes for them: the
upgrade's canary and production (scenario ``operator-upgrade``, the GPU Operator 26.3.1 installed with the Helm
library, the lab's etcd as the ``etcd`` group's member) and the DRA canary (scenario ``gate-dra-canary``), each
with its inventory (``inventories/{canary,mine,dra-canary}``: hosts, ``group_vars/all.yml``), the pinned charts
(``inventories/charts.yml``) and a gate policy (``inventories/gate_policy.yml``) in a scratch directory whose
``playbooks`` is the collection's.

Shared by the README flow's contract test (tests/lab/contract/test_readme_flow.py) and the rehearsal
(``./dra-gate rehearse``, tests/tools/devtool/rehearsal.py), so that both stand up the same clusters."""

from __future__ import annotations

import contextlib
import os
import shutil

import yaml

import operator_charts  # tests/ is on the python path (pytest.ini; the rehearsal sets PYTHONPATH)
from kubelab.testing import start_lab, stop_lab, wait_for
from upgrade_lab import REPO, etcd_bin_dir, kube_clients, settled

# inventory directory (as the README names it) -> the lab scenario that stands in for that cluster
CLUSTERS = {"canary": "operator-upgrade", "mine": "operator-upgrade", "dra-canary": "gate-dra-canary"}
DRA_CANARY_NODES = ("canary-1", "vfio-1")
# The DRA acceptance run, kept small for the lab, measuring every gate of decision 2: whole-GPU, extended-resource
# and NUMA-constrained claims (gate-dra-canary's canary-1 has 8 GPUs on 2 NUMA nodes), a device taint (NoSchedule:
# nothing may be allocated on the tainted device, nothing evicted), a restart of the DRA kubelet plugin and of a
# workload (docs/acceptance.md, "Disruptions"). About a minute on 2 cores.
ACCEPTANCE = {
    "dra_gate_acceptance_count": 16, "dra_gate_acceptance_concurrency": 4,
    "dra_gate_acceptance_kinds": ["template", "extended", "numa"], "dra_gate_acceptance_delete_grace_seconds": 0,
    "dra_gate_acceptance_hold_seconds": 1,
    "dra_gate_acceptance_disruptions": [
        {"type": "plugin_restart", "node": "canary-1", "after": 2},
        {"type": "device_taint", "effect": "NoSchedule", "after": 5, "lifecycles": 3, "eviction_timeout": 20},
        {"type": "workload_restart", "pods": 1, "after": 9, "recovery_timeout": 60}],
}
EXAMPLE_POLICY = os.path.join(REPO, "inventories", "gate_policy.example.yml")


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
        # acceptance run that still measures every gate of decision 2
        settings.update(dra_gate_canary_containerd_cdi=False, dra_gate_canary_workload_timeout=30, **ACCEPTANCE)
    return settings


def write_inventory(name: str, lab, evidence: str, scratch: str) -> str:
    """inventories/<name>/{hosts.yml,group_vars/all.yml} under ``scratch`` for ``lab``; the directory."""
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
    os.makedirs(os.path.join(directory, "group_vars"), exist_ok=True)
    with open(os.path.join(directory, "hosts.yml"), "w") as handle:
        yaml.safe_dump(data, handle)
    with open(os.path.join(directory, "group_vars", "all.yml"), "w") as handle:
        yaml.safe_dump(group_vars(name, lab, evidence, scratch), handle)
    return directory


def write_policy(path: str) -> str:
    """The gate policy as the README has the user start it: a copy of inventories/gate_policy.example.yml."""
    shutil.copyfile(EXAMPLE_POLICY, path)
    return path


def prepare(root: str) -> dict:
    """The user's working directory ``root`` (made by the caller): the collection's playbooks, a private evidence
    root, the pinned charts (inventories/charts.yml) and the gate policy (inventories/gate_policy.yml)."""
    os.symlink(os.path.join(REPO, "playbooks"), os.path.join(root, "playbooks"))
    evidence = os.path.join(root, "evidence")
    os.mkdir(evidence, 0o700)
    charts = operator_charts.write_mapping(os.path.join(root, "charts"))
    os.makedirs(os.path.join(root, "inventories"))
    with open(os.path.join(root, "inventories", "charts.yml"), "w") as handle:
        yaml.safe_dump({"dra_gate_operator_charts": charts}, handle)
    # cp inventories/gate_policy.example.yml inventories/gate_policy.yml (README); not inside an inventory directory,
    # where ansible-playbook -i would read it as an inventory source
    policy = write_policy(os.path.join(root, "inventories", "gate_policy.yml"))
    return {"root": root, "evidence": evidence, "charts": charts, "policy": policy}


WORKLOAD_NAMESPACE, WORKLOAD = "ml-training", "trainer"


def run_workload(kube: dict) -> None:
    """Production runs GPU work, as a user's does: a Deployment of two pods of one ``nvidia.com/gpu`` each (the
    device plugin's extended resource) under a PodDisruptionBudget, so the drain waves evict and reschedule real
    pods (the drain gate's denominator) and the upgrade's allocatable check sees GPUs in use. Running before the
    gate starts."""
    from kubernetes import client  # pylint: disable=import-outside-toplevel
    kube["core"].create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=WORKLOAD_NAMESPACE)))
    labels = {"app": WORKLOAD}
    container = client.V1Container(name="cuda", image="nvcr.io/nvidia/cuda:12.9.0-base-ubuntu24.04",
                                   resources=client.V1ResourceRequirements(limits={"nvidia.com/gpu": "1"}))
    kube["apps"].create_namespaced_deployment(WORKLOAD_NAMESPACE, client.V1Deployment(
        metadata=client.V1ObjectMeta(name=WORKLOAD),
        spec=client.V1DeploymentSpec(replicas=2, selector=client.V1LabelSelector(match_labels=labels),
                                     template=client.V1PodTemplateSpec(
                                         metadata=client.V1ObjectMeta(labels=labels),
                                         spec=client.V1PodSpec(containers=[container])))))
    client.PolicyV1Api(kube["api"]).create_namespaced_pod_disruption_budget(WORKLOAD_NAMESPACE, client.V1PodDisruptionBudget(
        metadata=client.V1ObjectMeta(name=WORKLOAD),
        spec=client.V1PodDisruptionBudgetSpec(max_unavailable=1, selector=client.V1LabelSelector(match_labels=labels))))

    def running():
        pods = kube["core"].list_namespaced_pod(WORKLOAD_NAMESPACE, label_selector="app=%s" % WORKLOAD).items
        return len([p for p in pods if p.status.phase == "Running"]) == 2
    wait_for(running, 60, "the %s/%s pods Running" % (WORKLOAD_NAMESPACE, WORKLOAD))


@contextlib.contextmanager
def clusters(scratch: dict, errors: list | None = None, progress=None):
    """The three labs (name -> Lab, each with ``workdir``), their inventories written: the upgrade's canary and
    production run the GPU Operator 26.3.1 (installed with the Helm library, ready); the DRA canary has no
    operator. Stopped on the way out; the controllers' errors are appended to ``errors``."""
    labs = {}
    try:
        for name, scenario in CLUSTERS.items():
            if progress:
                progress("starting lab %s (scenario %s)" % (name, scenario))
            work = os.path.join(scratch["root"], "lab-" + name)
            os.makedirs(work)
            lab = start_lab(work, scenario)
            lab.workdir = work
            labs[name] = lab
            if scenario == "operator-upgrade":
                operator_charts.install(lab.kubeconfig, scratch["charts"]["26.3.1"]["path"])
                kube = kube_clients(lab)
                wait_for(lambda k=kube: settled(k, "v0.19.0"), 60, "the 26.3.1 operator ready on %s" % name)
                if name == "mine":
                    run_workload(kube)
            write_inventory(name, lab, scratch["evidence"], scratch["root"])
        yield labs
    finally:
        for lab in labs.values():
            stop_lab(lab)
            if errors is not None:
                errors.extend(lab.server.controller_errors)
