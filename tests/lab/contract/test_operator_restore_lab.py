# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: gpufleet.dra_gate.operator_restore puts a captured cluster state back, in the lab.

Scenario ``operator-upgrade``: the 26.3.1 operator-shaped test chart is installed with the Helm
library (its ``crds/`` created by the install); ``cluster_state`` captures the CRDs, the ClusterPolicy and
the GPU nodes and ``artifact_index`` indexes them, as the snapshot phase does. Then the cluster moves on:
``crd_prepare`` applies the 26.7.0 chart's CRDs (the ClusterPolicy and NVIDIADriver CRDs gain fields, the
DRA CRDs appear), the ClusterPolicy spec changes, a GPU node gets an ``nvidia.com/`` label, a taint, a
node-lifecycle taint and is cordoned. Every module runs in its own Python process, as Ansible runs it.

Check mode writes nothing (CRD resourceVersions, the ClusterPolicy spec and the node unchanged) but says
what it would restore; the restore removes the new CRD fields, reports the new CRDs as extra (and leaves
them), puts the ClusterPolicy spec, the labels under the restored prefixes, the taints (the lifecycle one
left as it is) and the cordon back, with 0600 evidence; a rerun changes nothing; a tampered capture
file is refused, naming it, before any API call.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import stat
import subprocess
import sys
import time
import urllib.request

import pytest

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

import operator_charts  # tests/ is on pytest's pythonpath (pytest.ini)
from kubelab.testing import start_lab, stop_lab, wait_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VENV_PYTHON = os.path.join(REPO, ".venv", "bin", "python")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
NAMESPACE = "gpu-operator"
POLICY = "/apis/nvidia.com/v1/clusterpolicies/cluster-policy"
CP_CRD = "clusterpolicies.nvidia.com"
NODE = "gpu-1"
STAMP = "20261130T080455Z"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
UPGRADE_TAINT = {"key": "dra-gate.gpufleet.io/upgrading", "value": "true", "effect": "NoSchedule"}
LIFECYCLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("operator-restore"))
    cluster = start_lab(work, "operator-upgrade")
    yield cluster
    stop_lab(cluster)
    errors = list(cluster.server.controller_errors)
    shutil.rmtree(work, ignore_errors=True)
    assert not errors, "controller errors: %s" % errors[:5]


@pytest.fixture(scope="module")
def kube(lab):
    return lab


def api(kube, method, path, body=None, content_type="application/json"):
    """One raw JSON call to the lab's API (``kube`` is the lab)."""
    request = urllib.request.Request(kube.url + path, method=method, data=body.encode() if body is not None else None,
                                     headers={"Content-Type": content_type, "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"{}")


def run_module(lab, name, args, workdir, check_mode=False, diff=False, cluster=True):
    """Run gpufleet.dra_gate.<name> in its own Python process (the ANSIBLE_MODULE_ARGS file); ``cluster``:
    give it the lab's kubeconfig."""
    args_file = os.path.join(str(workdir), "args-%d.json" % time.monotonic_ns())
    payload = dict(args, _ansible_tmpdir=str(workdir), _ansible_check_mode=check_mode, _ansible_diff=diff)
    if cluster:
        payload["kubeconfig"] = lab.kubeconfig
    with open(args_file, "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": payload}, handle)
    env = lab.env()
    env.update(PYTHONPATH=COLLECTIONS)
    proc = subprocess.run([VENV_PYTHON if os.path.exists(VENV_PYTHON) else sys.executable, "-m",
                           "ansible_collections.gpufleet.dra_gate.plugins.modules." + name, args_file],
                          env=env, capture_output=True, text=True, timeout=120, cwd=str(workdir), check=False)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise AssertionError("no JSON result from %s: %s %s" % (name, proc.stdout[-3000:], proc.stderr[-3000:]))


def crd(kube, name):
    return api(kube, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name)


def crd_names(kube):
    return {c["metadata"]["name"] for c in api(kube, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]}


def node(kube):
    return api(kube, "GET", "/api/v1/nodes/" + NODE)


def taint_set(taints):
    return sorted((t["key"], t.get("value") or "", t["effect"]) for t in taints or [])


def test_restore_after_the_upgrade_changed_things(lab, kube, tmp_path):
    # -- 26.3.1 installed, the state captured and indexed (the snapshot phase) -------------------------
    charts = str(tmp_path / "charts")
    helm = helm_python.Config(kubeconfig_path=lab.kubeconfig, namespace=NAMESPACE, storage_driver="secret")
    helm.install(operator_charts.write_chart(charts, "26.3.1"), "gpu-operator", namespace=NAMESPACE, wait="watcher",
                 timeout=120)
    wait_for(lambda: (api(kube, "GET", POLICY).get("status") or {}).get("state") == "ready", 60, "ClusterPolicy ready")
    assert set(operator_charts.crds("26.3.1")) <= crd_names(kube)
    api(kube, "PATCH", "/api/v1/nodes/" + NODE, json.dumps({"spec": {"taints": [GPU_TAINT]}}),
        "application/merge-patch+json")
    root = tmp_path / "evidence"
    root.mkdir(mode=0o700)
    run_dir = root / "run1"
    captured = run_module(lab, "cluster_state", {"dest": str(run_dir / "artifacts" / "cluster-state"), "stamp": STAMP},
                          tmp_path)
    assert captured["changed"] and not captured.get("failed"), captured
    indexed = run_module(lab, "artifact_index", {"run_dir": str(run_dir), "state": "present",
                                                 "artifacts": captured["artifacts"]}, tmp_path, cluster=False)
    assert not indexed.get("failed"), indexed
    captured_policy = api(kube, "GET", POLICY)
    captured_node = node(kube)
    captured_crds = dict((name, crd(kube, name)) for name in operator_charts.NEW_CRD_FIELDS)

    # -- the cluster moves on ------------------------------------------------------------------------
    prepared = run_module(lab, "crd_prepare", {"chart": operator_charts.write_chart(charts, "26.7.0")}, tmp_path)
    assert prepared["changed"] and not prepared.get("failed"), prepared
    assert set(operator_charts.DRA_CRDS) <= crd_names(kube)
    for name, fields in operator_charts.NEW_CRD_FIELDS.items():
        assert all(operator_charts.schema_has(crd(kube, name), f) for f in fields)
    api(kube, "PATCH", POLICY, json.dumps({"spec": {"devicePlugin": {"labNewIn2607": "on", "version": "v0.20.0"},
                                                    "cdi": {"enabled": False}}}), "application/merge-patch+json")
    moved = {"metadata": {"labels": {"nvidia.com/lab.extra": "1", "nvidia.com/gpu.count": "99", "team": "blue"}},
             "spec": {"taints": [UPGRADE_TAINT, LIFECYCLE_TAINT], "unschedulable": True}}
    api(kube, "PATCH", "/api/v1/nodes/" + NODE, json.dumps(moved), "application/merge-patch+json")
    moved_node = node(kube)
    crd_versions = dict((name, crd(kube, name)["metadata"]["resourceVersion"]) for name in operator_charts.NEW_CRD_FIELDS)
    args = {"run_dir": str(run_dir), "evidence_dir": str(root / "run1" / "rollback")}

    # -- check mode: says what it would do, writes nothing ----------------------------------------------
    checked = run_module(lab, "operator_restore", args, tmp_path, check_mode=True, diff=True)
    assert checked["changed"] and not checked.get("failed"), checked
    assert checked["restored"] == {"crds": sorted(operator_charts.NEW_CRD_FIELDS),
                                   "custom_resources": ["ClusterPolicy/cluster-policy"], "nodes": [NODE]}
    assert checked["unchanged"]["nodes"] == ["gpu-2"]
    assert checked["artifacts"] == [] and checked["evidence_dir"] is None and not (root / "run1" / "rollback").exists()
    assert len(checked["diff"]) == 4 and "labNewIn2607" in checked["diff"][0]["before"]
    assert "labNewIn2607" not in checked["diff"][0]["after"]
    assert dict((name, crd(kube, name)["metadata"]["resourceVersion"]) for name in crd_versions) == crd_versions
    assert api(kube, "GET", POLICY)["spec"]["devicePlugin"]["labNewIn2607"] == "on"
    now = node(kube)
    assert now["metadata"]["labels"] == moved_node["metadata"]["labels"] and now["spec"] == moved_node["spec"]

    # -- the restore -----------------------------------------------------------------------------------
    restored = run_module(lab, "operator_restore", args, tmp_path, diff=True)
    assert restored["changed"] and not restored.get("failed"), restored.get("msg")
    assert restored["restored"] == checked["restored"] and restored["missing_nodes"] == []
    assert restored["capture"]["stamp"] == STAMP
    assert restored["capture"]["dir"] == str(run_dir / "artifacts" / "cluster-state" / STAMP)
    assert restored["extra"]["crds"] == sorted(operator_charts.DRA_CRDS)
    assert restored["extra"]["custom_resources"] == []
    for key in ("started_at", "finished_at"):
        assert restored[key].endswith("Z") and restored[key][10] == "T"
    assert restored["duration_seconds"] >= 0 and restored["api_calls"] > 0
    for name, fields in operator_charts.NEW_CRD_FIELDS.items():
        live = crd(kube, name)
        assert live["spec"] == captured_crds[name]["spec"]
        assert not any(operator_charts.schema_has(live, f) for f in fields), name
        assert any(c["type"] == "Established" and c["status"] == "True" for c in live["status"]["conditions"])
    assert set(operator_charts.DRA_CRDS) <= crd_names(kube)          # reported, never deleted
    assert api(kube, "GET", POLICY)["spec"] == captured_policy["spec"]
    now = node(kube)
    labels = dict(captured_node["metadata"]["labels"], team="blue")   # a label outside the prefixes stays
    assert now["metadata"]["labels"] == labels
    assert taint_set(now["spec"].get("taints")) == taint_set([GPU_TAINT, LIFECYCLE_TAINT])
    assert not now["spec"].get("unschedulable")
    files = sorted(os.path.relpath(p, restored["evidence_dir"]) for p in restored["artifacts"])
    assert files == sorted("%s/%s.json" % (which, f) for which in ("before", "after") for f in (
        "crds/%s" % CP_CRD, "crds/nvidiadrivers.nvidia.com", "custom_resources/cluster-policy", "nodes/" + NODE)), files
    for path in restored["artifacts"]:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    with open(os.path.join(restored["evidence_dir"], "before", "nodes", NODE + ".json")) as handle:
        assert json.load(handle)["spec"]["unschedulable"] is True

    # -- a rerun (and a check mode run) changes nothing ------------------------------------------------
    versions = dict((name, crd(kube, name)["metadata"]["resourceVersion"]) for name in crd_versions)
    again = run_module(lab, "operator_restore", args, tmp_path)
    assert not again["changed"] and not again.get("failed"), again
    assert again["restored"] == {"crds": [], "custom_resources": [], "nodes": []} and again["artifacts"] == []
    assert again["unchanged"]["nodes"] == ["gpu-1", "gpu-2"]
    assert again["unchanged"]["custom_resources"] == ["ClusterPolicy/cluster-policy"]
    assert dict((name, crd(kube, name)["metadata"]["resourceVersion"]) for name in crd_versions) == versions
    assert not run_module(lab, "operator_restore", args, tmp_path, check_mode=True)["changed"]

    # -- a tampered capture file is refused before any API call ----------------------------------------
    api(kube, "PATCH", "/api/v1/nodes/" + NODE, json.dumps({"metadata": {"labels": {"nvidia.com/lab.extra": "2"}}}),
        "application/merge-patch+json")
    policy_file = [a["path"] for a in captured["artifacts"] if a["kind"] == "custom-resource"][0]
    os.chmod(policy_file, 0o600)
    with open(policy_file, "r+") as handle:
        text = handle.read().replace("v0.19.0", "v0.19.9")
        handle.seek(0)
        handle.write(text)
    refused = run_module(lab, "operator_restore", args, tmp_path)
    assert refused["failed"] and not refused["changed"] and refused["api_calls"] == 0
    assert policy_file in refused["msg"] and "sha256 mismatch" in refused["msg"], refused["msg"]
    assert node(kube)["metadata"]["labels"]["nvidia.com/lab.extra"] == "2"      # nothing written
