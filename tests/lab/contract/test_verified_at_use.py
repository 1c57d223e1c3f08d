# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: what the upgrade phase records as verified is what it used (issue 27).

playbooks/upgrade_operator.yml runs for real against the lab (scenario ``operator-upgrade``, 26.3.1
installed with the Helm library, the gate run's snapshot taken first) while the 26.7.0 chart directory is
changed on disk *after* the plan verified it:

- between the hops: when hop 2's CRD step starts, a CRD file is added to the chart;
- inside a hop, between its CRD step and its Helm write: when hop 1's Helm task starts, bytes are appended to
  its chart archive.

Either way nothing is applied from the changed chart (the added CRD never reaches the cluster; the Helm
release gets no revision from it), the hop fails naming the path, the expected and the
actual digest, the rollback policy runs as for any failed hop, and the evidence is not ``pass``. The change
is made by a test-only Ansible callback (written to a temporary directory, never shipped) at the moment
the named task starts, before its module runs: the same moment a person or a sync job could change it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

import operator_charts  # tests/ is on pytest's pythonpath (pytest.ini)
from kubelab.testing import start_lab, stop_lab, wait_for
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases.operator_charts import local_digest
from upgrade_lab import NAMESPACE, RELEASE, kube_clients, playbook, records, revision, run_module, settled, tail

TAMPER_CALLBACK = '''
import json
import os

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    """Appends text to a file of the chart when the task named in $TAMPER_SPEC starts (once)."""
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "tamper_chart"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.spec = json.loads(os.environ["TAMPER_SPEC"])
        self.done = False

    def v2_playbook_on_task_start(self, task, is_conditional):
        if not self.done and task.get_name().endswith(" : " + self.spec["task"]):
            with open(self.spec["file"], "a") as handle:
                handle.write(self.spec["text"])
            self.done = True
'''

TAMPERED_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: tampereds.example.com
spec:
  group: example.com
  names: {kind: Tampered, listKind: TamperedList, plural: tampereds, singular: tampered}
  scope: Cluster
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object}}
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("verified-at-use"))
    cluster = start_lab(work, "operator-upgrade")
    cluster.workdir = work
    yield cluster
    stop_lab(cluster)
    errors = list(cluster.server.controller_errors)
    shutil.rmtree(work, ignore_errors=True)
    assert not errors, "controller errors: %s" % errors[:5]


@pytest.fixture(scope="module")
def kube(lab):
    return kube_clients(lab)


@pytest.fixture(scope="module")
def charts(tmp_path_factory):
    return operator_charts.write_mapping(str(tmp_path_factory.mktemp("charts")))


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    root = tmp_path_factory.mktemp("evidence")
    os.chmod(str(root), 0o700)
    return root


@pytest.fixture(scope="module")
def callback_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("callbacks")
    (directory / "tamper_chart.py").write_text(TAMPER_CALLBACK)
    return str(directory)


@pytest.fixture(scope="module")
def installed(lab, kube, charts, evidence):
    helm = helm_python.Config(kubeconfig_path=lab.kubeconfig, namespace=NAMESPACE, storage_driver="secret")
    helm.install(charts["26.3.1"]["path"], RELEASE, namespace=NAMESPACE, wait="watcher", timeout=120)
    wait_for(lambda: settled(kube, "v0.19.0"), 60, "the 26.3.1 operator ready")
    proc = playbook(lab, evidence, charts, path="playbooks/snapshot.yml")
    assert proc.returncode == 0, tail(proc)
    return helm


def tampered_run(lab, evidence, charts, callback_dir, version, task, relpath, text):
    """The upgrade with rollback_on_failure, ``version``'s chart changed when ``task`` starts (``text`` appended to
    ``relpath`` of a chart directory, or to the archive itself when ``relpath`` is empty); put back afterwards."""
    target = os.path.join(charts[version]["path"], relpath) if relpath else charts[version]["path"]
    original = open(target, "rb").read() if os.path.exists(target) else None
    spec = {"task": task, "file": target, "text": text}
    try:
        proc = playbook(lab, evidence, charts, dra_gate_rollback_on_failure=True, dra_gate_rollback_helm_timeout=120,
                        environ={"TAMPER_SPEC": json.dumps(spec), "ANSIBLE_CALLBACK_PLUGINS": callback_dir,
                                 "ANSIBLE_CALLBACKS_ENABLED": "tamper_chart"})
        actual = local_digest(charts[version]["path"])[1]
    finally:
        if original is None:
            if os.path.exists(target):
                os.unlink(target)
        else:
            with open(target, "wb") as handle:
                handle.write(original)
    assert local_digest(charts[version]["path"])[1] == charts[version]["sha256"]
    assert actual != charts[version]["sha256"], "the callback did not change the chart: " + tail(proc)
    return proc, actual


def assert_refused_at(upgrade, hop_number, step, chart, actual):
    assert upgrade["verdict"] == "block" and upgrade["completed"] is False, upgrade["verdict"]
    assert len(upgrade["hops"]) == hop_number and all(h["ok"] is True for h in upgrade["hops"][:-1])
    for done in upgrade["hops"][:-1]:
        assert done["chart_at_use"]["helm_upgrade"]["verified"] is True
    refused = upgrade["hops"][-1]
    assert refused["ok"] is False and refused["failure"].startswith(step + ":"), refused["failure"]
    for text in ("sha256 mismatch", chart["path"], chart["sha256"], actual, "nothing was applied"):
        assert text in refused["failure"], (text, refused["failure"])
    # the plan's verification is kept, and beside it what each step read: never the pin claimed for other bytes
    assert refused["chart"]["sha256"] == chart["sha256"] and refused["chart"]["verified"] is True
    used = refused["chart_at_use"][step]
    assert used["verified"] is False and used["sha256"] == actual and used["expected_sha256"] == chart["sha256"]
    assert upgrade["failure"]["hop"] == "%s -> %s" % (refused["from"], refused["to"])
    assert upgrade["failure"]["step"] == step
    assert upgrade["rollback"]["triggered"] and upgrade["rollback"]["automatic"], upgrade["rollback"]
    ids = {f["id"] for f in upgrade["findings"] if f["severity"] == "block"}
    assert {"upgrade.hop_failed", "upgrade.rolled_back"} <= ids, ids


def test_a_chart_changed_between_the_hops_is_refused_before_its_crds(lab, kube, charts, evidence, callback_dir, installed):
    before = revision(lab)
    proc, actual = tampered_run(lab, evidence, charts, callback_dir, "26.7.0", "Prepare the target chart's CRDs (26.7.0)",
                                "crds/tampered.yaml", TAMPERED_CRD)
    assert proc.returncode != 0, tail(proc)
    upgrade = records(evidence, "upgrade")[-1]["results"]
    assert_refused_at(upgrade, 2, "crd_prepare", charts["26.7.0"], actual)
    assert [s["name"] for s in upgrade["hops"][1]["steps"]] == ["crd_prepare"]
    names = {c.metadata.name for c in kube["crds"].list_custom_resource_definition().items}
    assert "tampereds.example.com" not in names
    # hop 1's revision, then the rollback's: nothing from the changed chart
    assert revision(lab) == before + 2
    rollback = records(evidence, "rollback")[-1]["results"]
    assert rollback["verdict"] in ("pass", "warn") and rollback["helm"]["target_revision"] == 1, rollback
    assert settled(kube, "v0.19.0")


def test_a_chart_changed_between_the_crd_step_and_the_helm_write_is_refused(lab, kube, charts, evidence, callback_dir,
                                                                            installed):
    # hop 1's chart is an archive (tests/operator_charts.py): bytes appended to it after its CRDs were read
    before = revision(lab)
    proc, actual = tampered_run(lab, evidence, charts, callback_dir, "26.6.2",
                                "Upgrade the release in Device Plugin mode (26.3.1 -> 26.6.2)", "",
                                "appended after the CRD step")
    assert proc.returncode != 0, tail(proc)
    upgrade = records(evidence, "upgrade")[-1]["results"]
    assert_refused_at(upgrade, 1, "helm_upgrade", charts["26.6.2"], actual)
    refused = upgrade["hops"][0]
    # the CRDs were read from the verified bytes, before the change
    assert refused["chart_at_use"]["crd_prepare"] == {"source": charts["26.6.2"]["path"], "kind": "archive",
                                                      "sha256": charts["26.6.2"]["sha256"], "verified": True}
    assert [s["name"] for s in refused["steps"]] == ["crd_prepare", "helm_upgrade"]
    assert refused["helm"]["revision"] is None
    assert revision(lab) == before  # no revision from the changed chart; the rollback found 26.3.1 in place
    assert settled(kube, "v0.19.0")


def test_a_rollback_to_a_revision_that_would_remove_the_operator_is_refused_naming_it(
        lab, kube, charts, installed, tmp_path):
    """A recorded revision whose manifest has no operator Deployment (the prod scenario's release once had an
    empty one): rolling back to it would delete the operator, so operator_release refuses it by name and
    writes nothing; without the guard Helm would delete the Deployment."""
    stripped = shutil.copytree(charts["26.3.1"]["path"], str(tmp_path / "no-operator" / "gpu-operator"))
    os.unlink(os.path.join(stripped, "templates", "operator.yaml"))
    chart_yaml = os.path.join(stripped, "Chart.yaml")
    with open(chart_yaml) as handle:
        text = handle.read()
    with open(chart_yaml, "w") as handle:  # another chart version: a real rollback, not "unchanged"
        handle.write(text.replace("version: v26.3.1", "version: v26.3.0"))
    installed.upgrade(stripped, RELEASE, namespace=NAMESPACE, wait="watcher", timeout=120)
    without = revision(lab)
    names = {d.metadata.name for d in kube["apps"].list_namespaced_deployment(NAMESPACE).items}
    assert "gpu-operator" not in names  # the revision really has no operator
    installed.upgrade(charts["26.3.1"]["path"], RELEASE, namespace=NAMESPACE, wait="watcher", timeout=120)
    wait_for(lambda: settled(kube, "v0.19.0"), 60, "the operator back")
    current = revision(lab)
    result = run_module(lab, "operator_release", {"state": "rolled_back", "revision": without, "release": RELEASE,
                                                  "namespace": NAMESPACE, "backend": "library",
                                                  "keep_deployment": "gpu-operator"}, tmp_path)
    assert result.get("failed") and result["changed"] is False, result
    assert "to revision %d would remove Deployment %s/gpu-operator" % (without, NAMESPACE) in result["msg"], result["msg"]
    assert revision(lab) == current
    assert kube["apps"].read_namespaced_deployment("gpu-operator", NAMESPACE).metadata.deletion_timestamp is None
    # and operator_verify, given the revision's recorded images, names the missing operator the same way
    images = {"release": RELEASE, "namespace": NAMESPACE, "revision": without, "digests": {},
              "manifest_images": [{"kind": "DaemonSet", "name": "x", "namespace": NAMESPACE, "container": "x",
                                   "init": False, "image": "x:1"}]}
    path = tmp_path / "images.json"
    path.write_text(json.dumps(images))
    verify = run_module(lab, "operator_verify", {"namespace": NAMESPACE, "nodes": ["gpu-1", "gpu-2"],
                                                 "recorded_images_file": str(path),
                                                 "recorded_images_sha256": hashlib.sha256(path.read_bytes()).hexdigest()},
                        tmp_path)
    assert verify.get("failed") and "no Deployment %s/gpu-operator" % NAMESPACE in verify["msg"], verify
