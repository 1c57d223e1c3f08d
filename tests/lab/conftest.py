# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures that start a lab cluster (real etcd + the lab API server) per test module."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB = os.path.join(REPO, "lab")
if LAB not in sys.path:
    sys.path.insert(0, LAB)

from kubelab.etcd import EtcdProcess  # noqa: E402  pylint: disable=wrong-import-position
from kubelab.kubeconfig import write_kubeconfig  # noqa: E402  pylint: disable=wrong-import-position
from kubelab.scenario import load_scenario  # noqa: E402  pylint: disable=wrong-import-position
from kubelab.server import LabServer  # noqa: E402  pylint: disable=wrong-import-position

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


def start_lab(workdir: str, scenario: str = "minimal", tls=None, token=None, controllers: bool = True) -> Lab:
    data = load_scenario(os.path.join(LAB, "scenarios", scenario + ".yml")) if scenario else {}
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
    kubeconfig = write_kubeconfig(os.path.join(workdir, "kubeconfig"), server.url)
    return Lab(server, etcd, str(kubeconfig), home)


def stop_lab(lab: Lab) -> None:
    lab.server.stop()
    lab.etcd.stop()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("lab"))
    cluster = start_lab(work)
    yield cluster
    stop_lab(cluster)
    errors = list(cluster.server.controller_errors)
    shutil.rmtree(work, ignore_errors=True)
    assert not errors, "controller errors: %s" % errors[:5]
