# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""helm_cli's write operations: the exact argv of upgrade, install, rollback, template and show crds
for Helm 3 and Helm 4 (the versions of tests/fixtures/helm/helm-{3,4}/version.txt), run through a fake
``helm`` executable (values written 0600 and removed, the runner's deadline past helm's --timeout,
errors with argv and stderr); RetryingHelm's rule for writes; HelmLibrary's writes against a fake
``helm_python.Config`` in the CLI's shapes; and the backend factory.

``helm upgrade -o json`` output is constructed (no helm binary here): the ``Release`` object as
Helm's ``output.EncodeJSON`` writes it (``name``, ``info``, ``chart.metadata``, ``config``,
``manifest``, ``version``, ``namespace``; helm/helm v4.2.4 ``pkg/release/v1``, v3.21.4 ``pkg/release``).
"""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import helm_cli
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import helm_library
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.command_runner import Runner
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.helm_cli import (
    HelmBackend,
    HelmCli,
    HelmCommandError,
    HelmFlagError,
    HelmForbidden,
    HelmWriteForbidden,
    RetryingHelm,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.helm_library import HelmLibrary, HelmLibraryCallError
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import RetryPolicy

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                        "fixtures", "helm")


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read()


V4 = helm_cli.parse_version(fixture("helm-4", "version.txt"))
V3 = helm_cli.parse_version(fixture("helm-3", "version.txt"))
CONN = helm_cli.connection_args("gpu-operator", "/etc/gpufleet/kubeconfig", "prod")
TGZ = "/srv/charts/gpu-operator-v26.7.0.tgz"
OCI = "oci://nvcr.io/nvidia/gpu-operator"
VALUES = ["/run/dra-gate/values.json"]


def test_the_fixture_versions():
    assert V4 == (4, 2, 3) and V3 == (3, 21, 4)


# -- argv ------------------------------------------------------------------------------------------


def test_upgrade_helm4_local_chart():
    assert helm_cli.upgrade_argv("helm", V4, "gpu-operator", TGZ, CONN, VALUES, chart_version="v26.7.0") == [
        "helm", "upgrade", "gpu-operator", TGZ, "--kubeconfig", "/etc/gpufleet/kubeconfig", "--kube-context", "prod",
        "--namespace", "gpu-operator", "--values", "/run/dra-gate/values.json", "--reset-values",
        "--wait=watcher", "--timeout", "600s", "--server-side=auto", "--history-max", "10", "-o", "json"]


def test_upgrade_helm3_oci_chart():
    assert helm_cli.upgrade_argv("helm", V3, "gpu-operator", OCI, CONN, VALUES, chart_version="v26.7.0") == [
        "helm", "upgrade", "gpu-operator", OCI, "--kubeconfig", "/etc/gpufleet/kubeconfig", "--kube-context", "prod",
        "--namespace", "gpu-operator", "--values", "/run/dra-gate/values.json", "--version", "v26.7.0",
        "--reset-values", "--wait", "--timeout", "600s", "--history-max", "10", "-o", "json"]


@pytest.mark.parametrize("version", [V3, V4])
def test_upgrade_never_reuses_values_and_never_rolls_back_by_itself(version):
    argv = helm_cli.upgrade_argv("helm", version, "r", TGZ, CONN, VALUES)
    assert "--reset-values" in argv and "--reuse-values" not in argv and "--reset-then-reuse-values" not in argv
    assert not {"--atomic", "--rollback-on-failure", "--force", "--force-replace", "--cleanup-on-fail"} & set(argv)
    assert argv[argv.index("--timeout") + 1] == "600s"


def test_upgrade_options_per_major():
    kwargs = dict(timeout=900, dry_run="server", description="gpufleet hop 26.3.1 -> 26.7.0", history_max=0,
                  rollback_on_failure=True)
    four = helm_cli.upgrade_argv("helm", V4, "r", OCI, ["--namespace", "ns"], VALUES + ["/run/o.json"],
                                 chart_version="v26.7.0", server_side="true", force_conflicts=True, **kwargs)
    assert four == ["helm", "upgrade", "r", OCI, "--namespace", "ns", "--values", "/run/dra-gate/values.json",
                    "--values", "/run/o.json", "--version", "v26.7.0", "--reset-values", "--wait=watcher",
                    "--timeout", "900s", "--server-side=true", "--force-conflicts", "--rollback-on-failure",
                    "--history-max", "0", "--description", "gpufleet hop 26.3.1 -> 26.7.0", "--dry-run=server",
                    "-o", "json"]
    three = helm_cli.upgrade_argv("helm", V3, "r", OCI, ["--namespace", "ns"], VALUES, chart_version="v26.7.0",
                                  wait="legacy", **kwargs)
    assert three == ["helm", "upgrade", "r", OCI, "--namespace", "ns", "--values", "/run/dra-gate/values.json",
                     "--version", "v26.7.0", "--reset-values", "--wait", "--timeout", "900s", "--atomic",
                     "--history-max", "0", "--description", "gpufleet hop 26.3.1 -> 26.7.0", "--dry-run=server",
                     "-o", "json"]
    hook_only = helm_cli.upgrade_argv("helm", V3, "r", TGZ, ["--namespace", "ns"], (), wait="hookOnly", history_max=None)
    assert hook_only == ["helm", "upgrade", "r", TGZ, "--namespace", "ns", "--reset-values", "--timeout", "600s",
                         "-o", "json"]
    assert helm_cli.upgrade_argv("helm", V4, "r", TGZ, [], (), wait="hookOnly")[5:7] == ["--wait=hookOnly", "--timeout"]


def test_repository_charts_take_version_and_repo():
    argv = helm_cli.upgrade_argv("helm", V4, "r", "gpu-operator", ["--namespace", "ns"], (), chart_version="v26.7.0",
                                 repo_url="https://helm.ngc.nvidia.com/nvidia")
    assert argv[4:10] == ["--namespace", "ns", "--version", "v26.7.0", "--repo", "https://helm.ngc.nvidia.com/nvidia"]
    with pytest.raises(HelmFlagError, match="--repo applies to a chart name"):
        helm_cli.upgrade_argv("helm", V4, "r", OCI, [], (), repo_url="https://example.com")


@pytest.mark.parametrize("chart, kind", [
    (OCI, "oci"), ("https://example.com/gpu-operator-v26.7.0.tgz", "url"), (TGZ, "path"), ("./gpu-operator", "path"),
    ("../charts/x.tgz", "path"), ("nvidia/gpu-operator", "repo"), ("gpu-operator", "repo"),
])
def test_chart_ref_kind(chart, kind):
    assert helm_cli.chart_ref_kind(chart) == kind


def test_dry_run_per_version():
    assert helm_cli.dry_run_args(V4, "server") == ["--dry-run=server"]
    assert helm_cli.dry_run_args(V4, "client") == ["--dry-run=client"]
    assert helm_cli.dry_run_args(V3, "server") == ["--dry-run=server"]
    assert helm_cli.dry_run_args((3, 13, 0), "server") == ["--dry-run=server"]
    assert helm_cli.dry_run_args((3, 12, 3), "client") == ["--dry-run"]
    with pytest.raises(HelmFlagError, match=r"--dry-run=server needs Helm >= 3\.13\.0 \(this is 3\.12\.3\)"):
        helm_cli.dry_run_args((3, 12, 3), "server")
    assert helm_cli.dry_run_args(V3, "server", "rollback") == ["--dry-run"]
    assert helm_cli.dry_run_args(V4, "server", "rollback") == ["--dry-run=server"]
    assert helm_cli.dry_run_args(V4, None) == []
    with pytest.raises(ValueError):
        helm_cli.dry_run_args(V4, "true")


def test_server_side_apply_is_explicit_on_helm4_and_refused_on_helm3():
    assert helm_cli.apply_args(V4) == ["--server-side=auto"]
    assert helm_cli.apply_args(V4, "false") == ["--server-side=false"]
    assert helm_cli.apply_args(V4, "auto", install=True) == ["--server-side=true"]
    assert helm_cli.apply_args(V4, "auto", force_conflicts=True) == ["--server-side=auto", "--force-conflicts"]
    assert helm_cli.apply_args(V3) == [] and helm_cli.apply_args(V3, "false") == []
    with pytest.raises(HelmFlagError, match="Helm 3.21.4 has no server-side apply"):
        helm_cli.apply_args(V3, "true")
    with pytest.raises(HelmFlagError):
        helm_cli.apply_args(V3, "auto", force_conflicts=True)
    with pytest.raises(HelmFlagError, match="server-side apply only"):
        helm_cli.apply_args(V4, "false", force_conflicts=True)
    with pytest.raises(ValueError):
        helm_cli.apply_args(V4, "yes")


def test_rollback_argv():
    assert helm_cli.rollback_argv("helm", V4, "gpu-operator", 3, CONN) == [
        "helm", "rollback", "gpu-operator", "3", "--kubeconfig", "/etc/gpufleet/kubeconfig", "--kube-context", "prod",
        "--namespace", "gpu-operator", "--wait=watcher", "--timeout", "600s", "--server-side=auto", "--history-max", "10"]
    assert helm_cli.rollback_argv("helm", V3, "gpu-operator", 3, ["--namespace", "ns"], timeout=300, dry_run="server") == [
        "helm", "rollback", "gpu-operator", "3", "--namespace", "ns", "--wait", "--timeout", "300s", "--history-max", "10",
        "--dry-run"]
    for bad in (0, -1, "3", True, None):
        with pytest.raises(ValueError, match="recorded revision"):
            helm_cli.rollback_argv("helm", V4, "r", bad, [])


def test_install_argv():
    assert helm_cli.install_argv("helm", V4, "r", TGZ, ["--namespace", "ns"], VALUES, create_namespace=True,
                                 description="reinstall of revision 2") == [
        "helm", "install", "r", TGZ, "--namespace", "ns", "--values", "/run/dra-gate/values.json", "--wait=watcher",
        "--timeout", "600s", "--server-side=true", "--create-namespace", "--description", "reinstall of revision 2",
        "-o", "json"]
    assert helm_cli.install_argv("helm", V3, "r", TGZ, ["--namespace", "ns"], ()) == [
        "helm", "install", "r", TGZ, "--namespace", "ns", "--wait", "--timeout", "600s", "-o", "json"]


def test_template_and_show_crds_argv():
    for version in (V3, V4):
        assert helm_cli.template_argv("helm", version, "r", OCI, ["--namespace", "ns"], VALUES, chart_version="v26.7.0",
                                      include_crds=True) == [
            "helm", "template", "r", OCI, "--namespace", "ns", "--values", "/run/dra-gate/values.json",
            "--version", "v26.7.0", "--include-crds", "--is-upgrade"]
    assert helm_cli.show_crds_argv("helm", TGZ) == ["helm", "show", "crds", TGZ]
    assert helm_cli.show_crds_argv("helm", OCI, chart_version="v26.7.0") == ["helm", "show", "crds", OCI, "--version", "v26.7.0"]


@pytest.mark.parametrize("bad", [0, -5, None, "600", True])
def test_timeouts_must_be_positive_seconds(bad):
    with pytest.raises(ValueError, match="timeout"):
        helm_cli.upgrade_argv("helm", V4, "r", TGZ, [], (), timeout=bad)


def test_history_max_must_be_a_count():
    with pytest.raises(ValueError, match="history_max"):
        helm_cli.upgrade_argv("helm", V4, "r", TGZ, [], (), history_max=-1)


# -- parsing ---------------------------------------------------------------------------------------


def release_json(revision=2, status="deployed", description="Upgrade complete", version="v26.7.0"):
    return json.dumps({
        "name": "gpu-operator",
        "info": {"first_deployed": "2026-11-30T09:03:41Z", "last_deployed": "2026-11-30T09:03:42Z", "deleted": "",
                 "description": description, "status": status, "notes": "GPU Operator"},
        "chart": {"metadata": {"name": "gpu-operator", "version": version, "appVersion": version, "apiVersion": "v2"},
                  "lock": None, "templates": [], "values": {}},
        "config": {"driver": {"licensingConfig": {"nlsToken": "nls-token-7f3a9c-MUST-NOT-BE-PRINTED"}}},
        "manifest": "---\n# Source: gpu-operator/templates/operator.yaml\n",
        "version": revision,
        "namespace": "gpu-operator",
    }) + "\n"


SUMMARY = {"name": "gpu-operator", "namespace": "gpu-operator", "revision": 2, "status": "deployed",
           "chart": "gpu-operator-v26.7.0", "chart_name": "gpu-operator", "chart_version": "v26.7.0",
           "app_version": "v26.7.0", "description": "Upgrade complete", "dry_run": False}


def test_parse_release():
    assert helm_cli.parse_release(release_json()) == SUMMARY
    assert "MUST-NOT-BE-PRINTED" not in json.dumps(helm_cli.parse_release(release_json()))
    dry = helm_cli.parse_release(release_json(3, "pending-upgrade", "Dry run complete"), dry_run=True)
    assert (dry["revision"], dry["status"], dry["description"], dry["dry_run"]) == (3, "pending-upgrade",
                                                                                    "Dry run complete", True)
    for bad in ("[]", "{}", '{"version": "2", "info": {"status": "deployed"}}', '{"version": 2, "info": {}}', "nope"):
        with pytest.raises(helm_cli.HelmOutputError, match="helm upgrade"):
            helm_cli.parse_release(bad)


def test_parse_rendered_and_crds_sort_objects():
    text = ("---\n# Source: x/templates/b.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: b}\n"
            "---\n# Source: x/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    rendered = helm_cli.parse_rendered(text)
    assert rendered["manifest"] == text
    assert [(o["kind"], o["metadata"]["name"]) for o in rendered["objects"]] == [("ConfigMap", "a"), ("Deployment", "b")]
    crds = helm_cli.parse_crds("---\nkind: CustomResourceDefinition\nmetadata: {name: z.x}\n\n---\n"
                               "kind: CustomResourceDefinition\nmetadata: {name: a.x}\n\n")
    assert [o["metadata"]["name"] for o in crds] == ["a.x", "z.x"]


# -- the CLI against a fake helm -------------------------------------------------------------------

FAKE_HELM = """\
#!{python}
import json, os, stat, sys
args = sys.argv[1:]
entry = {{"argv": args, "token": os.environ.get("HELM_KUBETOKEN"), "values": []}}
for index, arg in enumerate(args):
    if arg == "--values":
        path = args[index + 1]
        entry["values"].append({{"path": path, "mode": stat.S_IMODE(os.stat(path).st_mode),
                                 "dir_mode": stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode),
                                 "content": json.load(open(path))}})
with open(os.environ["FAKE_HELM_LOG"], "a") as log:
    log.write(json.dumps(entry) + "\\n")
mode = os.environ.get("FAKE_HELM_MODE", "ok")
if args[0] == "version":
    sys.stdout.write(os.environ["FAKE_HELM_VERSION"])
elif mode == "fail":
    sys.stderr.write("Error: UPGRADE FAILED: context deadline exceeded\\n")
    sys.exit(1)
elif args[0] in ("upgrade", "install"):
    sys.stdout.write(open(os.environ["FAKE_HELM_RELEASE"]).read())
elif args[0] == "rollback":
    sys.stdout.write("Rollback was a success! Happy Helming!\\n")
elif args[0] == "history":
    sys.stdout.write(open(os.environ["FAKE_HELM_HISTORY"]).read())
elif args[0] == "template":
    sys.stdout.write("---\\n# Source: gpu-operator/templates/operator.yaml\\napiVersion: apps/v1\\nkind: Deployment\\n"
                     "metadata:\\n  name: gpu-operator\\n")
elif args[0] == "show":
    sys.stdout.write("---\\napiVersion: apiextensions.k8s.io/v1\\nkind: CustomResourceDefinition\\n"
                     "metadata:\\n  name: clusterpolicies.nvidia.com\\n\\n")
else:
    sys.exit(2)
"""


class RecordingRunner:
    """A Runner that records the deadline each command got."""

    def __init__(self, timeout=30):
        self.runner = Runner(timeout)
        self.timeouts = []

    def __call__(self, argv, environ_update=None, timeout=None):
        self.timeouts.append((argv[1], timeout))
        return self.runner(argv, environ_update, timeout=timeout)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    helm = tmp_path / "helm"
    helm.write_text(FAKE_HELM.format(python=sys.executable))
    helm.chmod(helm.stat().st_mode | stat.S_IXUSR)
    release = tmp_path / "release.json"
    release.write_text(release_json())
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("FAKE_HELM_LOG", str(log))
    monkeypatch.setenv("FAKE_HELM_RELEASE", str(release))
    monkeypatch.setenv("FAKE_HELM_HISTORY", os.path.join(FIXTURES, "helm-4", "history-rollback.json"))
    work = tmp_path / "work"
    work.mkdir(mode=0o700)

    def make(version_text="v4.2.3", mode="ok"):
        monkeypatch.setenv("FAKE_HELM_VERSION", version_text)
        monkeypatch.setenv("FAKE_HELM_MODE", mode)
        runner = RecordingRunner()
        env = helm_cli.connection_env(host="https://api.gpu.example:6443", api_key="tok-secret")
        return HelmCli(runner, helm=str(helm), namespace="gpu-operator", env=env, work_dir=str(work)), runner

    def calls():
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    make.calls = calls
    make.work = work
    return make


MERGED = {"driver": {"version": "595.91.07", "licensingConfig": {"nlsToken": "nls-token-7f3a9c-MUST-NOT-BE-PRINTED"}}}


@pytest.mark.parametrize("version_text, wait", [("v4.2.3", "--wait=watcher"), ("v3.21.4", "--wait")])
def test_cli_upgrade_writes_values_0600_and_removes_them(fake, version_text, wait):
    cli, runner = fake(version_text)
    summary = cli.upgrade("gpu-operator", TGZ, MERGED, timeout=600)
    assert summary == SUMMARY
    version_call, upgrade_call = fake.calls()
    assert version_call["argv"] == ["version", "--template", "{{.Version}}"]
    argv = upgrade_call["argv"]
    assert argv[:4] == ["upgrade", "gpu-operator", TGZ, "--namespace"] and wait in argv
    [values] = upgrade_call["values"]
    assert values["mode"] == 0o600 and values["dir_mode"] == 0o700 and values["content"] == MERGED
    assert values["path"].startswith(str(fake.work) + os.sep)
    assert not os.path.exists(values["path"]) and os.listdir(str(fake.work)) == []
    # the token travels in the environment only; helm's --timeout ends first, the runner's deadline after it
    assert upgrade_call["token"] == "tok-secret" and not any("tok-secret" in a for a in argv)
    assert runner.timeouts == [("version", None), ("upgrade", 600 + helm_cli.COMMAND_GRACE_SECONDS)]
    assert cli.version_text() == version_text


def test_cli_dry_run_and_caller_files(fake, tmp_path):
    cli, _runner = fake("v4.2.3")
    own = tmp_path / "overrides.json"
    own.write_text(json.dumps({"cdi": {"enabled": True}}))
    own.chmod(0o600)
    cli.upgrade("gpu-operator", OCI, MERGED, values_files=[str(own)], chart_version="v26.7.0", dry_run="server")
    argv = fake.calls()[-1]["argv"]
    assert argv.count("--values") == 2 and argv[argv.index("--values") + 1] == str(own)  # the caller's file first
    assert "--dry-run=server" in argv and argv[argv.index("--version") + 1] == "v26.7.0"
    own.chmod(0o644)
    with pytest.raises(ValueError, match="mode 0644; values files must be 0600"):
        cli.upgrade("gpu-operator", OCI, MERGED, values_files=[str(own)])


def test_cli_upgrade_failure_carries_argv_and_stderr_and_cleans_up(fake):
    cli, _runner = fake("v4.2.3", mode="fail")
    with pytest.raises(HelmCommandError) as error:
        cli.upgrade("gpu-operator", TGZ, MERGED)
    assert error.value.argv[1:3] == ["upgrade", "gpu-operator"] and error.value.rc == 1
    assert error.value.stderr == "Error: UPGRADE FAILED: context deadline exceeded"
    assert "upgrade gpu-operator" in str(error.value)
    assert os.listdir(str(fake.work)) == []


def test_cli_helm3_refuses_server_side_before_running_anything(fake):
    cli, _runner = fake("v3.21.4")
    with pytest.raises(HelmFlagError):
        cli.upgrade("gpu-operator", TGZ, MERGED, server_side="true")
    assert [c["argv"][0] for c in fake.calls()] == ["version"]
    assert os.listdir(str(fake.work)) == []


def test_cli_rollback_reads_the_new_revision(fake):
    cli, runner = fake("v4.2.3")
    summary = cli.rollback("gpu-operator", 1, timeout=300)
    assert summary == {"name": "gpu-operator", "namespace": "gpu-operator", "revision": 3, "status": "deployed",
                       "chart": "gpu-operator-v26.3.1", "chart_name": "gpu-operator", "chart_version": "v26.3.1",
                       "app_version": "v26.3.1", "description": "Rollback to 1", "dry_run": False}
    assert [c["argv"] for c in fake.calls()][1:] == [
        ["rollback", "gpu-operator", "1", "--namespace", "gpu-operator", "--wait=watcher", "--timeout", "300s",
         "--server-side=auto", "--history-max", "10"],
        ["history", "gpu-operator", "--namespace", "gpu-operator", "--max", "1", "-o", "json"]]
    assert runner.timeouts[1] == ("rollback", 300 + helm_cli.COMMAND_GRACE_SECONDS)


def test_cli_render_and_crds(fake):
    cli, _runner = fake("v3.21.4")
    rendered = cli.render("gpu-operator", TGZ, {"driver": {"version": "1"}}, include_crds=True)
    assert [(o["kind"], o["metadata"]["name"]) for o in rendered["objects"]] == [("Deployment", "gpu-operator")]
    assert fake.calls()[-1]["argv"][-2:] == ["--include-crds", "--is-upgrade"]
    assert fake.calls()[-1]["values"][0]["content"] == {"driver": {"version": "1"}}
    assert [o["metadata"]["name"] for o in cli.render_crds(TGZ)] == ["clusterpolicies.nvidia.com"]
    assert fake.calls()[-1]["argv"] == ["show", "crds", TGZ]


# -- retries of writes -----------------------------------------------------------------------------


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class Flaky:
    def __init__(self, errors):
        self.errors = list(errors)
        self.calls = 0

    def upgrade(self, *args, **kwargs):
        self.calls += 1
        if self.errors:
            raise HelmCommandError(["helm", "upgrade", "r"], 1, self.errors.pop(0))
        return "ok"

    history = render = upgrade


def retrying(errors):
    clock = Clock()
    backend = Flaky(errors)
    policy = RetryPolicy(deadline=30, sleep=clock.sleep, clock=clock, rand=lambda: 0.0)
    return backend, RetryingHelm(backend, policy, (HelmCommandError,), "gpu-operator", "gpu-operator")


@pytest.mark.parametrize("stderr", [
    "Error: UPGRADE FAILED: the server is currently unable to handle the request",
    "Error: UPGRADE FAILED: the server has received too many requests and has asked us to try again later",
    "Error: Kubernetes cluster unreachable: Get \"https://10.0.0.1:6443/version\": dial tcp 10.0.0.1:6443: connect: connection refused",
])
def test_writes_are_retried_when_refused_before_any_change(stderr):
    backend, helm = retrying([stderr])
    assert helm.upgrade("r", TGZ) == "ok" and backend.calls == 2 and helm.retries == 1


@pytest.mark.parametrize("stderr", [
    "Error: UPGRADE FAILED: Internal error occurred: etcdserver: request timed out",
    "Error: UPGRADE FAILED: an error on the server (\"\") has prevented the request from succeeding",
    "Error: UPGRADE FAILED: read tcp 10.0.0.2:5000->10.0.0.1:6443: read: connection reset by peer",
    "Error: UPGRADE FAILED: context deadline exceeded",
])
def test_writes_are_not_retried_when_they_may_have_applied(stderr):
    backend, helm = retrying([stderr])
    with pytest.raises(HelmCommandError):
        helm.upgrade("r", TGZ)
    assert backend.calls == 1
    # a read with the same failure is retried (the rule for reads is unchanged) - except the timeout
    backend, helm = retrying([stderr])
    if "deadline" in stderr:
        with pytest.raises(HelmCommandError):
            helm.history("r")
    else:
        assert helm.history("r") == "ok" and backend.calls == 2


def test_forbidden_write_names_the_operation():
    _backend, helm = retrying(['Error: UPGRADE FAILED: deployments.apps "gpu-operator" is forbidden: User "u" cannot '
                               'patch resource "deployments"'])
    with pytest.raises(HelmWriteForbidden) as error:
        helm.upgrade("r", TGZ)
    assert isinstance(error.value, HelmForbidden)
    assert str(error.value).startswith("forbidden: helm upgrade of release gpu-operator/gpu-operator was refused by RBAC")


# -- the library backend in the same shapes --------------------------------------------------------


class FakeConfig:
    """helm_python.Config's write calls, answering like the real library (see the lab contract test)."""

    def __init__(self):
        self.calls = []

    def upgrade(self, chart, name, values=None, **kwargs):
        self.calls.append(("upgrade", chart, name, values, kwargs))
        return {"name": name, "namespace": "gpu-operator", "revision": 2,
                "status": "pending-upgrade" if kwargs.get("dry_run") else "deployed", "deployed_at": "2026-11-30T09:03:42Z",
                "chart_name": "gpu-operator", "chart_version": "v26.7.0", "app_version": "v26.7.0"}

    def install(self, chart, name, values=None, **kwargs):
        self.calls.append(("install", chart, name, values, kwargs))
        return dict(self.upgrade(chart, name, values, **kwargs), revision=1)

    def rollback(self, name, **kwargs):
        self.calls.append(("rollback", name, kwargs))

    def get_all(self, name, revision=None):
        return {"info": json.loads(fixture("library-4.2.3", "get-all-info-rev%d.json" % min(revision, 2)))}

    def history(self, name, max_revisions=None):
        self.calls.append(("history", name, max_revisions))
        return json.loads(fixture("library-4.2.3", "history.json"))[-1:]


def library():
    backend = HelmLibrary.__new__(HelmLibrary)
    backend.config, backend._statuses, backend.namespace = FakeConfig(), {}, "gpu-operator"  # pylint: disable=protected-access
    return backend


def test_library_upgrade_passes_explicit_values_and_matches_the_cli_shape(monkeypatch):
    monkeypatch.setattr(helm_library, "helm_python", type("M", (), {"HelmError": RuntimeError}))
    backend = library()
    summary = backend.upgrade("gpu-operator", TGZ, MERGED, timeout=600, description=None)
    assert summary == SUMMARY  # what the CLI's parse_release gives for the same release
    _op, chart, name, values, kwargs = backend.config.calls[0]
    assert (chart, name, values) == (TGZ, "gpu-operator", MERGED)
    assert kwargs == {"timeout": 600, "wait": "watcher", "dry_run": None, "max_history": 10, "reset_values": True,
                      "reuse_values": False, "rollback_on_failure": False, "description": None, "chart_version": None,
                      "chart_repo_url": None}
    dry = backend.upgrade("gpu-operator", OCI, MERGED, chart_version="v26.7.0", dry_run="server")
    assert (dry["status"], dry["description"], dry["dry_run"]) == ("pending-upgrade", "Dry run complete", True)
    assert backend.config.calls[-1][4]["chart_version"] == "v26.7.0" and backend.config.calls[-1][4]["dry_run"] == "server"
    assert sorted(dry) == sorted(SUMMARY)


def test_library_refuses_what_the_binding_cannot_pass(monkeypatch):
    monkeypatch.setattr(helm_library, "helm_python", type("M", (), {"HelmError": RuntimeError}))
    backend = library()
    for kwargs in ({"server_side": "true"}, {"server_side": "false"}, {"force_conflicts": True}):
        with pytest.raises(HelmLibraryCallError, match="cannot be passed through helm-python-sdk"):
            backend.upgrade("gpu-operator", TGZ, MERGED, **kwargs)
    with pytest.raises(ValueError):
        backend.upgrade("gpu-operator", TGZ, MERGED, wait="true")
    assert backend.config.calls == []


def test_library_rollback_returns_the_newest_revision(monkeypatch):
    monkeypatch.setattr(helm_library, "helm_python", type("M", (), {"HelmError": RuntimeError}))
    backend = library()
    summary = backend.rollback("gpu-operator", 1, timeout=300)
    expected = {"version": 1, "timeout": 300, "wait": "watcher", "dry_run": None}
    assert backend.config.calls[:2] == [("rollback", "gpu-operator", expected), ("history", "gpu-operator", 1)]
    assert sorted(summary) == sorted(SUMMARY) and summary["revision"] == 2
    with pytest.raises(ValueError):
        backend.rollback("gpu-operator", 0)


def test_both_backends_are_the_one_interface():
    methods = ("history", "get_values", "get_manifest", "get_notes", "get_metadata", "upgrade", "install", "rollback",
               "render", "render_crds", "version_text")
    for cls in (HelmCli, HelmLibrary):
        assert issubclass(cls, HelmBackend)
        missing = [name for name in methods if getattr(cls, name) is getattr(HelmBackend, name)]
        assert missing == [], (cls, missing)
    assert (HelmCli.kind, HelmLibrary.kind) == ("cli", "library")


# -- the factory -----------------------------------------------------------------------------------


def test_factory_picks_the_cli_when_helm_is_found(fake, monkeypatch):
    helm_path = os.path.join(str(fake.work.parent), "helm")
    monkeypatch.setenv("FAKE_HELM_VERSION", "v3.21.4")
    kind, backend = helm_library.open_backend("gpu-operator", run=Runner(30), which=lambda name: helm_path,
                                              api_key="tok-secret")
    assert kind == "cli" and backend.version == (3, 21, 4) and backend.env["HELM_KUBETOKEN"] == "tok-secret"
    kind, backend = helm_library.open_backend("gpu-operator", helm_binary=helm_path, run=Runner(30),
                                              which=lambda name: None)
    assert kind == "cli" and backend.helm == helm_path


def test_factory_falls_back_to_the_library_only_without_a_helm(monkeypatch):
    made = []

    class StubLibrary:
        def __init__(self, namespace, **kwargs):
            made.append((namespace, kwargs))

    monkeypatch.setattr(helm_library, "HelmLibrary", StubLibrary)
    kind, _backend = helm_library.open_backend("gpu-operator", kubeconfig="/k", which=lambda name: None)
    assert kind == "library" and made[0] == ("gpu-operator", {"kubeconfig": "/k", "context": None, "host": None,
                                                              "api_key": None, "ca_cert": None, "validate_certs": None})
    # a configured binary that is missing is an error, never a silent switch to the library
    with pytest.raises(HelmLibraryCallError, match="not found"):
        helm_library.open_backend("gpu-operator", helm_binary="/nonexistent/helm", run=Runner(30))
    with pytest.raises(HelmLibraryCallError, match="not found"):
        helm_library.open_backend("gpu-operator", backend="cli", run=Runner(30), which=lambda name: None)
    with pytest.raises(ValueError):
        helm_library.open_backend("gpu-operator", backend="both")
