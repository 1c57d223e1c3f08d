# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubelab.cli: start (foreground logic with a stand-in server; --background with the real one), status, stop."""

from __future__ import annotations

import http.server
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time

import pytest
import yaml

from kubelab import cli
from kubelab import etcd as etcd_mod

LAB_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(cli.__file__)))
MINIMAL = os.path.join(LAB_PARENT, "scenarios", "minimal.yml")


class FakeServer:
    """Stands in for kubelab.server.LabServer: same constructor and methods, answers /version only."""

    instances: list = []

    def __init__(self, etcd_url, host="127.0.0.1", port=0, tls=None, token=None, scenario=None):
        self.etcd_url, self.token, self.scenario = etcd_url, token, scenario
        expected = "Bearer %s" % token if token else None

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802  pylint: disable=invalid-name
                ok = not expected or self.headers.get("Authorization") == expected
                body = json.dumps({"gitVersion": "v1.31.4-fake"} if ok else {"code": 401}).encode()
                self.send_response(200 if ok else 401)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # pylint: disable=arguments-differ
                pass

        self.httpd = http.server.ThreadingHTTPServer((host, port), Handler)
        self.scheme = "http"
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            self.scheme = "https"
        self.thread = None
        FakeServer.instances.append(self)

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % (self.scheme, self.httpd.server_address[1])

    def start(self):
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


def _args(directory, *extra):
    return cli.build_parser().parse_args(["start", "--dir", str(directory), *extra])


def test_run_lab_with_stand_in_server(tmp_path):
    stop = threading.Event()
    seen = {}
    result = {}

    def ready(lab):
        seen.update(lab)
        seen["version"] = cli.get_version(lab)
        seen["etcd_alive"] = etcd_mod.pid_alive(lab["etcd_pid"])
        seen["etcd_put"] = etcd_mod.client(lab["etcd_url"]).put("/kubelab/test", "1")
        stop.set()

    def run():
        result["code"] = cli.run_lab(_args(tmp_path, "--https", "--token", "--scenario", MINIMAL), stop,
                                     server_factory=FakeServer, ready=ready)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    stop.set()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert result["code"] == 0
    assert seen["version"]["gitVersion"] == "v1.31.4-fake"
    assert seen["etcd_alive"] and seen["etcd_put"]
    assert seen["server_url"].startswith("https://127.0.0.1:")

    server = FakeServer.instances[-1]
    assert [n["metadata"]["name"] for n in server.scenario["nodes"]] == ["cp-1", "worker-1", "worker-2"]
    assert server.etcd_url == seen["etcd_url"]

    lab = cli.read_lab(str(tmp_path))
    assert lab["state"] == "stopped"
    assert not etcd_mod.pid_alive(lab["etcd_pid"])
    kubeconfig = yaml.safe_load((tmp_path / "kubeconfig").read_text())
    assert kubeconfig["clusters"][0]["cluster"]["server"] == seen["server_url"]
    assert kubeconfig["users"][0]["user"]["token"] == (tmp_path / "token").read_text().strip() == server.token
    for name in ("kubeconfig", "token", "tls/server.key", "tls/ca.key"):
        assert os.stat(tmp_path / name).st_mode & 0o077 == 0, name
    assert cli.lab_status(str(tmp_path))["running"] is False
    assert cli.main(["status", "--dir", str(tmp_path)]) == cli.EXIT_NOT_RUNNING


def test_status_and_stop_without_a_lab(tmp_path, capsys):
    assert cli.main(["status", "--dir", str(tmp_path)]) == cli.EXIT_NOT_RUNNING
    assert json.loads(capsys.readouterr().out)["state"] == "absent"
    assert cli.main(["stop", "--dir", str(tmp_path)]) == 0
    assert "not running" in capsys.readouterr().out


def test_bad_scenario_fails_before_starting(tmp_path, capsys):
    bad = tmp_path / "bad.yml"
    bad.write_text("nodes: [{name: a, taints: [{key: k, effect: Nope}]}]\n")
    assert cli.main(["start", "--background", "--dir", str(tmp_path / "lab"), "--scenario", str(bad)]) == 1
    assert "taints[0].effect" in capsys.readouterr().err
    assert not (tmp_path / "lab" / "lab.json").exists()


def _server_import_error() -> str | None:
    try:
        import kubelab.server  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    except Exception as exc:  # pylint: disable=broad-exception-caught
        return "%s: %s" % (type(exc).__name__, exc)
    return None


@pytest.fixture
def lab_dir(tmp_path):
    directory = str(tmp_path / "lab")
    yield directory
    cli.stop_lab(directory, timeout=10)  # whatever happened, nothing keeps running


def test_background_start_status_stop_with_real_server(lab_dir):
    reason = _server_import_error()
    if reason:
        pytest.skip("kubelab.server cannot be imported yet (%s)" % reason)
    env = dict(os.environ, PYTHONPATH=LAB_PARENT)
    start = subprocess.run([sys.executable, "-m", "kubelab", "start", "--background", "--dir", lab_dir, "--https",
                            "--token", "--scenario", MINIMAL, "--wait-timeout", "60"],
                           capture_output=True, text=True, timeout=120, env=env, check=False)
    assert start.returncode == 0, start.stdout + start.stderr
    lab = cli.read_lab(lab_dir)
    assert lab["state"] == "running" and etcd_mod.pid_alive(lab["pid"]) and etcd_mod.pid_alive(lab["etcd_pid"])

    status = subprocess.run([sys.executable, "-m", "kubelab", "status", "--dir", lab_dir],
                            capture_output=True, text=True, timeout=60, env=env, check=False)
    assert status.returncode == 0, status.stdout + status.stderr
    assert json.loads(status.stdout)["api"]["gitVersion"]

    kubectl = os.path.join(os.path.dirname(sys.executable), "kubectl")
    if os.access(kubectl, os.X_OK):
        nodes = subprocess.run([kubectl, "get", "nodes", "-o", "name", "--request-timeout=20s"], capture_output=True,
                               text=True, timeout=60, check=False,
                               env=dict(os.environ, KUBECONFIG=lab["kubeconfig"], HOME=os.path.dirname(lab_dir)))
        assert nodes.returncode == 0, nodes.stderr
        assert "node/worker-1" in nodes.stdout.split()

    again = subprocess.run([sys.executable, "-m", "kubelab", "start", "--background", "--dir", lab_dir],
                           capture_output=True, text=True, timeout=60, env=env, check=False)
    assert again.returncode == 1 and "already runs" in again.stderr

    stop = subprocess.run([sys.executable, "-m", "kubelab", "stop", "--dir", lab_dir],
                          capture_output=True, text=True, timeout=60, env=env, check=False)
    assert stop.returncode == 0 and "stopped" in stop.stdout
    assert not etcd_mod.pid_alive(lab["pid"]) and not etcd_mod.pid_alive(lab["etcd_pid"])
    assert cli.read_lab(lab_dir)["state"] == "stopped"


def test_foreground_start_stops_on_sigterm(lab_dir):
    reason = _server_import_error()
    if reason:
        pytest.skip("kubelab.server cannot be imported yet (%s)" % reason)
    env = dict(os.environ, PYTHONPATH=LAB_PARENT)
    proc = subprocess.Popen([sys.executable, "-m", "kubelab", "start", "--dir", lab_dir],  # pylint: disable=consider-using-with
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        lab = None
        while time.monotonic() < deadline and proc.poll() is None:
            lab = cli.read_lab(lab_dir) if os.path.exists(os.path.join(lab_dir, cli.LAB_JSON)) else None
            if lab and lab.get("state") == "running":
                break
            time.sleep(0.1)
        assert lab and lab.get("state") == "running", proc.stdout.read() if proc.poll() is not None else "timeout"
        assert lab["pid"] == proc.pid
        assert cli.get_version(lab)["gitVersion"]
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=60)[0]
        assert proc.returncode == 0, out
        assert "SIGTERM, stopping" in out and "kubelab: stopped" in out
        assert not etcd_mod.pid_alive(lab["etcd_pid"])
        assert cli.read_lab(lab_dir)["state"] == "stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
