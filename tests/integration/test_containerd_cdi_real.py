# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role containerd_cdi against the REAL containerd (Debian 1.6.20), run as a plain process with
its own root, state and socket in a temporary directory, restarted by a restart command.

containerd 1.6 has no CDI, and its ``config dump`` silently drops ``enable_cdi``/``cdi_spec_dirs``
(asserted below). So on the real binary this proves: the refusal on 1.6 (nothing written, nothing
restarted); the restart / wait (socket + ``ctr version``) / verify (``config dump``) / revert machinery,
which is generic over the expected settings, with settings 1.6 has; a change that stops containerd
from starting and a change whose verification fails (CDI settings on 1.6) both reverted
automatically, with both outcomes in the failure. The CDI edit itself is proven on the 1.7/2.x
fixtures (tests/unit/test_containerd_cdi.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import shutil
import stat
import subprocess
import textwrap
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")

pytestmark = pytest.mark.skipif(not (shutil.which("containerd") and shutil.which("ctr") and shutil.which("setsid")),
                                reason="needs the real containerd, ctr and setsid (./dra-gate setup installs containerd)")

CONFIG = textwrap.dedent('''\
    # a config v2 as containerd 1.6 reads it, with the nvidia runtime as nvidia-ctk writes it
    version = 2

    [plugins."io.containerd.grpc.v1.cri"]
      sandbox_image = "registry.k8s.io/pause:3.6"

      [plugins."io.containerd.grpc.v1.cri".containerd]
        default_runtime_name = "runc"

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
          runtime_type = "io.containerd.runc.v2"

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
          runtime_type = "io.containerd.runc.v2"

          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
            BinaryName = "/usr/bin/nvidia-container-runtime"
    ''')

RESTART = textwrap.dedent('''\
    #!/bin/sh
    # stop the containerd of this test (pid file), start it again detached from the runner's group
    D="$(dirname "$0")"
    if [ -f "$D/pid" ]; then
      P="$(cat "$D/pid")"
      kill "$P" 2>/dev/null
      i=0
      while kill -0 "$P" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
    fi
    setsid containerd --config "$D/config.toml" --root "$D/root" --state "$D/state" --address "$D/c.sock" \\
      >>"$D/containerd.log" 2>&1 </dev/null &
    echo $! > "$D/pid"
    ''')


def ansible_env():
    env = dict(os.environ)
    env["ANSIBLE_COLLECTIONS_PATH"] = os.path.join(REPO, ".cache", "collections")
    env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "")
    env.update(ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    return env


@pytest.fixture
def daemon(tmp_path):
    """A running containerd 1.6 with its own root, state and socket; stopped at the end."""
    work = tmp_path / "ctd"
    work.mkdir()
    (work / "config.toml").write_text(CONFIG)
    (work / "restart.sh").write_text(RESTART)
    (work / "restart.sh").chmod(0o755)
    subprocess.run(["/bin/sh", str(work / "restart.sh")], check=True, timeout=30)
    assert ctr_version(work, 10)
    yield work
    pid = int((work / "pid").read_text())
    try:
        os.kill(pid, 15)
    except OSError:
        pass


def ctr_version(work, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.path.exists(str(work / "c.sock")):
            proc = subprocess.run(["ctr", "--address", str(work / "c.sock"), "version"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, universal_newlines=True, timeout=10, check=False)
            if proc.returncode == 0 and "Server:" in proc.stdout:
                return proc.stdout
        time.sleep(0.05)
    return None


def dump(work):
    proc = subprocess.run(["containerd", "--config", str(work / "config.toml"), "config", "dump"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=30, check=True)
    import tomllib  # pylint: disable=import-outside-toplevel
    return tomllib.loads(proc.stdout)["plugins"]["io.containerd.grpc.v1.cri"]


def play(work, tasks_from, extra):
    evidence = work.parent / "evidence"
    playbook = work.parent / "play.yml"
    extra = dict(extra, containerd_cdi_config=str(work / "config.toml"),
                 containerd_cdi_address=str(work / "c.sock"),
                 containerd_cdi_restart_command=["/bin/sh", str(work / "restart.sh")],
                 containerd_cdi_restart_timeout=3, containerd_cdi_command_timeout=20,
                 containerd_cdi_backup_dir=str(work.parent / "backups"), containerd_cdi_evidence_dir=str(evidence))
    playbook.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_role": {"name": "gpufleet.dra_gate.containerd_cdi", "tasks_from": tasks_from}}]}]))
    (work.parent / "vars.json").write_text(json.dumps(extra))
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", "ansible_python_interpreter=" + os.path.join(VENV_BIN, "python"),
                           "-e", "@" + str(work.parent / "vars.json"), str(playbook)],
                          env=ansible_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120, check=False)
    record_path = evidence / "containerd-cdi-localhost.json"
    record = json.loads(record_path.read_text()) if record_path.exists() else None
    if record is not None:
        assert stat.S_IMODE(record_path.stat().st_mode) == 0o600
    return proc, record


def change(work, new_text):
    """Back the config up (as containerd_cdi does) and write ``new_text``; returns the restore spec."""
    backups = work.parent / "backups"
    backups.mkdir(mode=0o700, exist_ok=True)
    original = (work / "config.toml").read_bytes()
    backup = backups / "config.toml.bak"
    backup.write_bytes(original)
    backup.chmod(0o600)
    (work / "config.toml").write_text(new_text)
    return {"restore": {"target": str(work / "config.toml"), "backup": str(backup), "sha256": hashlib.sha256(original).hexdigest()}}


def test_containerd_16_refused_and_its_dump_drops_cdi(daemon):
    pid = (daemon / "pid").read_text()
    before = (daemon / "config.toml").read_bytes()
    proc, record = play(daemon, "main", {})
    assert proc.returncode != 0, proc.stdout
    assert "containerd 1.6.20~ds1 has no CDI support" in proc.stdout
    assert record["outcome"] == "refused" and record["steps"][0]["name"] == "configure"
    assert (daemon / "config.toml").read_bytes() == before
    assert not (daemon.parent / "backups").exists()
    assert (daemon / "pid").read_text() == pid and ctr_version(daemon, 2)
    # what the real 1.6 does with CDI settings: loads the file, drops them from the dump
    cdi = daemon.parent / "cdi.toml"
    cdi.write_text(CONFIG.replace('  sandbox_image', '  enable_cdi = true\n  cdi_spec_dirs = ["/etc/cdi"]\n  sandbox_image'))
    out = subprocess.run(["containerd", "--config", str(cdi), "config", "dump"], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True, timeout=30).stdout
    assert "enable_cdi" not in out and "cdi_spec_dirs" not in out and "pause:3.6" in out


def test_change_restarted_and_verified(daemon):
    pid = (daemon / "pid").read_text()
    new = CONFIG.replace("pause:3.6", "pause:3.9").replace('  sandbox_image', '  enable_unprivileged_ports = true\n  sandbox_image')
    spec = change(daemon, new)
    proc, record = play(daemon, "apply", {"containerd_cdi_change": spec, "containerd_cdi_expect": {
        "sandbox_image": "registry.k8s.io/pause:3.9", "enable_unprivileged_ports": True}})
    assert proc.returncode == 0, proc.stdout
    assert (daemon / "pid").read_text() != pid
    assert ctr_version(daemon, 2)
    cri = dump(daemon)
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.9" and "nvidia" in cri["containerd"]["runtimes"]
    assert record["outcome"] == "changed"
    assert [s["name"] for s in record["steps"]] == ["restart", "wait", "verify"]
    assert all(s["ok"] and s["started_at"].endswith("Z") and s["duration_seconds"] >= 0 for s in record["steps"])
    assert record["verify"]["nvidia_runtime_names"] == ["nvidia"] and record["server_version"] == "1.6.20~ds1"


@pytest.mark.parametrize("broken, first", [
    ("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"\n", "did not answer within 3 s"),
    (CONFIG.replace('  sandbox_image', '  enable_cdi = true\n  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]\n  sandbox_image'),
     "enable_cdi is null, expected true"),
], ids=["containerd-does-not-start", "verification-fails-cdi-on-1.6"])
def test_broken_change_reverted(daemon, broken, first):
    original = (daemon / "config.toml").read_bytes()
    spec = change(daemon, broken)
    proc, record = play(daemon, "apply", {"containerd_cdi_change": spec, "containerd_cdi_expect": {
        "enable_cdi": True, "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"]}})
    assert proc.returncode != 0
    assert "the change failed:" in proc.stdout and first in proc.stdout
    assert "revert: backup %s restored to %s, containerd restarted and verified" % (spec["restore"]["backup"], spec["restore"]["target"]) in proc.stdout
    assert (daemon / "config.toml").read_bytes() == original
    assert ctr_version(daemon, 5)
    assert record["outcome"] == "reverted" and first in record["change_outcome"]
    names = [(s.get("phase"), s["name"], s["ok"]) for s in record["steps"]]
    assert ("revert", "restore", True) in names and ("revert", "verify", True) in names
    assert names[-1] == ("revert", "verify", True)


def run_module(name, args, work, no_toml=False):
    """Run a module as ansible does (args file); ``no_toml`` hides tomllib as on a Python 3.8 node."""
    import sys  # pylint: disable=import-outside-toplevel
    shadow = work.parent / "no-toml"
    shadow.mkdir(exist_ok=True)
    (shadow / "tomllib.py").write_text("raise ImportError('hidden by the test: a node without tomllib')\n")
    (shadow / "tomli.py").write_text("raise ImportError('hidden by the test: a node without tomli')\n")
    path = work.parent / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    paths = ([str(shadow)] if no_toml else []) + [os.path.join(REPO, ".cache", "collections")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    proc = subprocess.run([sys.executable, os.path.join(REPO, "plugins", "modules", name + ".py"), str(path)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env, timeout=60, check=False)
    return json.loads(proc.stdout)


def test_without_a_toml_parser_the_real_binary_reads_and_validates(daemon):
    verified = run_module("containerd_runtime", {"config": str(daemon / "config.toml"), "address": str(daemon / "c.sock"),
                                                 "expect": {"sandbox_image": "registry.k8s.io/pause:3.6"}}, daemon, no_toml=True)
    assert not verified.get("failed"), verified
    assert verified["verify"]["parsed_by"] == "canonical" and verified["verify"]["nvidia_runtime_names"] == ["nvidia"]
    assert verified["server_version"] == "1.6.20~ds1"
    # the candidate is validated with `containerd --config CANDIDATE config dump`: the real 1.6 binary
    # loads a v2 file with CDI settings but drops them, so the candidate is refused, nothing written
    before = (daemon / "config.toml").read_bytes()
    refused = run_module("containerd_cdi", {"config": str(daemon / "config.toml"), "containerd_version": "1.7.27",
                                            "backup_dir": str(daemon.parent / "backups")}, daemon, no_toml=True)
    assert refused["failed"] and "the candidate does not give CDI on" in refused["msg"] and refused["validated_by"] is None
    (daemon / "config.toml").write_text("version = 2\n[plugins\n")
    broken = run_module("containerd_cdi", {"config": str(daemon / "config.toml"), "containerd_version": "1.7.27",
                                           "backup_dir": str(daemon.parent / "backups")}, daemon, no_toml=True)
    assert broken["failed"] and "containerd refuses the config" in broken["msg"]
    (daemon / "config.toml").write_bytes(before)
    assert not (daemon.parent / "backups").exists()


PY38 = "/root/.pyenv/versions/3.8.18/bin/python3.8"


@pytest.mark.skipif(not os.path.exists(PY38), reason="no Python 3.8 interpreter (./dra-gate setup installs it with pyenv)")
def test_verify_on_python38_through_ansible(daemon):
    args = {"config": str(daemon / "config.toml"), "address": str(daemon / "c.sock"),
            "expect": {"sandbox_image": "registry.k8s.io/pause:3.6"}}
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible"), "localhost", "-c", "local", "-e", "ansible_python_interpreter=" + PY38,
                           "-m", "gpufleet.dra_gate.containerd_runtime", "-a", json.dumps(args)],
                          env=ansible_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout
    result = json.loads(proc.stdout.split("=> ", 1)[1])
    assert result["verify"]["parsed_by"] == "canonical" and result["verify"]["ok"] and result["server_version"] == "1.6.20~ds1"


def test_configured_tree_indexed_then_a_failed_revert_says_so(tmp_path):
    """The whole role on a 1.7 tree (registry credentials, nvidia runtime): the change written and its
    backup fetched into the run's index; no containerd answers on the socket, so the restart fails,
    the backup is restored byte for byte, the second restart fails too, and the host fails with both."""
    root = tmp_path / "node"
    (root / "etc/containerd").mkdir(parents=True)
    fixture = os.path.join(REPO, "tests", "fixtures", "containerd", "containerd-1.7-v2-registry-auth.toml")
    shutil.copy(fixture, str(root / "etc/containerd/config.toml"))
    evidence_root = tmp_path / "evidence"
    evidence_root.mkdir(mode=0o700)
    run_dir = evidence_root / "run-1"
    work = tmp_path / "ctd"
    work.mkdir()
    playbook = tmp_path / "play.yml"
    playbook.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False,
                                     "roles": [{"role": "gpufleet.dra_gate.containerd_cdi"}]}]))
    (tmp_path / "vars.json").write_text(json.dumps({
        "containerd_cdi_node_root": str(root), "containerd_cdi_version": "1.7.27",
        "containerd_cdi_restart_command": ["/bin/true"], "containerd_cdi_restart_timeout": 1,
        "containerd_cdi_address": "/run/gpufleet-test-no-such.sock",
        "containerd_cdi_run_dir": str(run_dir), "containerd_cdi_evidence_dir": str(tmp_path / "records")}))
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", "ansible_python_interpreter=" + os.path.join(VENV_BIN, "python"),
                           "-e", "@" + str(tmp_path / "vars.json"), str(playbook)],
                          env=ansible_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120, check=False)
    assert proc.returncode != 0
    assert "the change failed: containerd_runtime: wait failed: containerd did not answer within 1 s" in proc.stdout
    assert "revert failed too: containerd_runtime: wait failed" in proc.stdout
    with open(fixture, "rb") as handle:
        assert (root / "etc/containerd/config.toml").read_bytes() == handle.read()
    index = json.loads((run_dir / "artifacts" / "index.json").read_text())
    entries = [e for e in index["artifacts"] if e["kind"] == "containerd-config"]
    assert len(entries) == 1 and entries[0]["host"] == "localhost"
    with open(entries[0]["path"], "rb") as handle, open(fixture, "rb") as original:
        assert handle.read() == original.read()
    assert stat.S_IMODE(os.stat(entries[0]["path"]).st_mode) == 0o600
    record = json.loads((tmp_path / "records" / "containerd-cdi-localhost.json").read_text())
    assert record["outcome"] == "failed" and record["method"] == "edit"
    assert ("revert", "restore", True) in [(s.get("phase"), s["name"], s["ok"]) for s in record["steps"]]
    for secret in ("S3cr3t-PASSWORD-do-not-print", "IDTOKEN-do-not-print", "cm9ib3QkZmxlZXQ6"):
        assert secret not in proc.stdout and secret not in json.dumps(record)
