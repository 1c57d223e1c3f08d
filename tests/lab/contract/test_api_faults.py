# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: the cluster-side modules survive what real API servers do - the lab's ``api_error``
faults (500 and 429 bursts on lists, 503 for everything for a while, 403) injected while
``gpu_cluster_facts``, ``cluster_state`` and ``helm_state`` (Helm library backend) run for real
(the module's own process, the real kubernetes client and Helm v4 library) against the lab.

Transient faults end in success after retries; a fault longer than ``api_deadline`` ends in a
failure within the deadline naming the request; a 403 is never "absent": the module fails naming
what it could not read. Deadlines and bursts are small so the file stays fast.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import subprocess
import sys
import time

import pytest

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VENV_PYTHON = os.path.join(REPO, ".venv", "bin", "python")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
RELEASE = NAMESPACE = "gpu-operator"
# module start (imports of ansible, kubernetes, the Go library) on a loaded 2-core machine
STARTUP_ALLOWANCE = 20.0

CHART_YAML = "apiVersion: v2\nname: gpu-operator\nversion: {version}\nappVersion: \"{version}\"\n"
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gpu-operator
  labels: {app: gpu-operator, app.kubernetes.io/instance: "{{ .Release.Name }}"}
spec:
  replicas: 1
  selector:
    matchLabels: {app: gpu-operator}
  template:
    metadata:
      labels: {app: gpu-operator, app.kubernetes.io/instance: "{{ .Release.Name }}"}
    spec:
      containers:
        - name: gpu-operator
          image: nvcr.io/nvidia/gpu-operator:{{ .Chart.AppVersion }}
"""


def write_chart(root, version):
    for name, text in (("Chart.yaml", CHART_YAML.format(version=version)), ("templates/operator.yaml", DEPLOYMENT),
                       ("values.yaml", "driver: {enabled: true}\n")):
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
    return root


def crd(group, plural, kind, version):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (plural, group)},
            "spec": {"group": group, "scope": "Cluster",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": kind + "List"},
                     "versions": [{"name": version, "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}]}}


def create(lab, manifest):
    rtype = lab.server.registry.by_kind(manifest["apiVersion"], manifest["kind"])
    namespace = manifest["metadata"].get("namespace") if rtype.namespaced else None
    return lab.server.api.create(rtype, namespace, manifest)


@pytest.fixture(scope="module")
def cluster(lab, tmp_path_factory):
    """The lab with a GPU node, the operator's CRDs and ClusterPolicy and a two-revision Helm release."""
    charts = tmp_path_factory.mktemp("charts")
    create(lab, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1", "labels": {
        "nvidia.com/gpu.present": "true"}}, "spec": {}})
    create(lab, crd("nvidia.com", "clusterpolicies", "ClusterPolicy", "v1"))
    create(lab, crd("nvidia.com", "gpuclusters", "GPUCluster", "v1alpha1"))
    cp_type = None
    deadline = time.monotonic() + 30
    while cp_type is None and time.monotonic() < deadline:
        cp_type = lab.server.registry.by_kind("nvidia.com/v1", "ClusterPolicy")
        time.sleep(0.1)
    create(lab, {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
                 "spec": {"devicePlugin": {"enabled": True}}})
    helm = helm_python.Config(kubeconfig_path=lab.kubeconfig, namespace=NAMESPACE, storage_driver="secret")
    try:
        helm.install(write_chart(str(charts / "v26.3.1"), "v26.3.1"), RELEASE, {}, timeout=120, create_namespace=True)
        helm.upgrade(write_chart(str(charts / "v26.7.0"), "v26.7.0"), RELEASE, {}, timeout=120)
    finally:
        helm.close()
    yield lab
    lab.server.fault_engine.remove()


@pytest.fixture(autouse=True)
def no_faults_left(lab):
    lab.server.fault_engine.remove()
    yield
    lab.server.fault_engine.remove()


def run_module(lab, name, args, tmp_path, env_extra=None, during=None):
    """Run the collection's module ``name`` in its own Python process, as Ansible does (the args
    file in the ANSIBLE_MODULE_ARGS form); ``during()`` runs while it does. Returns (result, elapsed
    seconds)."""
    args_file = tmp_path / ("%s-args.json" % name)
    args = dict(args, kubeconfig=lab.kubeconfig)
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_tmpdir=str(tmp_path))}))
    env = lab.env()
    env.update(PYTHONPATH=COLLECTIONS, **(env_extra or {}))
    started = time.monotonic()
    proc = subprocess.Popen([VENV_PYTHON, "-m", "ansible_collections.gpufleet.dra_gate.plugins.modules." + name,
                             str(args_file)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=str(tmp_path))
    try:
        if during is not None:
            during()
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    elapsed = time.monotonic() - started
    try:
        result = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise AssertionError("no JSON result from %s: %s %s" % (name, stdout[-3000:], stderr[-3000:]))
    assert "Traceback" not in stderr, stderr[-3000:]
    return result, elapsed


def outage(lab, seconds=1.5, code=503):
    """A ``during`` callback: every request answers ``code`` from before the module starts until
    ``seconds`` after its first request was refused (an outage the module must ride out)."""
    faults(lab, {"api_error": {"code": code}})

    def during():
        deadline = time.monotonic() + 120
        while not any(hits(lab)) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(seconds)
        lab.server.fault_engine.remove()
    return during


def reported_elapsed(msg):
    """The seconds the module says the failing request took (``failed after N attempt(s) in X s``)."""
    match = re.search(r"failed after \d+ attempt\(s\) in ([0-9.]+) s", msg)
    assert match, msg
    return float(match.group(1))


def faults(lab, *specs):
    return lab.server.fault_engine.add(list(specs))


def hits(lab):
    return [f["hits"] for f in lab.server.fault_engine.describe()]


# -- gpu_cluster_facts ----------------------------------------------------------------------------------


def test_gpu_cluster_facts_survives_500_and_429_bursts_on_lists(cluster, tmp_path):
    faults(cluster, {"api_error": {"code": 500, "count": 3, "path": "^/api/v1/nodes$", "method": "GET"}},
           {"api_error": {"code": 429, "count": 2, "path": "/secrets$", "retry_after": 1}},
           {"api_error": {"code": 503, "count": 2, "path": "/clusterpolicies$"}})
    result, _elapsed = run_module(cluster, "gpu_cluster_facts", {"include": ["nodes", "operator"]}, tmp_path)
    assert not result.get("failed"), result.get("msg")
    assert hits(cluster) == [3, 2, 2]
    assert result["api_retries"] == 7
    facts = result["ansible_facts"]["gpu_cluster"]
    assert "gpu-1" in facts["nodes"]
    assert facts["operator"]["helm_release"]["revision"] == 2
    assert [p["name"] for p in facts["operator"]["cluster_policies"]] == ["cluster-policy"]


def test_gpu_cluster_facts_survives_503_for_everything_for_a_while(cluster, tmp_path):
    result, elapsed = run_module(cluster, "gpu_cluster_facts", {"include": ["nodes", "operator"]}, tmp_path,
                                 during=outage(cluster, 1.5))
    assert not result.get("failed"), result.get("msg")
    assert result["api_retries"] >= 2 and elapsed >= 1.5
    assert "gpu-1" in result["ansible_facts"]["gpu_cluster"]["nodes"]


def test_gpu_cluster_facts_fails_within_the_deadline_naming_the_request(cluster, tmp_path):
    faults(cluster, {"api_error": {"code": 503, "seconds": 120}})
    result, elapsed = run_module(cluster, "gpu_cluster_facts", {"include": ["nodes"], "api_deadline": 3}, tmp_path)
    assert result["failed"]
    assert elapsed < 3 + STARTUP_ALLOWANCE
    msg = result["msg"]
    assert msg.startswith("reading the cluster failed: GET /version failed after ")
    assert "(api_deadline 3 s)" in msg and "last: HTTP 503: the server is currently unable to handle the request" in msg
    assert result["status"] == 503 and result["attempts"] > 2 and result["forbidden"] is False
    assert 1.0 <= reported_elapsed(msg) <= 3.0  # never past the deadline, at most one backoff step short


def test_gpu_cluster_facts_403_on_the_helm_secrets_is_not_an_absent_release(cluster, tmp_path):
    faults(cluster, {"api_error": {"code": 403, "path": "^/api/v1/namespaces/gpu-operator/secrets$"}})
    result, _elapsed = run_module(cluster, "gpu_cluster_facts", {"include": ["operator"]}, tmp_path)
    assert result["failed"] and result["forbidden"] is True and result["status"] == 403
    assert 'forbidden: cannot list secrets in namespace "gpu-operator"' in result["msg"]
    assert 'User "system:serviceaccount:dra-gate:gate" cannot list resource "secrets"' in result["msg"]
    assert result["attempts"] == 1  # a 403 is never retried


@pytest.mark.parametrize("path, named", [
    ("^/apis/apiextensions.k8s.io/v1/customresourcedefinitions/", "get customresourcedefinitions.apiextensions.k8s.io"),
    ("^/apis/nvidia.com/v1/clusterpolicies$", "list clusterpolicies.nvidia.com"),
])
def test_gpu_cluster_facts_403_on_crds_or_clusterpolicy_fails_naming_them(cluster, tmp_path, path, named):
    faults(cluster, {"api_error": {"code": 403, "path": path}})
    result, _elapsed = run_module(cluster, "gpu_cluster_facts", {"include": ["operator"]}, tmp_path)
    assert result["failed"] and result["forbidden"] is True
    assert ("forbidden: cannot " + named) in result["msg"]


# -- cluster_state --------------------------------------------------------------------------------------


def test_cluster_state_survives_bursts_and_writes_everything(cluster, tmp_path):
    faults(cluster, {"api_error": {"code": 500, "count": 2, "path": "/customresourcedefinitions$"}},
           {"api_error": {"code": 429, "count": 2, "path": "^/api/v1/nodes$", "retry_after": 1}},
           {"api_error": {"code": 503, "count": 1, "path": "/clusterpolicies$"}})
    dest = tmp_path / "cluster-state"
    result, _elapsed = run_module(cluster, "cluster_state", {"dest": str(dest), "stamp": "s1", "_ansible_diff": True},
                                  tmp_path)
    assert not result.get("failed"), result.get("msg")
    assert hits(cluster) == [2, 2, 1] and result["api_retries"] == 5
    assert result["diff"]["before"] == "" and result["diff"]["after_header"] == str(dest / "s1")
    assert result["diff"]["after"].splitlines() == ["%s  sha256:%s  %d bytes" % (a["path"], a["sha256"], a["size"])
                                                    for a in result["artifacts"]]
    kinds = result["counts"]
    assert kinds["crd"] == 2 and kinds["custom-resource"] == 1 and kinds["node-labels-taints"] == 1
    for artifact in result["artifacts"]:
        assert oct(os.stat(artifact["path"]).st_mode & 0o777) == "0o600"
    assert oct(os.stat(str(dest / "s1")).st_mode & 0o777) == "0o700"


def test_cluster_state_fails_within_the_deadline_and_writes_nothing(cluster, tmp_path):
    faults(cluster, {"api_error": {"code": 503, "seconds": 120, "path": "^/api/v1/nodes$"}})
    dest = tmp_path / "cluster-state"
    result, elapsed = run_module(cluster, "cluster_state", {"dest": str(dest), "api_deadline": 2}, tmp_path)
    assert result["failed"] and elapsed < 2 + STARTUP_ALLOWANCE
    assert "GET /api/v1/nodes?limit=500 failed after" in result["msg"] and "(api_deadline 2 s)" in result["msg"]
    assert "nothing was written" in result["msg"] and not dest.exists()
    assert 0.8 <= reported_elapsed(result["msg"]) <= 2.0


@pytest.mark.parametrize("path, named", [
    ("/customresourcedefinitions$", "list customresourcedefinitions.apiextensions.k8s.io"),
    ("^/apis/nvidia.com/v1/clusterpolicies$", "list clusterpolicies.nvidia.com"),
])
def test_cluster_state_403_fails_naming_the_resource(cluster, tmp_path, path, named):
    faults(cluster, {"api_error": {"code": 403, "path": path}})
    dest = tmp_path / "cluster-state"
    result, _elapsed = run_module(cluster, "cluster_state", {"dest": str(dest)}, tmp_path)
    assert result["failed"] and result["forbidden"] is True
    assert ("forbidden: cannot " + named) in result["msg"]
    assert not dest.exists()


# -- helm_state (the Helm v4 library) -----------------------------------------------------------------


def test_helm_state_survives_500_429_and_503_on_the_release_storage(cluster, tmp_path):
    faults(cluster, {"api_error": {"code": 500, "count": 2, "path": "/secrets$"}},
           {"api_error": {"code": 429, "count": 1, "path": "/secrets$", "retry_after": 1}},
           {"api_error": {"code": 503, "count": 2, "path": "/pods$"}})
    dest = tmp_path / "helm"
    result, _elapsed = run_module(cluster, "helm_state", {"release": RELEASE, "namespace": NAMESPACE,
                                                          "dest": str(dest), "backend": "library"}, tmp_path)
    assert not result.get("failed"), result.get("msg")
    assert hits(cluster) == [2, 1, 2]
    assert result["helm_retries"] >= 1
    assert result["summary"]["revision"] == 2 and result["summary"]["revisions"] == 2
    assert all(os.stat(a["path"]).st_mode & 0o777 == 0o600 for a in result["artifacts"])


def test_helm_state_survives_503_for_everything_for_a_while(cluster, tmp_path):
    result, _elapsed = run_module(cluster, "helm_state", {"release": RELEASE, "namespace": NAMESPACE,
                                                          "dest": str(tmp_path / "helm"), "backend": "library",
                                                          "_ansible_diff": True, "_ansible_check_mode": True}, tmp_path,
                                  during=outage(cluster, 1.5))
    assert not result.get("failed"), result.get("msg")
    assert result["helm_retries"] >= 1
    assert result["summary"]["revision"] == 2
    assert not (tmp_path / "helm").exists()  # check mode
    assert result["diff"]["before"] == "" and len(result["diff"]["after"].splitlines()) == 8
    assert result["diff"]["after"].splitlines()[-1] == result["index"]


def test_helm_state_fails_within_the_deadline(cluster, tmp_path):
    faults(cluster, {"api_error": {"code": 503, "seconds": 120, "path": "/secrets$"}})
    dest = tmp_path / "helm"
    result, elapsed = run_module(cluster, "helm_state", {"release": RELEASE, "namespace": NAMESPACE, "dest": str(dest),
                                                         "backend": "library", "api_deadline": 3}, tmp_path)
    assert result["failed"] and elapsed < 3 + STARTUP_ALLOWANCE
    assert "helm history gpu-operator/gpu-operator failed after" in result["msg"]
    assert "(api_deadline 3 s)" in result["msg"] and "the server is currently unable to handle the request" in result["msg"]
    assert 1.0 <= reported_elapsed(result["msg"]) <= 3.0
    assert not dest.exists()


def test_helm_state_403_on_the_helm_secrets_fails_naming_them(cluster, tmp_path):
    faults(cluster, {"api_error": {"code": 403, "path": "^/api/v1/namespaces/gpu-operator/secrets$"}})
    dest = tmp_path / "helm"
    result, _elapsed = run_module(cluster, "helm_state", {"release": RELEASE, "namespace": NAMESPACE, "dest": str(dest),
                                                          "backend": "library"}, tmp_path)
    assert result["failed"] and result["forbidden"] is True
    assert "forbidden: the Helm storage Secrets of release gpu-operator/gpu-operator cannot be read" in result["msg"]
    assert 'cannot list resource "secrets"' in result["msg"]
    assert "not found" not in result["msg"] and not dest.exists()


def test_helm_state_ignores_the_controllers_helm_environment(cluster, tmp_path):
    """HELM_* variables that would read elsewhere (another API server, namespace, context, identity,
    storage driver) are removed before the Helm library is loaded."""
    hostile = {"HELM_KUBEAPISERVER": "http://127.0.0.1:9", "HELM_NAMESPACE": "elsewhere",
               "HELM_KUBECONTEXT": "no-such-context", "HELM_DRIVER": "configmap", "HELM_KUBEASUSER": "mallory",
               "HELM_KUBETOKEN": "not-the-token", "HELM_MAX_HISTORY": "1"}
    result, _elapsed = run_module(cluster, "helm_state", {"release": RELEASE, "namespace": NAMESPACE,
                                                          "dest": str(tmp_path / "helm"), "backend": "library"},
                                  tmp_path, env_extra=hostile)
    assert not result.get("failed"), result.get("msg")
    assert result["summary"]["revisions"] == 2
    assert result["removed_helm_env"] == sorted(hostile)
    assert "not-the-token" not in json.dumps(result)


def test_python_is_the_venvs():
    assert os.path.isfile(VENV_PYTHON), sys.executable


# -- the snapshot phase: a forbidden Helm capture fails the phase -----------------------------------


def test_snapshot_phase_fails_when_the_helm_secrets_are_forbidden(cluster, tmp_path):
    """A 403 on the operator's Helm Secrets is a failed capture (verdict block, the Secrets named),
    never a skipped "release does not exist"."""
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(json.dumps({"all": {"children": {"gpu_nodes": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": VENV_PYTHON}}}}}}))
    evidence = tmp_path / "evidence"
    evidence.mkdir(mode=0o700)
    faults(cluster, {"api_error": {"code": 403, "path": "^/api/v1/namespaces/gpu-operator/secrets$"}})
    env = cluster.env()
    env.update(ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="false", TMPDIR=str(tmp_path))
    proc = subprocess.run([os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", str(inventory),
                           "playbooks/snapshot.yml", "-e", "dra_gate_evidence_root=%s" % evidence,
                           "-e", "dra_gate_run_id=forbidden-run", "-e", "dra_gate_kubeconfig=%s" % cluster.kubeconfig,
                           "-e", '{"dra_gate_skip_captures": ["etcd", "cluster_state", "node_files"]}'],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode != 0, proc.stdout[-4000:]
    assert 'forbidden: cannot list secrets in namespace "gpu-operator"' in proc.stdout, proc.stdout[-4000:]
    run_dir = evidence / "forbidden-run"
    records = sorted(p for p in os.listdir(str(run_dir)) if p.endswith(".json") and "snapshot" in p)
    assert records, os.listdir(str(run_dir))
    with open(str(run_dir / records[-1])) as handle:
        results = json.load(handle)["results"]
    assert results["verdict"] == "block"
    assert 'forbidden: cannot list secrets in namespace "gpu-operator"' in results["capture_failure"]
    assert "helm-release" not in [s.get("kind") for s in results["skipped"]]
