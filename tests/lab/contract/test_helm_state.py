# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: gpufleet.dra_gate.helm_state (library backend) run for real through ansible-playbook
against the lab, on an operator-shaped chart installed as revision 1 and upgraded to revision 2 with
the Helm library.

The chart is modelled on NVIDIA's gpu-operator chart (DOMAIN.md section 1): its values (operator,
driver, toolkit, devicePlugin, cdi, clusterPolicy.deployCR, gpuCluster.deployCR,
operator.upgradeCRD), the five CRDs of v26.7.0 with their real group, kind and scope, the operator
Deployment and the ClusterPolicy ``cluster-policy`` rendered when ``clusterPolicy.deployCR``. It is
written at test time: Helm templates are not YAML and yamllint (sanity) reads every .yaml file.

With ``DRA_GATE_RECORD_HELM_FIXTURES=<dir>`` the library's outputs for the release are also written
to ``<dir>`` (how ``tests/fixtures/helm/library-4.2.3/`` was recorded; see its README).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import stat
import subprocess
import textwrap
import time

import pytest

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
RELEASE, NAMESPACE = "gpu-operator", "gpu-operator"
SECRET_MARKER = "nls-token-7f3a9c-MUST-NOT-BE-PRINTED"


def _crd(group, plural, kind, version, scope):
    return textwrap.dedent("""\
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata:
          name: {plural}.{group}
        spec:
          group: {group}
          scope: {scope}
          names: {{plural: {plural}, singular: {singular}, kind: {kind}, listKind: {kind}List}}
          versions:
            - name: {version}
              served: true
              storage: true
              subresources: {{status: {{}}}}
              schema:
                openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
        """).format(group=group, plural=plural, singular=kind.lower(), kind=kind, version=version, scope=scope)


CHART_YAML = """\
apiVersion: v2
name: gpu-operator
description: A stand-in for NVIDIA's gpu-operator chart (values, CRDs, operator Deployment, ClusterPolicy).
type: application
kubeVersion: ">= 1.16.0-0"
version: {version}
appVersion: "{version}"
"""
VALUES_YAML = """\
operator:
  repository: nvcr.io/nvidia
  image: gpu-operator
  version: ""
  upgradeCRD: true
  cleanupCRD: false
driver:
  enabled: true
  version: "580.95.05"
  nvidiaDriverCRD: {enabled: false}
  upgradePolicy: {autoUpgrade: true, maxParallelUpgrades: 1, maxUnavailable: 25%}
toolkit: {enabled: true, version: v1.18.0}
devicePlugin: {enabled: true, version: v0.18.0}
cdi: {enabled: true, nriPluginEnabled: false}
clusterPolicy: {deployCR: true}
gpuCluster: {deployCR: false}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gpu-operator
  labels:
    app: gpu-operator
    app.kubernetes.io/instance: {{ .Release.Name }}
spec:
  replicas: 1
  selector:
    matchLabels: {app: gpu-operator}
  template:
    metadata:
      labels:
        app: gpu-operator
        app.kubernetes.io/instance: {{ .Release.Name }}
    spec:
      containers:
        - name: gpu-operator
          image: {{ .Values.operator.repository }}/{{ .Values.operator.image }}:{{ .Values.operator.version | default .Chart.AppVersion }}
          env:
            - name: OPERATOR_NAMESPACE
              value: {{ .Release.Namespace }}
"""
CLUSTER_POLICY = """\
{{- if .Values.clusterPolicy.deployCR }}
apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata:
  name: cluster-policy
spec:
  operator: {upgradeCRD: {{ .Values.operator.upgradeCRD }}}
  driver:
    enabled: {{ .Values.driver.enabled }}
    version: {{ .Values.driver.version | quote }}
  toolkit: {enabled: {{ .Values.toolkit.enabled }}, version: {{ .Values.toolkit.version }}}
  devicePlugin: {enabled: {{ .Values.devicePlugin.enabled }}, version: {{ .Values.devicePlugin.version }}}
  cdi: {enabled: {{ .Values.cdi.enabled }}, nriPluginEnabled: {{ .Values.cdi.nriPluginEnabled }}}
{{- end }}
"""
NOTES = """\
GPU Operator {{ .Chart.AppVersion }} is installed in {{ .Release.Namespace }}.
ClusterPolicy deployed: {{ .Values.clusterPolicy.deployCR }}
"""
CRDS = {
    "crds/nvidia.com_clusterpolicies.yaml": _crd("nvidia.com", "clusterpolicies", "ClusterPolicy", "v1", "Cluster"),
    "crds/nvidia.com_nvidiadrivers.yaml": _crd("nvidia.com", "nvidiadrivers", "NVIDIADriver", "v1alpha1", "Cluster"),
    "crds/nvidia.com_gpuclusters.yaml": _crd("nvidia.com", "gpuclusters", "GPUCluster", "v1alpha1", "Cluster"),
    "crds/resource.nvidia.com_computedomains.yaml": _crd(
        "resource.nvidia.com", "computedomains", "ComputeDomain", "v1beta1", "Namespaced"),
    "crds/resource.nvidia.com_computedomaincliques.yaml": _crd(
        "resource.nvidia.com", "computedomaincliques", "ComputeDomainClique", "v1beta1", "Namespaced"),
}
INSTALL_VALUES = {"driver": {"version": "580.95.05"}}
UPGRADE_VALUES = {"driver": {"enabled": True, "version": "580.105.08",
                             "licensingConfig": {"nlsToken": SECRET_MARKER}},
                  "cdi": {"enabled": True}, "devicePlugin": {"version": "v0.19.0"}}


def write_chart(root, version):
    files = dict(CRDS)
    files.update({"Chart.yaml": CHART_YAML.format(version=version), "values.yaml": VALUES_YAML,
                  "templates/operator.yaml": DEPLOYMENT, "templates/clusterpolicy.yaml": CLUSTER_POLICY,
                  "templates/NOTES.txt": NOTES})
    for name, text in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
    return root


def wait_for(check, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


def record_library_outputs(helm, dest):
    """The Helm library's own outputs for the release, as recorded in tests/fixtures/helm/library-4.2.3/."""
    os.makedirs(dest, exist_ok=True)
    outputs = {
        "history.json": helm.history(RELEASE),
        "get-values.json": helm.get_values(RELEASE, revision=2),
        "get-values-all.json": helm.get_values(RELEASE, all_values=True, revision=2),
        "get-values-rev1.json": helm.get_values(RELEASE, revision=1),
        "get-metadata.json": helm.get_metadata(RELEASE, revision=2),
        "status.json": helm.status(RELEASE, revision=2),
        "get-all-info-rev1.json": helm.get_all(RELEASE, revision=1)["info"],
        "get-all-info-rev2.json": helm.get_all(RELEASE, revision=2)["info"],
    }
    for name, data in outputs.items():
        with open(os.path.join(dest, name), "w") as handle:
            handle.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


@pytest.fixture(scope="module")
def release(lab, tmp_path_factory):
    charts = tmp_path_factory.mktemp("charts")
    helm = helm_python.Config(kubeconfig_path=lab.kubeconfig, namespace=NAMESPACE, storage_driver="secret")
    # No kstatus wait: the ClusterPolicy stays notReady on a cluster without GPU nodes (as the real
    # operator's does); the operator pod is waited for below.
    helm.install(write_chart(str(charts / "v26.3.1"), "v26.3.1"), RELEASE, INSTALL_VALUES, timeout=120)
    helm.upgrade(write_chart(str(charts / "v26.7.0"), "v26.7.0"), RELEASE, UPGRADE_VALUES, timeout=120)
    pod_type = lab.server.registry.by_kind("v1", "Pod")

    def operator_runs():
        pods = [p for p in lab.server.api.list(pod_type, NAMESPACE)["items"]
                if (p["metadata"].get("labels") or {}).get("app") == "gpu-operator"
                and not p["metadata"].get("deletionTimestamp")]
        return len(pods) == 1 and all(
            c.get("image") == "nvcr.io/nvidia/gpu-operator:v26.7.0" and c.get("imageID")
            for c in (pods[0].get("status") or {}).get("containerStatuses") or [{}])

    wait_for(operator_runs, "the upgraded operator pod")
    record = os.environ.get("DRA_GATE_RECORD_HELM_FIXTURES")
    if record:
        record_library_outputs(helm, record)
    yield helm
    helm.close()


PLAYBOOK = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      module_defaults:
        group/gpufleet.dra_gate.k8s:
          kubeconfig: "{{ lookup('ansible.builtin.env', 'KUBECONFIG') }}"
      tasks:
        - name: Helm state in check mode
          gpufleet.dra_gate.helm_state:
            release: gpu-operator
            namespace: gpu-operator
            dest: "{{ dest }}"
            backend: library
          check_mode: true
          register: checked
        - name: Helm state
          gpufleet.dra_gate.helm_state:
            release: gpu-operator
            namespace: gpu-operator
            dest: "{{ dest }}"
            backend: library
          register: first
        - name: Helm state again
          gpufleet.dra_gate.helm_state:
            release: gpu-operator
            namespace: gpu-operator
            dest: "{{ dest }}"
            backend: library
          register: second
        - name: Revision 1
          gpufleet.dra_gate.helm_state:
            release: gpu-operator
            namespace: gpu-operator
            dest: "{{ dest }}"
            revision: 1
          register: rev1
        - name: A revision that does not exist
          gpufleet.dra_gate.helm_state:
            release: gpu-operator
            namespace: gpu-operator
            dest: "{{ dest }}"
            revision: 9
          register: missing
          ignore_errors: true
        - name: A release that does not exist
          gpufleet.dra_gate.helm_state:
            release: absent
            namespace: gpu-operator
            dest: "{{ dest }}"
          register: absent
          ignore_errors: true
        - name: Record what the module returned
          ansible.builtin.copy:
            dest: "{{ out }}"
            content: "{{ {'checked': checked, 'first': first, 'second': second, 'rev1': rev1,
                          'missing': missing, 'absent': absent} | to_json }}"
            mode: "0600"
    """)


@pytest.fixture(scope="module")
def played(lab, release, tmp_path_factory):
    work = tmp_path_factory.mktemp("play")
    playbook, out, dest = work / "helm_state.yml", work / "results.json", work / "artifacts" / "helm"
    playbook.write_text(PLAYBOOK)
    env = lab.env()
    env.update(ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_PYTHON_INTERPRETER=os.path.join(VENV_BIN, "python"),
               TMPDIR=str(work))
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "-v", str(playbook), "-e", "out=%s" % out,
                           "-e", "dest=%s" % dest], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    return {"results": json.loads(out.read_text()), "dest": str(dest), "stdout": proc.stdout + proc.stderr}


def _files(result):
    return {os.path.basename(a["path"]): a for a in result["artifacts"]}


def _load(result, name):
    with open(_files(result)[name]["path"]) as handle:
        return json.load(handle) if name.endswith(".json") else handle.read()


def test_summary(played):
    first = played["results"]["first"]
    assert first["changed"] is True
    assert first["backend"] == {"name": "library", "helm_version": "v4.2.3"}
    assert first["summary"] == {
        "release": RELEASE, "namespace": NAMESPACE, "revision": 2, "status": "deployed", "chart": "gpu-operator",
        "version": "v26.7.0", "app_version": "v26.7.0", "revisions": 2, "image_count": 1, "digest_count": 1}
    assert os.path.basename(first["directory"]).startswith("gpu-operator-")
    assert first["directory"].endswith("-rev2")


def test_history(played):
    history = _load(played["results"]["first"], "history.json")
    assert [(e["revision"], e["status"], e["chart"], e["app_version"]) for e in history] == [
        (1, "superseded", "gpu-operator-v26.3.1", "v26.3.1"), (2, "deployed", "gpu-operator-v26.7.0", "v26.7.0")]
    assert [e["description"] for e in history] == ["Install complete", "Upgrade complete"]
    assert all(e["updated"] and e["updated"].startswith("20") for e in history)
    assert (history[1]["chart_name"], history[1]["chart_version"]) == ("gpu-operator", "v26.7.0")


def test_values_are_the_upgrades(played):
    result = played["results"]["first"]
    assert _load(result, "values.user.json") == UPGRADE_VALUES
    computed = _load(result, "values.all.json")
    assert computed["driver"]["version"] == "580.105.08"
    assert computed["driver"]["licensingConfig"]["nlsToken"] == SECRET_MARKER
    assert computed["clusterPolicy"] == {"deployCR": True} and computed["gpuCluster"] == {"deployCR": False}
    assert computed["operator"]["upgradeCRD"] is True
    assert computed["devicePlugin"]["version"] == "v0.19.0" and computed["toolkit"]["version"] == "v1.18.0"
    # revision 1 holds the install's values
    assert _load(played["results"]["rev1"], "values.user.json") == INSTALL_VALUES


def test_values_never_printed(played):
    assert SECRET_MARKER not in played["stdout"]
    assert SECRET_MARKER not in json.dumps(played["results"])


def test_manifest_notes_chart(played):
    result = played["results"]["first"]
    manifest = _load(result, "manifest.yaml")
    assert "kind: Deployment" in manifest and "name: gpu-operator" in manifest
    assert "image: nvcr.io/nvidia/gpu-operator:v26.7.0" in manifest
    assert "kind: ClusterPolicy" in manifest and 'version: "580.105.08"' in manifest
    assert "CustomResourceDefinition" not in manifest  # crds/ are not part of the manifest
    assert _load(result, "notes.txt") == "GPU Operator v26.7.0 is installed in gpu-operator.\nClusterPolicy deployed: true\n"
    chart = _load(result, "chart.json")
    assert (chart["name"], chart["version"], chart["app_version"], chart["reference"], chart["source"]) == (
        "gpu-operator", "v26.7.0", "v26.7.0", "gpu-operator-v26.7.0", "helm get metadata")
    assert chart["metadata"]["revision"] == 2 and chart["metadata"]["status"] == "deployed"
    rev1 = played["results"]["rev1"]
    assert rev1["summary"]["version"] == "v26.3.1" and rev1["summary"]["status"] == "superseded"
    assert "gpu-operator:v26.3.1" in _load(rev1, "manifest.yaml")


def test_images_and_digests(lab, played):
    images = _load(played["results"]["first"], "images.json")
    assert images["images"] == ["nvcr.io/nvidia/gpu-operator:v26.7.0"]
    assert images["manifest_images"] == [{"kind": "Deployment", "name": "gpu-operator", "namespace": NAMESPACE,
                                          "container": "gpu-operator", "init": False,
                                          "image": "nvcr.io/nvidia/gpu-operator:v26.7.0"}]
    pod_type = lab.server.registry.by_kind("v1", "Pod")
    pods = [p for p in lab.server.api.list(pod_type, NAMESPACE)["items"]
            if (p["metadata"].get("labels") or {}).get("app") == "gpu-operator"]
    lab_ids = {c["imageID"] for p in pods for c in p["status"]["containerStatuses"]}
    assert {r["image_id"] for r in images["running"]} == lab_ids
    assert [r["pod"] for r in images["running"]] == [p["metadata"]["name"] for p in pods]
    (image_id,) = lab_ids
    assert images["digests"] == {"nvcr.io/nvidia/gpu-operator:v26.7.0": [image_id.split("@", 1)[1]]}
    assert images["without_digest"] == []


def test_files_modes_and_sha256(played):
    for name in ("first", "second", "rev1"):
        result = played["results"][name]
        directory = result["directory"]
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
        assert sorted(os.listdir(directory)) == sorted(list(_files(result)) + ["index.json"])
        for artifact in result["artifacts"]:
            with open(artifact["path"], "rb") as handle:
                data = handle.read()
            assert stat.S_IMODE(os.stat(artifact["path"]).st_mode) == 0o600, artifact["path"]
            assert hashlib.sha256(data).hexdigest() == artifact["sha256"]
            assert len(data) == artifact["size"]
            assert artifact["source"] == "helm release gpu-operator/gpu-operator rev %d" % result["summary"]["revision"]
            assert artifact["kind"].startswith("helm-")
            assert subprocess.run(artifact["verify"], shell=True, check=False).returncode == 0
        with open(result["index"]) as handle:
            index = json.load(handle)
        assert index["artifacts"] == result["artifacts"]
        assert stat.S_IMODE(os.stat(result["index"]).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(played["dest"]).st_mode) == 0o700


def test_check_mode_writes_nothing_and_rerun_is_new(played):
    results = played["results"]
    checked = results["checked"]
    assert not os.path.exists(checked["directory"]) or checked["directory"] in (
        results["first"]["directory"], results["second"]["directory"])  # the same second: the real run took the name
    assert checked["msg"].startswith("would write 8 files")
    # the check-mode digests equal the real run's for every file but none was written by it
    assert [a["kind"] for a in checked["artifacts"]] == [a["kind"] for a in results["first"]["artifacts"]]
    assert {os.path.basename(a["path"]): a["sha256"] for a in checked["artifacts"]}["values.all.json"] == \
        _files(results["first"])["values.all.json"]["sha256"]
    dirs = sorted(os.listdir(played["dest"]))
    assert len(dirs) == 3, dirs  # first, second, rev1
    assert results["first"]["directory"] != results["second"]["directory"]
    assert _files(results["first"])["manifest.yaml"]["sha256"] == _files(results["second"])["manifest.yaml"]["sha256"]


def test_failures(played):
    missing, absent = played["results"]["missing"], played["results"]["absent"]
    assert missing["failed"] and "revision 9 is not in the history (revisions 1, 2)" in missing["msg"]
    assert absent["failed"] and "absent" in absent["msg"]


def test_library_output_shapes_match_recorded_fixtures(release):
    """The library still returns what tests/fixtures/helm/library-4.2.3/ recorded (keys and types)."""
    fixtures = os.path.join(REPO, "tests", "fixtures", "helm", "library-4.2.3")
    with open(os.path.join(fixtures, "history.json")) as handle:
        recorded = json.load(handle)
    live = release.history(RELEASE)
    assert [sorted(e) for e in live] == [sorted(e) for e in recorded]
    with open(os.path.join(fixtures, "get-metadata.json")) as handle:
        assert sorted(release.get_metadata(RELEASE, revision=2)) == sorted(json.load(handle))
    with open(os.path.join(fixtures, "get-values.json")) as handle:
        assert release.get_values(RELEASE, revision=2) == json.load(handle)
