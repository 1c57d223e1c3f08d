# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Start and stop a whole lab cluster in-process (real etcd + API server + controllers), for tests."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from kubelab.etcd import EtcdProcess
from kubelab.gpunodes import prepare as prepare_gpu_nodes
from kubelab.kubeconfig import write_kubeconfig
from kubelab.scenario import load_scenario
from kubelab.server import LabServer

LAB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(LAB)
VENV_BIN = os.path.join(REPO, ".venv", "bin")


@dataclass
class Lab:
    server: LabServer
    etcd: EtcdProcess
    kubeconfig: str
    home: str

    @property
    def url(self) -> str:
        return self.server.url

    def env(self) -> dict:
        """Environment for real clients: this lab's kubeconfig, an empty HOME (cold kubectl cache)."""
        env = dict(os.environ)
        env.update(KUBECONFIG=self.kubeconfig, HOME=self.home, PATH=VENV_BIN + os.pathsep + env.get("PATH", ""))
        return env

    def run_playbook(self, playbook: str, workdir, name: str = "play.yml", timeout: int = 300, **extra_env):
        """Write ``playbook`` (YAML text) under ``workdir`` and run the venv's ansible-playbook on it against
        this lab (quiet localhost warnings, no colour, the venv's python as interpreter, TMPDIR=workdir);
        returns the CompletedProcess (text) for the caller to assert on."""
        import subprocess  # pylint: disable=import-outside-toplevel
        path = os.path.join(str(workdir), name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(playbook)
        env = self.env()
        env.update(ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_NOCOLOR="1",
                   ANSIBLE_PYTHON_INTERPRETER=os.path.join(VENV_BIN, "python"), TMPDIR=str(workdir))
        env.update({key: str(value) for key, value in extra_env.items()})
        return subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), path], env=env, capture_output=True,
                              text=True, timeout=timeout, check=False)


def start_lab(workdir: str, scenario: str = "minimal", tls=None, token=None, controllers: bool = True,
              ca_pem: bytes | None = None) -> Lab:
    """etcd + API server (+ controllers) on loopback, a kubeconfig for it and an empty HOME. ``scenario``: a
    scenario's name under lab/scenarios, or the path of a scenario file (``.yml``)."""
    if scenario and not scenario.endswith(".yml"):  # a name under lab/scenarios, else a scenario file's path
        scenario = os.path.join(LAB, "scenarios", scenario + ".yml")
    data = load_scenario(scenario) if scenario else {}
    if data.get("gpu_nodes"):  # GPU nodes from node trees (kubelab.gpunodes); writes workdir/inventory.yml
        prepare_gpu_nodes(data, workdir, os.path.join(workdir, "kubeconfig"))
    etcd = EtcdProcess(workdir=os.path.join(workdir, "etcd")).start()
    try:
        server = LabServer(etcd.client_url, tls=tls, token=token, scenario=data)
        if controllers:
            try:
                from kubelab.controllers.all import install
            except ImportError:
                install = None
            if install is not None:
                install(server)
        server.start()
    except Exception:
        etcd.stop()
        raise
    home = os.path.join(workdir, "home")
    os.makedirs(home, exist_ok=True)
    kubeconfig = write_kubeconfig(os.path.join(workdir, "kubeconfig"), server.url, ca_pem=ca_pem, token=token)
    return Lab(server, etcd, str(kubeconfig), home)


def stop_lab(lab: Lab) -> None:
    lab.server.stop()
    lab.etcd.stop()


def wait_for(check, timeout: float = 30.0, what: str = "condition", interval: float = 0.1):
    """Poll ``check()`` until it returns something truthy (returned) or ``timeout`` passes (AssertionError).

    A 404 from the lab API counts as "not yet" (the object may not exist yet); other errors raise.
    """
    from kubelab.errors import ApiError
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except ApiError as exc:
            last = exc
            if exc.code != 404:
                raise
        if last and not isinstance(last, ApiError):
            return last
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))
