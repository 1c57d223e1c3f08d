# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""helm_cli: parsers on the outputs in tests/fixtures/helm/ (see its README for which are recorded from
the real Helm library and which are constructed in the CLI's format), and the exact argv a fake
``helm`` executable receives for a Helm 3 and a Helm 4 version output; helm_library's history in the
same shape as the CLI's."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import helm_cli
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.helm_cli import (
    HelmCli,
    HelmCommandError,
    HelmOutputError,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.helm_library import HelmLibrary

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                        "fixtures", "helm")


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read()


# -- versions and flags ----------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    (fixture("helm-4", "version.txt"), (4, 2, 3)),
    (fixture("helm-3", "version.txt"), (3, 21, 4)),
    ("v3.13.0+g825e86f\n", (3, 13, 0)),
    ("v4.0.0-rc.1", (4, 0, 0)),
])
def test_parse_version(text, expected):
    assert helm_cli.parse_version(text) == expected


@pytest.mark.parametrize("text", ["", "version.BuildInfo{Version:\"v3.21.4\"}", "Error: unknown flag: --template"])
def test_parse_version_refuses(text):
    with pytest.raises(HelmOutputError, match="helm version"):
        helm_cli.parse_version(text)


def test_wait_args_per_major():
    assert helm_cli.wait_args((4, 2, 3)) == ["--wait=watcher"]
    assert helm_cli.wait_args((4, 2, 3), "legacy") == ["--wait=legacy"]
    assert helm_cli.wait_args((4, 2, 3), "hookOnly") == ["--wait=hookOnly"]
    assert helm_cli.wait_args((3, 21, 4)) == ["--wait"]
    assert helm_cli.wait_args((3, 21, 4), "legacy") == ["--wait"]
    assert helm_cli.wait_args((3, 21, 4), "hookOnly") == []
    with pytest.raises(ValueError):
        helm_cli.wait_args((4, 2, 3), "true")


def test_get_metadata_gate():
    assert helm_cli.supports_get_metadata((3, 13, 0)) and helm_cli.supports_get_metadata((4, 0, 0))
    assert not helm_cli.supports_get_metadata((3, 12, 3))


# -- parsers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("chart, expected", [
    ("gpu-operator-v26.7.0", ("gpu-operator", "v26.7.0")),
    ("foo-0.1.0-beta.1", ("foo", "0.1.0-beta.1")),
    ("dra-driver-nvidia-gpu-0.4.1", ("dra-driver-nvidia-gpu", "0.4.1")),
    ("node-feature-discovery-0.19.0+build.1", ("node-feature-discovery", "0.19.0+build.1")),
    ("MISSING", ("MISSING", None)),
    ("", (None, None)),
])
def test_split_chart(chart, expected):
    assert helm_cli.split_chart(chart) == expected


HISTORY_4 = [
    {"revision": 1, "updated": "2026-11-30T09:03:42.12981701Z", "status": "superseded", "chart": "gpu-operator-v26.3.1",
     "chart_name": "gpu-operator", "chart_version": "v26.3.1", "app_version": "v26.3.1", "description": "Install complete"},
    {"revision": 2, "updated": "2026-11-30T09:03:42.801776199Z", "status": "deployed", "chart": "gpu-operator-v26.7.0",
     "chart_name": "gpu-operator", "chart_version": "v26.7.0", "app_version": "v26.7.0", "description": "Upgrade complete"},
]


def test_parse_history_helm4():
    assert helm_cli.parse_history(fixture("helm-4", "history.json")) == HISTORY_4


def test_parse_history_helm3_keeps_the_local_time():
    history = helm_cli.parse_history(fixture("helm-3", "history.json"))
    assert [e["updated"] for e in history] == ["2026-11-30T10:03:42.12981701+01:00", "2026-11-30T10:03:42.801776199+01:00"]
    assert [dict(e, updated=None) for e in history] == [dict(e, updated=None) for e in HISTORY_4]


def test_parse_history_rollback_revision():
    history = helm_cli.parse_history(fixture("helm-4", "history-rollback.json"))
    assert [(e["revision"], e["status"], e.get("rollback_revision")) for e in history] == [
        (1, "superseded", None), (2, "superseded", None), (3, "deployed", 1)]
    assert history[2]["description"] == "Rollback to 1"
    assert "rollback_revision" not in history[0]


def test_parse_history_sorts_and_refuses():
    reversed_text = json.dumps(list(reversed(json.loads(fixture("helm-4", "history.json")))))
    assert [e["revision"] for e in helm_cli.parse_history(reversed_text)] == [1, 2]
    assert helm_cli.parse_history("[]\n") == []
    for bad in ("{}", "not json", '[{"revision": "1", "status": "deployed"}]', '[{"revision": 1}]'):
        with pytest.raises(HelmOutputError, match="helm history"):
            helm_cli.parse_history(bad)


def test_parse_values():
    values = helm_cli.parse_values(fixture("helm-4", "get-values.json"))
    assert values["driver"]["version"] == "580.105.08" and values["devicePlugin"] == {"version": "v0.19.0"}
    computed = helm_cli.parse_values(fixture("helm-3", "get-values-all.json"))
    assert computed["clusterPolicy"] == {"deployCR": True} and computed["gpuCluster"] == {"deployCR": False}
    assert computed["operator"]["upgradeCRD"] is True
    assert helm_cli.parse_values(fixture("helm-4", "get-values-rev1.json")) == {"driver": {"version": "580.95.05"}}
    assert helm_cli.parse_values(fixture("helm-4", "get-values-none.json")) == {}
    with pytest.raises(HelmOutputError):
        helm_cli.parse_values("[1, 2]")


def test_parse_manifest_and_notes_give_the_stored_text():
    status = json.loads(fixture("library-4.2.3", "status.json"))
    for major in ("helm-3", "helm-4"):
        assert helm_cli.parse_manifest(fixture(major, "get-manifest.txt")) == status["manifest"]
        assert helm_cli.parse_notes(fixture(major, "get-notes.txt")) == status["notes"]
    assert helm_cli.parse_notes("") == ""
    with pytest.raises(HelmOutputError, match="NOTES"):
        helm_cli.parse_notes("Error: release: not found\n")


def test_parse_metadata():
    m4 = helm_cli.parse_metadata(fixture("helm-4", "get-metadata.json"))
    assert (m4["chart"], m4["version"], m4["appVersion"], m4["revision"], m4["applyMethod"]) == (
        "gpu-operator", "v26.7.0", "v26.7.0", 2, "ssa")
    m3 = helm_cli.parse_metadata(fixture("helm-3", "get-metadata.json"))
    assert "applyMethod" not in m3 and m3["deployedAt"] == "2026-11-30T10:03:42+01:00"
    with pytest.raises(HelmOutputError):
        helm_cli.parse_metadata('{"name": "x"}')


def test_manifest_images_from_the_recorded_manifest():
    objects = helm_cli.manifest_objects(helm_cli.parse_manifest(fixture("helm-4", "get-manifest.txt")))
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Deployment", "gpu-operator"), ("ClusterPolicy", "cluster-policy")]
    assert helm_cli.manifest_images(objects, "gpu-operator") == [
        {"kind": "Deployment", "name": "gpu-operator", "namespace": "gpu-operator", "container": "gpu-operator",
         "init": False, "image": "nvcr.io/nvidia/gpu-operator:v26.7.0"}]


def test_manifest_images_init_containers_cronjobs_and_namespaces():
    manifest = """\
---
# Source: x/templates/ds.yaml
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: validator, namespace: other}
spec:
  template:
    spec:
      initContainers:
        - {name: driver-validation, image: "nvcr.io/nvidia/gpu-operator:v26.7.0"}
      containers:
        - {name: validator, image: "nvcr.io/nvidia/gpu-operator:v26.7.0"}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cleanup}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: kubectl, image: "bitnami/kubectl:1.37"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {image: "not-a-container"}
---
"""
    objects = helm_cli.manifest_objects(manifest)
    assert [(i["name"], i["namespace"], i["container"], i["init"]) for i in helm_cli.manifest_images(objects, "rel-ns")] == [
        ("validator", "other", "driver-validation", True), ("validator", "other", "validator", False),
        ("cleanup", "rel-ns", "kubectl", False)]
    with pytest.raises(HelmOutputError, match="manifest"):
        helm_cli.manifest_objects("a: [unclosed\n")


@pytest.mark.parametrize("image_id, digest", [
    ("nvcr.io/nvidia/gpu-operator@sha256:" + "a" * 64, "sha256:" + "a" * 64),
    ("docker-pullable://nvcr.io/nvidia/gpu-operator@sha256:" + "b" * 64, "sha256:" + "b" * 64),
    ("", None), (None, None), ("sha256:" + "c" * 64, None),
])
def test_image_digest(image_id, digest):
    assert helm_cli.image_digest(image_id) == digest


# -- the wrapper against a fake helm executable ----------------------------------------------------

FAKE_HELM = """\
#!{python}
import json, os, sys
plan = json.load(open(os.environ["FAKE_HELM_PLAN"]))
with open(os.environ["FAKE_HELM_LOG"], "a") as log:
    log.write(json.dumps({{"argv": sys.argv[1:], "token": os.environ.get("HELM_KUBETOKEN"),
                          "apiserver": os.environ.get("HELM_KUBEAPISERVER"), "lc_all": os.environ.get("LC_ALL")}}) + "\\n")
for step in plan:
    if step["argv"] == sys.argv[1:]:
        sys.stdout.write(open(step["stdout"]).read() if step.get("stdout") else "")
        sys.stderr.write(step.get("stderr", ""))
        sys.exit(step.get("rc", 0))
sys.stderr.write("Error: unexpected argv %r\\n" % (sys.argv[1:],))
sys.exit(2)
"""


@pytest.fixture
def fake_helm(tmp_path, monkeypatch):
    helm = tmp_path / "helm"
    helm.write_text(FAKE_HELM.format(python=sys.executable))
    helm.chmod(helm.stat().st_mode | stat.S_IXUSR)
    plan, log = tmp_path / "plan.json", tmp_path / "log.jsonl"
    monkeypatch.setenv("FAKE_HELM_PLAN", str(plan))
    monkeypatch.setenv("FAKE_HELM_LOG", str(log))

    def setup(steps):
        plan.write_text(json.dumps(steps))

    def calls():
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    return str(helm), setup, calls


def run_command(argv, env):
    """What module.run_command(argv, environ_update=env) does, for the tests."""
    proc = subprocess.run(argv, env=dict(os.environ, **env), capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


CONN = ["--kubeconfig", "/etc/gpufleet/kubeconfig", "--kube-context", "prod", "--namespace", "gpu-operator"]


def expected_argv(metadata=True):
    argv = [
        ["version", "--template", "{{.Version}}"],
        ["history", "gpu-operator"] + CONN + ["--max", "256", "-o", "json"],
        ["get", "values", "gpu-operator"] + CONN + ["--revision", "2", "-o", "json"],
        ["get", "values", "gpu-operator"] + CONN + ["--revision", "2", "-o", "json", "--all"],
        ["get", "manifest", "gpu-operator"] + CONN + ["--revision", "2"],
        ["get", "notes", "gpu-operator"] + CONN + ["--revision", "2"],
    ]
    if metadata:
        argv.append(["get", "metadata", "gpu-operator"] + CONN + ["--revision", "2", "-o", "json"])
    return argv


def plan_for(major, version_file=None):
    files = ["version.txt", "history.json", "get-values.json", "get-values-all.json", "get-manifest.txt",
             "get-notes.txt", "get-metadata.json"]
    steps = []
    for argv, name in zip(expected_argv(), files):
        path = os.path.join(FIXTURES, major, name)
        steps.append({"argv": argv, "stdout": version_file if (name == "version.txt" and version_file) else path})
    return steps


def capture(cli):
    version = cli.detect_version()
    history = cli.history("gpu-operator")
    return (version, history, cli.get_values("gpu-operator", 2), cli.get_values("gpu-operator", 2, all_values=True),
            cli.get_manifest("gpu-operator", 2), cli.get_notes("gpu-operator", 2), cli.get_metadata("gpu-operator", 2))


@pytest.mark.parametrize("major, version", [("helm-4", (4, 2, 3)), ("helm-3", (3, 21, 4))])
def test_cli_argv_and_outputs(fake_helm, major, version):
    helm, setup, calls = fake_helm
    setup(plan_for(major))
    env = helm_cli.connection_env(host="https://api.gpu.example:6443", api_key="tok-secret")
    cli = HelmCli(run_command, helm=helm, namespace="gpu-operator", kubeconfig="/etc/gpufleet/kubeconfig",
                  context="prod", env=env)
    got_version, history, values, computed, manifest, notes, metadata = capture(cli)
    assert [c["argv"] for c in calls()] == expected_argv()
    assert got_version == version
    assert [(e["revision"], e["status"]) for e in history] == [(1, "superseded"), (2, "deployed")]
    assert values["driver"]["version"] == "580.105.08" and "clusterPolicy" in computed
    assert "kind: Deployment" in manifest and notes.startswith("GPU Operator v26.7.0")
    assert metadata["version"] == "v26.7.0"
    # the token travels in the environment only, LC_ALL=C always
    assert all(c["token"] == "tok-secret" and c["apiserver"] == "https://api.gpu.example:6443" and c["lc_all"] == "C"
               for c in calls())
    assert not any("tok-secret" in arg for c in calls() for arg in c["argv"])


def test_cli_old_helm3_has_no_get_metadata(fake_helm, tmp_path):
    helm, setup, calls = fake_helm
    old = tmp_path / "version-3.12.txt"
    old.write_text("v3.12.3")
    setup(plan_for("helm-3", version_file=str(old)))
    cli = HelmCli(run_command, helm=helm, namespace="gpu-operator", kubeconfig="/etc/gpufleet/kubeconfig", context="prod")
    metadata = capture(cli)[-1]
    assert metadata is None
    assert [c["argv"] for c in calls()] == expected_argv(metadata=False)


def test_cli_refuses_helm2_and_reports_failures(fake_helm, tmp_path):
    helm, setup, _calls = fake_helm
    v2 = tmp_path / "v2.txt"
    v2.write_text("v2.17.0")
    setup([{"argv": ["version", "--template", "{{.Version}}"], "stdout": str(v2)}])
    cli = HelmCli(run_command, helm=helm, namespace="gpu-operator")
    with pytest.raises(HelmOutputError, match="Helm 2.17.0 is not supported"):
        cli.detect_version()
    setup([{"argv": ["history", "absent", "--namespace", "gpu-operator", "--max", "256", "-o", "json"],
            "rc": 1, "stderr": "Error: release: not found\n"}])
    with pytest.raises(HelmCommandError) as error:
        cli.history("absent")
    assert error.value.rc == 1 and error.value.stderr == "Error: release: not found"
    assert "history absent" in str(error.value)


# -- the library backend gives the CLI's shapes ----------------------------------------------------


class FakeConfig:
    """helm_python.Config answering with the outputs recorded from the real library."""

    def history(self, name, max_revisions=None):
        return json.loads(fixture("library-4.2.3", "history.json"))

    def get_all(self, name, revision=None):
        return {"info": json.loads(fixture("library-4.2.3", "get-all-info-rev%d.json" % revision))}

    def status(self, name, revision=None):
        return json.loads(fixture("library-4.2.3", "status.json"))

    def get_values(self, name, all_values=False, revision=None):
        return json.loads(fixture("library-4.2.3", "get-values-all.json" if all_values else "get-values.json"))

    def get_metadata(self, name, revision=None):
        return json.loads(fixture("library-4.2.3", "get-metadata.json"))


def test_library_backend_matches_the_cli_shapes():
    library = HelmLibrary.__new__(HelmLibrary)
    library.config, library._statuses = FakeConfig(), {}  # pylint: disable=protected-access
    assert library.history("gpu-operator") == helm_cli.parse_history(fixture("helm-4", "history.json"))
    assert library.get_values("gpu-operator", 2) == helm_cli.parse_values(fixture("helm-4", "get-values.json"))
    assert library.get_values("gpu-operator", 2, all_values=True) == helm_cli.parse_values(
        fixture("helm-4", "get-values-all.json"))
    assert library.get_manifest("gpu-operator", 2) == helm_cli.parse_manifest(fixture("helm-4", "get-manifest.txt"))
    assert library.get_notes("gpu-operator", 2) == helm_cli.parse_notes(fixture("helm-4", "get-notes.txt"))
    assert library.get_metadata("gpu-operator", 2) == helm_cli.parse_metadata(fixture("helm-4", "get-metadata.json"))
