# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The helm CLI backend bounded and hermetic: fake ``helm`` executables that hang, are slow but
within the deadline, print garbage, fail transiently or are forbidden; the controller's HELM_*
environment removed and pinned (helm_cli.helm_environment); and helm_state run as a module
against such fakes (a timed-out helm is a failure naming the command and the deadline)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import helm_cli
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.command_runner import CommandTimedOut, Runner
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.helm_cli import (
    HelmCli,
    HelmCommandError,
    HelmForbidden,
    HelmOutputError,
    HelmRetriesExhausted,
    RetryingHelm,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import RetryPolicy

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
HISTORY = os.path.join(REPO, "tests", "fixtures", "helm", "helm-4", "history.json")

# A fake helm: behaviour per subcommand from $FAKE_HELM_MODE; every call logs argv and the HELM_* env.
FAKE = """\
#!{python}
import json, os, sys, time
mode = os.environ.get("FAKE_HELM_MODE", "ok")
log = os.environ.get("FAKE_HELM_LOG")
if log:
    with open(log, "a") as handle:
        handle.write(json.dumps({{"argv": sys.argv[1:], "env": dict((k, v) for k, v in os.environ.items()
                                                                   if k.startswith("HELM_"))}}) + "\\n")
command = sys.argv[1]
if mode == "hang":
    time.sleep(120)
if mode == "slow":
    time.sleep(0.5)
if command == "version":
    sys.stdout.write("v4.2.3")
    sys.exit(0)
if mode == "garbage":
    sys.stdout.write("\\x00\\x1b[31mPANIC goroutine 1 [running]:\\n\\xff not json")
    sys.exit(0)
if mode == "forbidden":
    sys.stderr.write('Error: query: failed to query with labels: secrets is forbidden: User "u" cannot list resource '
                     '"secrets" in API group "" in the namespace "gpu-operator"\\n')
    sys.exit(1)
if mode == "flaky":
    counter = os.environ["FAKE_HELM_COUNTER"]
    seen = int(open(counter).read()) if os.path.exists(counter) else 0
    open(counter, "w").write(str(seen + 1))
    if seen < 2:
        sys.stderr.write("Error: query: failed to query with labels: the server is currently unable to handle the "
                         "request (get secrets)\\n")
        sys.exit(1)
if mode == "absent":
    sys.stderr.write("Error: release: not found\\n")
    sys.exit(1)
sys.stdout.write(open(os.environ["FAKE_HELM_HISTORY"]).read())
"""


@pytest.fixture
def helm(tmp_path, monkeypatch):
    path = tmp_path / "helm"
    path.write_text(FAKE.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FAKE_HELM_HISTORY", HISTORY)
    monkeypatch.setenv("FAKE_HELM_COUNTER", str(tmp_path / "counter"))
    monkeypatch.setenv("FAKE_HELM_LOG", str(tmp_path / "log.jsonl"))

    def mode(name):
        monkeypatch.setenv("FAKE_HELM_MODE", name)
        return str(path)
    return mode


def cli(path, timeout):
    return HelmCli(Runner(timeout), helm=path, namespace="gpu-operator")


def test_a_hanging_helm_is_killed_at_the_deadline_and_named(helm):
    started = time.monotonic()
    with pytest.raises(CommandTimedOut) as exc:
        cli(helm("hang"), 1.0).detect_version()
    assert time.monotonic() - started < 10
    assert str(exc.value).startswith("%s version --template {{.Version}}: timed out after 1 s" % helm("hang"))


def test_a_slow_helm_within_the_deadline_is_fine(helm):
    backend = cli(helm("slow"), 10.0)
    assert backend.detect_version() == (4, 2, 3)
    assert [e["revision"] for e in backend.history("gpu-operator")] == [1, 2]


def test_a_helm_printing_garbage_is_a_named_output_error(helm):
    backend = cli(helm("garbage"), 10.0)
    with pytest.raises(HelmOutputError) as exc:
        backend.history("gpu-operator")
    assert str(exc.value).startswith("helm history: not JSON")


class Clock:
    def __init__(self):
        self.now, self.sleeps = 0.0, []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def retrying(backend, deadline=30.0):
    clock = Clock()
    policy = RetryPolicy(deadline=deadline, sleep=clock.sleep, clock=clock, rand=lambda: 1.0)
    return RetryingHelm(backend, policy, (HelmCommandError,), "gpu-operator", "gpu-operator"), clock


def test_transient_helm_failures_are_retried(helm):
    reader, clock = retrying(cli(helm("flaky"), 10.0))
    assert [e["revision"] for e in reader.history("gpu-operator")] == [1, 2]
    assert reader.retries == 2 and clock.sleeps == [0.25, 0.5]


def test_transient_helm_failures_stop_at_the_deadline(helm):
    reader, clock = retrying(cli(helm("flaky"), 10.0), deadline=0.5)
    with pytest.raises(HelmRetriesExhausted) as exc:
        reader.history("gpu-operator")
    assert str(exc.value).startswith("helm history gpu-operator/gpu-operator failed after 2 attempt(s)")
    assert "(api_deadline 0.5 s)" in str(exc.value) and "the server is currently unable" in str(exc.value)


def test_forbidden_release_storage_is_not_absent(helm):
    reader, clock = retrying(cli(helm("forbidden"), 10.0))
    with pytest.raises(HelmForbidden) as exc:
        reader.history("gpu-operator")
    assert str(exc.value).startswith("forbidden: the Helm storage Secrets of release gpu-operator/gpu-operator "
                                     "cannot be read")
    assert clock.sleeps == []
    reader, clock = retrying(cli(helm("absent"), 10.0))
    with pytest.raises(HelmCommandError, match="release: not found"):  # absent is absent, not retried
        reader.history("gpu-operator")
    assert clock.sleeps == []


def test_helm_environment_removes_the_controllers_helm_variables():
    environ = {"PATH": "/usr/bin", "KUBECONFIG": "/k", "HELM_KUBETOKEN": "t", "HELM_NAMESPACE": "x",
               "HELM_DRIVER": "sql", "HELM_DRIVER_SQL_CONNECTION_STRING": "postgres://u:p@h", "HELM_C_LIB": "/lib.so",
               "HELM_PLUGINS": "/evil", "HELM_SOMETHING_NEW": "1"}
    env, removed = helm_cli.helm_environment(environ, "/run/h")
    assert removed == ["HELM_DRIVER", "HELM_DRIVER_SQL_CONNECTION_STRING", "HELM_KUBETOKEN", "HELM_NAMESPACE",
                       "HELM_PLUGINS", "HELM_SOMETHING_NEW"]
    assert env == {"PATH": "/usr/bin", "KUBECONFIG": "/k", "HELM_C_LIB": "/lib.so", "HELM_DRIVER": "secret",
                   "HELM_CACHE_HOME": "/run/h/cache", "HELM_CONFIG_HOME": "/run/h/config",
                   "HELM_DATA_HOME": "/run/h/data", "HELM_NO_PLUGINS": "1"}
    documented = " ".join(name for name, _why in helm_cli.HELM_ENV_DECISIONS)
    for name in ("HELM_DRIVER", "HELM_NAMESPACE", "HELM_KUBECONTEXT", "HELM_KUBEAPISERVER", "HELM_KUBETOKEN",
                 "HELM_REGISTRY_CONFIG", "HELM_REPOSITORY_CONFIG", "HELM_CACHE_HOME", "HELM_CONFIG_HOME",
                 "HELM_DATA_HOME", "HELM_MAX_HISTORY", "HELM_KUBEASUSER"):
        assert name in documented


def run_helm_state(tmp_path, args, env_extra):
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_tmpdir=str(tmp_path))}))
    env = dict(os.environ, PYTHONPATH=COLLECTIONS, **env_extra)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ansible_collections.gpufleet.dra_gate.plugins.modules.helm_state",
                           str(args_file)], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), time.monotonic() - started


def test_module_fails_naming_a_timed_out_helm_command_and_its_deadline(helm, tmp_path):
    path = helm("hang")
    result, elapsed = run_helm_state(tmp_path, {"release": "gpu-operator", "namespace": "gpu-operator",
                                                "dest": str(tmp_path / "out"), "backend": "cli", "helm_binary": path,
                                                "timeout": 1}, {})
    assert result["failed"] and result["timed_out"] is True
    assert result["msg"] == ("reading helm release gpu-operator/gpu-operator failed: %s version --template "
                             "{{.Version}}: timed out after 1 s (deadline); process group killed" % path)
    assert elapsed < 30 and not (tmp_path / "out").exists()


def test_module_runs_helm_without_the_controllers_helm_variables(helm, tmp_path):
    path = helm("absent")
    result, _elapsed = run_helm_state(tmp_path, {"release": "gpu-operator", "namespace": "gpu-operator",
                                                 "dest": str(tmp_path / "out"), "backend": "cli", "helm_binary": path},
                                      {"HELM_KUBETOKEN": "leaked-token", "HELM_NAMESPACE": "elsewhere",
                                       "HELM_KUBECONTEXT": "other", "HELM_DRIVER": "configmap",
                                       "HELM_REPOSITORY_CONFIG": "/home/op/.config/helm/repositories.yaml"})
    assert result["failed"] and "release: not found" in result["msg"]
    calls = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [c["argv"][0] for c in calls] == ["version", "history"]
    for call in calls:
        env = call["env"]
        assert env["HELM_DRIVER"] == "secret" and env["HELM_NO_PLUGINS"] == "1"
        assert sorted(k for k in env if k.endswith("_HOME")) == ["HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"]
        for name in ("HELM_KUBETOKEN", "HELM_NAMESPACE", "HELM_KUBECONTEXT", "HELM_REPOSITORY_CONFIG"):
            assert name not in env
    assert "leaked-token" not in json.dumps(result)
    # the private homes of the run are gone afterwards
    assert not os.path.exists(calls[0]["env"]["HELM_CONFIG_HOME"])
